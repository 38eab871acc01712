//! kill -9 of a node of a running 3-node cluster aimed at a chosen moment
//! of a storage step: `raft-kv node --crash-at STEP:N:MOMENT` SIGKILLs the
//! node the `N`th time its storage reaches the moment — `before` the step's
//! batch is written (for snapshots: the file written, the batch naming it
//! not), or once it is `durable` but before openraft hears of it. Each
//! test sees the node die by SIGKILL (so the step was reached), restarts
//! it, and ends with the harness's check: the three nodes agree, and hold
//! every acknowledged write and nothing never acknowledged.
//!
//! - appends, with no snapshots at all: the restarted follower catches up
//!   from the log alone;
//! - purges, snapshot builds and snapshot installs (a follower restarted
//!   behind the leader's purged log);
//! - a vote: a follower killed when it records its vote in the election
//!   that follows the leader's death;
//! - truncation: an isolated leader appends writes it cannot commit, the
//!   other two elect a new leader, and when the partition heals the old
//!   leader truncates its tail — and is killed there. Those writes never
//!   appear anywhere.
//!
//! The harness is `node_support`; `STRATA_RAFT_CRASH_POINTS_SEED` replays a run.

mod node_support;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::Ordering;

use node_support::{
    acked_len, call, seed, spawn_writer, Acked, Cluster, Rng, Rpc, Status, WriteResult, NODES,
};
use strata_raft::{NodeId, Request};

const SEED: &str = "STRATA_RAFT_CRASH_POINTS_SEED";
/// No snapshot is ever taken, so nothing is purged.
const NO_SNAPSHOTS: &[&str] = &["--snapshot-every", "1000000000", "--keep", "1000000000"];
/// A snapshot every 30 entries, 5 kept behind it.
const SNAPSHOTS_OFTEN: &[&str] = &["--snapshot-every", "30", "--keep", "5"];

/// Restarts node `id` with `--crash-at at` and waits for it to die by SIGKILL.
async fn crash_at(cluster: &mut Cluster, id: NodeId, at: &str) {
    cluster.start_with(id, &["--crash-at", at]);
    let status = cluster.wait_exit(id, &format!("--crash-at {at}")).await;
    assert_eq!(status.signal(), Some(9), "node {id} with --crash-at {at} ended with {status:?}, not SIGKILL");
    eprintln!("node {id}: killed at {at}");
}

/// Waits until `n` more writes are acknowledged.
async fn more_writes(
    cluster: &Cluster,
    acked: &Acked,
    n: usize,
    what: &str,
) -> BTreeMap<NodeId, Option<Status>> {
    let at = acked_len(acked) + n;
    cluster
        .wait(&format!("{at} acknowledged writes ({what})"), |st| {
            (acked_len(acked) >= at).then(|| st.clone())
        })
        .await
}

/// Waits until node `id` runs and has applied what the leader had in `st`.
async fn caught_up(cluster: &Cluster, id: NodeId, st: &BTreeMap<NodeId, Option<Status>>) -> Status {
    let target = cluster.leader(st).and_then(|(_, s)| s.last_log_index);
    cluster
        .wait(&format!("node {id} applied up to {target:?}"), |st| {
            let s = st[&id].as_ref()?;
            (s.last_applied >= target && s.current_leader.is_some()).then(|| s.clone())
        })
        .await
}

fn a_follower(cluster: &Cluster, leader: NodeId, rng: &mut Rng) -> NodeId {
    let others: Vec<NodeId> = NODES.iter().copied().filter(|&n| n != leader && cluster.running(n)).collect();
    others[rng.below(others.len() as u64) as usize]
}

