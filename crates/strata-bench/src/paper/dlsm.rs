//! The dLSM paper (the compaction buffer as its first paper builds it): random
//! reads under a steady writer (Figs. 9–11), against the
//! read-only tree, tables searched per read (Fig. 12(a)), range queries
//! under the writer and the tables each scans (Fig. 12(b), (c)), and range
//! queries before and after a full compaction (Fig. 14), on the experiment
//! it shares with the LSbM report.

use super::buffer::{self, DLSM, LEVELED, LSM, SM};
use super::spec::{side, Chart, Claim, Experiment, Metric, Paper, PaperValue, Scale, StepSpec};

/// The three workloads of Figs. 9–11: step label, figure, and the paper's
/// (hit ratio, reads/s) of dLSM over LSM, with how it says so.
const WORKLOADS: [(&str, &str, f64, f64, &str); 3] = [
    (
        "latest_rangehot",
        "Fig. 9",
        0.96 / 0.48,
        8.5,
        "hit ratio 96 % against about half of the read-only 96 %; 8.5× the reads/s",
    ),
    (
        "latest_zipfian",
        "Fig. 10",
        0.91 / 0.65,
        2900.0 / 498.0,
        "hit ratio 91 % against 65 %; 2 900 against 498 reads/s",
    ),
    (
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

fn reads_under_writes(scale: Scale) -> Experiment {
    let rocksdb = crate::cli::compiled_engines().contains(&"rocksdb");
    let (thr, hit) = (Metric::Throughput, Metric::HitRatio);
    let mut claims = Vec::new();
    for (label, figure, hit_ratio, reads, text) in WORKLOADS {
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
    // Fig. 12(a): tables a get searches (a disk access each when nothing is
    // cached), on the step whose reads miss most.
    let (lu, tables) = ("latest_uniform", Metric::TablesPerGet);
    claims.extend([
        claim(
            "Fig. 12(a)",
            "disk accesses per read: dLSM's above LSM's (its buffer's tables; bloom bits here 10 on \
             average for every policy, dLSM 14.8 on the levels feeding its buffer and fewer below; \
             the paper: 15 for all)",
            PaperValue::Above1,
            (lu, DLSM),
            (lu, LSM),
            tables,
        ),
        claim(
            "Fig. 12(a)",
            "disk accesses per read: SM's the most, above dLSM's",
            PaperValue::Above1,
            (lu, SM),
            (lu, DLSM),
            tables,
        ),
    ]);
    // Fig. 14: range queries before and after a full compaction.
    let (before, after) = (buffer::RANGES_BEFORE_FULL, buffer::RANGES_AFTER_FULL);
    for (row, name) in [(LSM, "LSM"), (DLSM, "dLSM")] {
        claims.extend([
            claim(
                "Fig. 14(a)",
                &format!("a full compaction makes {name}'s range queries 80–120 % faster"),
                PaperValue::Ratio(2.0),
                (after, row),
                (before, row),
                thr,
            ),
            claim(
                "Fig. 14(b)",
                &format!("... as each scans fewer tables ({name})"),
                PaperValue::Below1,
                (after, row),
                (before, row),
                Metric::TablesPerSeek,
            ),
        ]);
    }
    // Fig. 12(c): the tables one range query reads.
    let (rq, scanned) = ("ranges", Metric::TablesPerSeek);
    claims.extend([
        claim(
            "Fig. 12(c)",
            "tables scanned per range query: dLSM about as many as LSM (both two-phase compaction)",
            PaperValue::Ratio(1.0),
            (rq, DLSM),
            (rq, LSM),
            scanned,
        ),
        claim(
            "Fig. 12(c)",
            "tables scanned per range query: SM 4.4× LSM's (overlapping tables in every level)",
            PaperValue::Ratio(4.4),
            (rq, SM),
            (rq, LSM),
            scanned,
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
    buffer::experiment(
        scale,
        "Figures 9–12 and 14: reads and range queries under a steady writer, and after a full compaction",
        claims,
    )
}

/// Fig. 13: the writes stop and aggressive (idle) compaction merges the upper
/// levels down while the readers go on; the paper compares the hit ratio and
/// reads/s of dLSM and LSM through that compaction.
fn dynamic(scale: Scale) -> Experiment {
    let buffer::Shape { num, flags: shape_flags, words, every, warm, .. } = buffer::shape(scale);
    let (profile, device) = buffer::profile(scale);
    // (writer seconds, measured seconds, idle seconds)
    let (writes, secs, idle) = scale.pick((0.5, 1.0, 0.2), (10.0, 30.0, 2.0), (30.0, 120.0, 5.0));
    let flags = format!(
        "--engines=strata --policy=leveled,blsm,dlsm --baseline={LSM} --num={num} {shape_flags} \
         --idle_compaction={idle} --threads=1 --benchmarks=filluniquerandom,waitforcompaction"
    );
    let steps = vec![StepSpec {
        label: "dynamic",
        flags: format!(
            "--benchmarks=readwhilewriting --read_dist=latest_rangehot --threads=8 --duration={secs} \
             --writes_stop_after={writes} --warmup_seconds={warm} --device_profile={profile} \
             --stats_interval_seconds={every} --benchmark_write_rate_limit={}{}",
            2 << 20,
            buffer::LATEST_RANGEHOT
        ),
    }];
    let (hit, thr) = (Metric::HitRatioAfter(writes), Metric::ThroughputAfter(writes));
    let d = ("dynamic", DLSM);
    let claims = vec![
        claim(
            "Fig. 13",
            "while the upper levels are merged down, dLSM's hit ratio is 41 % above LSM's",
            PaperValue::Ratio(1.41),
            d,
            ("dynamic", LSM),
            hit,
        ),
        claim("Fig. 13", "... and its reads/s 91 % above", PaperValue::Ratio(1.91), d, ("dynamic", LSM), thr),
        claim(
            "Fig. 13",
            "reads/s through the compaction against leveling",
            PaperValue::Ratio(1.91),
            d,
            ("dynamic", LEVELED),
            thr,
        ),
    ];
    Experiment {
        id: "dynamic",
        title: "Figure 13: reads while aggressive compaction merges the tree down",
        conditions: format!(
            "{words}, loaded and left to settle (idle compaction after {idle} s without writes merges \
             it into one level first). Then 8 latest_rangehot readers (every read in a key range \
             of a tenth of the keys) for {secs} s {device}, after {warm} s unmeasured on the bare \
             device, while the writer updates that range at 2 MB/s for the first {writes} s and \
             stops: idle compaction then merges what the writes built above \
             the last level while the reads go on. The claims compare the samples after the \
             writes stop (the paper: 1 000 writes/s stop, then about 600 s of compaction)."
        ),
        flags,
        steps,
        claims,
        chart: Chart { benchmarks: vec!["dynamic"], metric: thr, over: None },
    }
}

/// dLSM's report.
pub fn paper(scale: Scale) -> Paper {
    Paper {
        name: "dlsm",
        title: "dLSM (the compaction buffer, its first paper): the paper's claims against Strata",
        paper_setup: "LevelDB 1.15 with the buffer built in, two 15k-rpm disks in RAID 0, 8 GB of memory, \
                      100 GB of 1 KB records, 8 MB tables, 15 bloom bits per key, a 500 MB read cache",
        experiments: vec![reads_under_writes(scale), dynamic(scale)],
        not_run: vec![
            ("Sizes", "100 GB and a 15-minute warm-up exceed one run here; the tree keeps the paper's proportions at the scale the conditions state."),
        ],
    }
}
