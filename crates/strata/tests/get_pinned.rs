//! `get_pinned`: values from table blocks reference the block instead of a
//! copy and stay valid after the block cache evicts the block, after a
//! compaction deletes the file, and after the database is dropped; values from
//! the row cache share its bytes, values from a memtable are copies.

use std::path::Path;
use std::sync::Arc;

use strata::{Db, MemVfs, Options, PinnedValue, ReadOptions, Vfs};

fn k(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// A 4 KiB value that names its key and version.
fn v(i: u32, version: u32) -> Vec<u8> {
    let mut v = format!("{i}-{version}-").into_bytes();
    v.resize(4096, b'a' + (i % 26) as u8);
    v
}

fn opts(vfs: &Arc<MemVfs>) -> Options {
    Options::default()
        .with_vfs(vfs.clone())
        .with_compression(strata::CompressionType::None)
        // One shard of 64 KiB: a few dozen reads evict any block.
        .with_block_cache_capacity(64 << 10)
        .with_disable_auto_compactions(true)
}

fn tables(vfs: &MemVfs) -> Vec<String> {
    vfs.list_dir(Path::new("/db")).unwrap().into_iter().filter(|n| n.ends_with(".sst")).collect()
}

#[test]
fn pinned_values_outlive_eviction_compaction_and_the_db() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(&vfs)).unwrap();
    for i in 0..200 {
        db.put(k(i), v(i, 0)).unwrap();
    }
    db.flush().unwrap();
    let first_tables = tables(&vfs);
    let pinned: Vec<(u32, PinnedValue)> =
        (0..10).map(|i| (i, db.get_pinned(k(i)).unwrap().unwrap())).collect();
    assert!(pinned.iter().all(|(_, p)| p.is_pinned()));
    let check = |when: &str| {
        for (i, p) in &pinned {
            assert_eq!(p, &v(*i, 0), "key {i} {when}");
        }
    };

    // Every other block read pushes the pinned values' blocks out of the cache.
    for i in 10..200 {
        assert_eq!(db.get(k(i)).unwrap(), Some(v(i, 0)));
    }
    assert!(db.stats().cache.evictions > 100, "{}", db.stats());
    let again = db.get_pinned(k(0)).unwrap().unwrap();
    assert_ne!(again.as_ptr(), pinned[0].1.as_ptr(), "the block was read anew: the first one was evicted");
    check("after its block was evicted");

    // A compaction rewrites the keys into a new file and deletes the old one.
    for i in 0..200 {
        db.put(k(i), v(i, 1)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let now = tables(&vfs);
    assert!(first_tables.iter().all(|t| !now.contains(t)), "{first_tables:?} still in {now:?}");
    assert_eq!(db.get(k(0)).unwrap(), Some(v(0, 1)));
    check("after its file was deleted");

    drop(db);
    check("after the database was dropped");
    assert_eq!(again, v(0, 0));
}

#[test]
fn memtable_values_are_copies_and_row_cache_values_are_shared() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(&vfs).with_row_cache(1 << 20)).unwrap();
    db.put(k(1), v(1, 0)).unwrap();
    let from_mem = db.get_pinned(k(1)).unwrap().unwrap();
    assert!(!from_mem.is_pinned());
    assert_eq!(from_mem, v(1, 0));
    db.flush().unwrap();
    // The first read fills the row cache from the block (and is pinned in
    // it); later reads share the row's bytes.
    let first = db.get_pinned(k(1)).unwrap().unwrap();
    assert!(first.is_pinned());
    let (a, b) = (db.get_pinned(k(1)).unwrap().unwrap(), db.get_pinned(k(1)).unwrap().unwrap());
    assert!(!a.is_pinned() && a == first && b == first);
    assert_eq!(a.as_ptr(), b.as_ptr(), "both share the cached row");
    assert_eq!(db.stats().row_cache.hits, 2);
    assert_eq!(db.get(k(1)).unwrap(), Some(v(1, 0)));
}

#[test]
fn a_block_read_without_filling_the_cache_is_still_pinned() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(&vfs)).unwrap();
    db.put(k(1), v(1, 0)).unwrap();
    db.delete(k(2)).unwrap();
    db.flush().unwrap();
    let ro = ReadOptions::default().with_fill_cache(false);
    let p = db.get_pinned_opt(k(1), &ro).unwrap().unwrap();
    assert!(p.is_pinned() && p == v(1, 0));
    assert_eq!(db.get_pinned_opt(k(2), &ro).unwrap(), None, "a tombstone in the table");
    assert_eq!(db.stats().cache.inserts, 0);
    let cached = db.get_pinned(k(1)).unwrap().unwrap();
    assert_ne!(cached.as_ptr(), p.as_ptr(), "two reads of the file, two blocks");
    assert_eq!(db.stats().cache.inserts, 1);
    let hit = db.get_pinned(k(1)).unwrap().unwrap();
    assert_eq!(hit.as_ptr(), cached.as_ptr(), "a cache hit pins the cached block");
}
