//! The pipelined-compaction paper (PCP): insert throughput and compaction
//! bandwidth of the sequential procedure (SCP) against the pipelined one
//! (PCP) and its computation-parallel variant (C-PPCP), Fig. 10 on an SSD
//! and on a throttled disk (Fig. 10(a)–(c)) and the abstract's figures,
//! with one row per output pipeline, and the sequential procedure's
//! execution-time breakdown from the same runs (Figs. 8–9); and the
//! compaction bandwidth by sub-task size (Fig. 11(a)), one row per size.

use super::spec::{itself, side, Chart, Claim, Experiment, Metric, Paper, PaperValue, Scale, Stages};

/// The rows: one policy, one output pipeline each (`+` gives a row its own).
const SCP: &str = "strata/leveled+scp";
const PCP: &str = "strata/leveled+pcp";
const CPPCP: &str = "strata/leveled+c-ppcp";

fn claim(figure: &'static str, text: &str, paper: f64, benchmark: &str, row: &str) -> Claim {
    Claim {
        figure,
        text: text.to_string(),
        paper: PaperValue::Ratio(paper),
        of: side(benchmark, row),
        over: side(benchmark, SCP),
        metric: Metric::Speed,
    }
}

/// A claim of Figs. 8–9 (the execution-time breakdown of the sequential
/// procedure): `of`'s time over `over`'s in `scp`'s full compaction.
fn breakdown(figure: &'static str, text: &str, paper: PaperValue, of: Stages, over: Stages) -> Claim {
    Claim {
        figure,
        text: text.to_string(),
        paper,
        of: side("compact", SCP),
        over: itself(),
        metric: Metric::StageRatio(of, over),
    }
}

/// Bars of each row's throughput over `scp`'s, as the paper plots speed-ups.
fn speedup(benchmarks: Vec<&'static str>) -> Chart {
    Chart { benchmarks, metric: Metric::Speed, over: Some(SCP) }
}

/// Entries (`quick` and `full` of them) and the tree's shape at `scale`:
/// the paper's 4 MiB memtable and 2 MiB tables, tiny ones at unit scale.
fn insert_shape(scale: Scale, quick: u64, full: u64) -> (u64, &'static str) {
    const PAPER: &str =
        "--write_buffer_size=4194304 --max_file_size=2097152 --max_bytes_for_level_base=10485760";
    scale.pick(
        (3_000, "--write_buffer_size=65536 --max_file_size=65536 --max_bytes_for_level_base=262144"),
        (quick, PAPER),
        (full, PAPER),
    )
}

/// The insert experiments' benchmarks: the fill, then (once its
/// compactions settle) one full compaction. At unit scale the settled tree
/// can sit in one level, where a full compaction has nothing to merge and
/// measures nothing, so the fill's last memtable is left for it to flush and
/// merge down.
fn insert_benchmarks(scale: Scale) -> &'static str {
    scale.pick(
        "fillrandom,compact",
        "fillrandom,waitforcompaction,compact",
        "fillrandom,waitforcompaction,compact",
    )
}

fn inserts(scale: Scale) -> Experiment {
    let (num, shape) = insert_shape(scale, 5_000_000, 20_000_000);
    let flags = format!(
        "--engines=strata --policy=leveled+scp,leveled+pcp,leveled+c-ppcp,leveled+auto \
         --compaction_threads=2 --baseline={SCP} --num={num} --key_size=16 --value_size=100 \
         --compression_type=lz4 {shape} --threads=1 --benchmarks={}",
        insert_benchmarks(scale)
    );
    let mut claims = vec![
        claim(
            "Fig. 10(f)",
            "insert throughput on an SSD: PCP at least 45 % above SCP",
            1.45,
            "fillrandom",
            PCP,
        ),
        claim(
            "Fig. 10(f)",
            "compaction bandwidth on an SSD: PCP at least 65 % above SCP",
            1.65,
            "compact",
            PCP,
        ),
        claim("Abstract", "insert throughput: PCP 62 % above LevelDB's SCP", 1.62, "fillrandom", PCP),
        claim("Abstract", "compaction bandwidth: PCP 77 % above SCP", 1.77, "compact", PCP),
        claim(
            "Abstract",
            "insert throughput: the parallel variant 64 % above SCP",
            1.64,
            "fillrandom",
            CPPCP,
        ),
        claim(
            "Abstract",
            "compaction bandwidth: the parallel variant 89 % above SCP",
            1.89,
            "compact",
            CPPCP,
        ),
    ];
    claims.extend([
        breakdown(
            "Figs. 8(b), 9(b)",
            "SSD, sequential: the computation steps take about 60 % of the time (1.5× the reads and writes)",
            PaperValue::Ratio(1.5),
            Stages::Cpu,
            Stages::Io,
        ),
        breakdown(
            "Figs. 8(b), 9(b)",
            "SSD, sequential: writing takes longer than reading (flash's write-after-erase)",
            PaperValue::Above1,
            Stages::Write,
            Stages::Read,
        ),
    ]);
    Experiment {
        id: "inserts",
        title: "Figure 10 (SSD) and the abstract: insert throughput and compaction bandwidth",
        conditions: format!(
            "{num} entries of 16 B keys and 100 B values inserted in random order by one thread (the \
             paper: 10–80 million, fifty million where not stated), lz4 (the paper: snappy, the \
             nearest here), 4 KiB blocks, the paper's 4 MiB memtable and 2 MiB tables, on this \
             machine's disk through the page cache (the paper's SSD: an Intel X25-M) with 2 cores \
             (the paper: two 6-core Xeons). One row per output pipeline on the same leveled tree: \
             `scp` (one thread does every step), `pcp` (compress and checksum, and write, on their \
             own threads; reads on a read thread), `c-ppcp` (2 compress threads and merges cut into \
             sub-tasks on 2 threads: the paper's C-PPCP), `auto` (Strata's choice per task from \
             the stage times; no claim). `fillrandom` is the insert throughput the paper plots; \
             `compact` then runs one full manual compaction, whose bandwidth is the MB its \
             compactions read per second of the step (each row's tree holds its own shape when \
             the fill ends, and files a full compaction moves down whole are not read, so the \
             rows compact different amounts). The chart divides each row by `scp`, as the paper's \
             Fig. 10(f) does. Figs. 8(b)–9(b)'s breakdown is `scp`'s `compact` at the paper's 100 B \
             values: reading its inputs (S1), verifying, decompressing and merging them (S2–S4), \
             compressing and checksumming (S5–S6) and writing (S7), timed by the engine; the paper \
             reads and writes with direct I/O, here through the page cache."
        ),
        flags,
        steps: Vec::new(),
        claims,
        chart: speedup(vec!["fillrandom", "compact"]),
    }
}

