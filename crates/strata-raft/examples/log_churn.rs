//! What each compaction policy leaves of a Raft log that is appended to and
//! purged behind, as openraft does (`max_in_snapshot_log_to_keep` entries
//! kept after each snapshot): the `raft_log` keyspace's table bytes, files
//! and time, per policy.
//!
//! `cargo run --release -p strata-raft --example log_churn -- [ENTRIES] [POLICY,...] [BLOOM_BITS]`

use std::time::Instant;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::testing::log_id;
use openraft::{Entry, EntryPayload};
use strata::{CompactionStyle, Db, KeyspaceOptions, Options};
use strata_raft::{Request, TypeConfig};

/// openraft's defaults: a snapshot every 5000 entries, 1000 kept behind it.
const SNAPSHOT_EVERY: u64 = 5000;
const KEEP: u64 = 1000;
const BATCH: u64 = 64;

fn options() -> Options {
    // 4 MiB memtables, so a few hundred thousand entries go through tables.
    Options::default().with_write_buffer_size(4 << 20)
}

async fn churn(dir: &std::path::Path, entries: u64) -> f64 {
    let (mut log, _sm) = strata_raft::open_with(dir, options()).expect("open");
    let start = Instant::now();
    let mut next = 1;
    while next <= entries {
        let batch: Vec<Entry<TypeConfig>> = (next..next + BATCH)
            .map(|i| Entry {
                log_id: log_id(1, 1, i),
                payload: EntryPayload::Normal(Request::Set {
                    key: format!("key{i}").into_bytes(),
                    value: vec![7; 100],
                }),
            })
            .collect();
        log.blocking_append(batch).await.expect("append");
        let last = next + BATCH - 1;
        if last / SNAPSHOT_EVERY != (next - 1) / SNAPSHOT_EVERY && last > KEEP {
            log.purge(log_id(1, 1, last - KEEP)).await.expect("purge");
        }
        next += BATCH;
    }
    start.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args: Vec<String> = std::env::args().collect();
    let entries: u64 = args.get(1).map_or(300_000, |n| n.parse().expect("ENTRIES"));
    let policies = args.get(2).map_or("leveled,tiered,lsbm,garnering,lwc", String::as_str);
    let bloom: Option<f64> = args.get(3).map(|b| b.parse().expect("BLOOM_BITS"));
    println!(
        "{entries} entries appended in batches of {BATCH}, purged to {KEEP} behind every {SNAPSHOT_EVERY}"
    );
    for name in policies.split(',') {
        let style = CompactionStyle::from_name(name).expect("policy");
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("node");
        // The log keyspace made first with this policy; `open` then uses it.
        let db = Db::open(&dir, options()).expect("create");
        let mut ko = KeyspaceOptions::default().with_compaction_style(style);
        if let Some(bits) = bloom {
            ko = ko.with_bloom_bits_per_key(bits);
        }
        db.create_keyspace("raft_log", ko).expect("keyspace");
        db.close().expect("close");
        let secs = churn(&dir, entries).await;
        let db = Db::open(&dir, options()).expect("reopen");
        let ks = db.keyspace("raft_log").expect("raft_log");
        ks.flush().expect("flush");
        ks.wait_for_compactions().expect("compactions");
        let bytes = ks.property_int("rocksdb.total-sst-files-size").expect("size");
        let files: u64 =
            (0..7).filter_map(|l| ks.property_int(&format!("rocksdb.num-files-at-level{l}")).ok()).sum();
        println!(
            "{name:<10} {:>7.0} entries/s  tables {bytes:>9} bytes in {files:>3} files",
            entries as f64 / secs
        );
    }
}
