//! Command-line arguments, shared by the parent and the hidden child mode.

use std::path::PathBuf;

use clap::Parser;

/// Crash soak: random workloads killed with SIGKILL, verified after each reopen.
#[derive(Parser, Debug, Clone)]
#[command(name = "strata-stress", version)]
pub struct Args {
    /// Run for this many seconds (the current cycle finishes first).
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// Stop after this many cycles even if time is left (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub cycles: u64,
    /// Master seed; every cycle's options and workload derive from it (default: time).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Writer threads in the child; each owns a disjoint key range.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Keys per writer thread.
    #[arg(long, default_value_t = 2000)]
    pub keys_per_thread: u64,
    /// Working directory (database and expected-state logs); default a temp dir.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Shortest child lifetime before the kill, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub min_kill_ms: u64,
    /// Longest child lifetime before the kill, in milliseconds.
    #[arg(long, default_value_t = 3000)]
    pub max_kill_ms: u64,
    /// Largest number of cycles in one epoch (one database under one policy).
    #[arg(long, default_value_t = 12)]
    pub max_epoch_cycles: u64,
    /// Inject disk failures in the child: each OS write and fdatasync fails with
    /// this probability (a short write, or a sync after the data was or was not
    /// written back), and in half the cycles the disk fills up at a random byte
    /// (`ENOSPC`). A write that fails must not appear after recovery (unless a
    /// sync failed, when either is fine); the child then stops by itself. 0: off.
    #[arg(long, default_value_t = 0.0)]
    pub io_faults: f64,
    /// Skip the repair check: after each kill the parent copies the database,
    /// runs `strata::repair` on the copy and requires it to read exactly what
    /// `Db::open` of the original reads (on by default; the copy costs I/O).
    #[arg(long)]
    pub no_repair_check: bool,
    /// Make the repair check only every N-th cycle (each costs two copies of
    /// the database and a repair).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub repair_check_every: u64,
    /// Print one line per cycle.
    #[arg(long)]
    pub verbose: bool,
    /// Child mode: run the workload of `--cycle` until killed.
    #[arg(long, hide = true)]
    pub child: bool,
    /// Child mode: the cycle number (selects options and log file names).
    #[arg(long, hide = true, default_value_t = 0)]
    pub cycle: u64,
    /// Child mode: the epoch's policy.
    #[arg(long, hide = true, default_value = "leveled")]
    pub policy: String,
    /// Child mode: the epoch's number of levels.
    #[arg(long, hide = true, default_value_t = 7)]
    pub num_levels: usize,
    /// Test hook: the parent deletes one acknowledged key before verifying, so
    /// verification must fail (proves the checker catches a lost write).
    #[arg(long, hide = true)]
    pub inject_bug: bool,
    /// Test hook: the parent deletes one key of the repaired copy before
    /// comparing it, so the repair check must fail.
    #[arg(long, hide = true)]
    pub inject_repair_bug: bool,
}
