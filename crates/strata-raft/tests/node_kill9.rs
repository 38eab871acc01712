//! kill -9 of whole nodes of a running 3-node cluster: three `raft-kv node`
//! processes (the example, built next to this test) on loopback, with
//! snapshots every 30 entries and 5 kept behind them, so snapshot builds,
//! purges and snapshot installs happen all the time. A writer writes keys
//! with leader-following retries and records every acknowledged write while
//! the test SIGKILLs a random node (sometimes the leader) 4–6 times, waits
//! for the other two to accept writes again, and restarts it on the same
//! directory and port. At the end the three nodes must agree, answer
//! linearizable reads of acknowledged keys, and — SIGKILLed and reopened
//! with `strata_raft::open` — hold identical state machines containing every
//! acknowledged write.
//! `STRATA_RAFT_KILL9_SEED` replays a run. The harness is `node_support`.

mod node_support;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use node_support::{acked_len, seed, spawn_writer, Cluster, Rng, Status, NODES};
use strata_raft::NodeId;

/// Snapshots every 30 entries, 5 entries kept behind them: snapshot builds,
/// purges and snapshot installs all the time.
const SNAPSHOTS_OFTEN: &[&str] = &["--snapshot-every", "30", "--keep", "5"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_survives_node_kill9() {
    let started = Instant::now();
    let mut rng = Rng(seed("STRATA_RAFT_KILL9_SEED"));
    let mut cluster = Cluster::new(SNAPSHOTS_OFTEN);
    cluster.start_all(&[]).await;
    let (acked, stop, writer) = spawn_writer(&cluster);

    let kills = 4 + rng.below(3);
    let (mut leader_kills, mut installs) = (0, 0);
    for round in 0..kills {
        // A random moment: some more writes acknowledged.
        let at = acked_len(&acked) + 20 + rng.below(100) as usize;
        let st = cluster
            .wait(&format!("round {round}: {at} acknowledged writes (have {})", acked_len(&acked)), |st| {
                (acked_len(&acked) >= at).then(|| st.clone())
            })
            .await;
        let (leader, _) = cluster.leader(&st).unwrap_or((0, Status::default()));
        let victim = if leader != 0 && rng.below(2) == 0 {
            leader
        } else {
            let others: Vec<NodeId> = NODES.iter().copied().filter(|&n| n != leader).collect();
            others[rng.below(others.len() as u64) as usize]
        };
        let victim_last = st[&victim].as_ref().and_then(|s| s.last_log_index);
        cluster.kill(victim);
        let was_leader = victim == leader;
        leader_kills += usize::from(was_leader);
        let at_kill = acked_len(&acked);
        eprintln!(
            "round {round}: killed node {victim} ({}) at {at_kill} acked writes, its last log index {victim_last:?}",
            if was_leader { "the leader" } else { "a follower" }
        );

        // The other two accept writes again (a few acknowledged after the kill).
        let resumed = at_kill + 5;
        cluster
            .wait(&format!("round {round}: writes resumed without node {victim} ({resumed} acked)"), |st| {
                let (l, _) = cluster.leader(st)?;
                (l != victim && acked_len(&acked) >= resumed).then_some(())
            })
            .await;
        // Sometimes restarted at once, mostly after the cluster moved well past the victim's log.
        let gap = if rng.below(3) == 0 { 0 } else { 100 + rng.below(100) as usize };
        let until = at_kill + 5 + gap;
        let st = cluster
            .wait(&format!("round {round}: {until} acked writes before restarting node {victim}"), |st| {
                (acked_len(&acked) >= until).then(|| st.clone())
            })
            .await;
        let purged = cluster.leader(&st).and_then(|(_, s)| s.purged);
        cluster.start(victim);
        // Caught up with what the leader had when it restarted. A snapshot
        // install shows as a purge up to the snapshot itself (a node's own
        // snapshots keep 5 entries behind them).
        let target = cluster.leader(&st).and_then(|(_, s)| s.last_log_index);
        let mut installed = None;
        let snap = cluster
            .wait(&format!("round {round}: restarted node {victim} applied up to {target:?}"), |st| {
                let s = st[&victim].as_ref()?;
                if s.snapshot.is_some() && s.purged >= s.snapshot && s.snapshot > victim_last {
                    installed = installed.or(s.snapshot);
                }
                (s.last_applied >= target && s.current_leader.is_some()).then_some(s.snapshot)
            })
            .await;
        installs += usize::from(installed.is_some());
        eprintln!(
            "round {round}: restarted node {victim} after {} more writes (leader purged up to {purged:?}); \
             snapshot installed: {installed:?}; its snapshot index now {snap:?}",
            acked_len(&acked) - at_kill,
        );
    }

    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    let acked: BTreeMap<String, String> = acked.lock().unwrap().clone();

    // Beyond the acknowledged writes, at most the one in flight when the writer stopped.
    let next = (format!("k{:06}", acked.len()), format!("v{}", acked.len()));
    let final_st =
        cluster.verify(&acked, &mut rng, |k, v| (k, v) == (next.0.as_str(), next.1.as_str())).await;
    eprintln!(
        "{kills} kills ({leader_kills} of the leader), {} writes acknowledged, {installs} restarts caught up \
         by a snapshot install; final status {final_st:?}; {:.1} s",
        acked.len(),
        started.elapsed().as_secs_f64()
    );
}
