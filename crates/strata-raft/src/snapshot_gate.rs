//! [`SnapshotGate`]: a purge waits for the snapshot that covers it.
//!
//! openraft 0.9 hands a follower's snapshot install to the state-machine
//! worker and, without waiting for it, purges the log up to the snapshot
//! (0.10 adds the wait). Were the purge durable and the install not when the
//! node died, it would reopen with its log purged past its snapshot: a state
//! openraft refuses to start from (`purge_upto <= snapshot_last_log_id`),
//! with the entries in between gone. The gate restores the order: a purge
//! past the durable snapshot, while a snapshot exists or one is being
//! received, waits until a snapshot that covers it is durable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use openraft::LogId;
use tokio::sync::watch;

use crate::NodeId;

/// Shared by a node's log store and state machine (cheap to clone).
#[derive(Clone)]
pub(crate) struct SnapshotGate {
    /// The durable snapshot's last log index (`None`: no snapshot).
    durable: Arc<watch::Sender<Option<u64>>>,
    /// A snapshot is being received and not yet installed.
    receiving: Arc<AtomicBool>,
}

impl SnapshotGate {
    /// A gate for a node whose durable snapshot ends at `current`.
    pub(crate) fn new(current: Option<&LogId<NodeId>>) -> SnapshotGate {
        let (tx, _) = watch::channel(current.map(|id| id.index));
        SnapshotGate { durable: Arc::new(tx), receiving: Arc::default() }
    }

    /// openraft began receiving a snapshot (before it purges for it).
    pub(crate) fn receiving(&self) {
        self.receiving.store(true, Ordering::SeqCst);
    }

    /// A snapshot ending at `id` is durable (built or installed).
    pub(crate) fn durable(&self, id: Option<&LogId<NodeId>>, installed: bool) {
        let index = id.map(|id| id.index);
        self.durable.send_if_modified(|d| {
            let newer = index > *d;
            if newer {
                *d = index;
            }
            newer
        });
        if installed {
            self.receiving.store(false, Ordering::SeqCst);
        }
    }

    /// Waits until purging up to `upto` cannot outrun the snapshot it needs.
    pub(crate) async fn covering(&self, upto: &LogId<NodeId>) {
        let mut rx = self.durable.subscribe();
        loop {
            let durable = *rx.borrow_and_update();
            let pending = durable.is_some() || self.receiving.load(Ordering::SeqCst);
            if !pending || durable >= Some(upto.index) {
                return;
            }
            log::debug!("purge up to {upto} waits for the snapshot that covers it (durable: {durable:?})");
            // The sender lives as long as `self`.
            let _ = rx.changed().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use openraft::testing::log_id;

    use super::*;

    fn ready(gate: &SnapshotGate, upto: u64) -> bool {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_millis(20), gate.covering(&log_id(1, 0, upto))).await.is_ok()
        })
    }

    #[test]
    fn a_purge_waits_only_past_a_pending_snapshot() {
        // No snapshot and none coming: purges as asked (openraft's storage suite does this).
        let gate = SnapshotGate::new(None);
        assert!(ready(&gate, 20));
        // A snapshot is being received: a purge past it waits for its install.
        gate.receiving();
        assert!(!ready(&gate, 20));
        gate.durable(Some(&log_id(1, 0, 19)), false);
        assert!(!ready(&gate, 20));
        gate.durable(Some(&log_id(1, 0, 25)), true);
        assert!(ready(&gate, 20) && ready(&gate, 25) && !ready(&gate, 26));
        // An older snapshot never moves the gate back.
        gate.durable(Some(&log_id(1, 0, 3)), false);
        assert!(ready(&gate, 25));
    }
}
