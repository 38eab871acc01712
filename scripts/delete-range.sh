#!/usr/bin/env bash
# delete_range against point deletes of the same keys (10 % of them, as 10
# contiguous ranges), Strata and RocksDB: the time the deletes take, the space
# afterwards (once compactions settle, and after a full compaction), and the
# read cost afterwards (readrandom over the whole key space, deleted keys
# included, and seekrandom). LevelDB and fjall have no range delete: pass them
# in ENGINES to see their point deletes (deleterange is skipped for them).
# Usage: scripts/delete-range.sh OUT_DIR NUM [ENGINES]
# Build first: cargo build --release -p strata-bench --features rocksdb
set -euo pipefail
out=${1:?usage: $0 OUT_DIR NUM [ENGINES]}
num=${2:?usage: $0 OUT_DIR NUM [ENGINES]}
engines=${3:-strata,rocksdb}
bin=${BIN:-target/release/strata-bench}
reads=${READS:-$(( num < 200000 ? num : 200000 ))}
mkdir -p "$out"
for mode in range point; do
  db="$out/db-$mode"
  rm -rf "$db"
  common=(--num="$num" --reads="$reads" --key_size=16 --value_size=100 --engines="$engines"
    --delete_fraction=0.1 --delete_ranges=10 --db="$db")
  # Load, settle, delete, settle (space), read.
  "$bin" "${common[@]}" \
    --benchmarks=fillrandom,waitforcompaction,delete$mode,waitforcompaction,readrandom,seekrandom \
    --out="$out/delete-$mode" 2>&1 | tee "$out/delete-$mode.txt"
  for d in "$db"/*/; do
    [ -d "$d" ] && echo "$(basename "$d") delete$mode settled: $(du -sb "$d" | cut -f1) bytes" | tee -a "$out/sizes.txt"
  done
  # A full compaction, then the reads again on what is left.
  "$bin" "${common[@]}" --use_existing_db --benchmarks=compact,readrandom,seekrandom \
    --out="$out/delete-$mode-compacted" 2>&1 | tee "$out/delete-$mode-compacted.txt"
  for d in "$db"/*/; do
    [ -d "$d" ] && echo "$(basename "$d") delete$mode compacted: $(du -sb "$d" | cut -f1) bytes" | tee -a "$out/sizes.txt"
  done
done
rm -rf "$out"/db-*
