//! Three `raft-kv node` processes (the example, built next to the test) on
//! loopback, driven by a test: start, SIGKILL, restart, poll `Status`, a
//! leader-following writer that records every acknowledged write, and the
//! final check that the three agree and hold every acknowledged write.
//!
//! Every wait is a condition polled with short pauses and a deadline that
//! fails the test with the last `Status` of each node; node logs are shown
//! on failure.

#![allow(dead_code)]

#[path = "../../examples/raft-kv/net.rs"]
#[allow(dead_code)]
mod net;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openraft::storage::{RaftLogStorage, RaftStateMachine};
use strata_raft::{NodeId, Request};

pub use net::{Conn, ReadResult, Rpc, Status, WriteResult};

pub const NODES: [NodeId; 3] = [1, 2, 3];
pub const DEADLINE: Duration = Duration::from_secs(60);
pub const POLL: Duration = Duration::from_millis(20);
pub const RPC_TIMEOUT: Duration = Duration::from_secs(2);

pub type Acked = Arc<Mutex<BTreeMap<String, String>>>;

/// A small xorshift.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
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

pub struct Node {
    pub id: NodeId,
    pub addr: String,
    pub dir: PathBuf,
    pub log: PathBuf,
    child: Option<Child>,
}

pub struct Cluster {
    bin: PathBuf,
    pub peers: String,
    /// Arguments every node gets (`--snapshot-every` ...).
    args: Vec<String>,
    pub nodes: Vec<Node>,
    /// Kept (not deleted) when a test fails.
    tmp: Option<tempfile::TempDir>,
}

impl Cluster {
    /// Three nodes (not started) that all get `args`.
    pub fn new(args: &[&str]) -> Cluster {
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
        Cluster { bin, peers, args: args.iter().map(|a| a.to_string()).collect(), nodes, tmp: Some(tmp) }
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[(id - 1) as usize]
    }

    pub fn start(&mut self, id: NodeId) {
        self.start_with(id, &[]);
    }

    /// Starts node `id` with `extra` arguments after the cluster's.
    pub fn start_with(&mut self, id: NodeId, extra: &[&str]) {
        let (bin, peers, args) = (self.bin.clone(), self.peers.clone(), self.args.clone());
        let node = &mut self.nodes[(id - 1) as usize];
        assert!(node.child.is_none(), "node {id} is running already");
        let stderr = OpenOptions::new().create(true).append(true).open(&node.log).unwrap();
        let child = Command::new(bin)
            .args(["node", "--id", &id.to_string(), "--dir"])
            .arg(&node.dir)
            .args(["--peers", &peers])
            .args(&args)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap_or_else(|e| panic!("starting node {id}: {e}"));
        node.child = Some(child);
    }

    /// SIGKILL, and reaps the process (its directory is free after).
    pub fn kill(&mut self, id: NodeId) {
        let node = &mut self.nodes[(id - 1) as usize];
        let mut child = node.child.take().unwrap_or_else(|| panic!("node {id} is not running"));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Waits for node `id` to exit on its own (a `--crash-at`), reaps it.
    pub async fn wait_exit(&mut self, id: NodeId, what: &str) -> ExitStatus {
        let deadline = Instant::now() + DEADLINE;
        let node = &mut self.nodes[(id - 1) as usize];
        let child = node.child.as_mut().unwrap_or_else(|| panic!("node {id} is not running"));
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                node.child = None;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {DEADLINE:?} waiting for node {id} to exit: {what}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    pub fn running(&self, id: NodeId) -> bool {
        self.node(id).child.is_some()
    }

    /// Each node's status; `None` for a node not running or not answering.
    pub async fn statuses(&self) -> BTreeMap<NodeId, Option<Status>> {
        let mut out = BTreeMap::new();
        for n in &self.nodes {
            let s = if n.child.is_some() { status(&n.addr).await } else { None };
            out.insert(n.id, s);
        }
        out
    }

    /// The running node that says it is the leader, if one does.
    pub fn leader(&self, st: &BTreeMap<NodeId, Option<Status>>) -> Option<(NodeId, Status)> {
        st.iter().find_map(|(&id, s)| match s {
            Some(s) if s.current_leader == Some(id) && self.running(id) => Some((id, s.clone())),
            _ => None,
        })
    }

    /// Polls the statuses until `cond` holds; fails after [`DEADLINE`].
    pub async fn wait<T>(
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
                // A node's panic first (openraft then logs its aftermath for ever), then the tail.
                let panics = lines.iter().enumerate().filter(|(_, l)| l.contains("panicked"));
                for (i, _) in panics.take(2) {
                    eprintln!("---- node {} stderr, lines {}.. ----", n.id, i.saturating_sub(5) + 1);
                    lines[i.saturating_sub(5)..(i + 15).min(lines.len())]
                        .iter()
                        .for_each(|l| eprintln!("{l}"));
                }
                let tail = &lines[lines.len().saturating_sub(60)..];
                eprintln!("---- node {} stderr ({}, last {} lines) ----", n.id, n.log.display(), tail.len());
                for l in tail {
                    eprintln!("{l}");
                }
            }
            if let Some(tmp) = self.tmp.take() {
                eprintln!("the nodes' directories and logs are kept in {}", tmp.keep().display());
            }
        }
    }
}

