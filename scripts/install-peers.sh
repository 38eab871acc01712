#!/usr/bin/env bash
# Installs what strata-bench's optional peers (cargo features `rocksdb`,
# `leveldb`, `fjall`) and the db_bench cross-check need, from Debian's packages.
# Idempotent: re-running only installs what is missing. Run as root (or via sudo).
#
#   librocksdb-dev  RocksDB 7.8.3 headers + shared library (feature `rocksdb`)
#   libclang-dev    bindgen, used by librocksdb-sys's build script
#   libleveldb-dev  LevelDB 1.23 headers + shared library (feature `leveldb`)
#   rocksdb-tools   RocksDB's own db_bench (installed as `rocksdb_db_bench`)
#   cmake, g++      building LevelDB's db_bench from the leveldb-sys source
set -euo pipefail

PKGS=(librocksdb-dev libclang-dev libleveldb-dev rocksdb-tools cmake g++ pkg-config)

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

# Report what the peers' build scripts will find.
echo "install-peers: librocksdb: $(dpkg-query -W -f='${Version}' librocksdb-dev)"
echo "install-peers: libleveldb: $(dpkg-query -W -f='${Version}' libleveldb-dev)"
command -v rocksdb_db_bench >/dev/null && echo "install-peers: RocksDB db_bench: $(command -v rocksdb_db_bench)"
echo "install-peers: build peers with"
echo "  ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu cargo build --release -p strata-bench --features rocksdb,leveldb,fjall"
