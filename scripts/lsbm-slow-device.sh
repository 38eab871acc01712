#!/usr/bin/env bash
# The compaction-buffer experiment on slow devices: every engine and policy is
# loaded once on the bare device (300 k unique 1 KiB records, ~300 MB), then
# for each device profile the same data is copied back and read by 8 rangehot
# readers while one writer updates uniformly at 2 MB/s. Each timed row first
# runs the workload WARM seconds unmeasured on the bare device (the block cache
# starts warm, as in the paper), then SECS seconds measured under the profile
# (read IOPS/bandwidth and memory limits on the database's disk; see
# scripts/slow-device.sh). Needs root and cgroups for profiles other than none.
#
# Usage: scripts/lsbm-slow-device.sh OUT_DIR [SECS] [WARM] [PROFILES] [ENGINES] [POLICIES]
#   defaults: 90 s, 30 s, "hdd cloud none", strata,rocksdb,leveldb, leveled,blsm,lsbm,dlsm
#   EXTRA="--flag ..." adds flags to the timed runs; TAG names their output (rangehot-PROFILE-TAG);
#   READ_DIST=zipfian reads a zipfian distribution instead of rangehot (the output keeps its name).
#   BENCH=seekrandomwhilewriting EXTRA="--seek_nexts=99 --max_scan_distance=100" runs bounded
#   range queries instead of gets.
#   L1_BYTES, FILE_BYTES and WB_BYTES (memtable) set the tree's shape for the load and the runs
#   (defaults 16, 4 and 4 MiB). L1_BYTES=4194304 FILE_BYTES=WB_BYTES=1048576 comes near the
#   dLSM paper's proportions (memtable : L1 : data = 1 : 10 : 1000 there): the last level
#   holds ~85 % of the data.
# Build first: cargo build --release -p strata-bench --features rocksdb,leveldb
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [SECS] [WARM] [PROFILES] [ENGINES] [POLICIES]}
secs=${2:-90}
warm=${3:-30}
profiles=${4:-hdd cloud none}
engines=${5:-strata,rocksdb,leveldb}
policies=${6:-leveled,blsm,lsbm,dlsm}
bin=${BIN:-target/release/strata-bench}
mkdir -p "$out"
loaded="$out/loaded"
common=(--num=300000 --value_size=1000 --cache_size=$((64 << 20)) --write_buffer_size="${WB_BYTES:-$((4 << 20))}"
  --max_file_size="${FILE_BYTES:-$((4 << 20))}" --max_bytes_for_level_base="${L1_BYTES:-$((16 << 20))}" --use_direct_reads
  --buffer_trim_interval=5 --engines="$engines" --policy="$policies")
if [[ -d $loaded ]]; then
  echo "reusing the load in $loaded (remove it to load again)"
else
  "$bin" "${common[@]}" --db="$loaded" --benchmarks=filluniquerandom,waitforcompaction --out="$out/load" \
    | tee "$out/load.txt"
fi
for p in $profiles; do
  rm -rf "$out/db"
  mkdir -p "$out/db"
  # The contents, so a symlinked load is copied, never written to.
  cp -a "$loaded/." "$out/db/"
  "$bin" "${common[@]}" --db="$out/db" --use_existing_db --benchmarks="${BENCH:-readwhilewriting}" --read_dist="${READ_DIST:-rangehot}" \
    --threads=8 --benchmark_write_rate_limit=$((2 << 20)) --duration="$secs" --warmup_seconds="$warm" \
    --stats_interval_seconds=5 --device_profile="$p" ${EXTRA:-} --out="$out/rangehot-$p${TAG:+-$TAG}" \
    | tee "$out/rangehot-$p${TAG:+-$TAG}.txt"
done
rm -rf "$out/db"
