//! A 3-node openraft cluster in one process, each node on its own Strata
//! database (`strata_raft::open`), connected by an in-process router
//! (`cluster_support`). Covers replication with linearizable reads, leader
//! failover with the old leader rejoining from its directory, and a follower
//! caught up by a snapshot after the leader purged the logs it lacked.
//!
//! Every wait is a wait on a condition (Raft metrics, storage release) with
//! a timeout that fails the test with what was awaited; none sleeps.

// openraft's error types are large, and its API returns them.
#![allow(clippy::result_large_err)]

mod cluster_support;

use std::collections::BTreeMap;

use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::{LogIdOptionExt, SnapshotPolicy};
use strata_raft::NodeId;

use cluster_support::{config, kv, Cluster};

const NODES: [NodeId; 3] = [1, 2, 3];

type Items = BTreeMap<Vec<u8>, Vec<u8>>;

/// Starts nodes 1, 2, 3 and initializes the cluster from node 1.
async fn form(cluster: &mut Cluster) {
    for id in NODES {
        cluster.start(id).await;
    }
    cluster.initialize(1).await;
    cluster.wait_for_leader().await;
}

/// Writes keys `range` through the leader; records each acknowledged write.
async fn write_keys(cluster: &Cluster, range: std::ops::Range<usize>, acked: &mut Items) {
    for i in range {
        let (k, v) = kv(i);
        let resp = cluster.set(&k, &v).await;
        // Each key is written once; a retried write may find its own value.
        assert!(
            resp.previous.is_none() || resp.previous.as_ref() == Some(&v),
            "write {i}: unexpected previous value {:?}",
            resp.previous
        );
        acked.insert(k, v);
    }
}

/// Node `id`'s whole state machine is exactly the acknowledged writes.
fn assert_items(cluster: &Cluster, id: NodeId, acked: &Items, what: &str) {
    let items: Items = cluster.items(id).into_iter().collect();
    assert_eq!(
        items.len(),
        acked.len(),
        "{what}: node {id} holds {} keys, {} acknowledged",
        items.len(),
        acked.len()
    );
    assert!(&items == acked, "{what}: node {id}'s state machine differs from the acknowledged writes");
}

/// Waits until node `id` has applied up to `index`.
async fn wait_applied(cluster: &Cluster, id: NodeId, index: u64) {
    cluster
        .wait_for(id, &format!("applied up to {index}"), move |m| m.last_applied.index() >= Some(index))
        .await;
}

/// Phase 1: writes through the leader are replicated and linearizably readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_replicate_and_read_linearizably() {
    let mut cluster = Cluster::new(config(|_| {}));
    form(&mut cluster).await;

    let mut acked = Items::new();
    write_keys(&cluster, 0..100, &mut acked).await;

    let leader = cluster.check_linearizable(&acked).await;
    assert_items(&cluster, leader, &acked, "after 100 writes");

    // Every follower applies the same log and ends with the same data.
    let last = cluster.metrics(leader).last_log_index.expect("leader has a log");
    let leader_items = cluster.items(leader);
    for id in NODES {
        wait_applied(&cluster, id, last).await;
        assert!(
            cluster.items(id) == leader_items,
            "node {id}'s state machine differs from the leader {leader}'s"
        );
    }

    cluster.shutdown().await;
}

/// Phase 2: the leader dies; a new one is elected and takes writes; every
/// acknowledged write survives; the old leader restarts from its directory
/// and catches up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_failover_then_old_leader_rejoins() {
    let mut cluster = Cluster::new(config(|_| {}));
    form(&mut cluster).await;

    let mut acked = Items::new();
    write_keys(&cluster, 0..100, &mut acked).await;
    let old = cluster.check_linearizable(&acked).await;

    cluster.kill(old).await;
    let new = cluster.wait_for_leader().await;
    assert_ne!(new, old, "the killed node cannot lead");

    write_keys(&cluster, 100..200, &mut acked).await;
    assert_eq!(acked.len(), 200);
    let leader = cluster.check_linearizable(&acked).await;
    assert_items(&cluster, leader, &acked, "after failover and 100 more writes");

    // The old leader reopens its database (the previous handles are all
    // closed: `kill` waited for that) and catches up with the leader's log.
    cluster.restart(old).await;
    let last = cluster.metrics(leader).last_log_index.expect("leader has a log");
    wait_applied(&cluster, old, last).await;
    assert!(
        cluster.items(old) == cluster.items(leader),
        "restarted node {old}'s state machine differs from the leader {leader}'s"
    );
    assert_items(&cluster, old, &acked, "restarted old leader");

    cluster.shutdown().await;
}

