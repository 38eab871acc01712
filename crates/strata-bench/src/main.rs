//! `strata-bench` command line: with no arguments, the default suite and the
//! compaction-buffer comparison on a fresh temporary directory; otherwise
//! db_bench-style flags (`--help`), `keyspaces --count N` (what many
//! keyspaces cost), `txn` (YCSB A as transactions), `ingest` (bulk
//! ingestion against write batches) or `paper` (a paper's claims against
//! Strata's measurements, written to `docs/papers/`).
use std::process::ExitCode;
use strata_bench::{cli, suite};

fn main() -> ExitCode {
    // Engine warnings reach stderr; RUST_LOG=info adds flushes and compactions.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let result = if argv.get(1).is_some_and(|a| a == "keyspaces") {
        strata_bench::keyspaces::main(&argv[2..]).map_err(|e| e.to_string())
    } else if argv.get(1).is_some_and(|a| a == "txn") {
        strata_bench::txn_bench::main(&argv[2..])
    } else if argv.get(1).is_some_and(|a| a == "ingest") {
        strata_bench::ingest_bench::main(&argv[2..])
    } else if argv.get(1).is_some_and(|a| a == "paper") {
        strata_bench::paper::main(&argv[2..])
    } else if argv.len() <= 1 {
        // The main job: the default suite, then the compaction-buffer comparison.
        suite::Plan::default_suite().and_then(|p| suite::run_main(&p)).and_then(|()| {
            // The buffer pays off where cache misses are expensive: run the timed
            // step under the hdd profile where this machine can throttle.
            let (profile, note) = match strata_bench::device::probe(&std::env::temp_dir()) {
                Ok(()) => ("hdd", "timed step under the hdd device profile, 150 read IOPS".to_string()),
                Err(why) => ("none", format!("on the bare device: {why}")),
            };
            let p = suite::Plan::buffer_comparison(profile)?;
            println!(
                "\ncompaction-buffer comparison (scripts/lsbm-slow-device.sh scaled down, in the dLSM \
                 paper's tree proportions; {note}):"
            );
            suite::run_main(&p)
        })
    } else {
        match cli::parse_args(argv) {
            Ok(args) => suite::run_main(&suite::Plan::from_args(&args)),
            // Usage errors exit 2 (help and version exit 0).
            Err(e) => e.exit(),
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}
