//! The dLSM paper (the compaction buffer as its first paper builds it): random
//! reads of recent data under a steady writer (Figs. 9–11), against the
//! read-only tree, and range queries under the writer (Fig. 12(b)), on
//! every buffer policy and its baselines, under the `hdd` device profile
//! where this machine can throttle.

use super::spec::{side, Chart, Claim, Experiment, Metric, Paper, PaperValue, Scale, StepSpec};

/// The baseline the paper compares with: an LSM-tree with its two-phase
/// compaction and no buffer, which is Strata's bLSM policy.
const LSM: &str = "strata/blsm";
const DLSM: &str = "strata/dlsm";
const LEVELED: &str = "strata/leveled";
const SM: &str = "strata/tiered";

/// The three workloads of Figs. 9–11: step label, read distribution, figure,
/// and the paper's (hit ratio, reads/s) of dLSM over LSM, with how it says so.
const WORKLOADS: [(&str, &str, &str, f64, f64, &str); 3] = [
    (
        "latest_rangehot",
        "latest_rangehot",
        "Fig. 9",
        0.96 / 0.48,
        8.5,
        "hit ratio 96 % against about half of the read-only 96 %; 8.5× the reads/s",
    ),
    (
        "latest_zipfian",
        "latest_zipfian",
        "Fig. 10",
        0.91 / 0.65,
        2900.0 / 498.0,
        "hit ratio 91 % against 65 %; 2 900 against 498 reads/s",
    ),
    (
        "latest_uniform",
        "latest_uniform",
        "Fig. 11",
        0.46 / 0.20,
        866.0 / 150.0,
        "hit ratio 46 % against 20 %; 866 against < 150 reads/s",
    ),
];

fn claim(
    figure: &'static str,
    text: &str,
    paper: PaperValue,
    of: (&str, &str),
    over: (&str, &str),
    metric: Metric,
) -> Claim {
    Claim { figure, text: text.to_string(), paper, of: side(of.0, of.1), over: side(over.0, over.1), metric }
}

/// The device profile the timed steps run under, and why.
fn profile(scale: Scale) -> (&'static str, String) {
    if scale == Scale::Unit {
        return ("none", "no device profile (unit scale)".into());
    }
    match crate::device::probe(&std::env::temp_dir()) {
        Ok(()) => ("hdd", "under the `hdd` device profile (150 read IOPS; the paper: two 15k-rpm disks in RAID 0)".into()),
        Err(why) => ("none", format!("on the bare device, since this machine cannot throttle ({why}); the paper's disks make misses far costlier")),
    }
}

