//! Compaction: *choosing* (a pure [`CompactionPolicy`] over an [`LsmView`]) is
//! kept apart from *doing* (the executor, which validates and runs tasks).
//!
//! **Unstable**: the seam for policies written outside the crate. Its types
//! change with the engine; the built-in policies are chosen with
//! [`CompactionStyle`](crate::CompactionStyle), which is stable.

pub(crate) mod append;
pub(crate) mod apply;
pub(crate) mod auto;
pub mod blsm;
pub(crate) mod capacity;
pub(crate) mod env;
pub(crate) mod executor;
pub(crate) mod factory;
pub mod filter;
pub mod garnering;
pub mod leveled;
pub mod lsbm;
pub mod lwc;
pub mod manual;
pub(crate) mod merge;
pub mod monkey;
pub(crate) mod outcome;
pub mod policy;
pub mod sim;
pub(crate) mod snapshots;
pub mod stage_model;
pub(crate) mod style;
pub(crate) mod subtasks;
pub mod tiered;
pub(crate) mod unshare;
pub(crate) mod view;
pub(crate) mod warmup;

pub use blsm::{BlsmPolicy, BlsmState};
pub use filter::{CompactionFilter, Decision};
pub use garnering::GarneringPolicy;
pub use leveled::{LeveledConfig, LeveledPolicy};
pub use lsbm::{BufferVariant, LsbmPolicy, LsbmState};
pub use lwc::{LwcConfig, LwcPolicy};
pub use manual::ManualRange;
pub use policy::*;
pub use sim::*;
pub use tiered::TieredPolicy;