/// Phase 3: a follower is down while the leader snapshots and purges past
/// its log; on restart only a snapshot can catch it up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lagging_follower_is_caught_up_by_snapshot() {
    // openraft's snapshot and purge steps and the gate's waits, shown if the
    // test fails (it once waited 60 s for a snapshot under a loaded machine).
    let _ = env_logger::builder()
        .is_test(true)
        .filter_level(log::LevelFilter::Warn)
        .filter_module("openraft::engine::handler::snapshot_handler", log::LevelFilter::Debug)
        .filter_module("openraft::core", log::LevelFilter::Info)
        .filter_module("strata_raft", log::LevelFilter::Debug)
        .try_init();
    let mut cluster = Cluster::new(config(|c| {
        c.snapshot_policy = SnapshotPolicy::LogsSinceLast(20);
        c.max_in_snapshot_log_to_keep = 0;
        c.purge_batch_size = 1;
    }));
    form(&mut cluster).await;

    let mut acked = Items::new();
    write_keys(&cluster, 0..10, &mut acked).await;
    let leader = cluster.check_linearizable(&acked).await;
    let last = cluster.metrics(leader).last_log_index.expect("leader has a log");
    let follower = NODES.into_iter().find(|&id| id != leader).expect("a follower");
    wait_applied(&cluster, follower, last).await;
    let follower_had = cluster.metrics(follower).last_log_index.expect("follower has a log");

    cluster.kill(follower).await;

    write_keys(&cluster, 10..70, &mut acked).await;
    let leader = cluster.check_linearizable(&acked).await;

    // A snapshot of everything applied, then a purge beyond the follower's log.
    let applied = cluster.metrics(leader).last_applied.index().expect("leader applied");
    cluster.snapshot_covering(leader, applied).await;
    let m = cluster
        .wait_for(leader, &format!("log purged past {follower_had} (follower {follower}'s last)"), move |m| {
            m.purged.index() > Some(follower_had)
        })
        .await;
    let purged = m.purged.index().expect("purged");
    let leader_last = m.last_log_index.expect("leader has a log");

    cluster.restart(follower).await;
    let m = cluster
        .wait_for(follower, &format!("caught up to {leader_last} with a snapshot"), move |m| {
            m.last_applied.index() >= Some(leader_last) && m.snapshot.is_some()
        })
        .await;
    // The leader no longer had entries follower_had+1 ..= purged: the
    // follower can only have them through an installed snapshot.
    assert!(follower_had < purged, "the leader purged past the follower's log");
    assert!(
        m.snapshot.index() >= Some(purged),
        "follower {follower}'s snapshot {:?} does not cover the leader's purged log (up to {purged})",
        m.snapshot
    );
    let leader = cluster.check_linearizable(&acked).await;
    assert!(
        cluster.items(follower) == cluster.items(leader),
        "follower {follower}'s state machine differs from the leader {leader}'s after the snapshot"
    );
    assert_items(&cluster, follower, &acked, "follower caught up by snapshot");

    // The installed snapshot is durable: with the node down, its storage
    // (opened directly) holds the snapshot, the applied id, a log state not
    // behind them, and the data. Then the node restarts from it.
    cluster.kill(follower).await;
    {
        let (mut log, mut sm) =
            strata_raft::open(cluster.node_dir(follower)).expect("reopen the follower's storage");
        let (applied, _membership) = sm.applied_state().await.expect("applied_state");
        let snapshot = sm.get_current_snapshot().await.expect("get_current_snapshot");
        let snapshot = snapshot.unwrap_or_else(|| panic!("follower {follower}: no snapshot on disk"));
        assert!(
            snapshot.meta.last_log_id.index() >= Some(purged),
            "follower {follower}: snapshot on disk {:?} does not cover {purged}",
            snapshot.meta.last_log_id
        );
        assert!(
            applied.index() >= snapshot.meta.last_log_id.index(),
            "applied {applied:?} is behind the snapshot"
        );
        let state = log.get_log_state().await.expect("get_log_state");
        assert!(
            state.last_log_id.index() >= applied.index(),
            "log state {state:?} is behind applied {applied:?}"
        );
        let items: Items = sm.items().expect("items").into_iter().collect();
        assert!(items == acked, "follower {follower}: data on disk differs from the acknowledged writes");
    }
    cluster.restart(follower).await;
    wait_applied(&cluster, follower, leader_last).await;
    assert_items(&cluster, follower, &acked, "follower restarted after the snapshot");

    cluster.shutdown().await;
}
