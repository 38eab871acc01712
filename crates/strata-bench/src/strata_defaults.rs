//! Strata's `Options::default()` shape, which peers copy where the benchmark
//! has no flag, so that all engines run the same LSM geometry, and which the
//! CLI's shape flags default to. Strata keeps these fields private, hence the
//! copy; keep in step with `crates/strata/src/options/mod.rs`. Its own module
//! (not under `peers/`) so the engine and CLI do not depend on the peers.

/// Memtables per column family (active + immutable).
pub const MAX_WRITE_BUFFER_NUMBER: i32 = 2;
/// L0 files that trigger a compaction.
pub const L0_COMPACTION_TRIGGER: i32 = 4;
/// L0 files that slow writes down.
pub const L0_SLOWDOWN_TRIGGER: i32 = 20;
/// L0 files that stop writes.
pub const L0_STOP_TRIGGER: i32 = 36;
/// Target size of L1, bytes.
pub const MAX_BYTES_FOR_LEVEL_BASE: u64 = 256 << 20;
/// Size ratio between adjacent levels.
pub const LEVEL_MULTIPLIER: f64 = 10.0;
/// Number of levels.
pub const NUM_LEVELS: i32 = 7;
/// Data block size, bytes.
pub const BLOCK_SIZE: usize = 4096;
/// Keys between restart points in a data block.
pub const BLOCK_RESTART_INTERVAL: i32 = 16;
/// Table files kept open.
pub const MAX_OPEN_FILES: i32 = 1000;
