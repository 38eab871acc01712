#!/bin/bash
# fillrandom per pipeline mode and RocksDB subcompactions; zstd, 16 B / 100 B
set -e
N=${N:-8000000}
O=/var/tmp/pfill
rm -rf $O; mkdir -p $O
C="--benchmarks=fillrandom --num=$N --compression_type=zstd --quiet"
B=target/release/strata-bench
$B $C --engines=strata --compaction_pipeline=scp --out $O/scp
$B $C --engines=strata --compaction_pipeline=pcp --out $O/pcp
$B $C --engines=strata --compaction_pipeline=c-ppcp --compaction_threads=2 --out $O/cppcp2
$B $C --engines=rocksdb --subcompactions=1 --out $O/rocks1
$B $C --engines=rocksdb --subcompactions=2 --out $O/rocks2
