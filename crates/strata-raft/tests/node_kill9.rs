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
//!
//! Every wait is a condition polled with short pauses and a deadline that
//! fails the test with the last `Status` of each node; node logs are shown
//! on failure. `STRATA_RAFT_KILL9_SEED` replays a run.

// openraft's error types are large, and its API returns them.
#![allow(clippy::result_large_err)]

#[path = "../examples/raft-kv/net.rs"]
#[allow(dead_code)]
mod net;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openraft::storage::{RaftLogStorage, RaftStateMachine};
use strata_raft::{NodeId, Request};

use net::{Conn, ReadResult, Rpc, Status, WriteResult};

const NODES: [NodeId; 3] = [1, 2, 3];
const DEADLINE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(20);
const RPC_TIMEOUT: Duration = Duration::from_secs(2);

type Acked = Arc<Mutex<BTreeMap<String, String>>>;

/// A small xorshift.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The example binary: `target/<profile>/examples/raft-kv`, next to this
/// test's `target/<profile>/deps`.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    let bin = profile.join("examples").join(format!("raft-kv{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "the raft-kv example is not built at {} (`cargo test -p strata-raft` builds it; or run \
         `cargo build -p strata-raft --examples`)",
        bin.display()
    );
    bin
}

/// Three free loopback ports (bound to port 0, read, released).
fn free_ports() -> Vec<u16> {
    let listeners: Vec<_> =
        NODES.iter().map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0")).collect();
    listeners.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

struct Node {
    id: NodeId,
    addr: String,
    dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

struct Cluster {
    bin: PathBuf,
    peers: String,
    nodes: Vec<Node>,
    _tmp: tempfile::TempDir,
}

impl Cluster {
    fn new() -> Cluster {
        let bin = example_binary();
        let tmp = tempfile::tempdir().unwrap();
        let ports = free_ports();
        let nodes: Vec<Node> = NODES
            .iter()
            .zip(&ports)
            .map(|(&id, port)| Node {
                id,
                addr: format!("127.0.0.1:{port}"),
                dir: tmp.path().join(format!("node{id}")),
                log: tmp.path().join(format!("node{id}.log")),
                child: None,
            })
            .collect();
        let peers = nodes.iter().map(|n| format!("{}={}", n.id, n.addr)).collect::<Vec<_>>().join(",");
        Cluster { bin, peers, nodes, _tmp: tmp }
    }

    fn node(&self, id: NodeId) -> &Node {
        &self.nodes[(id - 1) as usize]
    }

    fn start(&mut self, id: NodeId) {
        let (bin, peers) = (self.bin.clone(), self.peers.clone());
        let node = &mut self.nodes[(id - 1) as usize];
        assert!(node.child.is_none(), "node {id} is running already");
        let stderr = OpenOptions::new().create(true).append(true).open(&node.log).unwrap();
        let child = Command::new(bin)
            .args(["node", "--id", &id.to_string(), "--dir"])
            .arg(&node.dir)
            .args(["--peers", &peers, "--snapshot-every", "30", "--keep", "5"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap_or_else(|e| panic!("starting node {id}: {e}"));
        node.child = Some(child);
    }

    /// SIGKILL, and reaps the process (its directory is free after).
    fn kill(&mut self, id: NodeId) {
        let node = &mut self.nodes[(id - 1) as usize];
        let mut child = node.child.take().unwrap_or_else(|| panic!("node {id} is not running"));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    fn running(&self, id: NodeId) -> bool {
        self.node(id).child.is_some()
    }

    /// Each node's status; `None` for a node not running or not answering.
    async fn statuses(&self) -> BTreeMap<NodeId, Option<Status>> {
        let mut out = BTreeMap::new();
        for n in &self.nodes {
            let s = if n.child.is_some() { status(&n.addr).await } else { None };
            out.insert(n.id, s);
        }
        out
    }

    /// The running node that says it is the leader, if one does.
    fn leader(&self, st: &BTreeMap<NodeId, Option<Status>>) -> Option<(NodeId, Status)> {
        st.iter().find_map(|(&id, s)| match s {
            Some(s) if s.current_leader == Some(id) && self.running(id) => Some((id, s.clone())),
            _ => None,
        })
    }

    /// Polls the statuses until `cond` holds; fails after [`DEADLINE`].
    async fn wait<T>(
        &self,
        what: &str,
        mut cond: impl FnMut(&BTreeMap<NodeId, Option<Status>>) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let st = self.statuses().await;
            if let Some(t) = cond(&st) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {DEADLINE:?} waiting for {what}; last status: {st:#?}"
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if std::thread::panicking() {
            for n in &self.nodes {
                let text = std::fs::read_to_string(&n.log).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = &lines[lines.len().saturating_sub(60)..];
                eprintln!("---- node {} stderr ({}, last {} lines) ----", n.id, n.log.display(), tail.len());
                for l in tail {
                    eprintln!("{l}");
                }
            }
        }
    }
}

async fn call<T: serde::de::DeserializeOwned>(addr: &str, rpc: &Rpc) -> Option<T> {
    tokio::time::timeout(RPC_TIMEOUT, async {
        let mut conn = Conn::connect(addr).await.ok()?;
        conn.call(rpc).await.ok()
    })
    .await
    .ok()
    .flatten()
}

async fn status(addr: &str) -> Option<Status> {
    call(addr, &Rpc::Status).await
}

/// The writer: keys `k000000`, `k000001`, ... each written until acknowledged
/// (or `stop`), following the leader; every acknowledged write recorded.
async fn writer(addrs: Vec<String>, acked: Acked, stop: Arc<AtomicBool>) {
    let mut target = 0;
    let mut conn: Option<Conn> = None;
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let (key, value) = (format!("k{i:06}"), format!("v{i}"));
        let req = Request::Set { key: key.clone().into_bytes(), value: value.clone().into_bytes() };
        if conn.is_none() {
            conn = tokio::time::timeout(RPC_TIMEOUT, Conn::connect(&addrs[target]))
                .await
                .ok()
                .and_then(Result::ok);
        }
        let r: Option<WriteResult> = match conn.as_mut() {
            Some(c) => {
                tokio::time::timeout(RPC_TIMEOUT, c.call(&Rpc::Write(req))).await.ok().and_then(Result::ok)
            }
            None => None,
        };
        match r {
            Some(Ok(_)) => {
                acked.lock().unwrap().insert(key, value);
                i += 1;
                continue;
            }
            Some(Err(e)) => match e.forward_to_leader().and_then(|f| f.leader_node.clone()) {
                Some(leader) if leader.addr != addrs[target] => {
                    target = addrs.iter().position(|a| *a == leader.addr).expect("leader among the peers");
                }
                // No leader known yet, or a stale hint: ask another node.
                _ => target = (target + 1) % addrs.len(),
            },
            // Unreachable, closed or timed out (the outcome unknown: the same write again).
            None => target = (target + 1) % addrs.len(),
        }
        conn = None;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn acked_len(acked: &Acked) -> usize {
    acked.lock().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_survives_node_kill9() {
    let started = Instant::now();
    let seed = std::env::var("STRATA_RAFT_KILL9_SEED").ok().map_or_else(
        || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1,
        |s| s.parse().expect("STRATA_RAFT_KILL9_SEED is a number"),
    );
    eprintln!("seed {seed} (STRATA_RAFT_KILL9_SEED replays it)");
    let mut rng = Rng(seed);
    let mut cluster = Cluster::new();
    for id in NODES {
        cluster.start(id);
    }
    // Init once every node listens (a refused connection: try again).
    let members = cluster.peers.clone();
    let init_addr = cluster.node(1).addr.clone();
    cluster.wait("every node to answer Status", |st| st.values().all(Option::is_some).then_some(())).await;
    let members: BTreeMap<NodeId, openraft::BasicNode> = members
        .split(',')
        .map(|p| {
            let (id, addr) = p.split_once('=').unwrap();
            (id.parse().unwrap(), openraft::BasicNode::new(addr))
        })
        .collect();
    let r: Option<Result<(), String>> = call(&init_addr, &Rpc::Init(members)).await;
    assert!(matches!(r, Some(Ok(()))), "init: {r:?}");
    cluster
        .wait("a leader that every node knows", |st| {
            let (l, _) = cluster.leader(st)?;
            st.values().all(|s| s.as_ref().is_some_and(|s| s.current_leader == Some(l))).then_some(())
        })
        .await;

    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let addrs: Vec<String> = cluster.nodes.iter().map(|n| n.addr.clone()).collect();
    let writer = tokio::spawn(writer(addrs, acked.clone(), stop.clone()));

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

    // All three agree, and have applied the leader's whole log.
    let (leader, final_st) = cluster
        .wait("all three nodes applied the leader's last log index", |st| {
            let (l, ls) = cluster.leader(st)?;
            let all = st.values().all(|s| {
                s.as_ref().is_some_and(|s| s.current_leader == Some(l) && s.last_applied == ls.last_log_index)
            });
            all.then(|| (l, st.clone()))
        })
        .await;

    // Linearizable reads of a sample of the acknowledged keys, through the leader.
    let keys: Vec<&String> = acked.keys().collect();
    let mut sample: Vec<&String> = (0..40).map(|_| keys[rng.below(keys.len() as u64) as usize]).collect();
    sample.extend(keys.iter().rev().take(10));
    let mut conn = Conn::connect(&cluster.node(leader).addr).await.unwrap();
    for k in sample {
        let r: ReadResult = conn.call(&Rpc::Read(k.clone().into_bytes())).await.unwrap();
        assert_eq!(
            r,
            Ok(Some(acked[k].clone().into_bytes())),
            "linearizable read of {k} through the leader (node {leader})"
        );
    }

    // SIGKILL all three; every directory reopened holds the same state machine,
    // with every acknowledged write.
    for id in NODES {
        cluster.kill(id);
    }
    let mut items = Vec::new();
    for id in NODES {
        let (mut log, mut sm) = strata_raft::open(&cluster.node(id).dir)
            .unwrap_or_else(|e| panic!("reopening node {id}'s directory: {e}"));
        let state = log.get_log_state().await.unwrap();
        let (applied, _) = sm.applied_state().await.unwrap();
        assert!(
            state.last_log_id >= applied,
            "node {id}: last log id {:?} behind the applied id {applied:?}",
            state.last_log_id
        );
        let node_items: BTreeMap<String, String> = sm
            .items()
            .unwrap()
            .into_iter()
            .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        for (k, v) in &acked {
            assert_eq!(node_items.get(k), Some(v), "node {id}: acknowledged write {k}={v}");
        }
        // Beyond them, at most the write in flight when the writer stopped.
        let next = (format!("k{:06}", acked.len()), format!("v{}", acked.len()));
        for (k, v) in &node_items {
            assert!(
                acked.contains_key(k) || (k, v) == (&next.0, &next.1),
                "node {id}: {k}={v} was never written ({} writes acknowledged)",
                acked.len()
            );
        }
        items.push((id, applied, node_items));
    }
    for (id, applied, it) in &items[1..] {
        assert!(
            *it == items[0].2,
            "node {id} (applied {applied:?}) and node 1 (applied {:?}) hold different state machines",
            items[0].1
        );
    }
    eprintln!(
        "{kills} kills ({leader_kills} of the leader), {} writes acknowledged, {installs} restarts caught up \
         by a snapshot install; final status {final_st:?}; {:.1} s",
        acked.len(),
        started.elapsed().as_secs_f64()
    );
}
