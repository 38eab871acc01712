#!/usr/bin/env bash
# The LSbM paper's experiment (Figures 11-13, 16-17), scaled to a 2-core machine:
# 1 M unique 1 KiB records (~1 GB), one uniform update stream held to 2 MB/s,
# 8 reader threads, direct I/O for table reads, a 320 MiB block cache (30 % of the data, as the paper's 6 GB of 20 GB; the 15 % hot range fits), L1 of
# 64 MiB so that level-1 rounds turn over every ~30 s and level-2 rounds every
# few minutes. Each engine/policy is loaded once, then runs every workload on
# the same data. Usage: scripts/lsbm-experiment.sh OUT_DIR [SECS] [ENGINES]
# Build first: cargo build --release -p strata-bench --features rocksdb,leveldb
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [SECS] [ENGINES]}
secs=${2:-150}
engines=${3:-strata,rocksdb,leveldb}
bin=${BIN:-target/release/strata-bench}
db=${DB:-$out/db}
mkdir -p "$out"
common=(--num=1000000 --value_size=1000 --cache_size=$((320 << 20)) --write_buffer_size=$((16 << 20))
  --max_file_size=$((8 << 20)) --max_bytes_for_level_base=$((64 << 20)) --use_direct_reads --db="$db")
all=(--engines="$engines" --policy=leveled,blsm,lsbm,dlsm)
timed=(--use_existing_db --threads=8 --duration="$secs" --stats_interval_seconds=1)
rate=(--benchmark_write_rate_limit=$((2 << 20)))
"$bin" "${common[@]}" "${all[@]}" --benchmarks=filluniquerandom,waitforcompaction --out="$out/load" | tee "$out/load.txt"
"$bin" "${common[@]}" "${all[@]}" "${timed[@]}" "${rate[@]}" --benchmarks=readwhilewriting --read_dist=rangehot \
  --out="$out/rangehot" | tee "$out/rangehot.txt"
"$bin" "${common[@]}" "${all[@]}" "${timed[@]}" "${rate[@]}" --benchmarks=readwhilewriting --read_dist=zipfian --zipf_const=0.999 \
  --out="$out/zipfian" | tee "$out/zipfian.txt"
"$bin" "${common[@]}" "${all[@]}" "${timed[@]}" "${rate[@]}" --benchmarks=seekrandomwhilewriting --seek_nexts=100 \
  --read_dist=rangehot --out="$out/range" | tee "$out/range.txt"
# Read-only reference for the hit-ratio target: the same readers, a writer held
# to 1 KiB/s (one update a second: no flush or compaction in the run).
"$bin" "${common[@]}" "${timed[@]}" --engines=strata --policy=lsbm --benchmarks=readwhilewriting \
  --read_dist=rangehot --benchmark_write_rate_limit=1024 --out="$out/readonly" | tee "$out/readonly.txt"
