//! One YCSB client thread: draws operations and keys, times each operation.

use super::stats::OpStats;
use super::workload::{Op, Workload};
use super::{ycsb_key_into, YcsbConfig};
use crate::engine::{BenchResult, Engine};
use crate::gen::{KeyChooser, Latest, ScrambledZipfian, ValueGen};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// YCSB's scan lengths: uniform in 1..=100 (`maxscanlength`).
const MAX_SCAN_LENGTH: usize = 100;

/// State all client threads share.
pub(crate) struct Shared<'a> {
    pub engine: &'a dyn Engine,
    pub cfg: &'a YcsbConfig,
    /// Records readable so far (YCSB's acknowledged insert counter): only
    /// advanced past a key once its insert finished, in order.
    pub inserted: Arc<AtomicU64>,
    /// Next record index to insert (YCSB's `transactioninsertkeysequence`).
    pub next_insert: AtomicU64,
}

/// A per-thread seed derived from the run's seed.
pub(crate) fn thread_seed(seed: u64, thread: usize, salt: u64) -> u64 {
    seed ^ (thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt
}

/// Values are random printable bytes: ratio 1.0 keeps them about as
/// incompressible as YCSB's `RandomByteIterator` output.
pub(crate) fn value_gen(seed: u64) -> ValueGen {
    ValueGen::new(seed, 1.0)
}

/// Runs `ops` operations of `workload` on one thread.
pub(crate) fn run_thread(
    shared: &Shared,
    workload: Workload,
    ops: u64,
    thread: usize,
) -> BenchResult<OpStats> {
    let cfg = shared.cfg;
    let mut rng = SmallRng::seed_from_u64(thread_seed(cfg.seed, thread, 0x5943_5342));
    let mut values = value_gen(thread_seed(cfg.seed, thread, 0x7661_6c75));
    let mut chooser: Box<dyn KeyChooser> = if workload.uses_latest() {
        Box::new(Latest::new(shared.inserted.clone(), cfg.zipf_const))
    } else {
        // Like YCSB's CoreWorkload: the zipfian key space includes the
        // expected inserts (x2), so inserting does not move the popular keys.
        let expected_new = (cfg.operation_count as f64 * workload.mix().insert * 2.0) as u64;
        Box::new(ScrambledZipfian::new(cfg.record_count + expected_new, cfg.zipf_const))
    };
    let mix = workload.mix();
    let value_len = cfg.value_len();
    let mut stats = OpStats::new()?;
    let mut key = Vec::with_capacity(cfg.key_prefix.len() + 20);
    for _ in 0..ops {
        let op = mix.pick(rng.gen::<f64>());
        if op == Op::Insert {
            let (ns, result) = insert(shared, &mut key, values.next(value_len));
            result?;
            stats.record(op, ns);
            continue;
        }
        let index = existing_index(chooser.as_mut(), &mut rng, &shared.inserted);
        ycsb_key_into(&cfg.key_prefix, index, &mut key);
        match op {
            Op::Read => {
                let t0 = Instant::now();
                let found = shared.engine.get(&key)?.is_some();
                stats.record(op, t0.elapsed().as_nanos() as u64);
                stats.add_found(op, u64::from(found));
            }
            Op::Update => {
                let value = values.next(value_len);
                let t0 = Instant::now();
                shared.engine.put(&key, value)?;
                stats.record(op, t0.elapsed().as_nanos() as u64);
            }
            Op::Scan => {
                let len = rng.gen_range(1..=MAX_SCAN_LENGTH);
                let t0 = Instant::now();
                let (entries, _bytes) = shared.engine.scan(&key, len)?;
                stats.record(op, t0.elapsed().as_nanos() as u64);
                stats.add_found(op, entries as u64);
            }
            Op::ReadModifyWrite => {
                let value = values.next(value_len);
                let t0 = Instant::now();
                let found = shared.engine.get(&key)?.is_some();
                shared.engine.put(&key, value)?;
                stats.record(op, t0.elapsed().as_nanos() as u64);
                stats.add_found(op, u64::from(found));
            }
            Op::Insert => {}
        }
    }
    Ok(stats)
}

/// YCSB's `nextKeynum`: redraw until the key has been inserted.
fn existing_index(chooser: &mut dyn KeyChooser, rng: &mut SmallRng, inserted: &AtomicU64) -> u64 {
    loop {
        let index = chooser.next_index(rng);
        if index < inserted.load(Ordering::Acquire) {
            return index;
        }
    }
}

/// Inserts the next new record; returns the put's latency and result. The
/// readable count is advanced in insert order (even if the put failed, so
/// no other thread waits forever).
fn insert(shared: &Shared, key: &mut Vec<u8>, value: &[u8]) -> (u64, BenchResult<()>) {
    let index = shared.next_insert.fetch_add(1, Ordering::AcqRel);
    ycsb_key_into(&shared.cfg.key_prefix, index, key);
    let t0 = Instant::now();
    let result = shared.engine.put(key, value);
    let ns = t0.elapsed().as_nanos() as u64;
    while shared
        .inserted
        .compare_exchange_weak(index, index + 1, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        std::thread::yield_now();
    }
    (ns, result)
}

/// Inserts load-phase records until `record_count` are taken (threads share
/// the sequence, like YCSB's load).
pub(crate) fn load_thread(shared: &Shared, thread: usize) -> BenchResult<OpStats> {
    let cfg = shared.cfg;
    let mut values = value_gen(thread_seed(cfg.seed, thread, 0x6c6f_6164));
    let mut stats = OpStats::new()?;
    let mut key = Vec::with_capacity(cfg.key_prefix.len() + 20);
    let value_len = cfg.value_len();
    loop {
        let index = shared.next_insert.fetch_add(1, Ordering::AcqRel);
        if index >= cfg.record_count {
            return Ok(stats);
        }
        ycsb_key_into(&cfg.key_prefix, index, &mut key);
        let value = values.next(value_len);
        let t0 = Instant::now();
        shared.engine.put(&key, value)?;
        stats.record(Op::Insert, t0.elapsed().as_nanos() as u64);
    }
}
