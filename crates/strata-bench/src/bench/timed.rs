//! readwhilewriting and seekrandomwhilewriting: `--threads` readers drawing keys
//! from `--read_dist` while ONE writer does random updates held to
//! `--benchmark_write_rate_limit` (uniform; under `latest_rangehot`, in the
//! readers' hot range: the range of recent data they read), sampled every
//! `--stats_interval_seconds`.
//! The row's latencies are the readers'; its operation table (`READ`, `WRITE`)
//! adds the writer's own, each put timed without the rate limiter's wait.
//! With `--writes_stop_after` the writer stops early and the readers go on
//! through the engine's idle compaction (the dLSM paper's dynamic workload).

use super::measure::{
    compaction_mb_per_sec_between, hit_ratio_between, mean_us, new_hist, progress, progress_println,
    quantile_us, stages_between, tables_per_get_between, tables_per_seek_between,
};
use super::read::ReadOp;
use super::Outcome;
use crate::cli::Args;
use crate::engine::{dir_size, BenchResult, Engine};
use crate::gen::{make_read_dist, KeyChooser, RangeHot, RateLimiter, RecentWrites, Uniform, ValueGen};
use crate::results::{OpSummary, RunResult, Sample};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A reader's latencies: `interval` is swapped out by the sampler, `total` is kept.
struct ReaderHists {
    interval: Histogram<u64>,
    total: Histogram<u64>,
}

/// State shared by the readers, the writer and the sampler.
struct Shared {
    stop: AtomicBool,
    readers_left: AtomicUsize,
    writes: AtomicU64,
    hists: Vec<Mutex<ReaderHists>>,
    recent: Arc<RecentWrites>,
}

/// Runs the benchmark; `seeds` has one seed per reader plus one for the
/// writer; the `latest_*` distributions read from `recent`, which the writer
/// extends.
pub fn run(
    engine: &dyn Engine,
    name: &str,
    args: &Args,
    op: ReadOp,
    seeds: &[u64],
    recent: Arc<RecentWrites>,
) -> BenchResult<Outcome> {
    let readers = seeds.len().saturating_sub(1).max(1);
    let mut hists = Vec::with_capacity(readers);
    for _ in 0..readers {
        hists.push(Mutex::new(ReaderHists { interval: new_hist()?, total: new_hist()? }));
    }
    let shared = Shared {
        stop: AtomicBool::new(false),
        readers_left: AtomicUsize::new(readers),
        writes: AtomicU64::new(0),
        hists,
        recent,
    };
    // Every reader builds its chooser up front so a bad distribution fails before any work.
    let mut choosers = Vec::with_capacity(readers);
    for _ in 0..readers {
        // The same seed for every reader: it places the hot range, which all share.
        choosers.push(make_read_dist(
            &args.read_dist,
            args.num,
            args.zipf_const,
            args.hot_fraction,
            args.hot_prob,
            args.seed,
            Some(shared.recent.clone()),
        )?);
    }
    let writer_seed = seeds.last().copied().unwrap_or(args.seed);
    let before = engine.stats();
    let start = Instant::now();
    let (outcome, found, writes) =
        std::thread::scope(|s| -> BenchResult<(Vec<Sample>, u64, Histogram<u64>)> {
            let shared = &shared;
            let readers_h: Vec<_> = choosers
                .into_iter()
                .enumerate()
                .map(|(t, mut chooser)| {
                    let seed = seeds[t];
                    s.spawn(move || {
                        let r = reader(engine, args, op, t, seed, &mut *chooser, shared);
                        shared.readers_left.fetch_sub(1, Ordering::SeqCst);
                        if r.is_err() {
                            shared.stop.store(true, Ordering::SeqCst);
                        }
                        r
                    })
                })
                .collect();
            let writer_h = s.spawn(move || {
                let r = writer(engine, args, writer_seed, shared);
                if r.is_err() {
                    shared.stop.store(true, Ordering::SeqCst);
                }
                r
            });
            let samples = sample_loop(engine, name, args, readers as u64, start, shared);
            shared.stop.store(true, Ordering::SeqCst);
            let mut found = 0;
            for h in readers_h {
                found += h.join().map_err(|_| "reader thread panicked".to_string())??;
            }
            let writes = writer_h.join().map_err(|_| "writer thread panicked".to_string())??;
            Ok((samples?, found, writes))
        })?;
    let secs = start.elapsed().as_secs_f64();
    let mut total = new_hist()?;
    for h in &shared.hists {
        let h = h.lock().map_err(|_| "poisoned histogram lock".to_string())?;
        total.add(&h.total).map_err(|e| format!("histogram: {e:?}"))?;
    }
    let after = engine.stats();
    let reads = total.len();
    let result = RunResult {
        engine: engine.name(),
        benchmark: name.to_string(),
        repetition: 0,
        ops: reads,
        secs,
        ops_per_sec: if secs > 0.0 { reads as f64 / secs } else { 0.0 },
        p50_us: quantile_us(&total, 0.5),
        p99_us: quantile_us(&total, 0.99),
        p999_us: quantile_us(&total, 0.999),
        mean_us: mean_us(&total),
        stall_micros: after.stall_micros,
        levels_in_use: after.levels_in_use,
        buffer_bytes: after.buffer_bytes,
        write_amplification: after.write_amplification,
        hit_ratio: hit_ratio_between(&before, &after),
        tables_per_get: tables_per_get_between(&before, &after),
        tables_per_seek: tables_per_seek_between(&before, &after),
        compaction_mb_per_sec: compaction_mb_per_sec_between(&before, &after, secs),
        stages: stages_between(&before, &after),
        db_bytes: dir_size(engine.path()),
        found,
        samples: outcome,
        op_latencies: vec![summary("READ", &total, found), summary("WRITE", &writes, 0)],
        device_profile: String::new(),
        drive: after.drive.as_ref().map(|d| crate::results::DriveResult::over(d, before.drive.as_ref())),
    };
    // No MB/s line: db_bench's would count read bytes, which a get does not return here.
    Ok(Outcome { results: vec![(result, Some(super::Latencies::single(total)))], bytes: 0 })
}

