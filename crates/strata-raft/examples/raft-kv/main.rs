//! A replicated key-value service: three `raft-kv node` processes on
//! loopback, each storing its Raft log and state machine in Strata.
//!
//! ```sh
//! P=1=127.0.0.1:21001,2=127.0.0.1:21002,3=127.0.0.1:21003
//! for i in 1 2 3; do
//!   cargo run --release -p strata-raft --example raft-kv -- node --id $i --dir /tmp/raft-kv/$i --peers $P &
//! done
//! raft-kv init --addr 127.0.0.1:21001 --peers $P
//! raft-kv put --addr 127.0.0.1:21001 hello world
//! raft-kv get --addr 127.0.0.1:21002 hello     # any node: the read goes to the leader
//! raft-kv bench --addr 127.0.0.1:21001 --writes 20000 --concurrency 16
//! ```
//! `scripts/raft-kv-demo.sh` does all of this (and the single-node comparison).

mod crash_at;
mod net;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use openraft::{BasicNode, Config, Raft, SnapshotPolicy};
use strata_raft::{NodeId, Request};
use tokio::net::TcpListener;

use crash_at::CrashAt;
use net::{Conn, Network, ReadResult, Rpc, WriteResult};

#[derive(Parser)]
#[command(about = "A replicated key-value service on openraft with Strata storage")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Runs a node until killed.
    Node {
        #[arg(long)]
        id: NodeId,
        /// The node's Strata directory.
        #[arg(long)]
        dir: PathBuf,
        /// Every member, `ID=HOST:PORT,...` (this node's entry is where it listens).
        #[arg(long)]
        peers: String,
        /// A snapshot after this many applied entries (openraft's `LogsSinceLast`).
        #[arg(long, default_value_t = 5000)]
        snapshot_every: u64,
        /// Log entries kept behind the snapshot when purging.
        #[arg(long, default_value_t = 1000)]
        keep: u64,
        /// Fault injection for tests: SIGKILL this process the Nth time its
        /// storage reaches MOMENT (`before` a step's batch is written, or
        /// once it is `durable`) of STEP (append, vote, truncate, purge,
        /// snapshot, install).
        #[arg(long, value_name = "STEP:N:MOMENT")]
        crash_at: Option<CrashAt>,
    },
    /// Initializes the cluster (once, at any node).
    Init {
        #[arg(long)]
        addr: String,
        #[arg(long)]
        peers: String,
    },
    /// Writes a key (sent to the leader).
    Put {
        #[arg(long)]
        addr: String,
        key: String,
        value: String,
    },
    /// Reads a key, linearizably.
    Get {
        #[arg(long)]
        addr: String,
        key: String,
    },
    /// Replicated writes from concurrent clients: writes/s and latency percentiles.
    Bench {
        #[arg(long)]
        addr: String,
        #[arg(long, default_value_t = 20_000)]
        writes: usize,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        #[arg(long, default_value_t = 100)]
        value_size: usize,
    },
    /// The same writes on one Strata database, synced, no Raft: the single-node baseline.
    LocalBench {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 20_000)]
        writes: usize,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        #[arg(long, default_value_t = 100)]
        value_size: usize,
    },
}

fn parse_peers(s: &str) -> Result<BTreeMap<NodeId, BasicNode>, String> {
    s.split(',')
        .map(|p| {
            let (id, addr) = p.split_once('=').ok_or_else(|| format!("{p:?} is not ID=HOST:PORT"))?;
            let id = id.parse().map_err(|_| format!("{id:?} is not a node id"))?;
            Ok((id, BasicNode::new(addr)))
        })
        .collect()
}

/// A write through `addr`, following the leader if `addr` is not it.
async fn write(conn: &mut Conn, addr: &mut String, req: Request) -> Result<(), String> {
    for _ in 0..10 {
        let r: WriteResult = conn.call(&Rpc::Write(req.clone())).await.map_err(|e| e.to_string())?;
        match r {
            Ok(_) => return Ok(()),
            Err(e) => match e.forward_to_leader().and_then(|f| f.leader_node.clone()) {
                Some(leader) if leader.addr != *addr => {
                    *addr = leader.addr;
                    *conn = Conn::connect(addr).await.map_err(|e| e.to_string())?;
                }
                _ => return Err(e.to_string()),
            },
        }
    }
    Err("no stable leader".into())
}

fn report(what: &str, mut lat: Vec<Duration>, elapsed: Duration) {
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    println!(
        "{what}: {} writes in {:.2} s: {:.0} writes/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        elapsed.as_secs_f64(),
        lat.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        lat[lat.len() - 1].as_secs_f64() * 1e3,
    );
}

