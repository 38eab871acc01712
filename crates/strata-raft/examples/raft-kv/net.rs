//! The example's network: one JSON line per message over TCP, a request
//! and its reply on the same connection (enough for a demo on loopback;
//! a deployment would bring its own RPC). Both openraft's RPCs and the
//! service's client calls travel this way.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use openraft::error::{
    CheckIsLeaderError, ClientWriteError, InstallSnapshotError, NetworkError, RPCError, RaftError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, ClientWriteResponse, InstallSnapshotRequest,
    InstallSnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Raft};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use strata_raft::{NodeId, Request, StateMachine, TypeConfig};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

#[derive(Serialize, Deserialize)]
pub enum Rpc {
    Append(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<NodeId>),
    Snapshot(InstallSnapshotRequest<TypeConfig>),
    /// A write to the service (through the leader).
    Write(Request),
    /// A linearizable read (on the leader).
    Read(Vec<u8>),
    /// Initializes the cluster with these members.
    Init(BTreeMap<NodeId, BasicNode>),
    /// The node's view of Raft, from its metrics: a [`Status`].
    Status,
    /// Fault injection for tests: while isolated, the node neither sends nor
    /// answers openraft's RPCs (a network partition around it); client calls
    /// still reach it. Replies `()`.
    Isolate(bool),
}

/// A node's Raft state, as its metrics report it.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    pub current_leader: Option<NodeId>,
    pub last_log_index: Option<u64>,
    pub last_applied: Option<u64>,
    pub purged: Option<u64>,
    pub snapshot: Option<u64>,
}

pub type WriteResult =
    Result<ClientWriteResponse<TypeConfig>, RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>>;
pub type ReadResult = Result<Option<Vec<u8>>, String>;

/// A connection: requests written as lines, replies read as lines.
pub struct Conn {
    read: BufReader<OwnedReadHalf>,
    write: OwnedWriteHalf,
    line: String,
}

impl Conn {
    pub async fn connect(addr: &str) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (r, w) = stream.into_split();
        Ok(Conn { read: BufReader::new(r), write: w, line: String::new() })
    }

    /// Sends `rpc`, returns the reply.
    ///
    /// Not cancel-safe: dropped before the reply arrives, it leaves that
    /// reply on the connection for the next call to read as its own, so a
    /// caller that may drop it (a timeout) drops the connection with it.
    pub async fn call<T: DeserializeOwned>(&mut self, rpc: &Rpc) -> io::Result<T> {
        let mut msg = serde_json::to_vec(rpc)?;
        msg.push(b'\n');
        self.write.write_all(&msg).await?;
        self.line.clear();
        if self.read.read_line(&mut self.line).await? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the node closed the connection"));
        }
        Ok(serde_json::from_str(&self.line)?)
    }
}

/// Serves `raft` (and the service on `sm`) on `listener`, one task per
/// connection; `net` is the node's outgoing side (isolated together).
pub async fn serve(
    listener: TcpListener,
    raft: Raft<TypeConfig>,
    sm: StateMachine,
    net: Network,
) -> io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let (raft, sm, net) = (raft.clone(), sm.clone(), net.clone());
        tokio::spawn(async move {
            if let Err(e) = handle(stream, raft, sm, net).await {
                log::debug!("connection closed: {e}");
            }
        });
    }
}

async fn handle(stream: TcpStream, raft: Raft<TypeConfig>, sm: StateMachine, net: Network) -> io::Result<()> {
    let (r, mut w) = stream.into_split();
    let mut lines = BufReader::new(r).lines();
    while let Some(line) = lines.next_line().await? {
        let rpc: Rpc = serde_json::from_str(&line)?;
        let raft_rpc = matches!(rpc, Rpc::Append(_) | Rpc::Vote(_) | Rpc::Snapshot(_));
        if raft_rpc && net.isolated() {
            // Unanswered: the sender sees the connection close.
            return Ok(());
        }
        let mut reply = match rpc {
            Rpc::Append(req) => serde_json::to_vec(&raft.append_entries(req).await)?,
            Rpc::Vote(req) => serde_json::to_vec(&raft.vote(req).await)?,
            Rpc::Snapshot(req) => serde_json::to_vec(&raft.install_snapshot(req).await)?,
            Rpc::Write(req) => serde_json::to_vec::<WriteResult>(&raft.client_write(req).await)?,
            Rpc::Read(key) => {
                let r: ReadResult = match raft.ensure_linearizable().await {
                    Ok(_) => sm.get(&key).map_err(|e| e.to_string()),
                    Err(e) => Err(leader_hint(e)),
                };
                serde_json::to_vec(&r)?
            }
            Rpc::Init(members) => {
                let r: Result<(), String> = raft.initialize(members).await.map_err(|e| e.to_string());
                serde_json::to_vec(&r)?
            }
            Rpc::Status => {
                let status = {
                    let m = raft.metrics();
                    let m = m.borrow();
                    Status {
                        current_leader: m.current_leader,
                        last_log_index: m.last_log_index,
                        last_applied: m.last_applied.map(|l| l.index),
                        purged: m.purged.map(|l| l.index),
                        snapshot: m.snapshot.map(|l| l.index),
                    }
                };
                serde_json::to_vec(&status)?
            }
            Rpc::Isolate(on) => {
                net.isolated.store(on, Ordering::SeqCst);
                log::warn!("isolated: {on}");
                serde_json::to_vec(&())?
            }
        };
        reply.push(b'\n');
        w.write_all(&reply).await?;
    }
    Ok(())
}