/// Fig. 10(a)–(c): the insert experiment on a hard disk, as the `hdd`
/// device profile throttles this machine's (where it can).
fn inserts_hdd(scale: Scale) -> Experiment {
    let (num, shape) = insert_shape(scale, 2_000_000, 10_000_000);
    let (profile, why) = super::buffer::profile(scale);
    // The buffer papers' words name their RAID; this paper's disk is named below.
    let (device, limits) = if profile == "hdd" {
        (
            "under the `hdd` device profile (150 read IOPS, 150 MB/s)".into(),
            " Writes go through the page cache, which cgroup v1 cannot throttle, so the profile slows \
             the reads only; it also caps the process's memory at the block cache plus 128 MiB, so \
             the page cache cannot hold the tree.",
        )
    } else {
        (why, "")
    };
    let (direct, direct_words) = if scale == Scale::Unit {
        ("", "")
    } else {
        (" --use_direct_reads", ", with direct reads so compaction reads reach the throttled device")
    };
    let flags = format!(
        "--engines=strata --policy=leveled+scp,leveled+pcp,leveled+c-ppcp --compaction_threads=2 \
         --baseline={SCP} --num={num} --key_size=16 --value_size=100 --compression_type=lz4 {shape} \
         --threads=1 --device_profile={profile}{direct} --benchmarks={}",
        insert_benchmarks(scale)
    );
    let claims = vec![
        breakdown(
            "Figs. 8(a), 9(a)",
            "HDD, sequential: reading and writing take more than 60 % of the time (1.5× the computation)",
            PaperValue::Ratio(1.5),
            Stages::Io,
            Stages::Cpu,
        ),
        breakdown(
            "Figs. 8(a), 9(a)",
            "HDD, sequential: reading takes longer than writing (over 40 % of the time; a write \
             completes in the disk's buffer)",
            PaperValue::Above1,
            Stages::Read,
            Stages::Write,
        ),
        claim(
            "Fig. 10(c)",
            "insert throughput on an HDD: PCP at least 25 % above SCP",
            1.25,
            "fillrandom",
            PCP,
        ),
        claim(
            "Fig. 10(c)",
            "compaction bandwidth on an HDD: PCP at least 45 % above SCP",
            1.45,
            "compact",
            PCP,
        ),
    ];
    Experiment {
        id: "inserts-hdd",
        title: "Figure 10(a)–(c) (HDD): insert throughput and compaction bandwidth",
        conditions: format!(
            "The insert experiment above with {num} entries, every step {device}{direct_words} \
             (the paper: a 7200 rpm SATA disk).{limits} Rows `scp`, `pcp` and `c-ppcp` as above; \
             the chart divides each by `scp`, as the paper's Fig. 10(c) does. Figs. 8(a)–9(a)'s \
             breakdown is `scp`'s `compact`, split into steps as above."
        ),
        flags,
        steps: Vec::new(),
        claims,
        chart: speedup(vec!["fillrandom", "compact"]),
    }
}

/// Fig. 11(a)'s sub-task sizes, 64 KiB to 4 MiB.
const SUBTASK_SIZES: [u64; 7] = [64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20];

/// The `c-ppcp` row with `bytes`-sized sub-tasks.
fn cppcp_row(bytes: u64) -> String {
    format!("strata/leveled+c-ppcp/{bytes}")
}

