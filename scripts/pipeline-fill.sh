#!/usr/bin/env bash
# System throughput of the compaction output pipeline (the pipelined-compaction
# paper's insert-only load): fillrandom, 16 B / 100 B, zstd, once per Strata
# mode and once per RocksDB max_subcompactions (1, 2), each on a fresh database.
# Usage: scripts/pipeline-fill.sh OUT_DIR [NUM] [extra strata-bench flags...]
# Needs: cargo build --release -p strata-bench --features rocksdb (for the RocksDB rows).
set -euo pipefail
OUT=${1:?usage: pipeline-fill.sh OUT_DIR [NUM] [flags...]}
NUM=${2:-8000000}
shift $(( $# >= 2 ? 2 : 1 ))
B=target/release/strata-bench
C=(--benchmarks=fillrandom --num="$NUM" --compression_type=zstd --quiet "$@")
mkdir -p "$OUT"
$B "${C[@]}" --engines=strata --compaction_pipeline=scp --out "$OUT/scp"
$B "${C[@]}" --engines=strata --compaction_pipeline=pcp --out "$OUT/pcp"
$B "${C[@]}" --engines=strata --compaction_pipeline=c-ppcp --compaction_threads=2 --out "$OUT/c-ppcp2"
$B "${C[@]}" --engines=strata --compaction_pipeline=auto --compaction_threads=2 --out "$OUT/auto2"
$B "${C[@]}" --engines=rocksdb --subcompactions=1 --out "$OUT/rocksdb-sub1"
$B "${C[@]}" --engines=rocksdb --subcompactions=2 --out "$OUT/rocksdb-sub2"
