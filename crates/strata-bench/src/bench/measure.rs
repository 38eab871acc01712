//! Per-operation latency histograms, worker threads, progress bars, and turning
//! what the workers measured into a [`RunResult`].

use crate::engine::{dir_size, BenchResult, Engine, EngineStats};
use crate::results::{RunResult, StageSecs};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, WeakProgressBar};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// A latency histogram in nanoseconds (3 significant figures, up to one hour);
/// nanoseconds so sub-microsecond operations keep their precision, reported in µs.
pub fn new_hist() -> BenchResult<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).map_err(|e| format!("histogram: {e:?}"))
}

/// The `q` quantile of `h` in microseconds; NaN when nothing was recorded.
pub fn quantile_us(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.value_at_quantile(q) as f64 / 1000.0
    }
}

/// Mean of a histogram in microseconds (NaN when empty).
pub fn mean_us(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.mean() / 1000.0
    }
}

/// Block-cache hit ratio between two snapshots of an engine's counters
/// (None if the engine has no counters or there were no lookups).
pub fn hit_ratio_between(before: &EngineStats, after: &EngineStats) -> Option<f64> {
    let hits = after.cache_hits?.saturating_sub(before.cache_hits?);
    let misses = after.cache_misses?.saturating_sub(before.cache_misses?);
    (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64)
}

/// Tables searched per point read between two counter snapshots.
pub fn tables_per_get_between(before: &EngineStats, after: &EngineStats) -> Option<f64> {
    let gets = after.gets?.saturating_sub(before.gets?);
    let probes = after.get_table_probes?.saturating_sub(before.get_table_probes?);
    (gets > 0).then(|| probes as f64 / gets as f64)
}

/// Tables opened per iterator seek between two counter snapshots.
pub fn tables_per_seek_between(before: &EngineStats, after: &EngineStats) -> Option<f64> {
    let seeks = after.iter_seeks?.saturating_sub(before.iter_seeks?);
    let opened = after.iter_tables_opened?.saturating_sub(before.iter_tables_opened?);
    (seeks > 0).then(|| opened as f64 / seeks as f64)
}

/// MB compactions read between two counter snapshots `secs` apart, per second.
pub fn compaction_mb_per_sec_between(before: &EngineStats, after: &EngineStats, secs: f64) -> Option<f64> {
    let bytes = after.compaction_bytes_read?.saturating_sub(before.compaction_bytes_read?);
    (bytes > 0 && secs > 0.0).then(|| bytes as f64 / 1e6 / secs)
}

/// The compactions' stage times between two counter snapshots; `None`
/// when the engine does not time them or no compaction ran.
pub fn stages_between(before: &EngineStats, after: &EngineStats) -> Option<StageSecs> {
    let (b, a) = (before.compaction_stages?, after.compaction_stages?);
    let s = StageSecs {
        bytes: a.bytes.saturating_sub(b.bytes),
        read: a.read - b.read,
        merge: a.merge - b.merge,
        compute: a.compute - b.compute,
        write: a.write - b.write,
    };
    (s.bytes > 0).then_some(s)
}

/// What one worker thread measured.
pub struct ThreadOut {
    /// Operations completed.
    pub ops: u64,
    /// Reads that found something.
    pub found: u64,
    /// Key + value bytes moved.
    pub bytes: u64,
    /// Per-operation latencies (per batch for multireadrandom).
    pub hist: Histogram<u64>,
    /// Batches of multireadrandom (0 for the other benchmarks).
    pub batches: u64,
}

impl ThreadOut {
    /// An empty record.
    pub fn new() -> BenchResult<Self> {
        Ok(ThreadOut { ops: 0, found: 0, bytes: 0, hist: new_hist()?, batches: 0 })
    }

    /// Records one operation that took `ns`.
    #[inline]
    pub fn record(&mut self, ns: u64, bytes: usize, found: bool) {
        self.ops += 1;
        self.bytes += bytes as u64;
        self.found += u64::from(found);
        self.hist.saturating_record(ns.max(1));
    }

