#!/usr/bin/env bash
# Replicated writes on a 3-node in-process openraft cluster: Strata's
# storage (strata/) against openraft-rocksstore (rocks/), alternating,
# ROUNDS times each. docs/RAFT.md has the figures and what differs.
#   run.sh [WRITES] [CONCURRENCY] [VALUE_SIZE] [ROUNDS]   (20000 16 100 3)
# The rocks crate is built from a copy outside the checkout: the checkout's
# .cargo/config.toml points librocksdb-sys at Debian's RocksDB 7.8 (for the
# bench's peers), which lacks symbols the 8.10 bindings of
# openraft-rocksstore need; the copy builds RocksDB from source (~20 min once).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
writes=${1:-20000} concurrency=${2:-16} value=${3:-100} rounds=${4:-3}
copy=${RAFT_STORES_COPY:-/var/tmp/strata-raft-stores}
rm -rf "$copy" && mkdir -p "$copy" && cp -r "$here/rocks" "$here/cluster.rs" "$copy/"
(cd "$copy/rocks" && CARGO_TARGET_DIR="$root/target/raft-stores-rocks" cargo build --release -q)
(cd "$here/strata" && CARGO_TARGET_DIR="$root/target/raft-stores-strata" cargo build --release -q)
for r in $(seq "$rounds"); do
    echo "# round $r"
    "$root/target/raft-stores-strata/release/raft-stores-strata" "$writes" "$concurrency" "$value"
    "$root/target/raft-stores-rocks/release/raft-stores-rocks" "$writes" "$concurrency" "$value"
done