fn subtask_claim(text: &str, of: u64, over: Option<u64>) -> Claim {
    Claim {
        figure: "Fig. 11(a)",
        text: text.to_string(),
        paper: PaperValue::Above1,
        of: side("compact", &cppcp_row(of)),
        over: side("compact", &over.map_or_else(|| SCP.to_string(), cppcp_row)),
        metric: Metric::Speed,
    }
}

fn subtasks(scale: Scale) -> Experiment {
    let (num, shape) = insert_shape(scale, 2_000_000, 10_000_000);
    let rows: Vec<String> = std::iter::once("leveled+scp".to_string())
        .chain(SUBTASK_SIZES.iter().map(|b| format!("leveled+c-ppcp/{b}")))
        .collect();
    let flags = format!(
        "--engines=strata --policy={} --compaction_threads=2 --baseline={SCP} --num={num} \
         --key_size=16 --value_size=100 --compression_type=lz4 {shape} --threads=1 \
         --benchmarks={}",
        rows.join(","),
        insert_benchmarks(scale)
    );
    let claims = vec![
        subtask_claim(
            "PCP's compaction bandwidth peaks at 512 KB sub-tasks: above 64 KB ones",
            512 << 10,
            Some(64 << 10),
        ),
        subtask_claim(
            "PCP's compaction bandwidth peaks at 512 KB sub-tasks: above 4 MB ones",
            512 << 10,
            Some(4 << 20),
        ),
        subtask_claim(
            "PCP improves the compaction bandwidth at every sub-task size: 64 KB above SCP",
            64 << 10,
            None,
        ),
        subtask_claim(
            "PCP improves the compaction bandwidth at every sub-task size: 4 MB above SCP",
            4 << 20,
            None,
        ),
    ];
    Experiment {
        id: "subtasks",
        title: "Figure 11(a): compaction bandwidth by sub-task size",
        conditions: format!(
            "{num} entries of 16 B keys and 100 B values inserted in random order by one thread, \
             then one full manual compaction (`compact`), whose bandwidth is the MB its \
             compactions read per second of the step; lz4, the paper's 4 MiB \
             memtable and 2 MiB tables, through the page cache, 2 cores. One `c-ppcp` row per \
             sub-task size from 64 KiB to 4 MiB (`leveled+c-ppcp/BYTES`: 2 threads merge the \
             sub-tasks, 2 compress) beside one `scp` row. The paper's PCP pipelines the steps of \
             each sub-task, so its sub-task size is also its I/O size, and its SCP line varies \
             with it; Strata's sub-task is the unit its merge threads share, while reads go \
             through one read-ahead of up to 2 MiB per input in every mode, so `scp` does not \
             depend on it and is one row. The paper fixes the upper input at 4 MB; here a \
             full compaction's merges are larger, so every size gives several sub-tasks. The \
             chart divides each row by `scp`."
        ),
        flags,
        steps: Vec::new(),
        claims,
        chart: speedup(vec!["compact"]),
    }
}

/// The PCP paper's report.
pub fn paper(scale: Scale) -> Paper {
    Paper {
        name: "pcp",
        title: "PCP (pipelined compaction): the paper's claims against Strata",
        paper_setup: "LevelDB with the pipeline built in, CentOS 6, two 6-core Xeon E5645, 512 MB of memory \
                      booted, 7200 rpm SATA disks and an Intel X25-M SSD, 16 B keys and 100 B values, \
                      4 MB memtable, 2 MB tables, 4 KB blocks, snappy",
        experiments: vec![inserts(scale), inserts_hdd(scale), subtasks(scale)],
        not_run: vec![
            ("Figs. 8–9, sizes", "the breakdown at other key-value sizes (64 B to 1 KiB) and sub-task sizes: the rows above give it at the paper's 100 B values; Strata's sequential procedure reads through one read-ahead of up to 2 MiB per input whatever the sub-task size, so Fig. 9's sweep would repeat one bar. `cargo run --release -p strata-db --example compaction_bandwidth` prints the stage times beside the stage-bandwidth model (equations 1–7) at any value size (`VALUE_BYTES`) and sub-task size (`SUBTASK_BYTES`; docs/BENCHMARKS.md, \"Pipelined compaction\")."),
            ("Fig. 11(b)", "sub-task count (an upper input of 1 to 10 MB cut into 1 MB sub-tasks): a leveled merge here takes one upper table and the lower tables it overlaps (about ten times its size), so no flag fixes the upper input's size and the count follows the lower level; Fig. 11(a) above sweeps the size instead."),
            ("Fig. 12(a)–(c)", "S-PPCP over several disks: tables alternate between `db_paths`, each input is read ahead on a thread of its own, and a pipelined output finishes (and syncs) a table on each other path while the next fills; this machine has one disk, so the figures' disk counts cannot be run (docs/BENCHMARKS.md, \"Tables finished apart\", measures two paths on the one disk)."),
            ("Fig. 12(d)–(f)", "C-PPCP with more compute threads: 2 cores here; the `c-ppcp` row runs 2."),
            ("Sizes", "fifty million entries and 512 MB of memory exceed one quick run; the conditions state the scale."),
        ],
    }
}
