//! `raft-stores-strata [WRITES] [CONCURRENCY] [VALUE_SIZE]`: the in-process
//! 3-node cluster bench on Strata's openraft storage. See docs/RAFT.md.

#[path = "../../cluster.rs"]
mod cluster;

use strata_raft::{Request, TypeConfig};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = cluster::Args::from_env();
    let tmp = tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| "/tmp".into())).unwrap();
    let stores = (1..=3).map(|id| strata_raft::open(tmp.path().join(format!("node{id}"))).unwrap()).collect();
    let request =
        |i: usize, v: &[u8]| Request::Set { key: format!("key{i:010}").into_bytes(), value: v.to_vec() };
    cluster::bench::<TypeConfig, _, _>("strata-raft", stores, request, &args).await;
}
