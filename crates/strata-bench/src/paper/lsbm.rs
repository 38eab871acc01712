//! The LSbM paper (the compaction buffer with its trim, the journal paper):
//! random reads under a steady writer on RangeHot (Figs. 11–12) and Zipfian
//! (Fig. 13) reads, range queries (Figs. 14–15) and the database size
//! (Fig. 16), on the experiment it shares with the dLSM report.

use super::buffer::{self, LSBM, LSM, SM};
use super::spec::{side, Claim, Metric, Paper, PaperValue, Scale};

fn claim(figure: &'static str, text: &str, paper: f64, bench: &str, row: &str, metric: Metric) -> Claim {
    let (of, over) = (side(bench, row), side(bench, LSM));
    Claim { figure, text: text.to_string(), paper: PaperValue::Ratio(paper), of, over, metric }
}

/// LSbM's report.
pub fn paper(scale: Scale) -> Paper {
    let (thr, hit) = (Metric::Throughput, Metric::HitRatio);
    let claims = vec![
        claim(
            "Fig. 12",
            "RangeHot reads under writes: LSbM 1.98× bLSM's throughput",
            1.98,
            "rangehot",
            LSBM,
            thr,
        ),
        claim(
            "Fig. 12",
            "RangeHot reads under writes: LSbM's hit ratio 14 % above bLSM's",
            1.14,
            "rangehot",
            LSBM,
            hit,
        ),
        claim(
            "Fig. 13",
            "Zipfian reads under writes: 2 048 against 1 947 queries/s",
            2048.0 / 1947.0,
            "zipfian",
            LSBM,
            thr,
        ),
        claim(
            "Fig. 15",
            "range queries under writes: 1 134 against 1 066 queries/s",
            1134.0 / 1066.0,
            "ranges",
            LSBM,
            thr,
        ),
        claim(
            "Fig. 15",
            "range queries under writes: the SM-tree 228 against 1 066 queries/s",
            228.0 / 1066.0,
            "ranges",
            SM,
            thr,
        ),
        claim(
            "Fig. 16",
            "database size: LSbM about 4 % above bLSM (the buffer's files)",
            1.04,
            "ranges",
            LSBM,
            Metric::DbBytes,
        ),
    ];
    Paper {
        name: "lsbm",
        title: "LSbM (the compaction buffer with its trim): the paper's claims against Strata",
        paper_setup: "LevelDB 1.15 with the buffer built in, two 15k-rpm disks in RAID 0, 8 GB of memory \
                      (a 6 GB buffer cache), 20 GB of unique 1 KB records updated uniformly at 1 000 \
                      writes/s, 2 MB files in 20 MB super-files, 15 bloom bits per key, 8 reader threads",
        experiments: vec![buffer::experiment(
            scale,
            "Figures 11–16: reads and range queries under a steady writer, and the database size",
            claims,
        )],
        not_run: vec![
            ("Fig. 11(c), incremental warming up", "the bLSM variant that pre-loads compacted blocks overlapping cached ones is not built; `--compaction_warmup` warms differently (docs/BENCHMARKS.md)."),
            ("Figs. 14(b)–15, key-value store cache", "the bLSM variant with a separate key-value cache is not built; the row cache (`--row_cache_size`) is the nearest and is not part of this run."),
            ("Sizes and duration", "20 GB and 20 000 s per test exceed one run here; the conditions state the scale."),
        ],
    }
}
