//! Lookups in the block and row caches, hit and miss: the block cache is on
//! every read's path, so a change to the caches is measured here first.
//! `cargo bench -p strata-db --bench cache -- --quick`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use strata::cache::{BlockCache, RowCache};
use strata::key::ValueKind;
use strata::table::Block;

/// Resident entries per cache: many shards' worth, few enough to stay resident.
const ENTRIES: u64 = 4096;

/// A 4 KiB block with one restart point.
fn block() -> Arc<Block> {
    let mut d = vec![0u8; 4096];
    d.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
    Arc::new(Block::new(d).unwrap())
}

fn block_cache(c: &mut Criterion) {
    let cache = BlockCache::new(64 << 20);
    let b = block();
    for i in 0..ENTRIES {
        cache.insert(i % 64, (i / 64) * 4096, Arc::clone(&b));
    }
    let mut i = 0u64;
    c.bench_function("block_cache/hit", |bench| {
        bench.iter(|| {
            i = (i + 1) % ENTRIES;
            black_box(cache.get(black_box(i % 64), black_box((i / 64) * 4096)))
        })
    });
    c.bench_function("block_cache/miss", |bench| {
        bench.iter(|| {
            i = (i + 1) % ENTRIES;
            black_box(cache.get(black_box(1000 + i % 64), black_box((i / 64) * 4096)))
        })
    });
    c.bench_function("block_cache/insert_evict", |bench| {
        let small = BlockCache::new(1 << 20);
        bench.iter(|| {
            i += 1;
            small.insert(i % 64, (i / 64) * 4096, Arc::clone(&b))
        })
    });
}

fn row_cache(c: &mut Criterion) {
    let cache = RowCache::new(64 << 20);
    let keys: Vec<Vec<u8>> = (0..ENTRIES).map(|i| format!("user{i:012}").into_bytes()).collect();
    for (i, k) in keys.iter().enumerate() {
        cache.insert(i as u64 % 64, 0, k, ValueKind::Put, &[7u8; 100]);
    }
    let mut i = 0usize;
    c.bench_function("row_cache/hit", |bench| {
        bench.iter(|| {
            i = (i + 1) % keys.len();
            black_box(cache.get(black_box(i as u64 % 64), 0, black_box(&keys[i])))
        })
    });
    c.bench_function("row_cache/miss", |bench| {
        bench.iter(|| {
            i = (i + 1) % keys.len();
            black_box(cache.get(black_box(1000 + i as u64 % 64), 0, black_box(&keys[i])))
        })
    });
}

criterion_group!(benches, block_cache, row_cache);
criterion_main!(benches);
