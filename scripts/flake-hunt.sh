#!/usr/bin/env bash
# Runs the whole test suite again and again while other processes keep every
# core busy, to shake out tests that pass only on a lucky schedule.
#
#   scripts/flake-hunt.sh [PASSES] [-- extra cargo-nextest arguments]
#
# PASSES (default 20) is how many consecutive clean full passes end the hunt.
# The first failure stops it: its log is kept under target/flake-hunt/ and the
# script exits 1. Passes alternate between cargo-nextest (each test in its own
# process) and `cargo test` (CI's runner: a file's tests share one process,
# so tests that disturb each other show up); without nextest every pass is
# `cargo test`.
#
#   FLAKE_LOAD=0   adds no busy loops (when other work already loads the cores)
set -euo pipefail
cd "$(dirname "$0")/.."

passes=${1:-20}
shift || true
[[ "${1:-}" == "--" ]] && shift
out=target/flake-hunt
mkdir -p "$out"

# Build first, unloaded, so every pass times the tests and not the compiler.
cargo test --workspace --no-run >/dev/null
nextest=0
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-run >/dev/null
    nextest=1
fi
run() {
    if ((nextest && $1 % 2 == 1)); then
        shift
        echo "runner: cargo nextest"
        cargo nextest run --workspace --no-fail-fast --failure-output final "$@"
    else
        shift
        echo "runner: cargo test"
        cargo test --workspace --no-fail-fast "$@"
    fi
}

# One busy loop per core, at the tests' own priority.
load=()
if [[ "${FLAKE_LOAD:-1}" != 0 ]]; then
    for _ in $(seq "$(nproc)"); do
        (while :; do :; done) &
        load+=("$!")
    done
fi
trap '((${#load[@]})) && kill "${load[@]}" 2>/dev/null || true' EXIT

for i in $(seq "$passes"); do
    log="$out/pass-$i.log"
    start=$(date +%s)
    if run "$i" "$@" >"$log" 2>&1; then
        echo "pass $i/$passes clean ($(head -1 "$log"), $(($(date +%s) - start)) s, ${#load[@]} busy loops)"
        rm -f "$log"
    else
        echo "pass $i/$passes FAILED after $(($(date +%s) - start)) s; log: $log"
        grep -E "^\s+(FAIL|SIGSEGV|SIGABRT|TIMEOUT)|panicked at|^test .* FAILED|^runner" "$log" | head -20 || true
        exit 1
    fi
done
echo "$passes consecutive clean passes under load"
