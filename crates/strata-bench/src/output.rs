//! `--out DIR`: every result and sample as CSV and JSON, plus time-series
//! charts (see [`crate::charts`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::results::RunResult;

/// Columns of `results.csv`, in order.
pub const RESULTS_HEADER: [&str; 20] = [
    "engine",
    "benchmark",
    "repetition",
    "ops",
    "secs",
    "ops_per_sec",
    "p50_us",
    "p99_us",
    "p999_us",
    "write_amp",
    "hit_ratio",
    "db_bytes",
    "found",
    "mean_us",
    "stall_secs",
    "levels_in_use",
    "buffer_bytes",
    "tables_per_get",
    "tables_per_seek",
    "compaction_mb_s",
];

/// Columns of `samples.csv`, in order.
pub const SAMPLES_HEADER: [&str; 10] = [
    "engine",
    "benchmark",
    "repetition",
    "t_secs",
    "read_ops_per_sec",
    "write_ops_per_sec",
    "hit_ratio",
    "read_p50_us",
    "read_p99_us",
    "db_bytes",
];

/// Columns of `op_latencies.csv` (YCSB rows: one line per operation type;
/// multireadrandom rows: one `BATCH` line), in order.
pub const OP_LATENCIES_HEADER: [&str; 9] =
    ["engine", "benchmark", "repetition", "op", "count", "found", "p50_us", "p99_us", "p999_us"];

// Field order must match RESULTS_HEADER; `None` becomes an empty cell.
#[derive(Serialize)]
struct ResultRow<'a> {
    engine: &'a str,
    benchmark: &'a str,
    repetition: usize,
    ops: u64,
    secs: f64,
    ops_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    write_amp: Option<f64>,
    hit_ratio: Option<f64>,
    db_bytes: u64,
    found: u64,
    mean_us: f64,
    stall_secs: Option<f64>,
    levels_in_use: Option<usize>,
    buffer_bytes: Option<u64>,
    tables_per_get: Option<f64>,
    tables_per_seek: Option<f64>,
    compaction_mb_s: Option<f64>,
}

// Field order must match SAMPLES_HEADER.
#[derive(Serialize)]
struct SampleRow<'a> {
    engine: &'a str,
    benchmark: &'a str,
    repetition: usize,
    t_secs: f64,
    read_ops_per_sec: f64,
    write_ops_per_sec: f64,
    hit_ratio: Option<f64>,
    read_p50_us: f64,
    read_p99_us: f64,
    db_bytes: u64,
}

// Field order must match OP_LATENCIES_HEADER.
#[derive(Serialize)]
struct OpRow<'a> {
    engine: &'a str,
    benchmark: &'a str,
    repetition: usize,
    op: &'a str,
    count: u64,
    found: u64,
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
}

fn csv_writer(path: &Path, header: &[&str]) -> Result<csv::Writer<File>, String> {
    let file = File::create(path).map_err(|e| format!("create {}: {e}", path.display()))?;
    // Header written by hand so a file with no rows still names its columns.
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(file);
    w.write_record(header).map_err(|e| format!("write {}: {e}", path.display()))?;
    Ok(w)
}

