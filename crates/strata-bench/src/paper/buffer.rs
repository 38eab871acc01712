//! The compaction-buffer experiment the dLSM and LSbM reports share: one load
//! per row in the dLSM paper's tree proportions, then timed steps on the same
//! databases — reads with no writer, reads of each distribution under a
//! steady writer, range queries under the writer — under the `hdd` device
//! profile where this machine can throttle. `strata-bench paper all` runs it
//! once for both reports (the runner caches results by command).

use super::spec::{Chart, Claim, Experiment, Metric, Scale, StepSpec};

/// The papers' LSM baseline: two-phase levels without the buffer, which is
/// Strata's bLSM policy (dLSM applies its two-phase compaction to the LSM it
/// compares with; LSbM compares with bLSM itself).
pub const LSM: &str = "strata/blsm";
/// The dLSM row.
pub const DLSM: &str = "strata/dlsm";
/// The LSbM row.
pub const LSBM: &str = "strata/lsbm";
/// LevelDB's policy on Strata.
pub const LEVELED: &str = "strata/leveled";
/// The stepped-merge (SM-tree) baseline.
pub const SM: &str = "strata/tiered";

/// Range queries with the writer stopped, before the full compaction.
pub const RANGES_BEFORE_FULL: &str = "ranges_before_full";
/// The same after it.
pub const RANGES_AFTER_FULL: &str = "ranges_after_full";

/// Timed steps: label, read distribution, with the writer. LSbM reads
/// RangeHot and Zipfian keys; dLSM reads the `latest_*` distributions, over
/// the ring of recent writes that the load starts and every step's writer
/// extends (the read-only step reads the load's).
const STEPS: [(&str, &str, bool); 6] = [
    ("readonly_latest_rangehot", "latest_rangehot", false),
    ("rangehot", "rangehot", true),
    ("zipfian", "zipfian", true),
    ("latest_rangehot", "latest_rangehot", true),
    ("latest_zipfian", "latest_zipfian", true),
    ("latest_uniform", "latest_uniform", true),
];

/// The dLSM paper's Latest RangeHot: every read evenly over a key range of
/// a tenth of the key space, which the writer updates (`latest_rangehot`).
pub(super) const LATEST_RANGEHOT: &str = " --hot_fraction=0.1 --hot_prob=1";

/// The tree and cache both buffer experiments use, and their timing.
pub(super) struct Shape {
    /// Records loaded.
    pub num: u64,
    /// `--cache_size`, `--write_buffer_size`, `--max_file_size` and
    /// `--max_bytes_for_level_base` with the read mode, as flags.
    pub flags: String,
    /// The same in words, for the conditions.
    pub words: String,
    /// Measured seconds of a timed step, its unmeasured warm-up, and the
    /// sampling interval.
    pub secs: f64,
    /// See `secs`.
    pub warm: f64,
    /// See `secs`.
    pub every: f64,
}

/// The dLSM paper's tree proportions at `scale`.
pub(super) fn shape(scale: Scale) -> Shape {
    // (records, cache, memtable, file, L1, measured s, warm-up s, sample s)
    let (num, cache, wb, file, l1, secs, warm, every) = scale.pick(
        (2_000u64, 256u64 << 10, 64u64 << 10, 64u64 << 10, 64u64 << 10, 0.5, 0.0, 0.25),
        // Quick: 8 s steps after 3 s warm-ups keep `paper all --quick` inside
        // its 20 minutes (10 s after 5 s took 1 226 s quiet, 2026-12-02).
        (100_000, 16 << 20, 256 << 10, 1 << 20, 1 << 20, 8.0, 3.0, 1.0),
        (300_000, 64 << 20, 1 << 20, 1 << 20, 4 << 20, 60.0, 20.0, 2.0),
    );
    let direct = if scale == Scale::Unit { "" } else { " --use_direct_reads" };
    Shape {
        num,
        flags: format!(
            "--value_size=1000 --cache_size={cache} --write_buffer_size={wb} --max_file_size={file} \
             --max_bytes_for_level_base={l1}{direct}"
        ),
        words: format!(
            "{num} records of 1 KiB, in the dLSM paper's tree proportions (memtable, files and L1 of \
             {} KiB, {} KiB and {} KiB at ratio 10, so the last level holds most of the data), {} MiB \
             block cache, {}",
            wb >> 10,
            file >> 10,
            l1 >> 10,
            cache >> 20,
            if direct.is_empty() { "buffered reads" } else { "direct reads" }
        ),
        secs,
        warm,
        every,
    }
}