    /// Records one batch of `keys` operations that took `ns` (db_bench's
    /// `FinishedOps` with `num_ops`: one latency sample, `keys` operations).
    #[inline]
    pub fn record_batch(&mut self, ns: u64, keys: u64, bytes: u64, found: u64) {
        self.ops += keys;
        self.bytes += bytes;
        self.found += found;
        self.batches += 1;
        self.hist.saturating_record(ns.max(1));
    }
}

/// Runs `f(thread_index)` on `threads` threads and collects their results; the
/// first error wins.
pub fn run_threads<F>(threads: usize, f: F) -> BenchResult<Vec<ThreadOut>>
where
    F: Fn(usize) -> BenchResult<ThreadOut> + Sync,
{
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn({
                    let f = &f;
                    move || f(t)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().map_err(|_| "benchmark thread panicked".to_string())?).collect()
    })
}

/// A progress bar on stderr (hidden with `--quiet`). indicatif draws nothing
/// when stderr is not a terminal (a CI log, `2>file`), so there the bar stays
/// hidden and a plain line reports it every [`PLAIN_PROGRESS_EVERY`].
pub fn progress(quiet: bool, len: u64, label: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    if !std::io::stderr().is_terminal() {
        let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        pb.set_message(label.to_string());
        report_plainly(pb.downgrade(), PLAIN_PROGRESS_EVERY);
        return pb;
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{msg:>40} [{bar:30}] {percent:>3}% {elapsed}/{eta}") {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(label.to_string());
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

/// How often a progress line is printed when stderr is not a terminal.
pub const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Prints `line` on stderr as a benchmark measures it (db_bench's interval
/// stats): above the bar on a terminal, as a plain line otherwise; nothing
/// with `--quiet`.
pub fn progress_println(pb: &ProgressBar, quiet: bool, line: &str) {
    if quiet {
    } else if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
}

/// Prints [`plain_progress_line`] every `every` until the bar finishes or is dropped.
fn report_plainly(pb: WeakProgressBar, every: Duration) {
    std::thread::spawn(move || {
        let mut next = Instant::now() + every;
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let Some(pb) = pb.upgrade() else { return };
            if pb.is_finished() {
                return;
            }
            if Instant::now() >= next {
                next += every;
                eprintln!("{}", plain_progress_line(&pb));
            }
        }
    });
}

/// `label: 45% (900000/2000000), 12 s elapsed, about 15 s left`.
pub fn plain_progress_line(pb: &ProgressBar) -> String {
    let (pos, len) = (pb.position(), pb.length().unwrap_or(0));
    let pct = if len == 0 { 0.0 } else { pos as f64 * 100.0 / len as f64 };
    let elapsed = pb.elapsed().as_secs_f64();
    let left = if pos == 0 || pos >= len {
        String::new()
    } else {
        format!(", about {:.0} s left", elapsed * (len - pos) as f64 / pos as f64)
    };
    format!("{}: {pct:.0}% ({pos}/{len}), {elapsed:.0} s elapsed{left}", pb.message())
}

/// Workers tick the bar every this many operations (one atomic per batch).
pub const PROGRESS_BATCH: u64 = 1024;

/// Entries a timed `readseq` reads between clock checks: a scan call per
/// entry would cost more than the entry.
pub const SCAN_CHUNK: u64 = 1024;

/// db_bench's `--duration` for closed-loop benchmarks: stop once it has passed,
/// even if `--num`/`--reads` operations are not done. No limit when 0.
/// Checked after every operation against the clock reading that timed it
/// (db_bench checks every 1000 operations, `--ops_between_duration_checks`;
/// 1024 range queries at 140 ms under the `hdd` profile made a 10 s step
/// run for 144 s).
#[derive(Clone, Copy, Debug)]
pub struct Deadline(Option<std::time::Instant>);

impl Deadline {
    /// `secs` after `start` (0, or too far to represent, means no limit).
    pub fn new(start: std::time::Instant, secs: f64) -> Self {
        let end = Duration::try_from_secs_f64(secs).ok().filter(|d| !d.is_zero());
        Deadline(end.and_then(|d| start.checked_add(d)))
    }

    /// True when there is a limit.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// True once the limit has passed (reads the clock).
    pub fn expired(&self) -> bool {
        self.0.is_some_and(|end| std::time::Instant::now() >= end)
    }

    /// True once the limit has passed by `now`, a clock reading the caller
    /// already took (to time its operation), so the check costs no clock read.
    #[inline]
    pub fn passed_at(&self, now: std::time::Instant) -> bool {
        self.0.is_some_and(|end| now >= end)
    }
}

/// Ends a closed-loop benchmark started at `start`: clears the progress bar
/// and builds its outcome (result, merged histogram, bytes moved).
pub fn conclude(
    engine: &dyn Engine,
    benchmark: &str,
    before: &EngineStats,
    start: std::time::Instant,
    pb: &ProgressBar,
    outs: Vec<ThreadOut>,
) -> BenchResult<super::Outcome> {
    let secs = start.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let bytes = outs.iter().map(|o| o.bytes).sum();
    let (result, hist) = finish(engine, benchmark, before, secs, outs)?;
    Ok(super::Outcome { results: vec![(result, Some(super::Latencies::single(hist)))], bytes })
}

/// Builds the result of a closed-loop benchmark from its workers' records.
pub fn finish(
    engine: &dyn Engine,
    benchmark: &str,
    before: &EngineStats,
    secs: f64,
    outs: Vec<ThreadOut>,
) -> BenchResult<(RunResult, Histogram<u64>)> {
    let mut hist = new_hist()?;
    let (mut ops, mut found) = (0, 0);
    for o in outs {
        ops += o.ops;
        found += o.found;
        hist.add(&o.hist).map_err(|e| format!("histogram: {e:?}"))?;
    }
    let after = engine.stats();
    let r = RunResult {
        engine: engine.name(),
        benchmark: benchmark.to_string(),
        repetition: 0,
        ops,
        secs,
        ops_per_sec: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
        p50_us: quantile_us(&hist, 0.5),
        p99_us: quantile_us(&hist, 0.99),
        p999_us: quantile_us(&hist, 0.999),
        mean_us: mean_us(&hist),
        stall_micros: after.stall_micros,
        levels_in_use: after.levels_in_use,
        buffer_bytes: after.buffer_bytes,
        write_amplification: after.write_amplification,
        hit_ratio: hit_ratio_between(before, &after),
        tables_per_get: tables_per_get_between(before, &after),
        tables_per_seek: tables_per_seek_between(before, &after),
        compaction_mb_per_sec: compaction_mb_per_sec_between(before, &after, secs),
        stages: stages_between(before, &after),
        db_bytes: dir_size(engine.path()),
        found,
        samples: Vec::new(),
        op_latencies: Vec::new(),
        device_profile: String::new(),
        drive: after.drive.as_ref().map(|d| crate::results::DriveResult::over(d, before.drive.as_ref())),
    };
    Ok((r, hist))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_progress_line_says_how_far_and_how_long() {
        let pb = ProgressBar::with_draw_target(Some(200), ProgressDrawTarget::hidden());
        pb.set_message("fillrandom");
        assert!(plain_progress_line(&pb).starts_with("fillrandom: 0% (0/200), "));
        assert!(!plain_progress_line(&pb).contains("left"), "no estimate before any progress");
        pb.set_position(50);
        let line = plain_progress_line(&pb);
        assert!(line.starts_with("fillrandom: 25% (50/200), ") && line.ends_with(" s left"), "{line}");
        assert!(pb.is_hidden(), "a hidden bar's lines go to stderr directly");
    }
}
