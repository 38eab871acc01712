#!/usr/bin/env bash
# Runs every fuzz target for SECS seconds (default 60) and then minimizes its
# corpus in place. Usage: fuzz/run-all.sh [SECS] [TARGET...]
# Needs cargo-fuzz (`cargo install cargo-fuzz`); RUSTC_BOOTSTRAP=1 lets the
# stable toolchain accept the sanitizer flags cargo-fuzz passes.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(block table wal manifest ops)
export RUSTC_BOOTSTRAP=1
declare -A max_len=([block]=4096 [table]=4096 [wal]=4096 [manifest]=2048 [ops]=1024)
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "== $t: ${secs}s"
  cargo fuzz run -O "$t" "corpus/$t" -- -max_total_time="$secs" -max_len="${max_len[$t]}" \
    -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 2>&1 | tail -n 25 || echo "== $t: CRASH (see artifacts/$t)"
  cargo fuzz cmin -O "$t" "corpus/$t" -- -max_len="${max_len[$t]}" 2>&1 | tail -n 2 || true
  echo "== $t corpus: $(ls "corpus/$t" | wc -l) files, $(du -sk "corpus/$t" | cut -f1) KiB"
done
