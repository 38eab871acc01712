//! Regressions in the order of snapshot steps, both found by
//! `crash_points.rs`; each test makes openraft's calls in the order that
//! broke, steered by the storage's step hook.
//!
//! - A follower's purge became durable before the snapshot install it
//!   follows. openraft 0.9 hands the install to the state-machine worker and
//!   purges the log up to the snapshot without waiting; a node killed in
//!   between reopened with its log purged past its snapshot, and openraft
//!   panicked at startup (`purge_upto <= snapshot_last_log_id`).
//! - A snapshot build (openraft runs it on a task of its own) overlapping an
//!   install: the install pruned the build's new file, then the build named
//!   it, and the node could not read its current snapshot (or restart).

use std::io::Cursor;
use std::sync::mpsc;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_and_an_install_that_overlap_never_name_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let (log, sm) = strata_raft::open(dir.path()).unwrap();
    // The install waits (at most 300 ms) at its last step for the build to
    // have written its file: the interleaving that lost the file.
    let (built, wait_built) = mpsc::channel::<()>();
    let (built, wait_built) = (Mutex::new(built), Mutex::new(wait_built));
    let hook = Arc::new(move |step, moment| match (step, moment) {
        (Step::BuildSnapshot, Moment::Before) => {
            let _ = built.lock().unwrap().send(());
        }
        (Step::InstallSnapshot, Moment::Before) => {
            let _ = wait_built.lock().unwrap().recv_timeout(Duration::from_millis(300));
        }
        _ => {}
    });
    let (mut log, mut sm) = (log.with_hook(hook.clone()), sm.with_hook(hook));
    let entries: Vec<Entry<TypeConfig>> =
        (1..=10).map(|i| Entry { log_id: log_id(1, 1, i), payload: EntryPayload::Blank }).collect();
    log.blocking_append(entries.clone()).await.unwrap();
    sm.apply(entries).await.unwrap();

    let meta = SnapshotMeta::<NodeId, BasicNode> {
        last_log_id: Some(log_id(2, 2, 50)),
        last_membership: StoredMembership::default(),
        snapshot_id: "installed-50".into(),
    };
    let mut installer = sm.clone();
    let install = tokio::spawn(async move {
        let m = meta.clone();
        installer.install_snapshot(&m, Box::new(Cursor::new(Vec::new()))).await
    });
    // The install is at its last step (or, with the fix, holds the files).
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut builder = sm.get_snapshot_builder().await;
    let build = tokio::spawn(async move { builder.build_snapshot().await });
    install.await.unwrap().unwrap();
    build.await.unwrap().unwrap();

    let current = sm.get_current_snapshot().await.expect("the current snapshot's file reads back");
    let current = current.expect("a current snapshot");
    assert_eq!(current.meta.last_log_id, Some(log_id(2, 2, 50)), "the current snapshot never goes back");
    drop((log, sm));
    let (_, mut sm) = strata_raft::open(dir.path()).unwrap();
    let reopened = sm.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(reopened.meta.snapshot_id, "installed-50");
}