fn reads_under_writes(scale: Scale) -> Experiment {
    let (engines, rocksdb) = {
        let on = crate::cli::compiled_engines().contains(&"rocksdb");
        (if on { "strata,rocksdb" } else { "strata" }, on)
    };
    // (records, cache, memtable, file, L1, measured s, warm-up s, sample s)
    let (num, cache, wb, file, l1, secs, warm, every) = scale.pick(
        (2_000u64, 256u64 << 10, 64u64 << 10, 64u64 << 10, 64u64 << 10, 1.0, 0.0, 0.25),
        (100_000, 16 << 20, 256 << 10, 1 << 20, 1 << 20, 15.0, 5.0, 1.0),
        (300_000, 64 << 20, 1 << 20, 1 << 20, 4 << 20, 60.0, 20.0, 2.0),
    );
    let (profile, device) = profile(scale);
    let direct = if scale == Scale::Unit { "" } else { " --use_direct_reads" };
    // Unit scale leaves out LSbM, which no claim of this paper names.
    let policies = scale.pick(
        "leveled,blsm,dlsm,tiered",
        "leveled,blsm,lsbm,dlsm,tiered",
        "leveled,blsm,lsbm,dlsm,tiered",
    );
    let flags = format!(
        "--engines={engines} --policy={policies} --baseline={LSM} --num={num} \
         --value_size=1000 --cache_size={cache} --write_buffer_size={wb} --max_file_size={file} \
         --max_bytes_for_level_base={l1}{direct} --buffer_trim_interval=2 --threads=1 \
         --benchmarks=filluniquerandom,waitforcompaction"
    );
    let timed = |dist: &str, extra: &str| {
        format!(
            "--benchmarks=readwhilewriting --read_dist={dist} --threads=8 --duration={secs} \
             --warmup_seconds={warm} --device_profile={profile} --stats_interval_seconds={every}{extra}"
        )
    };
    let writer = format!(" --benchmark_write_rate_limit={}", 2 << 20);
    let mut steps =
        vec![StepSpec { label: "readonly_latest_rangehot", flags: timed("latest_rangehot", " --no_writer") }];
    for (label, dist, ..) in WORKLOADS {
        steps.push(StepSpec { label, flags: timed(dist, &writer) });
    }
    steps.push(StepSpec {
        label: "ranges",
        flags: format!(
            "--benchmarks=seekrandomwhilewriting --seek_nexts=99 --max_scan_distance=100 --threads=1 \
             --duration={secs} --device_profile={profile} --stats_interval_seconds={every}{writer}"
        ),
    });

    let (thr, hit) = (Metric::Throughput, Metric::HitRatio);
    let mut claims = Vec::new();
    for (label, _, figure, hit_ratio, reads, text) in WORKLOADS {
        claims.push(claim(
            figure,
            &format!("dLSM over LSM, {text}: hit ratio"),
            PaperValue::Ratio(hit_ratio),
            (label, DLSM),
            (label, LSM),
            hit,
        ));
        claims.push(claim(
            figure,
            &format!("dLSM over LSM, {text}: reads/s"),
            PaperValue::Ratio(reads),
            (label, DLSM),
            (label, LSM),
            thr,
        ));
    }
    let rh = "latest_rangehot";
    claims.extend([
        claim(
            "Fig. 9(b)",
            "dLSM under writes keeps the read-only hit ratio (96 % both)",
            PaperValue::Ratio(1.0),
            (rh, DLSM),
            ("readonly_latest_rangehot", DLSM),
            hit,
        ),
        claim(
            "Fig. 9(a)",
            "LSM under writes reads about 1/10 of its read-only reads/s",
            PaperValue::Ratio(0.1),
            (rh, LSM),
            ("readonly_latest_rangehot", LSM),
            thr,
        ),
        claim(
            "§VII summary",
            "dLSM reads 5–8× an LSM-tree's reads/s under writes (here against leveling)",
            PaperValue::Ratio(5.0),
            (rh, DLSM),
            (rh, LEVELED),
            thr,
        ),
        claim(
            "Fig. 12(b)",
            "range queries under writes: dLSM runs nearly as many as LSM",
            PaperValue::Ratio(1.0),
            ("ranges", DLSM),
            ("ranges", LSM),
            thr,
        ),
        claim(
            "Fig. 12(b)",
            "range queries under writes: stepped merge (SM) runs about 1/4 of LSM's",
            PaperValue::Ratio(0.25),
            ("ranges", SM),
            ("ranges", LSM),
            thr,
        ),
    ]);
    if rocksdb {
        claims.push(claim(
            "§VII summary",
            "dLSM against RocksDB itself (leveled)",
            PaperValue::Ratio(5.0),
            (rh, DLSM),
            (rh, "rocksdb"),
            thr,
        ));
    }
    Experiment {
        id: "fig9-12",
        title: "Figures 9–11 and 12(b): reads of recent data and range queries under a steady writer",
        conditions: format!(
            "{num} records of 1 KiB loaded once per row (the paper: 100 GB), in the paper's tree \
             proportions (memtable, files and L1 of {} KiB, {} KiB and {} KiB at ratio 10; the paper: \
             100 MB, 8 MB, 1 GB, so its last level holds ~90 % of the data), {} MiB block cache (the \
             paper: 500 MB of 100 GB), direct reads. Each timed step reads with 8 threads for {secs} s \
             {device}, after {warm} s unmeasured on the bare device; the writer updates uniformly at \
             2 MB/s (the paper: 1 000 writes/s of 1 KB, one thread), and the read-only reference \
             has no writer. `latest_*` reads favour the most recently written keys, as YCSB's latest \
             generator the paper adopts. Range queries: one thread, 100 entries each (the paper: \
             10 MB of 100 GB). The paper's LSM baseline runs its two-phase compaction without the \
             buffer, which is Strata's `blsm`; `leveled` and `tiered` (the paper's SM) run beside it.",
            wb >> 10,
            file >> 10,
            l1 >> 10,
            cache >> 20
        ),
        flags,
        steps,
        claims,
        chart: Chart {
            benchmarks: vec![
                "readonly_latest_rangehot",
                "latest_rangehot",
                "latest_zipfian",
                "latest_uniform",
                "ranges",
            ],
            metric: thr,
        },
    }
}

/// dLSM's report.
pub fn paper(scale: Scale) -> Paper {
    Paper {
        name: "dlsm",
        title: "dLSM (the compaction buffer, its first paper): the paper's claims against Strata",
        paper_setup: "LevelDB 1.15 with the buffer built in, two 15k-rpm disks in RAID 0, 8 GB of memory, \
                      100 GB of 1 KB records, 8 MB tables, 15 bloom bits per key, a 500 MB read cache",
        experiments: vec![reads_under_writes(scale)],
        not_run: vec![
            ("Fig. 12(a)", "disk reads per get from the disk itself: the bench reports reads/s and the hit ratio, not device reads per get."),
            ("Fig. 12(c)", "tables scanned per range query: not reported by the bench."),
            ("Figs. 13–14", "the dynamic workload (writes stop, aggressive compaction runs, reads measured through it; ranges after the full compaction): not run by this command yet; scripts/lsbm-slow-device.sh runs it (docs/BENCHMARKS.md, \"Idle (aggressive) compaction\")."),
            ("Sizes", "100 GB and a 15-minute warm-up exceed one run here; the tree keeps the paper's proportions at the scale the conditions state."),
        ],
    }
}
