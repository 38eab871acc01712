#!/usr/bin/env bash
# Issue 14's read measurements: `multi_get` of 100 keys against 100 gets, and
# `get_pinned` against `get`, with 100 B and 4 KiB values, Strata and RocksDB
# (and LevelDB/fjall, whose multi-get is a loop of gets). Data fits the block
# cache after a warm-up pass, so the copy a pinned read saves is what differs.
# Usage: scripts/api-reads.sh OUT_DIR [ENGINES]
# Build first: cargo build --release -p strata-bench --features rocksdb,leveldb,fjall
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [ENGINES]}
engines=${2:-strata,rocksdb}
bin=${BIN:-target/release/strata-bench}
mkdir -p "$out"
for shape in "100 2000000 $((512 << 20))" "4096 200000 $((1536 << 20))"; do
  set -- $shape
  value=$1 num=$2 cache=$3
  common=(--num="$num" --reads=400000 --key_size=16 --value_size="$value" --cache_size="$cache"
    --bloom_bits=10 --compression_type=none --engines="$engines" --db="$out/db-$value")
  # Load, warm the cache, then alternate copied and batched reads.
  "$bin" "${common[@]}" --benchmarks=fillrandom,waitforcompaction,readrandom,readrandom,multireadrandom,readrandom,multireadrandom \
    --out="$out/copy-$value" 2>&1 | tee "$out/copy-$value.txt"
  # The same reads through get_pinned / multi_get_pinned on the loaded data.
  "$bin" "${common[@]}" --use_existing_db --pin_slice --benchmarks=readrandom,readrandom,multireadrandom,readrandom,multireadrandom \
    --out="$out/pinned-$value" 2>&1 | tee "$out/pinned-$value.txt"
done
rm -rf "$out"/db-*
