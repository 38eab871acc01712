//! The read path in isolation: `get_pinned`, `seek` and `next` over one
//! compacted database on the real file system, read three ways — through
//! the block cache (`cached`), from memory-mapped tables (`mapped`), and
//! with no block cache (`uncached`: every block from the page cache with
//! `pread`). Each read-path change is measured here before the db_bench rows.
//! The `merge` group steps the merging iterator alone over 2 to 16 sorted
//! in-memory sources (memtables, L0 tables and levels all meet there).
//! `cargo bench -p strata-db --bench read_path -- --quick`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use strata::iter::{InternalIterator, MergingIterator};
use strata::key::{compare_internal, make_internal_key, ValueKind};
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

/// A sorted in-memory source of internal keys.
struct Sorted {
    keys: Vec<Vec<u8>>,
    pos: usize,
}

impl InternalIterator for Sorted {
    fn valid(&self) -> bool {
        self.pos < self.keys.len()
    }
    fn seek_to_first(&mut self) -> strata::Result<()> {
        self.pos = 0;
        Ok(())
    }
    fn seek_to_last(&mut self) -> strata::Result<()> {
        self.pos = self.keys.len().saturating_sub(1);
        Ok(())
    }
    fn seek(&mut self, t: &[u8]) -> strata::Result<()> {
        self.pos = self.keys.partition_point(|k| compare_internal(k, t).is_lt());
        Ok(())
    }
    fn seek_for_prev(&mut self, t: &[u8]) -> strata::Result<()> {
        let i = self.keys.partition_point(|k| compare_internal(k, t).is_le());
        self.pos = i.checked_sub(1).unwrap_or(self.keys.len());
        Ok(())
    }
    fn next(&mut self) -> strata::Result<()> {
        self.pos += 1;
        Ok(())
    }
    fn prev(&mut self) -> strata::Result<()> {
        self.pos = self.pos.checked_sub(1).unwrap_or(self.keys.len());
        Ok(())
    }
    fn key(&self) -> &[u8] {
        &self.keys[self.pos]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
}

/// `n` sources over 100 000 keys shaped like a tree: the last holds 90 % of
/// them (the bottom level), the others share the rest at random.
fn sources(n: usize) -> Vec<Box<dyn InternalIterator>> {
    let mut keys: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
    for i in 0..KEYS {
        let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
        let src = if n == 1 || h % 10 != 0 { n - 1 } else { (h / 10) as usize % (n - 1) };
        keys[src].push(make_internal_key(&key_of(i), 1 + i, ValueKind::Put));
    }
    keys.into_iter().map(|keys| Box::new(Sorted { keys, pos: 0 }) as Box<dyn InternalIterator>).collect()
}

fn key_of(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k.copy_from_slice(format!("{i:016}").as_bytes());
    k
}

fn merge(c: &mut Criterion) {
    let mut group = c.benchmark_group("merge");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for n in [2, 4, 8, 16] {
        let mut m = MergingIterator::new(sources(n));
        m.seek_to_first().unwrap();
        group.bench_function(format!("next/{n}"), |b| {
            b.iter(|| {
                m.next().unwrap();
                if !m.valid() {
                    m.seek_to_first().unwrap();
                }
                black_box(m.key().len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, reads, merge);
criterion_main!(benches);