/// One reader: until stopped (or `--reads` reads when `--duration` is 0). Returns found reads.
fn reader(
    engine: &dyn Engine,
    args: &Args,
    op: ReadOp,
    t: usize,
    seed: u64,
    chooser: &mut dyn crate::gen::KeyChooser,
    shared: &Shared,
) -> BenchResult<u64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut key = Vec::with_capacity(args.key_size);
    let mut end = Vec::with_capacity(args.key_size);
    let limit = if args.duration > 0.0 { u64::MAX } else { args.reads() };
    let mut found = 0;
    let mut done = 0;
    while done < limit && !shared.stop.load(Ordering::Relaxed) {
        let index = chooser.next_index(&mut rng);
        args.key_format().key_into(index, &mut key);
        if op == ReadOp::GetMissing {
            key.push(b'.');
        }
        let t0 = Instant::now();
        let hit = match op {
            ReadOp::Get | ReadOp::GetMissing => {
                super::read::point_get(engine, &key, args.pin_slice)?.is_some()
            }
            ReadOp::Seek { .. } => {
                super::read::seek(engine, args, index, &key, &mut end, op.entries())?.0 > 0
            }
        };
        let ns = (t0.elapsed().as_nanos() as u64).max(1);
        found += u64::from(hit);
        done += 1;
        let mut h = shared.hists[t].lock().map_err(|_| "poisoned histogram lock".to_string())?;
        h.interval.saturating_record(ns);
        h.total.saturating_record(ns);
    }
    Ok(found)
}

/// One operation type's line of the row's operation table.
fn summary(op: &str, h: &Histogram<u64>, found: u64) -> OpSummary {
    OpSummary {
        op: op.to_string(),
        count: h.len(),
        found,
        p50_us: quantile_us(h, 0.5),
        p99_us: quantile_us(h, 0.99),
        p999_us: quantile_us(h, 0.999),
    }
}

