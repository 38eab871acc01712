#!/usr/bin/env bash
# Monkey against uniform bloom bits (the Monkey paper's Fig. 5b, as Autumn reruns it): one tree
# loaded per (bits, allocation), then gets of missing keys and of existing keys, each in its own
# invocation so the statistics dump after it (false positives per level) covers that read alone.
# Usage: [BASE=bytes] [BITS="2 10"] [ALLOCS="uniform monkey"] scripts/monkey-fp.sh OUT_DIR [NUM] [READS]
# (ALLOCS=monkey reruns Monkey's rows only, e.g. after a change to Monkey's allocation.)
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [NUM] [READS]}
num=${2:-3000000}
reads=${3:-200000}
base=${BASE:-10485760}   # max_bytes_for_level_base; a smaller one fills the last level
bin=${BIN:-target/release/strata-bench}
mkdir -p "$out"
shape=(--num="$num" --reads="$reads" --key_size=16 --value_size=100 --cache_size=8388608
  --compression_type=none --max_file_size=2097152 --write_buffer_size=4194304
  --max_bytes_for_level_base="$base" --engines=strata --policy=leveled)
for bits in ${BITS:-2 10}; do
  for alloc in ${ALLOCS:-uniform monkey}; do
    tag=$alloc-$bits
    "$bin" "${shape[@]}" --bloom_bits="$bits" --bloom_allocation="$alloc" --db="$out/db-$tag" \
      --benchmarks=fillrandom,waitforcompaction --out="$out/$tag-load" > "$out/$tag-load.txt" 2>&1
    for b in readmissing readrandom; do
      "$bin" "${shape[@]}" --bloom_bits="$bits" --bloom_allocation="$alloc" --db="$out/db-$tag" \
        --use_existing_db --benchmarks=$b --out="$out/$tag-$b" > "$out/$tag-$b.txt" 2>&1
    done
    rm -rf "$out/db-$tag"
  done
done
