//! What running a compaction task returns for its caller to install.

use std::sync::Arc;
use std::time::Instant;

use crate::cache::TableCache;
use crate::error::Result;
use crate::stats::CompactionRecord;
use crate::version::{FileMeta, VersionEdit};

/// What running a task produced, for the caller to install: one version
/// edit. A task installs exactly one edit: all of its tables are written and
/// synced first (a parallel merge's sub-tasks feed one writer; an append
/// lists every grown target in one edit), so no progress is visible part way
/// and a crash leaves either the whole task or none of it.
pub(crate) struct TaskOutcome {
    edit: VersionEdit,
    record: CompactionRecord,
    start: Instant,
    /// A file the task moves to another level: its seek budget restarts
    /// once the move is installed.
    pub(super) moved: Option<Arc<FileMeta>>,
    /// Tables an append or a refilter grew: handles opened on their new
    /// lengths describe bytes no Version lists unless the edit is installed.
    pub(super) grown: Option<(Arc<TableCache>, Vec<u64>)>,
}

impl TaskOutcome {
    pub(super) fn new(edit: VersionEdit, record: CompactionRecord, start: Instant) -> Self {
        TaskOutcome { edit, record, start, moved: None, grown: None }
    }

    /// The edit [`Self::install`] applies.
    pub(crate) fn edit(&self) -> &VersionEdit {
        &self.edit
    }

    /// Applies the edit with `apply` (the MANIFEST write; a caller running
    /// merges concurrently holds its lock around this) and returns the task's
    /// record, its duration taken once the edit is applied.
    pub(crate) fn install(self, apply: impl FnOnce(VersionEdit) -> Result<()>) -> Result<CompactionRecord> {
        let TaskOutcome { edit, mut record, start, moved, grown } = self;
        if let Err(e) = apply(edit) {
            if let Some((tables, ids)) = &grown {
                ids.iter().for_each(|&id| tables.evict(id));
            }
            return Err(e);
        }
        if let Some(meta) = moved {
            meta.reset_allowed_seeks();
        }
        record.duration = start.elapsed();
        Ok(record)
    }
}