/// The device profile the timed steps run under, and why.
pub(super) fn profile(scale: Scale) -> (&'static str, String) {
    if scale == Scale::Unit {
        return ("none", "no device profile (unit scale)".into());
    }
    match crate::device::probe(&std::env::temp_dir()) {
        Ok(()) => (
            "hdd",
            "under the `hdd` device profile (150 read IOPS; the papers: two 15k-rpm disks in RAID 0)".into(),
        ),
        Err(why) => (
            "none",
            format!(
                "on the bare device, since this machine cannot throttle ({why}); the papers' disks make \
                 misses far costlier"
            ),
        ),
    }
}

/// The experiment, with a paper's `title` and `claims` (whose sides name the
/// step labels above, `ranges`, or `load`'s benchmarks).
pub fn experiment(scale: Scale, title: &'static str, claims: Vec<Claim>) -> Experiment {
    let engines =
        if crate::cli::compiled_engines().contains(&"rocksdb") { "strata,rocksdb" } else { "strata" };
    let Shape { num, flags: shape_flags, words, secs, warm, every } = shape(scale);
    let (profile, device) = profile(scale);
    let flags = format!(
        "--engines={engines} --policy=leveled,blsm,lsbm,dlsm,tiered --baseline={LSM} --num={num} \
         {shape_flags} --buffer_trim_interval=2 --threads=1 --benchmarks=filluniquerandom,waitforcompaction"
    );
    let writer = format!(" --benchmark_write_rate_limit={}", 2 << 20);
    let mut steps: Vec<StepSpec> = STEPS
        .iter()
        .map(|&(label, dist, writes)| StepSpec {
            label,
            flags: format!(
                "--benchmarks=readwhilewriting --read_dist={dist} --threads=8 --duration={secs} \
                 --warmup_seconds={warm} --device_profile={profile} --stats_interval_seconds={every}{}{}",
                if writes { writer.as_str() } else { " --no_writer" },
                if dist == "latest_rangehot" { LATEST_RANGEHOT } else { "" }
            ),
        })
        .collect();
    steps.push(StepSpec {
        label: "ranges",
        flags: format!(
            "--benchmarks=seekrandomwhilewriting --read_dist=rangehot --seek_nexts=99 \
             --max_scan_distance=100 --threads=1 --duration={secs} --device_profile={profile} \
             --stats_interval_seconds={every}{writer}"
        ),
    });
    // The dLSM paper's Fig. 14: the same range queries with no writer, before
    // and after a full compaction of the same databases.
    let quiet_ranges = format!(
        "--benchmarks=seekrandom --read_dist=rangehot --seek_nexts=99 --max_scan_distance=100 \
         --threads=1 --duration={secs} --device_profile={profile} --stats_interval_seconds={every}"
    );
    steps.extend([
        StepSpec { label: RANGES_BEFORE_FULL, flags: quiet_ranges.clone() },
        StepSpec { label: "full_compaction", flags: "--benchmarks=compact".into() },
        StepSpec { label: RANGES_AFTER_FULL, flags: quiet_ranges },
    ]);
    Experiment {
        id: "buffer",
        title,
        conditions: format!(
            "{words}, loaded once per row (the papers: 100 GB and 20 GB); trim every 2 s (LSbM). \
             Each timed step reads with 8 threads for {secs} s {device}, after {warm} s unmeasured \
             on the bare device; the writer updates uniformly at 2 MB/s (the papers: 1 000 \
             writes/s of 1 KB, one thread); the `readonly_latest_rangehot` step has no writer. \
             `rangehot` puts 98 % of reads in a hot 15 % of the key range (the bench's \
             `--hot_fraction` default; LSbM's RangeHot: a tenth), `zipfian` is YCSB's (0.99). The `latest_*` steps (the dLSM paper's Latest-*) draw a \
             position among the keys written so far, newest first, and read the key written there: \
             `latest_uniform` alike, `latest_zipfian` the newest most often; the load's writes \
             start the history and each step's writer extends it. `latest_rangehot` reads evenly \
             over a key range of a tenth of the keys, and the writer updates that range only, so \
             it holds the recent data (the paper: \"a key range of recent data, about 10 % of the \
             entire key space\"); its read-only step reads the same range. Range queries \
             (`ranges`): one thread, 100 entries \
             from a rangehot start (LSbM: 100 KB ranges; dLSM: 10 MB of 100 GB); then the same \
             with the writer stopped (`ranges_before_full`), a full manual compaction of the tree \
             on the bare device (`full_compaction`), and the same again (`ranges_after_full`; the \
             dLSM paper's Fig. 14, 5–10 MB queries for 100 s after its aggressive compaction). The papers' LSM \
             baseline runs two-phase compaction without the buffer, which is Strata's `blsm`; \
             `leveled` and `tiered` (the papers' SM-tree) run beside it."
        ),
        flags,
        steps,
        claims,
        chart: Chart {
            benchmarks: STEPS.iter().map(|s| s.0).chain(["ranges"]).collect(),
            metric: Metric::Throughput,
            over: None,
        },
    }
}