async fn bench(addr: String, writes: usize, concurrency: usize, value_size: usize) -> Result<(), String> {
    let value = vec![b'v'; value_size];
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let (mut addr, value) = (addr.clone(), value.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::connect(&addr).await.map_err(|e| e.to_string())?;
            let mut lat = Vec::new();
            for i in (c..writes).step_by(concurrency) {
                let t = Instant::now();
                let req = Request::Set { key: format!("key{i:010}").into_bytes(), value: value.clone() };
                write(&mut conn, &mut addr, req).await?;
                lat.push(t.elapsed());
            }
            Ok::<_, String>(lat)
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.map_err(|e| e.to_string())??);
    }
    report("replicated (3 nodes)", lat, start.elapsed());
    Ok(())
}

fn local_bench(dir: PathBuf, writes: usize, concurrency: usize, value_size: usize) -> strata::Result<()> {
    let db = Arc::new(strata::Db::open(&dir, strata::Options::default())?);
    let wo = strata::WriteOptions::default().with_sync(true);
    let value = vec![b'v'; value_size];
    let start = Instant::now();
    let lat = std::thread::scope(|s| {
        let handles: Vec<_> = (0..concurrency)
            .map(|c| {
                let (db, wo, value) = (&db, &wo, &value);
                s.spawn(move || {
                    let mut lat = Vec::new();
                    for i in (c..writes).step_by(concurrency) {
                        let t = Instant::now();
                        db.put_opt(format!("key{i:010}"), value, wo)?;
                        lat.push(t.elapsed());
                    }
                    Ok::<_, strata::Error>(lat)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().expect("writer thread")?);
        }
        Ok::<_, strata::Error>(all)
    })?;
    report("one Strata database, synced", lat, start.elapsed());
    Ok(())
}

struct NodeArgs {
    id: NodeId,
    dir: PathBuf,
    peers: String,
    snapshot_every: u64,
    keep: u64,
    crash_at: Option<CrashAt>,
}

async fn run_node(args: NodeArgs) -> Result<(), String> {
    let NodeArgs { id, dir, peers, snapshot_every, keep, crash_at } = args;
    let members = parse_peers(&peers)?;
    let me = members.get(&id).ok_or_else(|| format!("node {id} is not in --peers"))?;
    let (mut log, mut sm) = strata_raft::open(&dir).map_err(|e| e.to_string())?;
    if let Some(c) = crash_at {
        let hook = c.hook();
        (log, sm) = (log.with_hook(hook.clone()), sm.with_hook(hook));
    }
    let config = Config {
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(snapshot_every),
        max_in_snapshot_log_to_keep: keep,
        // With few entries kept, purge as soon as one can go (tests make purges frequent).
        purge_batch_size: if keep < 100 { 1 } else { Config::default().purge_batch_size },
        ..Default::default()
    };
    let config = Arc::new(config.validate().map_err(|e| e.to_string())?);
    let network = Network::default();
    let raft = Raft::new(id, config, network.clone(), log, sm.clone()).await.map_err(|e| e.to_string())?;
    let listener = TcpListener::bind(&me.addr).await.map_err(|e| e.to_string())?;
    log::info!("node {id} serving on {} with its data in {}", me.addr, dir.display());
    net::serve(listener, raft, sm, network).await.map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Node { id, dir, peers, snapshot_every, keep, crash_at } => {
            run_node(NodeArgs { id, dir, peers, snapshot_every, keep, crash_at }).await
        }
        Cmd::Init { addr, peers } => {
            async {
                let members = parse_peers(&peers)?;
                let mut conn = Conn::connect(&addr).await.map_err(|e| e.to_string())?;
                let r: Result<(), String> =
                    conn.call(&Rpc::Init(members)).await.map_err(|e| e.to_string())?;
                r
            }
            .await
        }
        Cmd::Put { mut addr, key, value } => {
            async {
                let mut conn = Conn::connect(&addr).await.map_err(|e| e.to_string())?;
                write(&mut conn, &mut addr, Request::Set { key: key.into_bytes(), value: value.into_bytes() })
                    .await
            }
            .await
        }
        Cmd::Get { mut addr, key } => {
            async {
                for _ in 0..10 {
                    let mut conn = Conn::connect(&addr).await.map_err(|e| e.to_string())?;
                    let r: ReadResult =
                        conn.call(&Rpc::Read(key.clone().into_bytes())).await.map_err(|e| e.to_string())?;
                    match r {
                        Ok(v) => {
                            println!(
                                "{}",
                                v.map_or("(not found)".into(), |v| String::from_utf8_lossy(&v).into_owned())
                            );
                            return Ok(());
                        }
                        Err(e) => match e.strip_prefix("leader=") {
                            Some(leader) => addr = leader.to_string(),
                            None => return Err(e),
                        },
                    }
                }
                Err("no stable leader".into())
            }
            .await
        }
        Cmd::Bench { addr, writes, concurrency, value_size } => {
            bench(addr, writes, concurrency, value_size).await
        }
        Cmd::LocalBench { dir, writes, concurrency, value_size } => {
            local_bench(dir, writes, concurrency, value_size).map_err(|e| e.to_string())
        }
    };
    if let Err(e) = result {
        eprintln!("raft-kv: {e}");
        std::process::exit(1);
    }
}
