//! YCSB core workloads A–F on any [`Engine`], with YCSB's own generators:
//! scrambled zipfian (constant 0.99) or latest request keys, hashed insert
//! order (`user` + FNV-1a 64 of the record number), scan lengths uniform in
//! 1..=100, 1 KiB records stored as one value. Load and run phases report
//! throughput and latency percentiles from HdrHistograms, overall and per
//! operation type.

mod stats;
mod worker;
mod workload;

pub use crate::results::OpSummary;
pub use workload::{Workload, OP_NAMES};

use crate::bench::measure::{
    compaction_mb_per_sec_between, hit_ratio_between, stages_between, tables_per_get_between,
    tables_per_seek_between,
};
use crate::engine::{dir_size, BenchResult, Engine};
use crate::gen::{fnv_hash64, write_decimal};
use crate::results::RunResult;
use hdrhistogram::Histogram;
use stats::{us, OpStats};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;
use worker::Shared;

/// YCSB's `CoreWorkload` properties that matter here.
#[derive(Debug, Clone, PartialEq)]
pub struct YcsbConfig {
    /// Records in the database (`recordcount`): the load phase inserts this
    /// many; a run phase reads among them and inserts new records from this
    /// index on (YCSB's `insertstart`). To run workloads in sequence, pass
    /// each phase's [`YcsbOutcome::records`] to the next, so inserts go on
    /// where the previous workload's ended.
    pub record_count: u64,
    /// Operations of the run phase, split over the threads (`operationcount`).
    pub operation_count: u64,
    /// Client threads (`threadcount`).
    pub threads: usize,
    /// Bytes per field (`fieldlength`, default 100).
    pub field_length: usize,
    /// Fields per record (`fieldcount`, default 10); a record is stored as
    /// one value of `field_count * field_length` bytes, and updates rewrite it.
    pub field_count: usize,
    /// Zipfian constant (`zipfian_const`, default 0.99), in (0, 1).
    pub zipf_const: f64,
    /// Seed of the key choices and values.
    pub seed: u64,
    /// Key prefix (YCSB's `user`).
    pub key_prefix: String,
}

impl Default for YcsbConfig {
    fn default() -> Self {
        YcsbConfig {
            record_count: 100_000,
            operation_count: 100_000,
            threads: 1,
            field_length: 100,
            field_count: 10,
            zipf_const: crate::gen::ZIPFIAN_CONSTANT,
            seed: 0,
            key_prefix: "user".into(),
        }
    }
}

impl YcsbConfig {
    /// Bytes of one record's value.
    pub fn value_len(&self) -> usize {
        self.field_count * self.field_length
    }

    fn validate(&self) -> BenchResult<()> {
        if self.record_count == 0 {
            return Err("YCSB needs record_count > 0".into());
        }
        if self.threads == 0 {
            return Err("YCSB needs at least one thread".into());
        }
        if !(self.zipf_const > 0.0 && self.zipf_const < 1.0) {
            return Err(format!("YCSB zipfian constant must be in (0, 1), got {}", self.zipf_const));
        }
        Ok(())
    }
}

/// YCSB's key for record number `index` with insertorder=hashed:
/// `prefix` followed by the decimal FNV-1a 64 hash of `index` (buffer cleared
/// first).
pub fn ycsb_key_into(prefix: &str, index: u64, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(prefix.as_bytes());
    write_decimal(fnv_hash64(index), 0, buf);
}

/// What one YCSB phase measured.
#[derive(Debug)]
pub struct YcsbOutcome {
    /// The overall result; its `op_latencies` summarise each operation type
    /// that ran (READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE).
    pub result: RunResult,
    /// Latencies of all operations, nanoseconds.
    pub total: Histogram<u64>,
    /// Latencies per operation type that ran, nanoseconds.
    pub by_op: Vec<(&'static str, Histogram<u64>)>,
    /// Records in the database afterwards: the next phase's `record_count`.
    pub records: u64,
}

/// Load phase: inserts `record_count` records in hashed order with
/// `threads` threads; benchmark name `ycsb-load`.
pub fn load(engine: &dyn Engine, cfg: &YcsbConfig) -> BenchResult<YcsbOutcome> {
    cfg.validate()?;
    let shared = shared(engine, cfg, 0);
    let (stats, secs, before) = on_threads(&shared, cfg.threads, |t| worker::load_thread(&shared, t))?;
    finish(engine, "ycsb-load", &stats, secs, &before, cfg.record_count)
}

/// Run phase of `workload` on a database holding `record_count` records:
/// `operation_count` operations split over the threads; inserts (D, E)
/// add records `record_count`, `record_count + 1`, … through a shared counter.
pub fn run(engine: &dyn Engine, workload: Workload, cfg: &YcsbConfig) -> BenchResult<YcsbOutcome> {
    cfg.validate()?;
    let shared = shared(engine, cfg, cfg.record_count);
    let threads = cfg.threads as u64;
    let share =
        |t: usize| cfg.operation_count / threads + u64::from((t as u64) < cfg.operation_count % threads);
    let (stats, secs, before) =
        on_threads(&shared, cfg.threads, |t| worker::run_thread(&shared, workload, share(t), t))?;
    let records = shared.next_insert.load(std::sync::atomic::Ordering::Acquire);
    finish(engine, workload.name(), &stats, secs, &before, records)
}

fn shared<'a>(engine: &'a dyn Engine, cfg: &'a YcsbConfig, first_insert: u64) -> Shared<'a> {
    Shared {
        engine,
        cfg,
        inserted: Arc::new(AtomicU64::new(first_insert)),
        next_insert: AtomicU64::new(first_insert),
    }
}

/// Runs `body` on `threads` threads; returns the merged statistics, the wall
/// time and the engine's counters from before the start.
fn on_threads<F>(
    shared: &Shared,
    threads: usize,
    body: F,
) -> BenchResult<(OpStats, f64, crate::engine::EngineStats)>
where
    F: Fn(usize) -> BenchResult<OpStats> + Sync,
{
    let before = shared.engine.stats();
    let start = Instant::now();
    let outcomes: Vec<BenchResult<OpStats>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let body = &body;
                s.spawn(move || body(t))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("YCSB client thread panicked".to_string())))
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut merged = OpStats::new()?;
    for outcome in outcomes {
        merged.merge(&outcome?)?;
    }
    Ok((merged, secs, before))
}

fn finish(
    engine: &dyn Engine,
    benchmark: &str,
    stats: &OpStats,
    secs: f64,
    before: &crate::engine::EngineStats,
    records: u64,
) -> BenchResult<YcsbOutcome> {
    let after = engine.stats();
    let total = stats.total()?;
    let ops = stats.ops();
    let result = RunResult {
        engine: engine.name(),
        benchmark: benchmark.to_string(),
        ops,
        secs,
        ops_per_sec: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
        p50_us: us(&total, 0.5),
        p99_us: us(&total, 0.99),
        p999_us: us(&total, 0.999),
        mean_us: if total.is_empty() { f64::NAN } else { total.mean() / 1000.0 },
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
        found: stats.reads_found(),
        op_latencies: stats.summaries(),
        drive: after.drive.as_ref().map(|d| crate::results::DriveResult::over(d, before.drive.as_ref())),
        ..RunResult::default()
    };
    Ok(YcsbOutcome { result, total, by_op: stats.histograms(), records })
}

#[cfg(test)]
mod tests;
