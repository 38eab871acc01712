//! What a write of tables (and a compaction task) needs from the engine.

use std::sync::Arc;

use crate::cache::TableCache;
use crate::compaction::policy::CompactionPolicy;
use crate::options::kinds::CompactionPipeline;
use crate::options::Options;
use crate::version::VersionSet;
use crate::vfs::Vfs;

/// What a task needs from the engine.
pub(crate) struct Env<'a> {
    pub vfs: &'a dyn Vfs,
    pub versions: &'a VersionSet,
    pub tables: &'a Arc<TableCache>,
    pub opts: &'a Options,
    pub policy: &'a dyn CompactionPolicy,
    /// How output tables are written (`Auto` already resolved for this task).
    pub pipeline: CompactionPipeline,
    /// Whether a `Parallel` merge is cut into sub-tasks: the option's own
    /// `Parallel` is; `Auto`'s is not (it picks `Parallel` when compressing is
    /// the bottleneck, where splitting the merge measured slower on two cores).
    pub split_merges: bool,
}

impl Env<'_> {
    /// [`Env::split_merges`] for the configured mode.
    pub(crate) fn splits(configured: CompactionPipeline) -> bool {
        matches!(configured, CompactionPipeline::Parallel { .. })
    }
}
