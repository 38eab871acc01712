//! An in-process Raft cluster over Strata storage, for `tests/cluster.rs`.
//!
//! - [`Router`]: openraft's network, in process. It calls the target node's
//!   [`Raft`] handle, found in a shared map; a node missing from the map
//!   (killed, or not started yet) answers `Unreachable`.
//! - [`Cluster`]: starts, kills and restarts nodes, each on its own
//!   directory under one temporary directory, and drives clients (writes with
//!   leader forwarding, linearizable reads, waits on metrics).
//!
//! Storage tracking: openraft holds clones of the log store and state machine
//! in tasks of its own (the state-machine worker, replication tasks, snapshot
//! builds), and `Raft::shutdown` returns once the core task has ended, not
//! those. Each node's storage is therefore wrapped ([`Tracked`]) with a
//! sender of a channel whose receiver the node keeps: `recv()` answers `None`
//! exactly when every clone is gone, i.e. when the Strata database has been
//! closed. [`Cluster::kill`] waits for that (a condition, with a timeout),
//! so a restart on the same directory never races the old handles.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::io::Cursor;
use std::ops::RangeBounds;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{
    CheckIsLeaderError, ClientWriteError, InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{Backoff, RPCOption};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage, RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    BasicNode, Config, Entry, LogId, LogIdOptionExt, OptionalSend, Raft, RaftLogReader, RaftMetrics,
    RaftNetwork, RaftNetworkFactory, RaftSnapshotBuilder, ServerState, StorageError, StoredMembership, Vote,
};
use strata_raft::{LogStore, NodeId, Request, Response, StateMachine, TypeConfig};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long any single wait for a cluster condition may take before the
/// test fails. Generous: a loaded 2-core machine can stall for seconds.
pub const WAIT: Duration = Duration::from_secs(60);

/// Bounded retries of one client request (leader changes, forwarding).
const MAX_ATTEMPTS: usize = 50;

type Metrics = RaftMetrics<NodeId, BasicNode>;

/// A Raft config that tolerates a busy machine: elections well apart from
/// heartbeats, so a stalled scheduler does not flap leadership forever.
/// `adjust` may change anything else (snapshot policy ...).
pub fn config(adjust: impl FnOnce(&mut Config)) -> Arc<Config> {
    let mut config = Config {
        cluster_name: "strata-raft-cluster-test".into(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        ..Default::default()
    };
    adjust(&mut config);
    Arc::new(config.validate().expect("valid raft config"))
}

// ---------------------------------------------------------------------------
// Storage tracking
// ---------------------------------------------------------------------------

/// A storage handle (`LogStore` or `StateMachine`) with a token that lives
/// exactly as long as it. Field order matters: `inner` (the database
/// handle) is dropped before `_alive`, so once the last token is gone the
/// last database handle is gone too.
pub struct Tracked<S> {
    pub inner: S,
    _alive: mpsc::Sender<()>,
}

impl<S: Clone> Tracked<S> {
    fn fork(&self) -> Tracked<S> {
        Tracked { inner: self.inner.clone(), _alive: self._alive.clone() }
    }
}

impl RaftLogReader<TypeConfig> for Tracked<LogStore> {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        self.inner.try_get_log_entries(range).await
    }
}

impl RaftLogStorage<TypeConfig> for Tracked<LogStore> {
    type LogReader = Tracked<LogStore>;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        self.inner.get_log_state().await
    }

    async fn get_log_reader(&mut self) -> Tracked<LogStore> {
        Tracked { inner: self.inner.get_log_reader().await, _alive: self._alive.clone() }
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.inner.save_vote(vote).await
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        self.inner.read_vote().await
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> Result<(), StorageError<NodeId>> {
        self.inner.save_committed(committed).await
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        self.inner.read_committed().await
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        self.inner.append(entries, callback).await
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.inner.truncate(log_id).await
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.inner.purge(log_id).await
    }
}

impl RaftSnapshotBuilder<TypeConfig> for Tracked<StateMachine> {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        self.inner.build_snapshot().await
    }
}

impl RaftStateMachine<TypeConfig> for Tracked<StateMachine> {
    type SnapshotBuilder = Tracked<StateMachine>;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>), StorageError<NodeId>> {
        self.inner.applied_state().await
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        self.inner.apply(entries).await
    }

    async fn get_snapshot_builder(&mut self) -> Tracked<StateMachine> {
        Tracked { inner: self.inner.get_snapshot_builder().await, _alive: self._alive.clone() }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        self.inner.begin_receiving_snapshot().await
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        self.inner.install_snapshot(meta, snapshot).await
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        self.inner.get_current_snapshot().await
    }
}

