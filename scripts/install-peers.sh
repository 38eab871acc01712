#!/usr/bin/env bash
# Installs what strata-bench's optional peers (cargo features `rocksdb`,
# `leveldb`, `fjall`) and the db_bench cross-check need, from Debian's packages.
# Idempotent: re-running installs only what is missing. Run as root (or it uses sudo).
#
#   librocksdb-dev  RocksDB 7.8.3 headers + shared library (feature `rocksdb`)
#   libclang-dev    bindgen, run by librocksdb-sys's build script
#   libleveldb-dev  LevelDB 1.23 headers + shared library (feature `leveldb`)
#   rocksdb-tools   RocksDB's own db_bench (/usr/bin/db_bench)
#   cmake, g++      building LevelDB's db_bench (not packaged) from leveldb-sys's source
#
# With --leveldb-db-bench it also builds LevelDB's db_bench into
# target/leveldb-db-bench/db_bench (needs the leveldb-sys crate source, which
# any `cargo build --features leveldb` downloads).
set -euo pipefail

PKGS=(librocksdb-dev libclang-dev libleveldb-dev rocksdb-tools cmake g++ pkg-config)
LEVELDB_SYS=leveldb-sys-2.0.9
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-peers: all packages present (${PKGS[*]})"
else
  echo "install-peers: installing ${missing[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

echo "install-peers: librocksdb-dev $(dpkg-query -W -f='${Version}' librocksdb-dev)," \
  "libleveldb-dev $(dpkg-query -W -f='${Version}' libleveldb-dev)," \
  "RocksDB db_bench: $(command -v db_bench || echo missing)"

if [ "${1:-}" = "--leveldb-db-bench" ]; then
  src=""
  for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$LEVELDB_SYS"/deps/leveldb-*; do
    [ -f "$d/db/db_bench.cc" ] && src="$d"
  done
  if [ -z "$src" ]; then
    echo "install-peers: $LEVELDB_SYS source not found; run 'cargo fetch' (or build with --features leveldb) first" >&2
    exit 1
  fi
  out="$ROOT/target/leveldb-db-bench"
  cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=Release \
    -DLEVELDB_BUILD_TESTS=OFF -DLEVELDB_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$out" --target db_bench -j"$(nproc)" >/dev/null
  cp "$out/db_bench" "$out/leveldb_db_bench"
  echo "install-peers: LevelDB db_bench ($(basename "$src")): $out/leveldb_db_bench"
fi

echo "install-peers: build the peers with"
echo "  cargo build --release -p strata-bench --features rocksdb,leveldb,fjall"
