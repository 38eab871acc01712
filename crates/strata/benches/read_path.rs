//! The read path in isolation: `get_pinned`, `seek` and `next` over one
//! compacted database on the real file system, read three ways — through
//! the block cache (`cached`), from memory-mapped tables (`mapped`), and
//! with no block cache (`uncached`: every block from the page cache with
//! `pread`). Each read-path change is measured here before the db_bench rows.
//! `cargo bench -p strata-db --bench read_path -- --quick`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use strata::{CompressionType, Db, Options};

/// 100 000 keys of 16 bytes with 100-byte values: db_bench's shape.
const KEYS: u64 = 100_000;

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k.copy_from_slice(format!("{:016}", (i.wrapping_mul(2_654_435_761)) % KEYS).as_bytes());
    k
}

/// Writes the database once into `dir` and reopens it with `opts`.
fn open(dir: &std::path::Path, opts: Options) -> Db {
    if !dir.join("CURRENT").exists() {
        let db = Db::open(dir, opts.clone()).unwrap();
        for i in 0..KEYS {
            db.put(format!("{i:016}"), [b'v'; 100]).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        db.close().unwrap();
    }
    Db::open(dir, opts).unwrap()
}

fn reads(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let base = Options::default().with_compression(CompressionType::None);
    let ways = [
        ("cached", base.clone().with_block_cache_capacity(64 << 20)),
        ("mapped", base.clone().with_block_cache_capacity(64 << 20).with_mmap_reads(true)),
        ("uncached", base.with_block_cache_capacity(0)),
    ];
    let mut group = c.benchmark_group("read_path");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (way, opts) in ways {
        let db = open(&tmp.path().join("db"), opts);
        let mut i = 0u64;
        group.bench_function(format!("get_pinned/{way}"), |b| {
            b.iter(|| {
                i += 1;
                black_box(db.get_pinned(key(i)).unwrap())
            })
        });
        let mut it = db.raw_iterator();
        group.bench_function(format!("seek/{way}"), |b| {
            b.iter(|| {
                i += 1;
                it.seek(key(i));
                black_box(it.valid())
            })
        });
        it.seek_to_first();
        group.bench_function(format!("next/{way}"), |b| {
            b.iter(|| {
                it.next();
                if !it.valid() {
                    it.seek_to_first();
                }
                black_box(it.key().map(|k| k.len()))
            })
        });
        drop(it);
        db.close().unwrap();
    }
    group.finish();
}

criterion_group!(benches, reads);
criterion_main!(benches);
