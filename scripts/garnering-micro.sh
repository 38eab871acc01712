#!/usr/bin/env bash
# Autumn's db_bench micro experiment (paper Fig. 3 / Table 2) scaled to this machine:
# 2 MiB files, 10 MiB level base, no block cache, no filters, no compression, direct
# reads; fillrandom of 16 B / 100 B entries, then point reads and seeks.
# Usage: scripts/garnering-micro.sh OUT_DIR [NUM] [READS] [RATIO]
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [NUM] [READS] [RATIO]}
num=${2:-16000000}
reads=${3:-100000}
ratio=${4:-10}
bin=${BIN:-target/release/strata-bench}
mkdir -p "$out"
common=(--num="$num" --reads="$reads" --key_size=16 --value_size=100 --cache_size=0 --bloom_bits=0
  --compression_type=none --use_direct_reads --max_file_size=2097152 --write_buffer_size=4194304
  --max_bytes_for_level_base=10485760 --max_bytes_for_level_multiplier="$ratio"
  --benchmarks=fillrandom,waitforcompaction,readrandom,seekrandom,seekrandomnext10)
run() { # TAG ENGINES POLICIES C
  "$bin" "${common[@]}" --engines="$2" --policy="$3" --garnering_c="$4" \
    --db="$out/db-$1" --out="$out/$1" 2>&1 | tee "$out/$1.txt"
  rm -rf "$out/db-$1"
}
run leveled-c08 strata,rocksdb leveled,garnering 0.8
run c04 strata garnering 0.4
