//! A 3-node openraft cluster in one process, its nodes talking through an
//! in-process network, and a replicated-write benchmark on it: generic over
//! the nodes' storage, shared by `strata/` (crates/strata-raft) and `rocks/`
//! (openraft-rocksstore). Without sockets or serialization between nodes,
//! the difference between the two is the storage. See docs/RAFT.md.

// openraft's error types are large, and its API returns them.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::impls::OneshotResponder;
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::{BasicNode, Config, Raft, RaftTypeConfig, SnapshotPolicy};

/// Writes, concurrent clients and value size, from the command line.
pub struct Args {
    pub writes: usize,
    pub concurrency: usize,
    pub value_size: usize,
}

impl Args {
    /// `[WRITES] [CONCURRENCY] [VALUE_SIZE]`, default 20000 16 100.
    pub fn from_env() -> Args {
        let a: Vec<usize> = std::env::args()
            .skip(1)
            .map(|s| s.parse().unwrap_or_else(|_| panic!("{s:?} is not a count")))
            .collect();
        let at = |i: usize, d: usize| a.get(i).copied().unwrap_or(d);
        Args { writes: at(0, 20_000), concurrency: at(1, 16), value_size: at(2, 100) }
    }
}

type Rafts<C> = Arc<Mutex<BTreeMap<u64, Raft<C>>>>;

/// The network: every node's `Raft` handle, reached by id.
pub struct Router<C: RaftTypeConfig>(Rafts<C>);

impl<C: RaftTypeConfig> Clone for Router<C> {
    fn clone(&self) -> Self {
        Router(self.0.clone())
    }
}

pub struct Conn<C: RaftTypeConfig> {
    target: u64,
    rafts: Rafts<C>,
}

impl<C> RaftNetworkFactory<C> for Router<C>
where
    C: RaftTypeConfig<NodeId = u64, Node = BasicNode>,
{
    type Network = Conn<C>;

    async fn new_client(&mut self, target: u64, _node: &BasicNode) -> Conn<C> {
        Conn { target, rafts: self.0.clone() }
    }
}

impl<C: RaftTypeConfig<NodeId = u64, Node = BasicNode>> Conn<C> {
    fn raft<E: std::error::Error>(&self) -> Result<Raft<C>, RPCError<u64, BasicNode, E>> {
        let rafts = self.rafts.lock().unwrap();
        rafts.get(&self.target).cloned().ok_or_else(|| {
            let e = io::Error::new(io::ErrorKind::NotConnected, format!("node {} is down", self.target));
            RPCError::Unreachable(Unreachable::new(&e))
        })
    }
}

impl<C> RaftNetwork<C> for Conn<C>
where
    C: RaftTypeConfig<NodeId = u64, Node = BasicNode>,
{
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<C>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let raft = self.raft()?;
        raft.append_entries(rpc).await.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<C>,
        _option: RPCOption,
    ) -> Result<InstallSnapshotResponse<u64>, RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>>
    {
        let raft = self.raft()?;
        raft.install_snapshot(rpc).await.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        _option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let raft = self.raft()?;
        raft.vote(rpc).await.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

/// Starts three nodes on `stores` (node ids 1, 2, 3), initializes the
/// cluster, writes `args.writes` requests (`request(i, value)`) through the
/// leader from `args.concurrency` clients, and prints writes/s and latency.
pub async fn bench<C, LS, SM>(
    name: &str,
    stores: Vec<(LS, SM)>,
    request: impl Fn(usize, &[u8]) -> C::D + Clone + Send + Sync + 'static,
    args: &Args,
) where
    C: RaftTypeConfig<NodeId = u64, Node = BasicNode, Responder = OneshotResponder<C>>,
    LS: RaftLogStorage<C>,
    SM: RaftStateMachine<C>,
{
    // As the raft-kv example's nodes.
    let config = Config {
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(5000),
        max_in_snapshot_log_to_keep: 1000,
        ..Default::default()
    };
    let config = Arc::new(config.validate().expect("config"));
    let router = Router::<C>(Arc::default());
    let mut members = BTreeMap::new();
    for (i, (log, sm)) in stores.into_iter().enumerate() {
        let id = i as u64 + 1;
        let raft = Raft::new(id, config.clone(), router.clone(), log, sm).await.expect("Raft::new");
        router.0.lock().unwrap().insert(id, raft);
        members.insert(id, BasicNode::new(format!("node{id}")));
    }
    let first = router.0.lock().unwrap()[&1].clone();
    first.initialize(members).await.expect("initialize");
    let m = first
        .wait(Some(Duration::from_secs(10)))
        .metrics(|m| m.current_leader.is_some(), "a leader")
        .await
        .expect("a leader within 10 s");
    let leader = router.0.lock().unwrap()[&m.current_leader.unwrap()].clone();

    let value = vec![b'v'; args.value_size];
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.concurrency {
        let (leader, request, value) = (leader.clone(), request.clone(), value.clone());
        let (writes, concurrency) = (args.writes, args.concurrency);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            for i in (c..writes).step_by(concurrency) {
                let t = Instant::now();
                leader.client_write(request(i, &value)).await.expect("client_write");
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("client task"));
    }
    let elapsed = start.elapsed();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "{name}: {} writes, {} clients, {} B values in {:.2} s: {:.0} writes/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        args.concurrency,
        args.value_size,
        elapsed.as_secs_f64(),
        lat.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        pct(1.0),
    );
    let rafts: Vec<Raft<C>> = router.0.lock().unwrap().values().cloned().collect();
    for r in rafts {
        r.shutdown().await.expect("shutdown");
    }
}
