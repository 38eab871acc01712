//! YCSB workloads in a `--benchmarks` list: the load phase runs once per
//! database, before the first workload.

use super::{DbState, Latencies, Outcome};
use crate::cli::Args;
use crate::engine::{BenchResult, Engine};
use crate::ycsb::{self, Workload, YcsbConfig};

/// The YCSB configuration for db_bench flags: `--num` records, `--reads`
/// operations, `--threads`, `--zipf_const`, `--seed`; records of `--value_size`
/// bytes (one field) if given, else YCSB's default 10 fields x 100 B.
pub fn config(args: &Args) -> YcsbConfig {
    let mut cfg = YcsbConfig {
        record_count: args.num,
        operation_count: args.reads(),
        threads: args.threads,
        zipf_const: args.zipf_const,
        seed: args.seed,
        ..YcsbConfig::default()
    };
    if let Some(bytes) = args.value_size {
        // A record is stored as one value, so only its total size matters.
        (cfg.field_count, cfg.field_length) = (1, bytes);
    }
    cfg
}

/// Runs `ycsba`..`ycsbf`, loading first if this database has no YCSB records yet.
pub fn run(engine: &dyn Engine, name: &str, args: &Args, state: &mut DbState) -> BenchResult<Outcome> {
    let workload = Workload::parse(name.trim_start_matches("ycsb"))?;
    let cfg = config(args);
    let mut results = Vec::new();
    let row = |o: ycsb::YcsbOutcome| (o.result, Some(Latencies { all: o.total, by_op: o.by_op }));
    let records = match state.ycsb_records {
        Some(n) => n,
        None => {
            let loaded = ycsb::load(engine, &cfg)?;
            let n = loaded.records;
            results.push(row(loaded));
            n
        }
    };
    // Like YCSB run against a loaded database with `insertstart`: inserts go on
    // after the earlier workloads' ones instead of overwriting them.
    let run = ycsb::run(engine, workload, &YcsbConfig { record_count: records, ..cfg })?;
    state.ycsb_records = Some(run.records);
    results.push(row(run));
    Ok(Outcome { results, bytes: 0 })
}
