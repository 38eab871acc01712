//! The stdout report: one row per (benchmark, engine) with medians over
//! repetitions, [min–max] ranges, and the ratio against the baseline engine;
//! then the time series of sampled benchmarks.

use crate::results::{OpSummary, RunResult};
use hdrhistogram::Histogram;
use std::fmt::Write as _;

/// Median of `v` (mean of the middle two for even counts); NaN when empty.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// Results grouped by (benchmark, engine), in first-seen order of each.
fn groups(results: &[RunResult]) -> Vec<(String, String, Vec<&RunResult>)> {
    let mut benches: Vec<&str> = Vec::new();
    let mut engines: Vec<&str> = Vec::new();
    for r in results {
        if !benches.contains(&r.benchmark.as_str()) {
            benches.push(&r.benchmark);
        }
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
    }
    let mut out = Vec::new();
    for b in &benches {
        for e in &engines {
            let rs: Vec<&RunResult> =
                results.iter().filter(|r| r.benchmark == *b && r.engine == *e).collect();
            if !rs.is_empty() {
                out.push((b.to_string(), e.to_string(), rs));
            }
        }
    }
    out
}

fn med_of(rs: &[&RunResult], f: impl Fn(&RunResult) -> f64) -> f64 {
    median(&rs.iter().map(|r| f(r)).collect::<Vec<_>>())
}

fn med_opt(rs: &[&RunResult], f: impl Fn(&RunResult) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = rs.iter().filter_map(|r| f(r)).collect();
    (!v.is_empty()).then(|| median(&v))
}

