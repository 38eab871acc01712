#!/usr/bin/env bash
# Autumn's db_bench micro experiment (the paper's Figure 2: fills, point reads, seeks)
# scaled to this machine:
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
"$bin" "${common[@]}" --engines=strata,rocksdb --policy=leveled,garnering@0.8,garnering@0.4 \
  --repetitions="${REPS:-1}" --baseline=strata/leveled --db="$out/db" --out="$out" 2>&1 | tee "$out/output.txt"
rm -rf "$out/db"*
