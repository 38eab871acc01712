//! The snapshots a compaction task runs under.

use crate::key::SeqNum;

/// The snapshots a compaction task runs under, read together: [`execute`](super::executor::execute)
/// gives `oldest` to the drop rules and `newest` to the compaction filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SnapshotBounds {
    /// The oldest live snapshot's sequence, or the visible sequence if none
    /// is live: versions shadowed at or below it are invisible to every reader.
    pub oldest: SeqNum,
    /// The newest live snapshot's sequence, if any: an entry above it is seen
    /// by no snapshot, only by reads of the newest state, so the compaction
    /// filter may change it.
    pub newest: Option<SeqNum>,
}