/// A read refused by a non-leader names the leader's address, `leader=ADDR`.
fn leader_hint(e: RaftError<NodeId, CheckIsLeaderError<NodeId, BasicNode>>) -> String {
    match e.forward_to_leader() {
        Some(f) => match &f.leader_node {
            Some(n) => format!("leader={}", n.addr),
            None => "no leader yet".into(),
        },
        None => e.to_string(),
    }
}

/// openraft's view of the network: a connection per peer, opened on first use.
#[derive(Clone, Default)]
pub struct Network {
    /// Set by [`Rpc::Isolate`]; shared by every peer and connection.
    isolated: Arc<AtomicBool>,
}

impl Network {
    fn isolated(&self) -> bool {
        self.isolated.load(Ordering::SeqCst)
    }
}

pub struct Peer {
    target: NodeId,
    addr: String,
    conn: Arc<Mutex<Option<Conn>>>,
    net: Network,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer { target, addr: node.addr.clone(), conn: Arc::default(), net: self.clone() }
    }
}

impl Peer {
    async fn call<T: DeserializeOwned, E: std::error::Error>(
        &mut self,
        rpc: &Rpc,
    ) -> Result<T, RPCError<NodeId, BasicNode, E>> {
        if self.net.isolated() {
            let e = io::Error::new(io::ErrorKind::NotConnected, "isolated (Rpc::Isolate)");
            return Err(RPCError::Unreachable(Unreachable::new(&e)));
        }
        let mut guard = self.conn.lock().await;
        // Out of the slot for the call, back only once it is answered:
        // openraft drops an RPC's future at its timeout, and a connection kept
        // with that reply unread would hand it to the next call (an old
        // "success" taken for a newer AppendEntries). Errors reconnect too.
        let mut conn = match guard.take() {
            Some(conn) => conn,
            None => {
                Conn::connect(&self.addr).await.map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?
            }
        };
        let reply = conn.call::<T>(rpc).await.map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        *guard = Some(conn);
        Ok(reply)
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let r: Result<_, RaftError<NodeId>> = self.call(&Rpc::Append(rpc)).await?;
        r.map_err(|e| RPCError::RemoteError(openraft::error::RemoteError::new(self.target, e)))
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        let r: Result<_, RaftError<NodeId, InstallSnapshotError>> = self.call(&Rpc::Snapshot(rpc)).await?;
        r.map_err(|e| RPCError::RemoteError(openraft::error::RemoteError::new(self.target, e)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let r: Result<_, RaftError<NodeId>> = self.call(&Rpc::Vote(rpc)).await?;
        r.map_err(|e| RPCError::RemoteError(openraft::error::RemoteError::new(self.target, e)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    /// Regression (the raft kill-9 test's "follower log reversion" panic):
    /// openraft dropped an AppendEntries call at its timeout with the reply
    /// unread, the connection stayed open, and the next AppendEntries read
    /// that reply as its own, so the leader took the follower to hold
    /// entries it never received, and panicked when the follower, restarted
    /// after a kill, said so.
    #[tokio::test]
    async fn a_call_dropped_before_its_reply_never_answers_the_next_call() {
        // A peer that echoes each request line as a JSON string; the first
        // one it ever receives only once the caller has given up on it (a
        // condition, not a delay: the first call cannot finish in time).
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(AtomicUsize::new(0));
        let gave_up = Arc::new(tokio::sync::Notify::new());
        let gate = gave_up.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let (seen, gate) = (seen.clone(), gate.clone());
                tokio::spawn(async move {
                    let (r, mut w) = stream.into_split();
                    let mut lines = BufReader::new(r).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                            gate.notified().await;
                        }
                        let mut reply = serde_json::to_vec(&line).unwrap();
                        reply.push(b'\n');
                        if w.write_all(&reply).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let mut peer = Peer { target: 2, addr, conn: Arc::default(), net: Network::default() };
        let (first, second) = (Rpc::Read(b"first".to_vec()), Rpc::Read(b"second".to_vec()));
        let cut =
            tokio::time::timeout(Duration::from_millis(50), peer.call::<String, RaftError<NodeId>>(&first));
        assert!(cut.await.is_err(), "the first call was to time out");
        gave_up.notify_one();
        let reply = peer.call::<String, RaftError<NodeId>>(&second).await.unwrap();
        assert_eq!(reply, serde_json::to_string(&second).unwrap(), "a reply to another call");
        // A call that completes keeps its connection for the next one.
        let again = peer.call::<String, RaftError<NodeId>>(&second).await.unwrap();
        assert_eq!(again, reply);
    }
}