/// Stops the writer; the writes acknowledged, and the one in flight (which
/// may or may not have been applied).
async fn stop_writer(
    acked: Acked,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
) -> (BTreeMap<String, String>, (String, String)) {
    stop.store(true, Ordering::Relaxed);
    task.await.unwrap();
    let acked = acked.lock().unwrap().clone();
    let next = (format!("k{:06}", acked.len()), format!("v{}", acked.len()));
    (acked, next)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_killed_inside_appends_catches_up_from_the_log_alone() {
    let mut rng = Rng(seed(SEED));
    let mut cluster = Cluster::new(NO_SNAPSHOTS);
    let leader = cluster.start_all(&[]).await;
    let (acked, stop, writer) = spawn_writer(&cluster);
    more_writes(&cluster, &acked, 20, "before the first kill").await;
    let f = a_follower(&cluster, leader, &mut rng);
    for moment in ["before", "durable", "before", "durable"] {
        cluster.kill(f);
        // The first appends after a restart carry the catch-up; later ones the new writes.
        let at = format!("append:{}:{moment}", 1 + rng.below(12));
        crash_at(&mut cluster, f, &at).await;
        more_writes(&cluster, &acked, 20 + rng.below(40) as usize, &format!("node {f} down")).await;
        // Running again (killed at once below, or left running after the last round).
        cluster.start(f);
    }
    let st = more_writes(&cluster, &acked, 10, "after the last restart").await;
    let s = caught_up(&cluster, f, &st).await;
    assert_eq!((s.snapshot, s.purged), (None, None), "node {f} caught up from the log alone: {s:?}");
    let (acked, next) = stop_writer(acked, stop, writer).await;
    cluster.verify(&acked, &mut rng, |k, v| (k, v) == (next.0.as_str(), next.1.as_str())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_killed_inside_purges_snapshot_builds_and_installs() {
    let mut rng = Rng(seed(SEED));
    let mut cluster = Cluster::new(SNAPSHOTS_OFTEN);
    let leader = cluster.start_all(&[]).await;
    let (acked, stop, writer) = spawn_writer(&cluster);
    more_writes(&cluster, &acked, 20, "before the first kill").await;
    let f = a_follower(&cluster, leader, &mut rng);
    for at in ["purge:{n}:before", "purge:{n}:durable", "snapshot:{n}:before", "snapshot:{n}:durable"] {
        cluster.kill(f);
        crash_at(&mut cluster, f, &at.replace("{n}", &(1 + rng.below(3)).to_string())).await;
        more_writes(&cluster, &acked, 20, &format!("node {f} down")).await;
        cluster.start(f);
        more_writes(&cluster, &acked, 10, &format!("node {f} restarted")).await;
    }
    // Far behind the leader's purged log: the restarted follower must
    // install a snapshot, and is killed inside the install, twice.
    cluster.kill(f);
    let st = more_writes(&cluster, &acked, 150, &format!("node {f} down, the log purged past it")).await;
    let purged = cluster.leader(&st).and_then(|(_, s)| s.purged);
    crash_at(&mut cluster, f, "install:1:before").await;
    crash_at(&mut cluster, f, "install:1:durable").await;
    cluster.start(f);
    let st = more_writes(&cluster, &acked, 10, "after the last restart").await;
    let s = caught_up(&cluster, f, &st).await;
    assert!(s.snapshot > purged.map(|p| p.saturating_sub(30)), "node {f} holds a snapshot installed: {s:?}");
    let (acked, next) = stop_writer(acked, stop, writer).await;
    cluster.verify(&acked, &mut rng, |k, v| (k, v) == (next.0.as_str(), next.1.as_str())).await;
}

async fn put(addr: &str, key: &str, value: &str) -> Option<WriteResult> {
    let req = Request::Set { key: key.as_bytes().to_vec(), value: value.as_bytes().to_vec() };
    call(addr, &Rpc::Write(req)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_killed_inside_its_vote_in_an_election() {
    let mut rng = Rng(seed(SEED));
    let mut cluster = Cluster::new(SNAPSHOTS_OFTEN);
    cluster.start_all(&[]).await;
    let (acked, stop, writer) = spawn_writer(&cluster);
    for moment in ["before", "durable"] {
        let st = more_writes(&cluster, &acked, 20, "before the round").await;
        let (leader, _) = cluster.leader(&st).expect("a leader");
        let f = a_follower(&cluster, leader, &mut rng);
        // Rejoining saves no vote once the follower stored the leader's, which
        // applying the leader's entries proves. (Killed before that — the old
        // leader of the round before, restarted and not yet reached — it
        // saved the new leader's vote on rejoining and died there, not in
        // the election: a flake under load.)
        caught_up(&cluster, f, &st).await;
        cluster.kill(f);
        cluster.start_with(f, &["--crash-at", &format!("vote:1:{moment}")]);
        let st = more_writes(&cluster, &acked, 10, &format!("node {f} rejoined")).await;
        caught_up(&cluster, f, &st).await;
        // ... the election after the leader dies does.
        cluster.kill(leader);
        let status = cluster.wait_exit(f, &format!("--crash-at vote:1:{moment} in the election")).await;
        assert_eq!(status.signal(), Some(9), "node {f} ended with {status:?}, not SIGKILL inside its vote");
        eprintln!("node {f}: killed at vote:1:{moment}");
        // One node alone has no quorum: the two restarted elect a leader.
        cluster.start(f);
        more_writes(&cluster, &acked, 20, &format!("node {f} restarted")).await;
        cluster.start(leader);
    }
    let st = more_writes(&cluster, &acked, 10, "all three running").await;
    for id in NODES {
        caught_up(&cluster, id, &st).await;
    }
    let (acked, next) = stop_writer(acked, stop, writer).await;
    cluster.verify(&acked, &mut rng, |k, v| (k, v) == (next.0.as_str(), next.1.as_str())).await;
}

/// Writes `key` through the current leader, again until acknowledged.
async fn put_acked(cluster: &Cluster, key: &str, value: &str) {
    let deadline = std::time::Instant::now() + node_support::DEADLINE;
    loop {
        let st = cluster.statuses().await;
        if let Some((l, _)) = cluster.leader(&st) {
            if let Some(Ok(_)) = put(&cluster.node(l).addr, key, value).await {
                return;
            }
        }
        assert!(std::time::Instant::now() < deadline, "write {key} never acknowledged; last status {st:#?}");
        tokio::time::sleep(node_support::POLL).await;
    }
}

async fn old_leader_killed_inside_truncation(moment: &str) {
    let mut rng = Rng(seed(SEED));
    let mut cluster = Cluster::new(NO_SNAPSHOTS);
    let at = format!("truncate:1:{moment}");
    let old = cluster.start_all(&["--crash-at", &at]).await;
    let mut acked = BTreeMap::new();
    for i in 0..5 {
        let (k, v) = (format!("a{i}"), format!("v{i}"));
        let r = put(&cluster.node(old).addr, &k, &v).await;
        assert!(matches!(r, Some(Ok(_))), "write {k} through the leader: {r:?}");
        acked.insert(k, v);
    }

    // Partition the leader away; writes sent to it are appended to its log only.
    let st = cluster.statuses().await;
    let before = st[&old].as_ref().and_then(|s| s.last_log_index);
    let r: Option<()> = call(&cluster.node(old).addr, &Rpc::Isolate(true)).await;
    assert_eq!(r, Some(()), "isolating node {old}");
    let lost: Vec<_> = (0..3)
        .map(|i| {
            let addr = cluster.node(old).addr.clone();
            tokio::spawn(async move { put(&addr, &format!("lost{i}"), "never").await })
        })
        .collect();
    cluster
        .wait(&format!("isolated node {old} appended the writes it cannot commit"), |st| {
            let s = st[&old].as_ref()?;
            (s.last_log_index >= before.map(|b| b + 3)).then_some(())
        })
        .await;
    let new = cluster
        .wait("the other two elect a new leader", |st| {
            let others: Vec<&Status> =
                NODES.iter().filter(|&&n| n != old).map(|n| st[n].as_ref()).collect::<Option<_>>()?;
            let l = others[0].current_leader.filter(|&l| l != old)?;
            others.iter().all(|s| s.current_leader == Some(l)).then_some(l)
        })
        .await;
    for i in 0..5 {
        let (k, v) = (format!("b{i}"), format!("v{i}"));
        let r = put(&cluster.node(new).addr, &k, &v).await;
        assert!(matches!(r, Some(Ok(_))), "write {k} through the new leader {new}: {r:?}");
        acked.insert(k, v);
    }
    for t in lost {
        let r = t.await.unwrap();
        assert!(!matches!(r, Some(Ok(_))), "a write to the isolated leader was acknowledged: {r:?}");
    }

    // Heal: the old leader meets the new term, truncates its tail, and dies there.
    let r: Option<()> = call(&cluster.node(old).addr, &Rpc::Isolate(false)).await;
    assert_eq!(r, Some(()), "healing node {old}");
    let status = cluster.wait_exit(old, &format!("--crash-at {at} once healed")).await;
    assert_eq!(status.signal(), Some(9), "node {old} ended with {status:?}, not SIGKILL at {at}");
    cluster.start(old);
    for i in 0..5 {
        let (k, v) = (format!("c{i}"), format!("v{i}"));
        // The restarted node may call an election: write through whoever leads.
        put_acked(&cluster, &k, &v).await;
        acked.insert(k, v);
    }
    // Nothing beyond the acknowledged writes: the truncated ones are gone everywhere.
    cluster.verify(&acked, &mut rng, |_, _| false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_leader_killed_before_its_truncation_is_written() {
    old_leader_killed_inside_truncation("before").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_leader_killed_once_its_truncation_is_durable() {
    old_leader_killed_inside_truncation("durable").await;
}
