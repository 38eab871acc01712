//! deleterange and deletepoint: the same `--delete_fraction` of the keys,
//! as `--delete_ranges` contiguous ranges spread evenly over the key space,
//! deleted with one range delete per range or one point delete per key.

use super::measure::{conclude, progress, run_threads, ThreadOut};
use super::Outcome;
use crate::cli::Args;
use crate::engine::{BenchResult, Engine};

/// The deleted index ranges `[start, end)`: `ranges` of equal length
/// (together `fraction` of `num`), each at the start of its equal slice.
pub fn delete_spans(num: u64, fraction: f64, ranges: u64) -> Vec<(u64, u64)> {
    let total = ((num as f64) * fraction).round() as u64;
    let ranges = ranges.clamp(1, total.max(1));
    let len = total / ranges;
    let slice = num / ranges;
    (0..ranges).map(|r| (r * slice, r * slice + len)).filter(|(a, b)| a < b).collect()
}

/// Runs deleterange (one range delete per span) or deletepoint (a delete
/// per key of the spans) on one thread; one operation is one call.
pub fn deletes(
    engine: &dyn Engine,
    name: &str,
    args: &Args,
    warnings: &mut Vec<String>,
) -> BenchResult<Outcome> {
    let spans = delete_spans(args.num, args.delete_fraction, args.delete_ranges);
    let range = name == "deleterange";
    if range && !engine.has_delete_range() {
        warnings.push(format!("warning: {} has no range delete; deleterange skipped", engine.name()));
        return Ok(Outcome { results: Vec::new(), bytes: 0 });
    }
    let calls = if range { spans.len() as u64 } else { spans.iter().map(|(a, b)| b - a).sum() };
    let pb = progress(args.quiet, calls, name);
    let before = engine.stats();
    let start = std::time::Instant::now();
    let fmt = args.key_format();
    let outs = run_threads(1, |_| {
        let mut out = ThreadOut::new()?;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for &(lo, hi) in &spans {
            if range {
                fmt.key_into(lo, &mut a);
                fmt.key_into(hi, &mut b);
                let t0 = std::time::Instant::now();
                engine.delete_range(&a, &b)?;
                out.record(t0.elapsed().as_nanos() as u64, a.len() + b.len(), false);
                pb.inc(1);
                continue;
            }
            for i in lo..hi {
                fmt.key_into(i, &mut a);
                let t0 = std::time::Instant::now();
                engine.delete(&a)?;
                out.record(t0.elapsed().as_nanos() as u64, a.len(), false);
            }
            pb.inc(hi - lo);
        }
        Ok(out)
    })?;
    conclude(engine, name, &before, start, &pb, outs)
}

/// The `compact` benchmark: one whole-key-space compaction, timed as one
/// operation (engines without one wait for their compactions, with a warning).
pub fn compact(
    engine: &dyn Engine,
    name: &str,
    args: &Args,
    warnings: &mut Vec<String>,
) -> BenchResult<Outcome> {
    let pb = progress(args.quiet, 1, name);
    let before = engine.stats();
    let start = std::time::Instant::now();
    let waited = std::sync::atomic::AtomicBool::new(false);
    let outs = run_threads(1, |_| {
        let mut out = ThreadOut::new()?;
        let t0 = std::time::Instant::now();
        if !engine.compact_all()? {
            waited.store(true, std::sync::atomic::Ordering::Relaxed);
            engine.wait_for_compactions()?;
        }
        out.record(t0.elapsed().as_nanos() as u64, 0, false);
        Ok(out)
    })?;
    if waited.into_inner() {
        warnings.push(format!(
            "warning: {} has no full compaction; compact waited for compactions",
            engine.name()
        ));
    }
    conclude(engine, name, &before, start, &pb, outs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn spans_cover_the_fraction_in_evenly_spaced_ranges() {
        assert_eq!(delete_spans(1000, 0.1, 10), (0..10).map(|r| (r * 100, r * 100 + 10)).collect::<Vec<_>>());
        assert_eq!(delete_spans(1000, 0.1, 1), vec![(0, 100)]);
        assert!(delete_spans(1000, 0.0, 10).is_empty());
        assert_eq!(delete_spans(10, 1.0, 3).iter().map(|(a, b)| b - a).sum::<u64>(), 9);
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn range_and_point_deletes_remove_the_same_keys() {
        for bench in ["deleterange", "deletepoint"] {
            let dir = tempfile::tempdir().unwrap();
            let engine =
                crate::engine::StrataEngine::open(&crate::engine::EngineConfig::small(dir.path())).unwrap();
            let args = crate::cli::parse_args(["x", "--num=2000", "--quiet"]).unwrap();
            let mut state = super::super::DbState::new(false);
            super::super::run_benchmark(&engine, "fillseq", &args, &mut state).unwrap();
            let o = super::super::run_benchmark(&engine, bench, &args, &mut state).unwrap();
            let ops = o.results[0].0.ops;
            assert_eq!(ops, if bench == "deleterange" { 10 } else { 200 }, "{bench}");
            let left = engine.scan(b"", usize::MAX).unwrap().0;
            assert_eq!(left, 1800, "{bench}");
            assert_eq!(engine.get(&args.key_format().key(205)).unwrap(), None);
            assert!(engine.get(&args.key_format().key(220)).unwrap().is_some());
        }
    }
}
