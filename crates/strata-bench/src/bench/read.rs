//! Closed-loop read benchmarks: readrandom, multireadrandom, readseq, seekrandom,
//! seekrandomnext10/100.

use super::measure::{
    conclude, finish, progress, quantile_us, run_threads, Deadline, ThreadOut, PROGRESS_BATCH, SCAN_CHUNK,
};
use super::Outcome;
use crate::cli::Args;
use crate::engine::{BenchResult, Engine};
use crate::results::OpSummary;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// What each read operation does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReadOp {
    /// A point get; found when the key exists.
    Get,
    /// db_bench's `readmissing`: a get of a key that sorts between written keys
    /// (an index's key plus `.`), so it is inside the tables' ranges and only
    /// bloom filters keep it from reading a data block; never found.
    GetMissing,
    /// db_bench's Seek followed by up to `nexts` Next calls (so up to `nexts + 1`
    /// entries read); found when the seek lands on an entry.
    Seek {
        /// Next calls after the seek (`--seek_nexts`).
        nexts: usize,
    },
}

impl ReadOp {
    /// Entries a seek reads at most (the seek's own entry plus the nexts).
    pub fn entries(self) -> usize {
        match self {
            ReadOp::Get | ReadOp::GetMissing => 1,
            ReadOp::Seek { nexts } => nexts.saturating_add(1),
        }
    }
}

/// A point read of `key`, copied or (`--pin_slice`) left in place; the value's length.
pub(crate) fn point_get(engine: &dyn Engine, key: &[u8], pinned: bool) -> BenchResult<Option<usize>> {
    if pinned {
        engine.get_pinned(key)
    } else {
        Ok(engine.get(key)?.map(|v| v.len()))
    }
}

/// A seek from `key` (index `index`) reading up to `n` entries, bounded at
/// index + `--max_scan_distance` when that is set.
pub(crate) fn seek(
    engine: &dyn Engine,
    args: &Args,
    index: u64,
    key: &[u8],
    end: &mut Vec<u8>,
    n: usize,
) -> BenchResult<(usize, usize)> {
    if args.max_scan_distance == 0 {
        return engine.scan(key, n);
    }
    args.key_format().key_into(index.saturating_add(args.max_scan_distance), end);
    engine.scan_bounded(key, end, n)
}

/// Each of `--threads` threads does `--reads` operations on uniform random keys in
/// [0, num) (db_bench semantics: reads are per thread), or fewer if `--duration` > 0
/// runs out first.
pub fn random_reads(
    engine: &dyn Engine,
    name: &str,
    args: &Args,
    op: ReadOp,
    seeds: &[u64],
) -> BenchResult<Outcome> {
    let reads = args.reads();
    let pb = progress(args.quiet, reads * seeds.len() as u64, name);
    let before = engine.stats();
    let start = Instant::now();
    let deadline = Deadline::new(start, args.duration);
    let outs = run_threads(seeds.len(), |t| {
        let mut rng = SmallRng::seed_from_u64(seeds[t]);
        let mut key = Vec::with_capacity(args.key_size);
        let mut end = Vec::with_capacity(args.key_size);
        let mut out = ThreadOut::new()?;
        for i in 0..reads {
            let index = rng.gen_range(0..args.num);
            args.key_format().key_into(index, &mut key);
            if op == ReadOp::GetMissing {
                key.push(b'.');
            }
            let t0 = Instant::now();
            let (found, bytes) = match op {
                ReadOp::Get | ReadOp::GetMissing => match point_get(engine, &key, args.pin_slice)? {
                    Some(len) => (true, key.len() + len),
                    None => (false, 0),
                },
                ReadOp::Seek { .. } => {
                    let (entries, bytes) = seek(engine, args, index, &key, &mut end, op.entries())?;
                    (entries > 0, bytes)
                }
            };
            let t1 = Instant::now();
            out.record(t1.duration_since(t0).as_nanos() as u64, bytes, found);
            if (i + 1) % PROGRESS_BATCH == 0 {
                pb.inc(PROGRESS_BATCH);
            }
            if deadline.passed_at(t1) {
                break;
            }
        }
        Ok(out)
    })?;
    conclude(engine, name, &before, start, &pb, outs)
}

