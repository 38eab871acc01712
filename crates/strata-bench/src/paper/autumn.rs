//! The Autumn paper (Garnering and Monkey-style bloom bits): its db_bench
//! micro experiment (Fig. 2) with the sensitivity to `c` (Fig. 3), YCSB
//! (Fig. 4, Table 3) and the LevelDB comparison with optimized filters
//! (Fig. 5), each scaled to this machine.

use super::spec::{side, Chart, Claim, Experiment, Metric, Paper, PaperValue, Scale};

/// `strata` plus `peer` when it is compiled in, and whether it is.
fn engines(peer: &str) -> (String, bool) {
    let on = crate::cli::compiled_engines().contains(&peer);
    (if on { format!("strata,{peer}") } else { "strata".into() }, on)
}

#[allow(clippy::too_many_arguments)]
fn claim(
    figure: &'static str,
    text: &str,
    paper: PaperValue,
    benchmark: &'static str,
    row: &str,
    baseline: &str,
    metric: Metric,
) -> Claim {
    let (of, over) = (side(benchmark, row), side(benchmark, baseline));
    Claim { figure, text: text.to_string(), paper, of, over, metric }
}

/// Level shape for the db_bench experiments: the paper's 2 MiB files and
/// 10 MiB level base, ratio 5 so a few minutes of writes reach five levels.
fn db_bench_shape(scale: Scale) -> String {
    scale.pick(
        "--max_file_size=65536 --write_buffer_size=65536 --max_bytes_for_level_base=262144 \
         --max_bytes_for_level_multiplier=5"
            .to_string(),
        "--max_file_size=2097152 --write_buffer_size=4194304 --max_bytes_for_level_base=10485760 \
         --max_bytes_for_level_multiplier=5 --use_direct_reads"
            .to_string(),
        "--max_file_size=2097152 --write_buffer_size=4194304 --max_bytes_for_level_base=10485760 \
         --max_bytes_for_level_multiplier=5 --use_direct_reads"
            .to_string(),
    )
}

fn fig2(scale: Scale) -> Experiment {
    let (engines, rocksdb) = engines("rocksdb");
    let (num, reads) = scale.pick((3_000, 200), (1_000_000, 20_000), (12_000_000, 30_000));
    let flags = format!(
        "--engines={engines} --policy=leveled,garnering@0.8,garnering@0.4 \
         --baseline=strata/leveled --num={num} --reads={reads} --key_size=16 --value_size=100 \
         --cache_size=0 --bloom_bits=0 --compression_type=none {} \
         --benchmarks=fillrandom,waitforcompaction,readrandom,seekrandom,seekrandomnext10,seekrandomnext100",
        db_bench_shape(scale)
    );
    let lat = Metric::MeanLatency;
    // c = 1 is leveling's shape: `strata/leveled` is the sweep's c = 1 point.
    let (g8, lev, g4) = ("strata/garnering@0.8", "strata/leveled", "strata/garnering@0.4");
    let mut claims = vec![
        claim(
            "Fig. 2(a)",
            "fillrandom: Autumn and RocksDB have similar write latency",
            PaperValue::Ratio(1.0),
            "fillrandom",
            g8,
            lev,
            lat,
        ),
        claim(
            "Fig. 2(b)",
            "readrandom, no filters, 50 B values: 97.5 µs against RocksDB's 119.9 µs (−19 %)",
            PaperValue::Ratio(97.526 / 119.937),
            "readrandom",
            g8,
            lev,
            lat,
        ),
        claim(
            "Fig. 2(c)",
            "seek, 50 B values: 138.9 µs against 170.7 µs (−19 %)",
            PaperValue::Ratio(138.864 / 170.742),
            "seekrandom",
            g8,
            lev,
            lat,
        ),
        claim(
            "Fig. 2(c)",
            "seek + next 10, 200 B values: −9 %",
            PaperValue::Ratio(0.91),
            "seekrandomnext10",
            g8,
            lev,
            lat,
        ),
        claim(
            "Fig. 2(c)",
            "seek + next 100, 200 B values: −5 %",
            PaperValue::Ratio(0.95),
            "seekrandomnext100",
            g8,
            lev,
            lat,
        ),
        claim(
            "Fig. 3(b)",
            "a lower c gives faster short range reads (c = 0.4 against 1, leveling's shape)",
            PaperValue::Below1,
            "seekrandomnext10",
            g4,
            lev,
            lat,
        ),
        claim(
            "Fig. 3(a)",
            "a lower c gives slower random writes (c = 0.4 against 1)",
            PaperValue::Above1,
            "fillrandom",
            g4,
            lev,
            lat,
        ),
    ];
    if rocksdb {
        claims.push(claim(
            "Fig. 2(b)",
            "readrandom against RocksDB itself (−19 %)",
            PaperValue::Ratio(97.526 / 119.937),
            "readrandom",
            g8,
            "rocksdb",
            lat,
        ));
        claims.push(claim(
            "Fig. 2(c)",
            "seek against RocksDB itself (−19 %)",
            PaperValue::Ratio(138.864 / 170.742),
            "seekrandom",
            g8,
            "rocksdb",
            lat,
        ));
    }
    Experiment {
        id: "fig2",
        title: "Figure 2 and Figure 3: db_bench micro benchmark, and the sensitivity to c",
        conditions: format!(
            "{num} random writes of 16 B keys and 100 B values (the paper: 2 M entries per fill, values \
             of 50, 100 and 200 B; read claims quoted for 50 B and 200 B are compared at 100 B), then \
             {reads} reads and seeks, one thread. As the paper: no block cache, no bloom filters, no \
             compression, direct reads, 2 MiB files, 10 MiB L1; the size ratio is 5 instead of 10 so \
             this much data reaches several levels. Garnering rows `garnering@C`; leveling is the \
             c = 1 point of Fig. 3's sweep (Garnering with c = 1 has its capacities). The paper's Autumn c for Fig. 2 is taken as 0.8 \
             (its default). Bare device (the paper: NVMe instance storage)."
        ),
        flags,
        steps: Vec::new(),
        claims,
        chart: Chart {
            benchmarks: vec!["fillrandom", "readrandom", "seekrandom", "seekrandomnext10", "seekrandomnext100"],
            metric: lat,
            over: None,
        },
    }
}