/// `x` with a precision that suits its size; `-` for NaN.
fn num(x: f64) -> String {
    if x.is_nan() {
        "-".into()
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Bytes as MiB.
pub fn mib(bytes: f64) -> String {
    if bytes.is_nan() {
        "-".into()
    } else {
        format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
    }
}

/// The results table. `baseline` names the engine row the ratio column divides by
/// (default: the first engine seen).
pub fn format_table(results: &[RunResult], baseline: Option<&str>) -> String {
    let base = baseline.map(str::to_string).or_else(|| results.first().map(|r| r.engine.clone()));
    let groups = groups(results);
    let reps = groups.iter().map(|g| g.2.len()).max().unwrap_or(0);
    let ratio_head = format!("vs {}", base.as_deref().unwrap_or("-"));
    let head = [
        "benchmark",
        "engine",
        if reps > 1 { "ops/s median [min–max]" } else { "ops/s" },
        &ratio_head,
        "mean µs",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "w-amp",
        "stall s",
        "levels",
        "hit %",
        "size",
        "found",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for (bench, engine, rs) in &groups {
        let ops = med_of(rs, |r| r.ops_per_sec);
        let mut ops_cell = format!("{ops:.0}");
        if rs.len() > 1 {
            let lo = rs.iter().map(|r| r.ops_per_sec).fold(f64::INFINITY, f64::min);
            let hi = rs.iter().map(|r| r.ops_per_sec).fold(f64::NEG_INFINITY, f64::max);
            let _ = write!(ops_cell, " [{lo:.0}–{hi:.0}]");
        }
        let base_ops = groups
            .iter()
            .find(|g| &g.0 == bench && Some(&g.1) == base.as_ref())
            .map(|g| med_of(&g.2, |r| r.ops_per_sec));
        let ratio = match base_ops {
            Some(b) if b > 0.0 => format!("{:.2}x", ops / b),
            _ => "-".into(),
        };
        let found = med_of(rs, |r| r.found as f64);
        let total = med_of(rs, |r| r.ops as f64);
        rows.push(vec![
            bench.clone(),
            engine.clone(),
            ops_cell,
            ratio,
            num(med_of(rs, |r| r.mean_us)),
            num(med_of(rs, |r| r.p50_us)),
            num(med_of(rs, |r| r.p99_us)),
            num(med_of(rs, |r| r.p999_us)),
            med_opt(rs, |r| r.write_amplification).map_or("-".into(), num),
            med_opt(rs, |r| r.stall_micros.map(|m| m as f64 / 1e6)).map_or("-".into(), |s| format!("{s:.1}")),
            med_opt(rs, |r| r.levels_in_use.map(|l| l as f64)).map_or("-".into(), |l| format!("{l:.0}")),
            med_opt(rs, |r| r.hit_ratio).map_or("-".into(), |h| format!("{:.1}", h * 100.0)),
            mib(med_of(rs, |r| r.db_bytes as f64)),
            if found > 0.0 { format!("{found:.0}/{total:.0}") } else { "-".into() },
        ]);
    }
    render(&rows, 2)
}

/// Under the table: what the w-amp and hit % columns cover.
pub const TABLE_NOTE: &str = "w-amp, stall s: write amplification and writer stall time cumulative \
                              since the database was opened (include earlier benchmarks in the list); \
                              levels: deepest level holding data at the end; hit %: this benchmark only";

/// Per-operation-type latencies of every row that has them (YCSB's
/// operations, multireadrandom's batches), medians over repetitions; empty
/// when no row has them.
pub fn format_op_table(results: &[RunResult]) -> String {
    let head = ["benchmark", "engine", "operation", "ops", "p50 µs", "p99 µs", "p99.9 µs"];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for (bench, engine, rs) in groups(results) {
        let mut ops: Vec<&str> = Vec::new();
        for o in rs.iter().flat_map(|r| &r.op_latencies) {
            if !ops.contains(&o.op.as_str()) {
                ops.push(&o.op);
            }
        }
        for op in ops {
            let of: Vec<&OpSummary> =
                rs.iter().filter_map(|r| r.op_latencies.iter().find(|o| o.op == op)).collect();
            let med = |f: fn(&OpSummary) -> f64| median(&of.iter().map(|o| f(o)).collect::<Vec<_>>());
            rows.push(vec![
                bench.clone(),
                engine.clone(),
                op.to_string(),
                format!("{:.0}", med(|o| o.count as f64)),
                num(med(|o| o.p50_us)),
                num(med(|o| o.p99_us)),
                num(med(|o| o.p999_us)),
            ]);
        }
    }
    if rows.len() == 1 {
        return String::new();
    }
    render(&rows, 3)
}

/// The simulated drive's counters (`--drive_model`) of every row that ran
/// on one, medians over repetitions; empty when none did.
pub fn format_drive_table(results: &[RunResult]) -> String {
    let head = [
        "benchmark",
        "engine",
        "drive (SIMULATED)",
        "user MB/s",
        "busy s",
        "AWA",
        "MWA",
        "band rewrites",
        "cached",
        "seeks",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for (bench, engine, rs) in groups(results) {
        let drives: Vec<_> = rs.iter().filter_map(|r| r.drive.as_ref()).collect();
        let Some(first) = drives.first() else { continue };
        let med = |f: &dyn Fn(&crate::results::DriveResult) -> f64| {
            median(&drives.iter().map(|d| f(d)).collect::<Vec<_>>())
        };
        let mwa = med_opt(&rs, |r| Some(r.drive.as_ref()?.stats.awa() * r.write_amplification?));
        rows.push(vec![
            bench,
            engine,
            first.model.clone(),
            num(med(&|d| d.user_mb_per_sec())),
            num(med(&|d| d.stats.busy_secs)),
            num(med(&|d| d.stats.awa())),
            mwa.map_or("-".into(), num),
            format!("{:.0}", med(&|d| d.stats.band_rewrites as f64)),
            mib(med(&|d| d.stats.cached as f64)),
            format!("{:.0}", med(&|d| d.stats.seeks as f64)),
        ]);
    }
    if rows.len() == 1 {
        return String::new();
    }
    render(&rows, 3)
}

/// Under the drive table: what its columns mean.
pub const DRIVE_NOTE: &str = "user MB/s: bytes the writes carried over the seconds the simulated drive was \
                              busy (seeks and transfers, one request at a time); AWA: media bytes written per \
                              byte the engine wrote; MWA: the engine's write amplification (w-amp) times \
                              AWA; all cumulative since the database was opened";

/// YCSB's own per-operation report lines for one row (`[READ], Operations, 950`,
/// `[READ], 99thPercentileLatency(us), 12.5`, …; multireadrandom's `[BATCH]`
/// lines in the same form); empty for other rows.
pub fn ycsb_op_lines(r: &RunResult) -> String {
    let mut out = String::new();
    for o in &r.op_latencies {
        let op = &o.op;
        let _ = writeln!(out, "[{op}], Operations, {}", o.count);
        let _ = writeln!(out, "[{op}], 50thPercentileLatency(us), {}", num(o.p50_us));
        let _ = writeln!(out, "[{op}], 99thPercentileLatency(us), {}", num(o.p99_us));
        let _ = writeln!(out, "[{op}], 99.9PercentileLatency(us), {}", num(o.p999_us));
    }
    out
}

/// Left-aligns the first `text_cols` columns, right-aligns the numeric ones.
fn render(rows: &[Vec<String>], text_cols: usize) -> String {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c < text_cols {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1)));
            out.push('\n');
        }
    }
    out
}

/// The time series of every sampled result, one block per (engine, benchmark, repetition).
pub fn format_series(results: &[RunResult]) -> String {
    let mut out = String::new();
    for r in results.iter().filter(|r| !r.samples.is_empty()) {
        let _ = writeln!(out, "\n{} / {} (repetition {})", r.engine, r.benchmark, r.repetition);
        let mut rows =
            vec![["t s", "read ops/s", "write ops/s", "hit %", "read p50 µs", "read p99 µs", "size"]
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()];
        for s in &r.samples {
            rows.push(vec![
                format!("{:.1}", s.t_secs),
                format!("{:.0}", s.read_ops_per_sec),
                format!("{:.0}", s.write_ops_per_sec),
                s.hit_ratio.map_or("-".into(), |h| format!("{:.1}", h * 100.0)),
                num(s.read_p50_us),
                num(s.read_p99_us),
                mib(s.db_bytes as f64),
            ]);
        }
        out.push_str(&render(&rows, 2));
    }
    out
}