// ---------------------------------------------------------------------------
// Network
// ---------------------------------------------------------------------------

/// The in-process network: every running node's `Raft` handle by id.
#[derive(Clone, Default)]
pub struct Router {
    nodes: Arc<Mutex<BTreeMap<NodeId, Raft<TypeConfig>>>>,
}

impl Router {
    fn get(&self, id: NodeId) -> Option<Raft<TypeConfig>> {
        self.nodes.lock().unwrap().get(&id).cloned()
    }

    fn insert(&self, id: NodeId, raft: Raft<TypeConfig>) {
        self.nodes.lock().unwrap().insert(id, raft);
    }

    fn remove(&self, id: NodeId) -> Option<Raft<TypeConfig>> {
        self.nodes.lock().unwrap().remove(&id)
    }
}

impl RaftNetworkFactory<TypeConfig> for Router {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Connection {
        Connection { target, router: self.clone() }
    }
}

/// A "connection" to one node: looked up in the router at every call, so
/// it follows the node across kills and restarts.
pub struct Connection {
    target: NodeId,
    router: Router,
}

fn unreachable(target: NodeId, why: &str) -> Unreachable {
    let e = std::io::Error::new(std::io::ErrorKind::NotConnected, format!("node {target}: {why}"));
    Unreachable::new(&e)
}

impl Connection {
    fn raft<E: std::error::Error>(&self) -> Result<Raft<TypeConfig>, RPCError<NodeId, BasicNode, E>> {
        self.router
            .get(self.target)
            .ok_or_else(|| RPCError::Unreachable(unreachable(self.target, "not running")))
    }

    /// The target's answer as openraft wants it: a node shutting down is
    /// unreachable; any other error is the target's own.
    fn answer<T, E: std::error::Error>(
        &self,
        r: Result<T, RaftError<NodeId, E>>,
    ) -> Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        r.map_err(|e| match e {
            RaftError::Fatal(f) => RPCError::Unreachable(unreachable(self.target, &f.to_string())),
            e => RPCError::RemoteError(RemoteError::new(self.target, e)),
        })
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let raft = self.raft()?;
        self.answer(raft.append_entries(rpc).await)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        let raft = self.raft()?;
        self.answer(raft.install_snapshot(rpc).await)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let raft = self.raft()?;
        self.answer(raft.vote(rpc).await)
    }

    /// Retry an unreachable node soon (openraft's default is 500 ms): a
    /// restarted node hears from the leader well within its election timeout.
    fn backoff(&self) -> Backoff {
        Backoff::new(std::iter::repeat(Duration::from_millis(100)))
    }
}

// ---------------------------------------------------------------------------
// Cluster
// ---------------------------------------------------------------------------

/// A running node.
pub struct Node {
    pub raft: Raft<TypeConfig>,
    /// The test's own handle on the state machine, for reads.
    pub sm: Tracked<StateMachine>,
    /// Answers `None` once every storage handle of this node is dropped.
    storage_gone: mpsc::Receiver<()>,
}

pub struct Cluster {
    dir: tempfile::TempDir,
    config: Arc<Config>,
    router: Router,
    nodes: BTreeMap<NodeId, Node>,
}

impl Cluster {
    pub fn new(config: Arc<Config>) -> Cluster {
        let dir = tempfile::tempdir().expect("temporary directory");
        Cluster { dir, config, router: Router::default(), nodes: BTreeMap::new() }
    }

    pub fn node_dir(&self, id: NodeId) -> PathBuf {
        self.dir.path().join(format!("node{id}"))
    }

    pub fn node(&self, id: NodeId) -> &Node {
        self.nodes.get(&id).unwrap_or_else(|| panic!("node {id} is not running"))
    }

    pub fn raft(&self, id: NodeId) -> &Raft<TypeConfig> {
        &self.node(id).raft
    }

    pub fn sm(&self, id: NodeId) -> &StateMachine {
        &self.node(id).sm.inner
    }

    pub fn metrics(&self, id: NodeId) -> Metrics {
        self.raft(id).metrics().borrow().clone()
    }

    pub fn running(&self) -> BTreeSet<NodeId> {
        self.nodes.keys().copied().collect()
    }

