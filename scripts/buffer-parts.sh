#!/usr/bin/env bash
# LSbM's super-files in parts against whole files (`--buffer_min_part_size`), beside leveled:
# 100 k unique 1 KiB records in the dLSM paper's proportions (1 MiB memtables and files, 4 MiB
# L1) are loaded once per cut, then each round copies both loads back and runs 8 rangehot
# readers against one 2 MB/s writer (leveled and the policy's default cut in one invocation,
# interleaved, then the whole-file cut), so the rows of a round share the machine's load.
# Needs root and cgroups for a PROFILE other than none (see scripts/slow-device.sh).
#
# Usage: scripts/buffer-parts.sh OUT_DIR [PROFILE] [ROUNDS] [SECS] [CACHE_BYTES] [POLICY]
#   defaults: none, 3 rounds, 20 s (after a 5 s warm-up on the bare device), 64 MiB, lsbm
# Build first: cargo build --release -p strata-bench
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [PROFILE] [ROUNDS] [SECS] [CACHE_BYTES] [POLICY]}
profile=${2:-none}
rounds=${3:-3}
secs=${4:-20}
cache=${5:-$((64 << 20))}
policy=${6:-lsbm}
bin=${BIN:-target/release/strata-bench}
whole=$((1 << 20))
common=(--engines=strata --num=100000 --value_size=1000 --cache_size="$cache" --write_buffer_size="$whole"
  --max_file_size="$whole" --max_bytes_for_level_base=$((4 << 20)) --use_direct_reads --buffer_trim_interval=5)
mkdir -p "$out"
load() { # DIR POLICIES [FLAGS...]
  local dir=$1 policies=$2
  shift 2
  [[ -d $dir ]] && return
  "$bin" "${common[@]}" --policy="$policies" "$@" --threads=1 --benchmarks=filluniquerandom,waitforcompaction \
    --db="$dir" --quiet > "$dir.txt"
}
load "$out/load" "leveled,$policy"
load "$out/load-whole" "$policy" --buffer_min_part_size="$whole"
timed=(--use_existing_db --threads=8 --benchmarks=readwhilewriting --read_dist=rangehot --duration="$secs"
  --warmup_seconds=5 --benchmark_write_rate_limit=$((2 << 20)) --device_profile="$profile" --quiet)
run() { # LOAD OUT POLICIES [FLAGS...]
  local from=$1 to=$2 policies=$3
  shift 3
  rm -rf "$out/db" && mkdir -p "$out/db" && cp -a "$from/." "$out/db/"
  "$bin" "${common[@]}" "${timed[@]}" --policy="$policies" "$@" --db="$out/db" --out="$to" > "$to.txt"
}
for i in $(seq "$rounds"); do
  run "$out/load" "$out/$profile-$i" "leveled,$policy"
  run "$out/load-whole" "$out/$profile-$i-whole" "$policy" --buffer_min_part_size="$whole"
done
rm -rf "$out/db"
echo "round row reads/s vs_leveled hit_ratio db_MiB"
for i in $(seq "$rounds"); do
  base=$(awk -F, 'NR > 1 && $1 == "strata/leveled" { print $6 }' "$out/$profile-$i/results.csv")
  for f in "$out/$profile-$i/results.csv" "$out/$profile-$i-whole/results.csv"; do
    tag=$([[ $f == *-whole/* ]] && echo "$policy-whole" || echo "")
    awk -F, -v base="$base" -v i="$i" -v tag="$tag" 'NR > 1 {
      row = (tag != "" ? tag : substr($1, 8))
      printf "%s %s %.0f %.2f %.3f %.1f\n", i, row, $6, $6 / base, $11, $12 / 1048576 }' "$f"
  done
done