/// The writer's keys: uniform over [0, num), except under `latest_rangehot`,
/// whose hot range (placed by `--seed`, as the readers' is) takes the
/// writer's updates with the readers' `--hot_prob`, so the range they read is
/// the recently written one (the dLSM paper's Latest RangeHot).
fn writer_keys(args: &Args) -> Box<dyn KeyChooser> {
    if args.read_dist == "latest_rangehot" {
        Box::new(RangeHot::new(args.num, args.hot_fraction, args.hot_prob, args.seed))
    } else {
        Box::new(Uniform::new(args.num))
    }
}

/// The writer: random updates over [0, num) ([`writer_keys`]), paced by the rate limiter,
/// each written index recorded for the latest* read distributions, until the
/// end or `--writes_stop_after`. Returns the latency of each put (the engine's
/// time only: the limiter's wait is outside).
fn writer(engine: &dyn Engine, args: &Args, seed: u64, shared: &Shared) -> BenchResult<Histogram<u64>> {
    let mut lat = new_hist()?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut keys = writer_keys(args);
    let mut values = ValueGen::new(seed, args.compression_ratio);
    let mut limiter = RateLimiter::new(args.benchmark_write_rate_limit);
    let mut key = Vec::with_capacity(args.key_size);
    let start = Instant::now();
    let secs = |flag: &str, v: f64| Duration::try_from_secs_f64(v).map_err(|e| format!("--{flag}={v}: {e}"));
    let stop_after = (args.writes_stop_after > 0.0)
        .then(|| secs("writes_stop_after", args.writes_stop_after))
        .transpose()?;
    let idle =
        (args.idle_compaction >= 0.0).then(|| secs("idle_compaction", args.idle_compaction)).transpose()?;
    let writing = || stop_after.is_none_or(|d| start.elapsed() < d);
    while !args.no_writer && !shared.stop.load(Ordering::Relaxed) && writing() {
        let index = keys.next_index(&mut rng);
        args.key_format().key_into(index, &mut key);
        let value = values.next(args.value_size());
        let bytes = (key.len() + value.len()) as u64;
        limiter.wait(bytes);
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let t0 = Instant::now();
        engine.put(&key, value)?;
        lat.saturating_record((t0.elapsed().as_nanos() as u64).max(1));
        shared.recent.record(index);
        shared.writes.fetch_add(1, Ordering::Relaxed);
    }
    if let (Some(_), Some(after)) = (stop_after, idle) {
        if !engine.compacts_when_idle() {
            idle_compaction_of_a_peer(engine, args, after, shared)?;
        }
    }
    Ok(lat)
}