fn fig4(scale: Scale) -> Experiment {
    let (engines, rocksdb) = engines("rocksdb");
    let (num, ops, mb) =
        scale.pick((2_000, 200, 1u64 << 16), (250_000, 20_000, 1 << 20), (2_500_000, 100_000, 16 << 20));
    let direct = if scale == Scale::Unit { "" } else { " --use_direct_reads" };
    let flags = format!(
        "--engines={engines} --policy=leveled,garnering@0.8,garnering@0.4 --baseline=strata/leveled \
         --num={num} --reads={ops} --cache_size=0 --compression_type=none{direct} \
         --write_buffer_size={mb} --max_file_size={mb} --max_bytes_for_level_base={mb} \
         --benchmarks=ycsba,ycsbb,ycsbc,ycsbd,ycsbe,ycsbf"
    );
    let (g8, lev, g4) = ("strata/garnering@0.8", "strata/leveled", "strata/garnering@0.4");
    let thr = Metric::Throughput;
    let mut claims = vec![
        claim(
            "Fig. 4",
            "load: +15 % write throughput against RocksDB (fewest stalls at c = 0.4; the text lost which c)",
            PaperValue::Ratio(1.15),
            "ycsb-load",
            g4,
            lev,
            thr,
        ),
        claim(
            "Fig. 4",
            "workload C (read only): +4 % at c = 0.8",
            PaperValue::Ratio(1.04),
            "ycsb-c",
            g8,
            lev,
            thr,
        ),
        claim("Fig. 4", "workload C: +24 % at c = 0.4", PaperValue::Ratio(1.24), "ycsb-c", g4, lev, thr),
        claim(
            "Fig. 4",
            "workload D (read latest): more than +20 %",
            PaperValue::Ratio(1.20),
            "ycsb-d",
            g8,
            lev,
            thr,
        ),
        claim(
            "Table 3",
            "workload A read p99: 612 µs at c = 0.8 against 640 µs",
            PaperValue::Ratio(612.0 / 640.0),
            "ycsb-a",
            g8,
            lev,
            Metric::OpP99("READ"),
        ),
        claim(
            "Table 3",
            "workload A read p99: 536 µs at c = 0.4 against 640 µs",
            PaperValue::Ratio(536.0 / 640.0),
            "ycsb-a",
            g4,
            lev,
            Metric::OpP99("READ"),
        ),
        claim(
            "Table 3",
            "workload C read p99: 459 µs at c = 0.4 against 595 µs",
            PaperValue::Ratio(459.0 / 595.0),
            "ycsb-c",
            g4,
            lev,
            Metric::OpP99("READ"),
        ),
        claim(
            "Table 3",
            "workload E scan p99: 2 006 µs at c = 0.4 against 2 229 µs",
            PaperValue::Ratio(2006.0 / 2229.0),
            "ycsb-e",
            g4,
            lev,
            Metric::OpP99("SCAN"),
        ),
    ];
    if rocksdb {
        claims.push(claim(
            "Fig. 4",
            "workload C against RocksDB itself, c = 0.4",
            PaperValue::Ratio(1.24),
            "ycsb-c",
            g4,
            "rocksdb",
            thr,
        ));
    }
    Experiment {
        id: "fig4",
        title: "Figure 4 and Table 3: YCSB workloads A–F",
        conditions: format!(
            "{num} records of 1 KiB loaded (the paper: 80 GB), then {ops} operations of each workload \
             A–F in sequence on the same database, one thread. As the paper: no block cache, no \
             compression, direct reads; 10 bloom bits per key (the paper's YCSB setting is not stated). \
             Memtables, files and L1 of {} KiB at ratio 10, so this much data needs more levels under \
             leveling than under Garnering, as the paper's 80 GB did. Bare device.",
            mb >> 10
        ),
        flags,
        steps: Vec::new(),
        claims,
        chart: Chart {
            benchmarks: vec!["ycsb-load", "ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"],
            metric: thr,
            over: None,
        },
    }
}