pub async fn call<T: serde::de::DeserializeOwned>(addr: &str, rpc: &Rpc) -> Option<T> {
    tokio::time::timeout(RPC_TIMEOUT, async {
        let mut conn = Conn::connect(addr).await.ok()?;
        conn.call(rpc).await.ok()
    })
    .await
    .ok()
    .flatten()
}

pub async fn status(addr: &str) -> Option<Status> {
    call(addr, &Rpc::Status).await
}

/// The writer: keys `k000000`, `k000001`, ... each written until acknowledged
/// (or `stop`), following the leader; every acknowledged write recorded.
pub async fn writer(addrs: Vec<String>, acked: Acked, stop: Arc<AtomicBool>) {
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

pub fn acked_len(acked: &Acked) -> usize {
    acked.lock().unwrap().len()
}

impl Cluster {
    /// Starts every node (each with `extra`), initializes the cluster and
    /// waits for a leader that every node knows; returns it.
    pub async fn start_all(&mut self, extra: &[&str]) -> NodeId {
        for id in NODES {
            self.start_with(id, extra);
        }
        // Init once every node listens (a refused connection: try again).
        self.wait("every node to answer Status", |st| st.values().all(Option::is_some).then_some(())).await;
        let members: BTreeMap<NodeId, openraft::BasicNode> =
            self.nodes.iter().map(|n| (n.id, openraft::BasicNode::new(&n.addr))).collect();
        let r: Option<Result<(), String>> = call(&self.node(1).addr, &Rpc::Init(members)).await;
        assert!(matches!(r, Some(Ok(()))), "init: {r:?}");
        self.wait("a leader that every node knows", |st| {
            let (l, _) = self.leader(st)?;
            st.values().all(|s| s.as_ref().is_some_and(|s| s.current_leader == Some(l))).then_some(l)
        })
        .await
    }

    /// Every node's address, in id order.
    pub fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr.clone()).collect()
    }

    /// The end of every test: all three nodes applied the leader's whole
    /// log; linearizable reads through the leader return `acked` (a sample);
    /// then all three are SIGKILLed and reopened with `strata_raft::open`,
    /// and hold identical state machines with every acknowledged write and
    /// nothing else but what `maybe(key, value)` allows (a write whose
    /// outcome the client never learned). Returns the final leader's status.
    pub async fn verify(
        &mut self,
        acked: &BTreeMap<String, String>,
        rng: &mut Rng,
        maybe: impl Fn(&str, &str) -> bool,
    ) -> Status {
        let (leader, final_st) = self
            .wait("all three nodes applied the leader's last log index", |st| {
                let (l, ls) = self.leader(st)?;
                let all = st.values().all(|s| {
                    s.as_ref()
                        .is_some_and(|s| s.current_leader == Some(l) && s.last_applied == ls.last_log_index)
                });
                all.then_some((l, ls))
            })
            .await;

        let keys: Vec<&String> = acked.keys().collect();
        if !keys.is_empty() {
            let mut sample: Vec<&String> =
                (0..40).map(|_| keys[rng.below(keys.len() as u64) as usize]).collect();
            sample.extend(keys.iter().rev().take(10));
            let mut conn = Conn::connect(&self.node(leader).addr).await.unwrap();
            for k in sample {
                let r: ReadResult = conn.call(&Rpc::Read(k.clone().into_bytes())).await.unwrap();
                assert_eq!(
                    r,
                    Ok(Some(acked[k].clone().into_bytes())),
                    "linearizable read of {k} through the leader (node {leader})"
                );
            }
        }

        for id in NODES {
            if self.running(id) {
                self.kill(id);
            }
        }
        let mut items = Vec::new();
        for id in NODES {
            let (mut log, mut sm) = strata_raft::open(&self.node(id).dir)
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
            for (k, v) in acked {
                assert_eq!(node_items.get(k), Some(v), "node {id}: acknowledged write {k}={v}");
            }
            for (k, v) in &node_items {
                assert!(
                    acked.contains_key(k) || maybe(k, v),
                    "node {id}: {k}={v} was never acknowledged ({} writes acknowledged)",
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
        final_st
    }
}

/// Runs [`writer`] in a task until the returned stop flag is set.
pub fn spawn_writer(cluster: &Cluster) -> (Acked, Arc<AtomicBool>, tokio::task::JoinHandle<()>) {
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(writer(cluster.addrs(), acked.clone(), stop.clone()));
    (acked, stop, task)
}

/// The seed from `var` if set, else from the clock (printed, to replay).
pub fn seed(var: &str) -> u64 {
    let seed = std::env::var(var).ok().map_or_else(
        || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1,
        |s| s.parse().unwrap_or_else(|_| panic!("{var} is a number")),
    );
    eprintln!("seed {seed} ({var} replays it)");
    seed
}
