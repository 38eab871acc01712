//! `strata-bench` command line: with no arguments, the default suite and the
//! compaction-buffer comparison on a fresh temporary directory; otherwise
//! db_bench-style flags (`--help`).
use std::process::ExitCode;
use strata_bench::{cli, suite};

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let result = if argv.len() <= 1 {
        // The main job: the default suite, then the compaction-buffer comparison.
        suite::Plan::default_suite().and_then(|p| suite::run_main(&p)).and_then(|()| {
            let p = suite::Plan::buffer_comparison()?;
            println!("\ncompaction-buffer comparison (scripts/lsbm-experiment.sh, scaled down):");
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
