#!/usr/bin/env bash
# Autumn's YCSB experiment (paper Fig. 4 / Table 3) scaled to this machine: load NUM 1 KiB
# records, then workloads A-F in sequence on the same database, for leveled,
# garnering c=0.8 and c=0.4 and RocksDB with the same level shape.
# Usage: scripts/garnering-ycsb.sh OUT_DIR [NUM] [OPS]
# Shape: RocksDB's defaults unless L1 (max_bytes_for_level_base, bytes), FILE (target file
# size and memtable size, bytes) or REPS are set in the environment.
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [NUM] [OPS]}
num=${2:-2000000}
ops=${3:-100000}
bin=${BIN:-target/release/strata-bench}
mkdir -p "$out"
l1=${L1:-268435456}
file=${FILE:-67108864}
common=(--num="$num" --reads="$ops" --use_direct_reads --cache_size=67108864
  --write_buffer_size="$file" --max_file_size="$file" --max_bytes_for_level_base="$l1"
  --benchmarks=ycsba,ycsbb,ycsbc,ycsbd,ycsbe,ycsbf)
"$bin" "${common[@]}" --engines=strata,rocksdb --policy=leveled,garnering@0.8,garnering@0.4 \
  --repetitions="${REPS:-1}" --baseline=strata/leveled --db="$out/db" --out="$out" 2>&1 | tee "$out/output.txt"
rm -rf "$out/db"*
