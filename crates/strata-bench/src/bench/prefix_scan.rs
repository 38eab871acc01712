//! prefixscanrandom: each read takes the `--prefix_size`-byte prefix of a
//! uniform random key's and reads every key with that prefix (db_bench's
//! seekrandom with `--prefix_size` and `prefix_same_as_start`, to the end of
//! the prefix). With a prefix extractor (Strata, RocksDB) tables whose prefix
//! filter rules the prefix out are skipped; `--total_order_seek` (db_bench's
//! flag) makes the same scans ask no prefix filter, for the comparison.

use super::measure::{conclude, progress, run_threads, Deadline, ThreadOut, PROGRESS_BATCH};
use super::Outcome;
use crate::cli::Args;
use crate::engine::{BenchResult, Engine};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// Each of `--threads` threads does `--reads` prefix scans (or fewer if
/// `--duration` runs out first); an op is one scan, found when it read a key,
/// its bytes those of every entry read.
pub fn prefix_scans(engine: &dyn Engine, name: &str, args: &Args, seeds: &[u64]) -> BenchResult<Outcome> {
    let reads = args.reads();
    let format = args.key_format();
    let pb = progress(args.quiet, reads * seeds.len() as u64, name);
    let before = engine.stats();
    let start = Instant::now();
    let deadline = Deadline::new(start, args.duration);
    let outs = run_threads(seeds.len(), |t| {
        let mut rng = SmallRng::seed_from_u64(seeds[t]);
        let mut key = Vec::with_capacity(args.key_size);
        let mut out = ThreadOut::new()?;
        for i in 0..reads {
            format.key_into(rng.gen_range(0..args.num), &mut key);
            let prefix = &key[..args.prefix_size.min(key.len())];
            let t0 = Instant::now();
            let (entries, bytes) = engine.scan_prefix(prefix)?;
            let t1 = Instant::now();
            out.record(t1.duration_since(t0).as_nanos() as u64, bytes, entries > 0);
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
