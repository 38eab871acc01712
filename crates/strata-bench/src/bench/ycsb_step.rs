//! YCSB workloads in a `--benchmarks` list: the load phase runs once per
//! database, before the first workload.

use super::{DbState, Outcome};
use crate::cli::Args;
use crate::engine::{BenchResult, Engine};
use crate::ycsb::{self, Workload, YcsbConfig};

/// The YCSB configuration for db_bench flags: `--num` records, `--reads`
/// operations, `--threads`, `--zipf_const`, `--seed`; record size stays YCSB's 1 KiB.
pub fn config(args: &Args) -> YcsbConfig {
    YcsbConfig {
        record_count: args.num,
        operation_count: args.reads(),
        threads: args.threads,
        zipf_const: args.zipf_const,
        seed: args.seed,
        ..YcsbConfig::default()
    }
}

/// Runs `ycsba`..`ycsbf`, loading first if this database has no YCSB records yet.
pub fn run(engine: &dyn Engine, name: &str, args: &Args, state: &mut DbState) -> BenchResult<Outcome> {
    let workload = Workload::parse(name.trim_start_matches("ycsb"))?;
    let cfg = config(args);
    let mut results = Vec::new();
    let records = match state.ycsb_records {
        Some(n) => n,
        None => {
            let loaded = ycsb::load(engine, &cfg)?;
            results.push(loaded.result);
            loaded.records
        }
    };
    // Like YCSB run against a loaded database with `insertstart`: inserts go on
    // after the earlier workloads' ones instead of overwriting them.
    let run = ycsb::run(engine, workload, &YcsbConfig { record_count: records, ..cfg })?;
    state.ycsb_records = Some(run.records);
    results.push(run.result);
    Ok(Outcome { results, hist: None, bytes: 0 })
}