fn write_results_csv(path: &Path, results: &[RunResult]) -> Result<(), String> {
    let mut w = csv_writer(path, &RESULTS_HEADER)?;
    for r in results {
        let row = ResultRow {
            engine: &r.engine,
            benchmark: &r.benchmark,
            repetition: r.repetition,
            ops: r.ops,
            secs: r.secs,
            ops_per_sec: r.ops_per_sec,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            p999_us: r.p999_us,
            write_amp: r.write_amplification,
            hit_ratio: r.hit_ratio,
            db_bytes: r.db_bytes,
            found: r.found,
            mean_us: r.mean_us,
            stall_secs: r.stall_micros.map(|m| m as f64 / 1e6),
            levels_in_use: r.levels_in_use,
            buffer_bytes: r.buffer_bytes,
            tables_per_get: r.tables_per_get,
            tables_per_seek: r.tables_per_seek,
            compaction_mb_s: r.compaction_mb_per_sec,
        };
        w.serialize(row).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    w.flush().map_err(|e| format!("write {}: {e}", path.display()))
}

fn write_samples_csv(path: &Path, results: &[RunResult]) -> Result<(), String> {
    let mut w = csv_writer(path, &SAMPLES_HEADER)?;
    for r in results {
        for s in &r.samples {
            let row = SampleRow {
                engine: &r.engine,
                benchmark: &r.benchmark,
                repetition: r.repetition,
                t_secs: s.t_secs,
                read_ops_per_sec: s.read_ops_per_sec,
                write_ops_per_sec: s.write_ops_per_sec,
                hit_ratio: s.hit_ratio,
                read_p50_us: s.read_p50_us,
                read_p99_us: s.read_p99_us,
                db_bytes: s.db_bytes,
            };
            w.serialize(row).map_err(|e| format!("write {}: {e}", path.display()))?;
        }
    }
    w.flush().map_err(|e| format!("write {}: {e}", path.display()))
}

fn write_op_latencies_csv(path: &Path, results: &[RunResult]) -> Result<(), String> {
    let mut w = csv_writer(path, &OP_LATENCIES_HEADER)?;
    for r in results {
        for o in &r.op_latencies {
            let row = OpRow {
                engine: &r.engine,
                benchmark: &r.benchmark,
                repetition: r.repetition,
                op: &o.op,
                count: o.count,
                found: o.found,
                p50_us: o.p50_us,
                p99_us: o.p99_us,
                p999_us: o.p999_us,
            };
            w.serialize(row).map_err(|e| format!("write {}: {e}", path.display()))?;
        }
    }
    w.flush().map_err(|e| format!("write {}: {e}", path.display()))
}

fn write_json(path: &Path, results: &[RunResult]) -> Result<(), String> {
    let file = File::create(path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let mut w = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut w, results).map_err(|e| format!("write {}: {e}", path.display()))?;
    w.write_all(b"\n").and_then(|()| w.flush()).map_err(|e| format!("write {}: {e}", path.display()))
}

/// Writes `results.csv`, `samples.csv`, `op_latencies.csv` (YCSB's
/// per-operation-type latencies, multireadrandom's per-batch ones), `results.json` (all of it) and, for every
/// benchmark with samples, its SVG charts into `dir` (created if missing).
/// Returns the paths written.
pub fn write_outputs(dir: &Path, results: &[RunResult]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let results_csv = dir.join("results.csv");
    write_results_csv(&results_csv, results)?;
    let samples_csv = dir.join("samples.csv");
    write_samples_csv(&samples_csv, results)?;
    let ops_csv = dir.join("op_latencies.csv");
    write_op_latencies_csv(&ops_csv, results)?;
    let json = dir.join("results.json");
    write_json(&json, results)?;
    let mut written = vec![results_csv, samples_csv, ops_csv, json];
    written.extend(crate::charts::write_charts(dir, results)?);
    Ok(written)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::Sample;

    fn synthetic() -> Vec<RunResult> {
        let mut out = Vec::new();
        for (engine, speed, hit) in [
            ("strata/leveled", 100_000.0, Some(0.9)),
            ("rocksdb", 80_000.0, Some(0.8)),
            ("leveldb", 60_000.0, None),
        ] {
            for repetition in 0..2 {
                let samples = (1..=5)
                    .map(|t| Sample {
                        t_secs: t as f64,
                        read_ops_per_sec: speed + 1000.0 * t as f64 + repetition as f64,
                        write_ops_per_sec: 500.0,
                        hit_ratio: hit.map(|h: f64| h - 0.01 * t as f64),
                        read_p50_us: 10.0,
                        read_p99_us: 50.0,
                        db_bytes: 1_000_000 * t,
                    })
                    .collect();
                out.push(RunResult {
                    engine: engine.into(),
                    benchmark: "readwhilewriting".into(),
                    repetition,
                    ops: 1000,
                    secs: 5.0,
                    ops_per_sec: speed,
                    p50_us: 10.0,
                    p99_us: 50.0,
                    p999_us: 90.0,
                    mean_us: 20.0,
                    stall_micros: Some(1_500_000),
                    levels_in_use: Some(3),
                    write_amplification: hit.map(|_| 3.5),
                    hit_ratio: hit,
                    db_bytes: 5_000_000,
                    buffer_bytes: hit.map(|_| 400_000),
                    tables_per_get: hit.map(|_| 1.5),
                    tables_per_seek: hit.map(|_| 2.25),
                    compaction_mb_per_sec: hit.map(|_| 12.5),
                    stages: None,
                    found: 1000,
                    samples,
                    op_latencies: Vec::new(),
                    device_profile: String::new(),
                    drive: None,
                });
            }
            // A benchmark without a time series: rows in results.csv, no charts.
            out.push(RunResult {
                engine: engine.into(),
                benchmark: "fillrandom".into(),
                ops: 1000,
                ..RunResult::default()
            });
            // A YCSB row: its per-operation latencies go to op_latencies.csv.
            let op = |op: &str| crate::results::OpSummary {
                op: op.into(),
                count: 500,
                found: 400,
                p50_us: 3.0,
                p99_us: 9.0,
                p999_us: 20.0,
            };
            out.push(RunResult {
                engine: engine.into(),
                benchmark: "ycsb-a".into(),
                ops: 1000,
                op_latencies: vec![op("READ"), op("UPDATE")],
                ..RunResult::default()
            });
        }
        out
    }

    #[test]
    fn writes_csv_json_and_charts() {
        let dir = tempfile::tempdir().unwrap();
        let results = synthetic();
        let paths = write_outputs(dir.path(), &results).unwrap();

        let mut rd = csv::ReaderBuilder::new().from_path(dir.path().join("results.csv")).unwrap();
        assert_eq!(rd.headers().unwrap(), &csv::StringRecord::from(RESULTS_HEADER.to_vec()));
        let rows: Vec<_> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), results.len());
        assert!(rows.iter().all(|r| r.len() == RESULTS_HEADER.len()));
        // leveldb's missing hit ratio is an empty cell, not 0.
        assert_eq!(&rows[8][0], "leveldb");
        assert_eq!(&rows[8][10], "");
        // The new columns: mean latency, stall seconds, levels in use, buffer
        // bytes, tables per get, tables per seek, compaction MB/s.
        assert_eq!(
            (
                &rows[0][13],
                &rows[0][14],
                &rows[0][15],
                &rows[0][16],
                &rows[0][17],
                &rows[0][18],
                &rows[0][19]
            ),
            ("20.0", "1.5", "3", "400000", "1.5", "2.25", "12.5")
        );
        assert_eq!(
            (&rows[8][16], &rows[8][17], &rows[8][18], &rows[8][19]),
            ("", "", "", ""),
            "leveldb counts none"
        );

        let mut rd = csv::ReaderBuilder::new().from_path(dir.path().join("op_latencies.csv")).unwrap();
        assert_eq!(rd.headers().unwrap(), &csv::StringRecord::from(OP_LATENCIES_HEADER.to_vec()));
        let ops: Vec<_> = rd.records().map(Result::unwrap).collect();
        assert_eq!(ops.len(), 3 * 2, "READ and UPDATE of each engine's ycsb-a");
        assert_eq!(
            ops[1].iter().collect::<Vec<_>>(),
            ["strata/leveled", "ycsb-a", "0", "UPDATE", "500", "400", "3.0", "9.0", "20.0"]
        );

        let mut rd = csv::ReaderBuilder::new().from_path(dir.path().join("samples.csv")).unwrap();
        assert_eq!(rd.headers().unwrap(), &csv::StringRecord::from(SAMPLES_HEADER.to_vec()));
        let total: usize = results.iter().map(|r| r.samples.len()).sum();
        assert_eq!(rd.records().count(), total);

        let text = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
        let back: Vec<RunResult> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, results);

        for metric in ["hit_ratio", "read_throughput", "read_p99", "db_size"] {
            let p = dir.path().join(format!("readwhilewriting-{metric}.svg"));
            assert!(paths.contains(&p), "{} not reported", p.display());
            let svg = std::fs::read_to_string(&p).unwrap();
            assert!(svg.starts_with("<svg"), "{metric}");
            assert!(svg.contains("strata/leveled") && svg.contains("rocksdb"), "{metric} legend");
        }
        // leveldb has no hit ratio: no line, only a mention in the title.
        let hit = std::fs::read_to_string(dir.path().join("readwhilewriting-hit_ratio.svg")).unwrap();
        assert_eq!(hit.matches("leveldb").count(), 1);
        assert!(hit.contains("not reported by leveldb"));
        let tput = std::fs::read_to_string(dir.path().join("readwhilewriting-read_throughput.svg")).unwrap();
        assert!(tput.contains("leveldb"));
        assert!(!dir.path().join("fillrandom-read_throughput.svg").exists());
        assert_eq!(paths.len(), 4 + 4);
    }

    #[test]
    fn empty_results_still_have_headers() {
        let dir = tempfile::tempdir().unwrap();
        let paths = write_outputs(&dir.path().join("nested"), &[]).unwrap();
        assert_eq!(paths.len(), 4);
        let head = std::fs::read_to_string(dir.path().join("nested/samples.csv")).unwrap();
        assert_eq!(head.trim_end(), SAMPLES_HEADER.join(","));
    }
}