/// db_bench's multireadrandom: each of `--threads` threads reads `--reads` uniform
/// random keys in batches of `--batch_size` (the last one smaller), one multi-get
/// per batch, or until `--duration` runs out. As in db_bench, ops, found and
/// ops/s count keys while each latency sample is one batch; the result also
/// carries a `BATCH` line (batches and their latency percentiles). Engines
/// without a multi-get run each batch as a loop of gets, and the run says so.
pub fn multi_reads(
    engine: &dyn Engine,
    name: &str,
    args: &Args,
    seeds: &[u64],
    warnings: &mut Vec<String>,
) -> BenchResult<Outcome> {
    if !engine.has_multi_get() {
        warnings.push(format!(
            "{name}: {} has no multi-get; each batch ran as a loop of single gets",
            engine.name()
        ));
    }
    let reads = args.reads();
    let pb = progress(args.quiet, reads * seeds.len() as u64, name);
    let before = engine.stats();
    let start = Instant::now();
    let deadline = Deadline::new(start, args.duration);
    let outs = run_threads(seeds.len(), |t| {
        let mut rng = SmallRng::seed_from_u64(seeds[t]);
        let mut out = ThreadOut::new()?;
        let mut keys: Vec<Vec<u8>> = Vec::with_capacity(args.batch_size);
        let mut done = 0;
        while done < reads {
            let n = (reads - done).min(args.batch_size as u64) as usize;
            keys.resize_with(n, || Vec::with_capacity(args.key_size));
            for key in &mut keys {
                args.key_format().key_into(rng.gen_range(0..args.num), key);
            }
            let t0 = Instant::now();
            let (found, bytes) = engine.multi_get(&keys, args.pin_slice)?;
            let t1 = Instant::now();
            out.record_batch(t1.duration_since(t0).as_nanos() as u64, n as u64, bytes, found);
            let before = done;
            done += n as u64;
            // Progress every PROGRESS_BATCH keys, as per-key reads.
            let ticks = done / PROGRESS_BATCH - before / PROGRESS_BATCH;
            if ticks > 0 {
                pb.inc(ticks * PROGRESS_BATCH);
            }
            if deadline.passed_at(t1) {
                break;
            }
        }
        Ok(out)
    })?;
    let batches: u64 = outs.iter().map(|o| o.batches).sum();
    let mut outcome = conclude(engine, name, &before, start, &pb, outs)?;
    if let Some((r, Some(lat))) = outcome.results.last_mut() {
        r.op_latencies = vec![OpSummary {
            op: "BATCH".into(),
            count: batches,
            found: r.found,
            p50_us: quantile_us(&lat.all, 0.5),
            p99_us: quantile_us(&lat.all, 0.99),
            p999_us: quantile_us(&lat.all, 0.999),
        }];
    }
    Ok(outcome)
}

/// readseq: each thread scans forward from the first key, up to `--reads` entries
/// (a full scan by default). ops = entries read. Entries are not timed one by
/// one, so percentiles are left empty (NaN), not estimated. One scan call, or
/// with `--duration` > 0 chunks of [`SCAN_CHUNK`] entries with a clock check
/// between chunks.
pub fn read_seq(engine: &dyn Engine, name: &str, args: &Args, threads: usize) -> BenchResult<Outcome> {
    let reads = args.reads();
    let before = engine.stats();
    let start = Instant::now();
    let deadline = Deadline::new(start, args.duration);
    let chunk = if deadline.is_set() { SCAN_CHUNK } else { reads };
    let outs = run_threads(threads, |_| {
        let mut out = ThreadOut::new()?;
        let (mut from, mut last) = (Vec::new(), Vec::new());
        while out.ops < reads {
            let want = usize::try_from(chunk.min(reads - out.ops)).unwrap_or(usize::MAX);
            let (entries, bytes) = engine.scan_keep_last(&from, None, want, Some(&mut last))?;
            out.ops += entries as u64;
            out.found += entries as u64;
            out.bytes += bytes as u64;
            if entries < want || deadline.expired() {
                break;
            }
            // Go on from the smallest key after the last one read.
            std::mem::swap(&mut from, &mut last);
            from.push(0);
        }
        Ok(out)
    })?;
    let secs = start.elapsed().as_secs_f64();
    let bytes = outs.iter().map(|o| o.bytes).sum();
    let (result, _) = finish(engine, name, &before, secs, outs)?;
    Ok(Outcome { results: vec![(result, None)], bytes })
}
