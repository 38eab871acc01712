#!/usr/bin/env bash
# The raft-kv example end to end: three node processes on loopback (each with
# its Strata directory), init, a write and a linearizable read through
# different nodes, the replicated-write benchmark, and the same writes on one
# Strata database (synced, no Raft) for comparison; then the nodes are stopped.
#   scripts/raft-kv-demo.sh [WRITES] [CONCURRENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
writes=${1:-20000}
concurrency=${2:-16}
cargo build --release -q -p strata-raft --example raft-kv
bin=target/release/examples/raft-kv
work=$(mktemp -d /tmp/raft-kv.XXXXXX)
peers=1=127.0.0.1:21001,2=127.0.0.1:21002,3=127.0.0.1:21003
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for i in 1 2 3; do
    RUST_LOG=warn "$bin" node --id "$i" --dir "$work/node$i" --peers "$peers" 2>"$work/node$i.log" &
    pids+=($!)
done
# The nodes are up once they accept the init (retried until they listen).
for _ in $(seq 100); do
    "$bin" init --addr 127.0.0.1:21001 --peers "$peers" 2>/dev/null && break
    sleep 0.1
done
# A leader is elected once a write goes through.
for _ in $(seq 100); do
    "$bin" put --addr 127.0.0.1:21002 hello world 2>/dev/null && break
    sleep 0.1
done
echo "get hello via node 3: $("$bin" get --addr 127.0.0.1:21003 hello)"
"$bin" bench --addr 127.0.0.1:21001 --writes "$writes" --concurrency "$concurrency"
# What the purged log leaves behind in node 1's raft_log keyspace (read-only: the node runs).
cargo build --release -q -p strata-cli
echo "node 1's raft_log keyspace after the purges:"
target/release/strata properties --db "$work/node1" --keyspace raft_log \
    rocksdb.estimate-num-keys rocksdb.total-sst-files-size rocksdb.num-files-at-level0 strata.policy
"$bin" local-bench --dir "$work/local" --writes "$writes" --concurrency "$concurrency"
