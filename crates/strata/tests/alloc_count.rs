//! Heap allocations per read on the calling thread, counted by a global
//! allocator, in the steady state (warm caches, open tables): none per
//! `get_pinned`, per `seek` or per `next`. (`get` returns an owned `Vec`, one
//! allocation by its signature, as RocksDB's `Get` into a string.) And per
//! `put`: only what the write keeps.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use strata::{Db, MemVfs, Options, ReadOptions};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: a thread being torn down has no counter any more.
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwards the caller's layout to the system allocator unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as `alloc`/`dealloc`: the pointer and layout are the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

/// Allocations per call of `f(0..n)`, averaged, after the same calls once
/// to warm up (every block they read is then cached).
fn per_call(n: u64, mut f: impl FnMut(u64)) -> f64 {
    for i in 0..n {
        f(i);
    }
    let before = allocs();
    for i in 0..n {
        f(i);
    }
    (allocs() - before) as f64 / n as f64
}

const KEYS: u64 = 20_000;

fn key(i: u64) -> String {
    format!("key{:08}", (i * 7919) % KEYS)
}

/// A database of `KEYS` keys in tables (flushed and compacted), one cache
/// large enough for all of it.
fn db() -> Db {
    let opts = Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_write_buffer_size(256 << 10)
        .with_block_cache_capacity(64 << 20);
    let db = Db::open("/db", opts).unwrap();
    for i in 0..KEYS {
        db.put(format!("key{i:08}"), format!("value-{i}-{}", "v".repeat(80))).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    db
}

#[test]
fn allocations_per_read_stay_within_their_ceilings() {
    let db = db();
    assert!(db.stats().levels.iter().map(|l| l.files).sum::<usize>() > 1, "seeks move between tables");
    let get = per_call(2000, |i| {
        assert!(db.get_pinned(key(i).as_bytes()).unwrap().is_some());
    });
    // The key's own String is one allocation of the loop, not of the read.
    let key_only = per_call(2000, |i| {
        std::hint::black_box(key(i));
    });
    let mut it = db.raw_iterator_opt(&ReadOptions::default());
    let seek = per_call(2000, |i| {
        it.seek(key(i).as_bytes());
        assert!(it.valid());
    });
    it.seek_to_first();
    let next = per_call(5000, |_| {
        it.next();
        if !it.valid() {
            it.seek_to_first();
        }
    });
    let (get, seek) = (get - key_only, seek - key_only);
    println!("allocations per get_pinned {get:.3}, per seek {seek:.3}, per next {next:.3}");
    // Zero in the steady state; the slack absorbs a rare one (an iterator
    // wrapping around), never one per call.
    assert!(get <= 0.01, "get_pinned allocates {get:.3} times per call");
    assert!(seek <= 0.01, "seek allocates {seek:.3} times per call");
    assert!(next <= 0.01, "next allocates {next:.3} times per call");
}

/// A put allocates its batch, its place in the writer queue and the
/// memtable's entry and skip-list node: 4. It made 13 (the batch grown three
/// times, a second batch, and three maps and two vectors per group commit).
#[test]
fn a_put_allocates_only_what_it_keeps() {
    let opts = Options::default().with_vfs(Arc::new(MemVfs::new())).with_write_buffer_size(64 << 20);
    let db = Db::open("/db", opts).unwrap();
    let value = [b'v'; 100];
    let key = |i: u64| format!("key{i:08}");
    let key_only = per_call(2000, |i| {
        std::hint::black_box(key(i));
    });
    let put = per_call(2000, |i| db.put(key(i), value).unwrap()) - key_only;
    println!("allocations per put {put:.3}");
    assert!(put <= 4.01, "put allocates {put:.3} times per call");
    db.close().unwrap();
}
