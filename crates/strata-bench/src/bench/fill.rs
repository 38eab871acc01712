//! Write benchmarks: fillseq, fillrandom, filluniquerandom, overwrite.

use super::measure::{conclude, progress, run_threads, Deadline, ThreadOut, PROGRESS_BATCH};
use super::Outcome;
use crate::cli::Args;
use crate::engine::{BenchResult, Engine};
use crate::gen::{RecentWrites, ValueGen};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// Which keys a fill writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Order {
    /// Indices 0, 1, …, num-1 (fillseq).
    Sequential,
    /// `num` uniform draws from [0, num) (fillrandom, overwrite).
    Random,
    /// Every index of [0, num) once, in random order (RocksDB's filluniquerandom).
    UniqueRandom,
}

/// Each of `--threads` threads writes `--num` entries (db_bench semantics), one
/// put per operation, each put timed; stops early after `--duration` seconds if > 0.
/// Each written index is recorded in `recent`, after its put's timing.
pub fn fill(
    engine: &dyn Engine,
    name: &str,
    args: &Args,
    order: Order,
    seeds: &[u64],
    recent: &RecentWrites,
) -> BenchResult<Outcome> {
    let pb = progress(args.quiet, args.num * seeds.len() as u64, name);
    let before = engine.stats();
    let start = Instant::now();
    let deadline = Deadline::new(start, args.duration);
    let outs = run_threads(seeds.len(), |t| {
        let mut rng = SmallRng::seed_from_u64(seeds[t]);
        let mut values = ValueGen::new(seeds[t], args.compression_ratio);
        let mut key = Vec::with_capacity(args.key_size);
        let mut out = ThreadOut::new()?;
        let mut shuffled: Vec<u64> = Vec::new();
        if order == Order::UniqueRandom {
            shuffled = (0..args.num).collect();
            shuffled.shuffle(&mut rng);
        }
        for i in 0..args.num {
            let index = match order {
                Order::Sequential => i,
                Order::Random => rng.gen_range(0..args.num),
                Order::UniqueRandom => shuffled.get(i as usize).copied().unwrap_or(i),
            };
            args.key_format().key_into(index, &mut key);
            let value = values.next(args.value_size());
            let t0 = Instant::now();
            engine.put(&key, value)?;
            let t1 = Instant::now();
            out.record(t1.duration_since(t0).as_nanos() as u64, key.len() + value.len(), false);
            recent.record(index);
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