fn fig5(scale: Scale) -> Experiment {
    let (engines, leveldb) = engines("leveldb");
    let (num, reads) = scale.pick((3_000, 200), (1_000_000, 20_000), (12_000_000, 30_000));
    let shape = db_bench_shape(scale).replace(" --use_direct_reads", "");
    let flags = format!(
        "--engines={engines} --policy=leveled,garnering@0.8 --baseline=strata/leveled --num={num} \
         --reads={reads} --key_size=16 --value_size=100 --cache_size=8388608 --bloom_bits=2 \
         --bloom_allocation=monkey --compression_type=none {shape} \
         --benchmarks=fillrandom,waitforcompaction,readrandom,seekrandomnext10"
    );
    let (g8, lev) = ("strata/garnering@0.8", "strata/leveled");
    let lat = Metric::MeanLatency;
    let mut claims = vec![
        claim(
            "Fig. 5(a)",
            "fillrandom at 60 GB: 10.78 µs against LevelDB's 11.15 µs",
            PaperValue::Ratio(10.776 / 11.153),
            "fillrandom",
            g8,
            lev,
            lat,
        ),
        claim(
            "Fig. 5(b)",
            "point reads with 2 bits per key and Monkey's allocation: Autumn still ahead",
            PaperValue::Below1,
            "readrandom",
            g8,
            lev,
            lat,
        ),
        claim(
            "Fig. 5(c)",
            "seek + next 10 at 30 GB: 42 % lower latency",
            PaperValue::Ratio(0.58),
            "seekrandomnext10",
            g8,
            lev,
            lat,
        ),
    ];
    if leveldb {
        claims.push(claim(
            "Fig. 5(c)",
            "seek + next 10 against LevelDB itself",
            PaperValue::Ratio(0.58),
            "seekrandomnext10",
            g8,
            "leveldb",
            lat,
        ));
    }
    Experiment {
        id: "fig5",
        title: "Figure 5: against LevelDB with optimized bloom filters",
        conditions: format!(
            "{num} random writes of 16 B keys and 100 B values (the paper: 15–60 GB), then {reads} point \
             reads and seek + next 10, one thread, buffered reads and LevelDB's 8 MiB block cache as the \
             paper (LevelDB has no direct I/O). 2 bloom bits per key with Monkey's allocation \
             (`--bloom_allocation=monkey`; LevelDB has uniform bits), no compression, 2 MiB files, \
             10 MiB L1, ratio 5 as in Fig. 2. c = 0.8 (the paper's value for Fig. 5 is not stated)."
        ),
        flags,
        steps: Vec::new(),
        claims,
        chart: Chart {
            benchmarks: vec!["fillrandom", "readrandom", "seekrandomnext10"],
            metric: lat,
            over: None,
        },
    }
}

/// Autumn's report.
pub fn paper(scale: Scale) -> Paper {
    Paper {
        name: "autumn",
        title: "Autumn (Garnering, Monkey-style bloom bits): the paper's claims against Strata",
        paper_setup: "an AWS i3en.large (2 vCPUs, NVMe instance storage), RocksDB and LevelDB forks, \
                      2 M entries for the micro benchmark, 80 GB for YCSB and 15–60 GB against LevelDB",
        experiments: vec![fig2(scale), fig4(scale), fig5(scale)],
        not_run: vec![
            ("Fig. 1 and Table 2", "the merge policies' shapes and asymptotic costs: analysis, nothing to run."),
            ("Fig. 5(b), without filters", "the same condition as Fig. 2(b) (no filters), measured there."),
            ("Sizes", "80 GB (YCSB) and 15–60 GB (Fig. 5) exceed what one run may take here; every experiment is scaled down as its conditions say."),
        ],
    }
}
