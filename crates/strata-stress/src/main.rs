//! `strata-stress`: a crash soak in the style of RocksDB's db_crash_test.
//!
//! The parent loops until `--duration` ends (or `--cycles` are done): it picks
//! options, spawns itself in the hidden `--child` mode to run a multi-threaded
//! random workload on the database, SIGKILLs the child at a random moment,
//! reopens the database and verifies it against the expected-state logs the
//! child kept, then starts the next cycle on the same database. Every few
//! cycles a new epoch starts: a fresh database under the next built-in policy.
//! The workload spreads its keys over three keyspaces with different policies
//! (the epoch's, `lsbm`, `lwc`); batches span them.
//! Exit status: 0 when every cycle verified, 1 on any failure, 2 on bad usage.

mod args;
mod child;
mod config;
mod crosscheck;
mod expected;
mod keyspaces;
mod parent;
mod verify;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Engine warnings reach stderr; RUST_LOG=info adds flushes and compactions.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = args::Args::parse();
    let result = if args.child { child::run(&args) } else { parent::run(&args) };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("strata-stress: error: {e}");
            ExitCode::FAILURE
        }
    }
}
