//! The writers waiting to commit, in arrival order: the front one leads a
//! group commit (commit.rs) and hands every other writer of its group the
//! group's result.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

use super::conflict::TrackedKey;
use crate::batch::WriteBatch;
use crate::error::{Error, Result};

/// One writer's batch and, once its group is committed, its answer.
pub(crate) struct WriteSlot {
    pub batch: Mutex<Option<WriteBatch>>,
    pub sync: bool,
    pub disable_wal: bool,
    pub size: usize,
    /// Keys the batch commits only if unchanged (an optimistic transaction):
    /// such a slot commits in a group of its own, checked under the WAL lock.
    pub check: Vec<TrackedKey>,
    /// Filled by the leader that committed this slot's batch.
    pub result: Mutex<Option<Result<()>>>,
    /// Set by the leader when this batch alone was refused (left out of the group).
    pub refused: Mutex<Option<Error>>,
}

impl WriteSlot {
    pub(crate) fn new(batch: WriteBatch, sync: bool, disable_wal: bool, check: Vec<TrackedKey>) -> WriteSlot {
        WriteSlot {
            size: batch.size_in_bytes(),
            check,
            batch: Mutex::new(Some(batch)),
            sync,
            disable_wal,
            result: Mutex::new(None),
            refused: Mutex::new(None),
        }
    }
}

/// Writers waiting to commit, in arrival order; the front one leads.
#[derive(Default)]
pub(crate) struct WriterQueue {
    pub queue: VecDeque<Arc<WriteSlot>>,
    /// The leader's group, kept between groups so taking one allocates nothing.
    /// INVARIANT: empty while no leader holds it.
    pub group: Vec<Arc<WriteSlot>>,
}
