//! `strata-bench`: db_bench- and YCSB-style benchmarks for Strata and its peers
//! (RocksDB, LevelDB, fjall behind cargo features), reporting ratios measured
//! side by side in one run.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![warn(missing_docs)]

pub mod bench;
pub mod charts;
pub mod cli;
pub mod device;
pub mod engine;
pub mod gen;
pub mod ingest_bench;
pub mod keyspaces;
pub mod output;
pub mod paper;
pub mod peers;
pub mod registry;
pub mod report;
pub mod results;
pub mod smr;
pub mod strata_defaults;
pub mod suite;
pub mod txn_bench;
pub mod ycsb;