    /// Opens node `id`'s storage in its directory and starts its Raft.
    pub async fn start(&mut self, id: NodeId) {
        assert!(!self.nodes.contains_key(&id), "node {id} is already running");
        let dir = self.node_dir(id);
        let (log, sm) = strata_raft::open(&dir)
            .unwrap_or_else(|e| panic!("node {id}: opening its storage in {} failed: {e}", dir.display()));
        let (alive, storage_gone) = mpsc::channel(1);
        let log = Tracked { inner: log, _alive: alive };
        let sm = Tracked { inner: sm, _alive: log._alive.clone() };
        let raft = Raft::new(id, self.config.clone(), self.router.clone(), log, sm.fork())
            .await
            .unwrap_or_else(|e| panic!("node {id}: Raft::new failed: {e}"));
        self.router.insert(id, raft.clone());
        self.nodes.insert(id, Node { raft, sm, storage_gone });
    }

    /// Stops node `id`: off the network, Raft shut down, and every handle on
    /// its storage dropped (waited for), so its database is closed.
    pub async fn kill(&mut self, id: NodeId) {
        let node = self.nodes.remove(&id).unwrap_or_else(|| panic!("kill: node {id} is not running"));
        self.router.remove(id);
        let Node { raft, sm, mut storage_gone } = node;
        tokio::time::timeout(WAIT, raft.shutdown())
            .await
            .unwrap_or_else(|_| panic!("node {id}: Raft::shutdown did not finish within {WAIT:?}"))
            .unwrap_or_else(|e| panic!("node {id}: Raft::shutdown: {e}"));
        drop(raft);
        drop(sm);
        match tokio::time::timeout(WAIT, storage_gone.recv()).await {
            Ok(None) => {}
            Ok(Some(())) => unreachable!("nothing is ever sent on the storage channel"),
            Err(_) => panic!("node {id}: openraft still holds its storage {WAIT:?} after shutdown"),
        }
    }

    /// Starts node `id` again on its existing directory.
    pub async fn restart(&mut self, id: NodeId) {
        self.start(id).await;
    }

    /// Stops every node (the end of a test).
    pub async fn shutdown(mut self) {
        for id in self.running() {
            self.kill(id).await;
        }
    }

    /// Initializes the cluster from node `by` with every running node as a voter.
    pub async fn initialize(&self, by: NodeId) {
        let members: BTreeMap<NodeId, BasicNode> =
            self.running().into_iter().map(|id| (id, BasicNode::new(format!("node{id}")))).collect();
        self.raft(by).initialize(members).await.unwrap_or_else(|e| panic!("node {by}: initialize: {e}"));
    }

    /// Waits on node `id`'s metrics for `cond`; fails the test with `what`
    /// and the last metrics seen if it does not hold within [`WAIT`].
    pub async fn wait_for(&self, id: NodeId, what: &str, cond: impl Fn(&Metrics) -> bool + Send) -> Metrics {
        self.raft(id)
            .wait(Some(WAIT))
            .metrics(cond, format!("node {id}: {what}"))
            .await
            .unwrap_or_else(|e| panic!("waiting for node {id}: {what}: {e}"))
    }

    /// Triggers a snapshot on node `id` and waits until its snapshot covers
    /// `index`. openraft drops a trigger while a build is in progress (one
    /// its snapshot policy started), and that build may end below `index`:
    /// so the trigger is repeated each second until the condition holds.
    pub async fn snapshot_covering(&self, id: NodeId, index: u64) -> Metrics {
        let deadline = Instant::now() + WAIT;
        let what = format!("node {id}: snapshot at or past {index}");
        loop {
            self.raft(id)
                .trigger()
                .snapshot()
                .await
                .unwrap_or_else(|e| panic!("node {id}: trigger snapshot: {e}"));
            let wait = self.raft(id).wait(Some(Duration::from_secs(1)));
            match wait.metrics(move |m| m.snapshot.index() >= Some(index), &what).await {
                Ok(m) => return m,
                Err(e) if Instant::now() >= deadline => panic!("waiting for {what}: {e}"),
                Err(_) => {}
            }
        }
    }

