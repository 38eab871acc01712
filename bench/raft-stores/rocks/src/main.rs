//! `raft-stores-rocks [WRITES] [CONCURRENCY] [VALUE_SIZE]`: the in-process
//! 3-node cluster bench on openraft-rocksstore. See docs/RAFT.md.

#[path = "../../cluster.rs"]
mod cluster;

use openraft::storage::Adaptor;
use openraft_rocksstore::{RocksRequest, RocksStore, TypeConfig};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = cluster::Args::from_env();
    let tmp = tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| "/tmp".into())).unwrap();
    let mut stores = Vec::new();
    for id in 1..=3 {
        stores.push(Adaptor::new(RocksStore::new(tmp.path().join(format!("node{id}"))).await));
    }
    let request = |i: usize, v: &[u8]| RocksRequest::Set {
        key: format!("key{i:010}"),
        value: String::from_utf8_lossy(v).into_owned(),
    };
    cluster::bench::<TypeConfig, _, _>("openraft-rocksstore", stores, request, &args).await;
}
