//! Regression: a follower's purge became durable before the snapshot
//! install it follows. openraft 0.9 hands the install to the state-machine
//! worker and purges the log up to the snapshot without waiting; a node
//! killed in between reopened with its log purged past its snapshot, and
//! openraft panicked at startup (`purge_upto <= snapshot_last_log_id`).
//! Found by `crash_points.rs` (`--crash-at install:1:before`). This test
//! makes the same calls in openraft's order and checks, with the storage's
//! step hook, that the purge writes nothing until the install is durable.

use std::io::Cursor;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine, SnapshotMeta};
use openraft::testing::log_id;
use openraft::{BasicNode, Entry, EntryPayload, RaftSnapshotBuilder, StoredMembership};
use strata_raft::hook::{Moment, Step};
use strata_raft::{NodeId, TypeConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_is_not_durable_before_the_install_it_follows() {
    let dir = tempfile::tempdir().unwrap();
    let (log, sm) = strata_raft::open(dir.path()).unwrap();
    let steps: Arc<Mutex<Vec<(Step, Moment)>>> = Arc::default();
    let record = steps.clone();
    let hook = Arc::new(move |s, m| record.lock().unwrap().push((s, m)));
    let (mut log, mut sm) = (log.with_hook(hook.clone()), sm.with_hook(hook));

    // A follower with entries 1..=10 applied and a snapshot at 5.
    let entries: Vec<Entry<TypeConfig>> =
        (1..=10).map(|i| Entry { log_id: log_id(1, 1, i), payload: EntryPayload::Blank }).collect();
    log.blocking_append(entries.clone()).await.unwrap();
    sm.apply(entries).await.unwrap();
    sm.get_snapshot_builder().await.build_snapshot().await.unwrap();

    // openraft receives a snapshot at 50, hands the install to the state
    // machine worker and purges up to 50 at once.
    sm.begin_receiving_snapshot().await.unwrap();
    let purge = tokio::spawn(async move { log.purge(log_id(2, 2, 50)).await });
    // Long enough for an unguarded purge to be written.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let meta = SnapshotMeta::<NodeId, BasicNode> {
        last_log_id: Some(log_id(2, 2, 50)),
        last_membership: StoredMembership::default(),
        snapshot_id: "installed-50".into(),
    };
    sm.install_snapshot(&meta, Box::new(Cursor::new(Vec::new()))).await.unwrap();
    purge.await.unwrap().unwrap();

    let steps = steps.lock().unwrap().clone();
    let at = |step| steps.iter().position(|&s| s == (step, Moment::Before)).unwrap();
    let durable = steps.iter().position(|&s| s == (Step::InstallSnapshot, Moment::Durable)).unwrap();
    assert!(
        at(Step::Purge) > durable,
        "the purge's batch was written before the install it relies on was durable: {steps:?}"
    );
}