    /// Waits until some running node is leader (by its own metrics) and
    /// returns it. Every running node is watched at once.
    pub async fn wait_for_leader(&self) -> NodeId {
        let deadline = Instant::now() + WAIT;
        let mut waits = tokio::task::JoinSet::new();
        for (&id, node) in &self.nodes {
            let wait = node.raft.wait(Some(WAIT));
            waits.spawn(async move {
                let leader = |m: &Metrics| m.state == ServerState::Leader && m.current_leader == Some(m.id);
                (id, wait.metrics(leader, "leader").await)
            });
        }
        let mut failures = Vec::new();
        while let Some(joined) = tokio::time::timeout_at(deadline, waits.join_next())
            .await
            .unwrap_or_else(|_| panic!("no leader among {:?} within {WAIT:?}", self.running()))
        {
            match joined.expect("leader wait task") {
                (id, Ok(_)) => {
                    waits.abort_all();
                    return id;
                }
                (id, Err(e)) => failures.push(format!("node {id}: {e}")),
            }
        }
        panic!("no leader among {:?} within {WAIT:?}: {failures:?}", self.running())
    }

    /// A running leader to send a request to: `hint` if it is running, else
    /// whichever node the cluster elects.
    async fn target(&self, hint: Option<NodeId>) -> NodeId {
        match hint {
            Some(id) if self.nodes.contains_key(&id) => id,
            _ => self.wait_for_leader().await,
        }
    }

    /// Sets `key` to `value` through the leader (following `ForwardToLeader`
    /// a bounded number of times). Returns once the write is committed and
    /// applied on the leader, i.e. acknowledged.
    pub async fn set(&self, key: &[u8], value: &[u8]) -> Response {
        let mut hint = None;
        let mut last_err = String::new();
        for _ in 0..MAX_ATTEMPTS {
            let leader = self.target(hint).await;
            let req = Request::Set { key: key.to_vec(), value: value.to_vec() };
            let res = tokio::time::timeout(WAIT, self.raft(leader).client_write(req))
                .await
                .unwrap_or_else(|_| panic!("write of {key:?} to node {leader}: no answer within {WAIT:?}"));
            match res {
                Ok(resp) => return resp.data,
                Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                    last_err = format!("node {leader}: {f}");
                    // A hint naming the node itself (or no one) means it does
                    // not know yet: wait for the election instead.
                    hint = f.leader_id.filter(|&l| l != leader);
                }
                Err(e) => panic!("write of {key:?} to node {leader} failed: {e}"),
            }
        }
        panic!("write of {key:?}: no leader took it in {MAX_ATTEMPTS} attempts; last: {last_err}")
    }

    /// A linearizable read point: asks the leader to confirm its leadership
    /// with a quorum and to apply up to the read index, and returns that
    /// leader, whose state machine can then be read.
    pub async fn linearizable_leader(&self) -> NodeId {
        let mut hint = None;
        let mut last_err = String::new();
        for _ in 0..MAX_ATTEMPTS {
            let leader = self.target(hint).await;
            let res =
                tokio::time::timeout(WAIT, self.raft(leader).ensure_linearizable()).await.unwrap_or_else(
                    |_| panic!("ensure_linearizable on node {leader}: no answer within {WAIT:?}"),
                );
            match res {
                Ok(_) => return leader,
                Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
                    last_err = format!("node {leader}: {f}");
                    hint = f.leader_id.filter(|&l| l != leader);
                }
                Err(RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(q))) => {
                    last_err = format!("node {leader}: {q}");
                    hint = None;
                }
                Err(e) => panic!("ensure_linearizable on node {leader} failed: {e}"),
            }
        }
        panic!("no linearizable read point in {MAX_ATTEMPTS} attempts; last: {last_err}")
    }

    /// Reads every key of `expected` linearizably (on a confirmed leader)
    /// and checks each acknowledged value is there. Returns the leader.
    pub async fn check_linearizable(&self, expected: &BTreeMap<Vec<u8>, Vec<u8>>) -> NodeId {
        let leader = self.linearizable_leader().await;
        let sm = self.sm(leader);
        for (k, v) in expected {
            let got = sm.get(k).unwrap_or_else(|e| panic!("node {leader}: get {k:?}: {e}"));
            assert_eq!(
                got.as_deref(),
                Some(v.as_slice()),
                "node {leader} (leader, after ensure_linearizable): acknowledged key {:?}",
                String::from_utf8_lossy(k)
            );
        }
        leader
    }

    /// Node `id`'s whole state machine.
    pub fn items(&self, id: NodeId) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.sm(id).items().unwrap_or_else(|e| panic!("node {id}: items: {e}"))
    }
}

/// `key{i}` / `value{i}` as bytes.
pub fn kv(i: usize) -> (Vec<u8>, Vec<u8>) {
    (format!("key{i:05}").into_bytes(), format!("value{i:05}").into_bytes())
}