/// A peer's stand-in for idle compaction once the writer stopped: after
/// `--idle_compaction` seconds, one full manual compaction (LevelDB's and
/// RocksDB's `CompactRange`, which is what their users run when writes stop).
fn idle_compaction_of_a_peer(
    engine: &dyn Engine,
    args: &Args,
    after: Duration,
    shared: &Shared,
) -> BenchResult<()> {
    // Past the end of time: it never comes.
    let Some(until) = Instant::now().checked_add(after) else { return Ok(()) };
    while Instant::now() < until {
        if shared.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    if engine.compact_all()? && !args.quiet {
        let secs = t0.elapsed().as_secs_f64();
        eprintln!("{}: idle stand-in: a full manual compaction took {secs:.1} s", engine.name());
    }
    Ok(())
}

/// Samples every `--stats_interval_seconds` until `--duration` ends or every reader
/// finished; a last partial interval is kept when it is at least a fifth of one.
fn sample_loop(
    engine: &dyn Engine,
    name: &str,
    args: &Args,
    readers: u64,
    start: Instant,
    shared: &Shared,
) -> BenchResult<Vec<Sample>> {
    let timed = args.duration > 0.0;
    let pb = if timed {
        progress(args.quiet, (args.duration * 1000.0) as u64, name)
    } else {
        progress(args.quiet, readers * args.reads(), name)
    };
    let interval = Duration::from_secs_f64(args.stats_interval_seconds);
    let label = format!("{} {name}", engine.name());
    let mut samples = Vec::new();
    let mut prev_stats = engine.stats();
    let mut prev_t = Duration::ZERO;
    let mut prev_writes = 0;
    let mut reads_total = 0;
    let mut scratch = new_hist()?;
    loop {
        let next = prev_t + interval;
        let end = if timed { next.min(Duration::from_secs_f64(args.duration)) } else { next };
        let finished = loop {
            let now = start.elapsed();
            let done = (timed && now >= Duration::from_secs_f64(args.duration))
                || shared.readers_left.load(Ordering::SeqCst) == 0
                || shared.stop.load(Ordering::SeqCst);
            if done || now >= end {
                break done;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(20)));
        };
        let now = start.elapsed();
        let dt = (now - prev_t).as_secs_f64();
        if !finished || dt >= interval.as_secs_f64() / 5.0 {
            scratch.reset();
            for h in &shared.hists {
                let mut h = h.lock().map_err(|_| "poisoned histogram lock".to_string())?;
                scratch.add(&h.interval).map_err(|e| format!("histogram: {e:?}"))?;
                h.interval.reset();
            }
            let stats = engine.stats();
            let writes = shared.writes.load(Ordering::Relaxed);
            samples.push(Sample {
                t_secs: now.as_secs_f64(),
                read_ops_per_sec: scratch.len() as f64 / dt,
                write_ops_per_sec: (writes - prev_writes) as f64 / dt,
                hit_ratio: hit_ratio_between(&prev_stats, &stats),
                read_p50_us: quantile_us(&scratch, 0.5),
                read_p99_us: quantile_us(&scratch, 0.99),
                db_bytes: dir_size(engine.path()),
            });
            if let Some(last) = samples.last() {
                progress_println(&pb, args.quiet, &sample_line(&label, last));
            }
            reads_total += scratch.len();
            prev_stats = stats;
            prev_writes = writes;
            prev_t = now;
            pb.set_position(if timed { now.as_millis() as u64 } else { reads_total });
        }
        if finished {
            break;
        }
    }
    pb.finish_and_clear();
    Ok(samples)
}

/// One interval as it is measured: `name t=5.0s read 1234 ops/s write 56
/// ops/s hit 0.950 p50 3.1 us p99 20.4 us db 120.5 MB`.
fn sample_line(name: &str, s: &Sample) -> String {
    let hit = s.hit_ratio.map_or_else(|| "-".to_string(), |h| format!("{h:.3}"));
    format!(
        "{name} t={:.1}s read {:.0} ops/s write {:.0} ops/s hit {hit} p50 {:.1} us p99 {:.1} us db {:.1} MB",
        s.t_secs,
        s.read_ops_per_sec,
        s.write_ops_per_sec,
        s.read_p50_us,
        s.read_p99_us,
        s.db_bytes as f64 / 1e6
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The dLSM paper's Latest RangeHot reads "a key range of recent data": the
    /// writer must update the readers' hot range, not the whole key space
    /// (it did, and the hot keys were no more recent than the rest).
    #[test]
    fn under_latest_rangehot_the_writer_updates_the_range_the_readers_read() {
        let flags = ["strata-bench", "--num=10000", "--hot_fraction=0.1", "--hot_prob=1", "--seed=7"];
        let args = |dist: &str| {
            let read = format!("--read_dist={dist}");
            crate::cli::parse_args(flags.iter().copied().chain([read.as_str()])).unwrap()
        };
        let a = args("latest_rangehot");
        let hot = RangeHot::new(a.num, a.hot_fraction, a.hot_prob, a.seed).hot_range();
        assert_eq!(hot.end - hot.start, 1000);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut writes = writer_keys(&a);
        assert!((0..5000).all(|_| hot.contains(&writes.next_index(&mut rng))), "a write outside {hot:?}");
        let mut reads =
            make_read_dist(&a.read_dist, a.num, 0.99, a.hot_fraction, a.hot_prob, a.seed, None).unwrap();
        assert!((0..5000).all(|_| hot.contains(&reads.next_index(&mut rng))), "a read outside {hot:?}");
        // Every other distribution's writer updates the whole key space.
        let mut uniform = writer_keys(&args("rangehot"));
        let outside = (0..5000).filter(|_| !hot.contains(&uniform.next_index(&mut rng))).count();
        assert!(outside > 4000, "{outside} of 5000 outside the hot range");
    }
}