/// db_bench's one-line summary of a finished benchmark.
pub fn db_bench_line(r: &RunResult, bytes: u64) -> String {
    let us_per_op = if r.ops > 0 { r.secs * 1e6 / r.ops as f64 } else { f64::NAN };
    let mut line = format!(
        "{:<16} {:<26}: {:>11.3} micros/op {:>9.0} ops/sec;",
        r.engine, r.benchmark, us_per_op, r.ops_per_sec
    );
    if bytes > 0 && r.secs > 0.0 {
        let _ = write!(line, " {:>6.1} MB/s", bytes as f64 / 1_048_576.0 / r.secs);
    }
    if r.found > 0 || r.benchmark.contains("read") || r.benchmark.contains("seek") {
        let _ = write!(line, " ({} of {} found)", r.found, r.ops);
    }
    line
}

/// db_bench's `--histogram` dump: summary, percentiles and log-spaced buckets (µs).
pub fn format_histogram(h: &Histogram<u64>) -> String {
    let us = |ns: f64| ns / 1000.0;
    let mut out = format!(
        "Microseconds per op:\nCount: {}  Average: {:.4}  StdDev: {:.2}\nMin: {:.3}  Median: {:.3}  Max: {:.3}\n\
         Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}\n",
        h.len(),
        us(h.mean()),
        us(h.stdev()),
        us(h.min() as f64),
        us(h.value_at_quantile(0.5) as f64),
        us(h.max() as f64),
        us(h.value_at_quantile(0.5) as f64),
        us(h.value_at_quantile(0.75) as f64),
        us(h.value_at_quantile(0.99) as f64),
        us(h.value_at_quantile(0.999) as f64),
        us(h.value_at_quantile(0.9999) as f64),
    );
    if h.is_empty() {
        return out;
    }
    out.push_str("------------------------------------------------------\n");
    let mut cum = 0u64;
    let total = h.len() as f64;
    let mut lo = 0.0;
    for v in h.iter_log(1000, 2.0) {
        let n = v.count_since_last_iteration();
        let hi = us(v.value_iterated_to() as f64);
        if n > 0 {
            cum += n;
            let _ = writeln!(
                out,
                "[ {lo:>10.1}, {hi:>10.1} ) {n:>10} {:>7.3}% {:>7.3}%",
                n as f64 * 100.0 / total,
                cum as f64 * 100.0 / total
            );
        }
        lo = hi;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rr(engine: &str, bench: &str, rep: usize, ops: f64) -> RunResult {
        RunResult {
            engine: engine.into(),
            benchmark: bench.into(),
            repetition: rep,
            ops: 10,
            ops_per_sec: ops,
            p50_us: 1.0,
            p99_us: 2.0,
            p999_us: 3.0,
            ..Default::default()
        }
    }

    #[test]
    fn median_handles_odd_even_and_nan() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }

    #[test]
    fn table_has_medians_ranges_and_ratios() {
        let results = vec![
            rr("a", "fillrandom", 0, 100.0),
            rr("b", "fillrandom", 0, 50.0),
            rr("a", "fillrandom", 1, 300.0),
            rr("b", "fillrandom", 1, 70.0),
            rr("a", "fillrandom", 2, 200.0),
            rr("b", "fillrandom", 2, 60.0),
        ];
        let t = format_table(&results, Some("b"));
        assert!(t.contains("200 [100–300]"), "{t}");
        assert!(t.contains("60 [50–70]"), "{t}");
        assert!(t.contains("3.33x"), "{t}");
        assert!(t.contains("1.00x"), "{t}");
        assert!(t.contains("vs b"), "{t}");
        assert!(format_op_table(&results).is_empty(), "no YCSB rows");
    }

    #[test]
    fn ycsb_rows_get_per_operation_latencies() {
        let op = |op: &str, count, p99_us| OpSummary {
            op: op.into(),
            count,
            p50_us: 1.0,
            p99_us,
            p999_us: 50.0,
            ..Default::default()
        };
        let mut results = Vec::new();
        for (rep, p99) in [(0, 10.0), (1, 30.0), (2, 20.0)] {
            let mut r = rr("strata/leveled", "ycsb-a", rep, 100.0);
            r.op_latencies = vec![op("READ", 500, p99), op("UPDATE", 500, 2.0 * p99)];
            results.push(r);
        }
        let lines = ycsb_op_lines(&results[0]);
        assert!(lines.contains("[READ], Operations, 500\n"), "{lines}");
        assert!(lines.contains("[READ], 99thPercentileLatency(us), 10.0\n"), "{lines}");
        assert!(lines.contains("[UPDATE], 99.9PercentileLatency(us), 50.0\n"), "{lines}");
        let t = format_op_table(&results);
        let read = t.lines().find(|l| l.contains("READ")).unwrap();
        assert!(read.starts_with("ycsb-a") && read.contains(" 20.0 "), "median p99 of READ: {t}");
        assert!(t.lines().any(|l| l.contains("UPDATE") && l.contains(" 40.0 ")), "{t}");
    }
}
