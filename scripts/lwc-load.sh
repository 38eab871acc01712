#!/usr/bin/env bash
# The LWC-tree's load experiment scaled to this machine: a random load
# (fillrandom) of NUM entries, 16 B keys and VALUE-byte values, on a leveled
# shape of 2 MiB tables, 4 MiB memtables and an 8 MiB L1 growing x10 per level
# (so ~2 GB reaches L4: five levels, as the slides' 100 GB on 64 MiB tables
# reaches L5), 10 bloom bits, an 8 MiB block cache, no compression; then
# point reads and short scans on the loaded data, and a sequential load.
# Strata's leveled and lwc policies against RocksDB with the same shape.
# Usage: scripts/lwc-load.sh OUT_DIR [NUM] [VALUE_SIZE] [ENGINES]
# Environment: POLICIES (default leveled,lwc), EXTRA (more bench flags, e.g.
# --seek_compaction=true), BENCHES (the benchmarks run on the random load).
# Build first: cargo build --release -p strata-bench --features rocksdb,leveldb
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [NUM] [VALUE_SIZE] [ENGINES]}
num=${2:-16000000}
value=${3:-100}
engines=${4:-strata,rocksdb}
bin=${BIN:-target/release/strata-bench}
mkdir -p "$out"
common=(--num="$num" --reads=200000 --key_size=16 --value_size="$value" --cache_size=$((8 << 20))
  --bloom_bits=10 --compression_type=none --max_file_size=$((2 << 20)) --write_buffer_size=$((4 << 20))
  --max_bytes_for_level_base=$((8 << 20)) --max_bytes_for_level_multiplier=10
  --policy="${POLICIES:-leveled,lwc}" --baseline=strata/leveled --db="$out/db" ${EXTRA:-})
"$bin" "${common[@]}" --engines="$engines" \
  --benchmarks="${BENCHES:-fillrandom,waitforcompaction,readrandom,seekrandomnext10}" --out="$out/random" 2>&1 |
  tee "$out/random.txt"
"$bin" "${common[@]}" --engines=strata --benchmarks=fillseq,waitforcompaction --out="$out/seq" 2>&1 |
  tee "$out/seq.txt"
rm -rf "$out/db"*
