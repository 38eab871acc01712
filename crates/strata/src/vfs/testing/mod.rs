//! Test tooling, not what ships: file systems that fail on purpose. The
//! engine never uses them; tests, the crash simulator and `strata-stress`
//! wrap a real or in-memory [`Vfs`](super::Vfs) with them.
//!
//! - [`CrashVfs`] (`crash.rs`): an in-memory file system that loses power at
//!   a chosen operation and builds the disk image a crash leaves.
//! - [`FaultVfs`] (`fault.rs`) over any file system: seeded or armed I/O
//!   errors and a full disk; what it may fail is in `fault_config.rs`.
//!
//! A module, not a cargo feature: the integration tests, `strata-stress` (a
//! separate crate) and the crash simulator's support code all use it, and a
//! feature would have to be switched on for each of them and in CI, while
//! the module costs a build nothing and still keeps the tooling out of the
//! way of a reader of `vfs/`.

mod crash;
mod fault;
mod fault_config;

pub use crash::{CrashFault, CrashMode, CrashOp, CrashOpKind, CrashVfs};
pub use fault::FaultVfs;
pub use fault_config::{FaultConfig, FaultKind, FaultOp, PathFilter};
