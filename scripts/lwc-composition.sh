#!/usr/bin/env bash
# Light-weight compaction composed with the block cache: appends never move a
# table's blocks, so cached blocks of the tables a compaction appends to stay
# valid. 500 k unique 1 KiB records loaded once per policy (64 MiB block cache,
# 4 MiB memtables and tables, L1 16 MiB x10, direct reads), then 4 readers of a
# hot range (98 % of reads in 15 % of the keys) with one writer of uniform
# updates held to 2 MB/s, per-second hit ratios. Usage:
# scripts/lwc-composition.sh OUT_DIR [SECS] [POLICIES]
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [SECS] [POLICIES]}
secs=${2:-60}
policies=${3:-leveled,lwc,lsbm}
bin=${BIN:-target/release/strata-bench}
mkdir -p "$out"
common=(--num=500000 --value_size=1000 --cache_size=$((64 << 20)) --write_buffer_size=$((4 << 20))
  --max_file_size=$((4 << 20)) --max_bytes_for_level_base=$((16 << 20)) --use_direct_reads
  --engines=strata --policy="$policies" --db="$out/db")
"$bin" "${common[@]}" --benchmarks=filluniquerandom,waitforcompaction --out="$out/load" | tee "$out/load.txt"
"$bin" "${common[@]}" --use_existing_db --threads=4 --duration="$secs" --stats_interval_seconds=1 \
  --benchmark_write_rate_limit=$((2 << 20)) --benchmarks=readwhilewriting --read_dist=rangehot \
  --out="$out/rangehot" | tee "$out/rangehot.txt"
python3 scripts/lsbm-summary.py "$out" 10 | tee "$out/summary.md"
rm -rf "$out/db"*
