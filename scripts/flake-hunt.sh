#!/usr/bin/env bash
# Runs the whole test suite again and again while other processes keep every
# core busy, to shake out tests that pass only on a lucky schedule.
#
#   scripts/flake-hunt.sh [PASSES] [-- extra cargo-nextest arguments]
#
# PASSES (default 20) is how many consecutive clean full passes end the hunt.
# The first failure stops it: its log is kept under target/flake-hunt/ and the
# script exits 1. Uses cargo-nextest where installed (each test in its own
# process, as CI's failures are found), else `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

passes=${1:-20}
shift || true
[[ "${1:-}" == "--" ]] && shift
out=target/flake-hunt
mkdir -p "$out"

# Build first, unloaded, so every pass times the tests and not the compiler.
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-run >/dev/null
    run() { cargo nextest run --workspace --no-fail-fast --failure-output final "$@"; }
else
    cargo test --workspace --no-run >/dev/null
    run() { cargo test --workspace --no-fail-fast "$@"; }
fi

# One busy loop per core, at the tests' own priority.
load=()
for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    load+=("$!")
done
trap 'kill "${load[@]}" 2>/dev/null || true' EXIT

for i in $(seq "$passes"); do
    log="$out/pass-$i.log"
    start=$(date +%s)
    if run "$@" >"$log" 2>&1; then
        echo "pass $i/$passes clean ($(($(date +%s) - start)) s, load on $(nproc) cores)"
        rm -f "$log"
    else
        echo "pass $i/$passes FAILED after $(($(date +%s) - start)) s; log: $log"
        grep -E "^\s+(FAIL|SIGSEGV|SIGABRT|TIMEOUT)|panicked at|^test .* FAILED" "$log" | head -20 || true
        exit 1
    fi
done
echo "$passes consecutive clean passes under load"
