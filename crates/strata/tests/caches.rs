//! The row cache (point-lookup results by file and user key) and the
//! compaction warm-up of the block cache, seen through `Db::stats()`.

use std::sync::Arc;

use strata::{Db, MemVfs, Options, ReadOptions};

fn opts() -> Options {
    Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_write_buffer_size(1 << 20)
        .with_target_file_size_base(16 << 10)
        .with_block_size(512)
        .with_block_cache_capacity(4 << 20)
        .with_disable_auto_compactions(true)
}

fn k(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn v(tag: &str, i: u32) -> Vec<u8> {
    format!("{tag}-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes()
}

/// Block cache lookups so far (each is a block read, from the cache or the file).
fn block_reads(db: &Db) -> u64 {
    let c = db.stats().cache;
    c.hits + c.misses
}

#[test]
fn repeated_gets_hit_the_row_cache_and_read_no_block() {
    let db = Db::open("/db", opts().with_row_cache(1 << 20)).unwrap();
    for i in 0..600 {
        db.put(k(i), v("a", i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..600 {
        db.put(k(i), v("b", i)).unwrap();
    }
    // A tombstone shadowing a value in a deeper file.
    db.delete(k(7)).unwrap();
    db.flush().unwrap();
    let want = |i: u32| (i != 7).then(|| v("b", i));

    for i in 0..600 {
        assert_eq!(db.get(k(i)).unwrap(), want(i));
    }
    let first = db.stats();
    assert_eq!(first.row_cache.inserts, 600, "{first}");
    assert_eq!((first.row_cache.hits, first.row_cache.misses), (0, 600));
    assert!(block_reads(&db) > 0);

    let reads = block_reads(&db);
    for _ in 0..3 {
        for i in 0..600 {
            assert_eq!(db.get(k(i)).unwrap(), want(i));
        }
    }
    let s = db.stats();
    assert_eq!(block_reads(&db), reads, "row-cache hits read no block: {s}");
    assert_eq!((s.row_cache.hits, s.row_cache.misses, s.row_cache.inserts), (1800, 600, 600));
    assert_eq!(s.row_cache.entries, 600);
    assert!(s.row_cache.usage_bytes > 600 * 60 && s.row_cache.usage_bytes <= s.row_cache.capacity_bytes);
    // Absent keys are not cached: the filter (or one block) answers them.
    assert_eq!(db.get(b"nope").unwrap(), None);
    assert_eq!(db.stats().row_cache.entries, 600);
    assert!(db.property("strata.stats").unwrap().contains("row cache: "));

    // Compacting deletes the cached files: their rows go with them, and the
    // next gets fill the cache again from the new file.
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!((s.row_cache.entries, s.row_cache.invalidations, s.row_cache.usage_bytes), (0, 600, 0), "{s}");
    for i in 0..600 {
        assert_eq!(db.get(k(i)).unwrap(), want(i));
    }
    // The tombstone was dropped at the bottom: k(7) is in no file now.
    assert_eq!(db.stats().row_cache.inserts, 600 + 599);

    // fill_cache off: looked up, never inserted.
    let no_fill = ReadOptions::default().with_fill_cache(false);
    db.put(k(1000), b"new").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get_opt(k(1000), &no_fill).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.stats().row_cache.inserts, 600 + 599);
}

#[test]
fn reads_at_older_snapshots_bypass_the_row_cache_and_see_old_values() {
    let db = Db::open("/db", opts().with_row_cache(1 << 20)).unwrap();
    for i in 0..100 {
        db.put(k(i), v("old", i)).unwrap();
    }
    let snap = db.snapshot();
    for i in 0..100 {
        db.put(k(i), v("new", i)).unwrap();
    }
    db.delete(k(3)).unwrap();
    // One file holds both versions of every key.
    db.flush().unwrap();
    let at_snap = ReadOptions::default().with_snapshot(&snap);
    for round in 0..2 {
        for i in 0..100 {
            let latest = (i != 3).then(|| v("new", i));
            assert_eq!(db.get(k(i)).unwrap(), latest);
            assert_eq!(db.get_opt(k(i), &at_snap).unwrap(), Some(v("old", i)), "round {round}");
            assert_eq!(snap.get(k(i)).unwrap(), Some(v("old", i)));
        }
    }
    let s = db.stats();
    // Only the latest reads used the cache: 100 misses, then 100 hits.
    assert_eq!((s.row_cache.hits, s.row_cache.misses, s.row_cache.inserts), (100, 100, 100), "{s}");

    // The snapshot keeps both versions through a compaction; a read at it
    // still bypasses the new file's rows.
    db.compact_range(None, None).unwrap();
    for i in 0..100 {
        assert_eq!(snap.get(k(i)).unwrap(), Some(v("old", i)));
        assert_eq!(db.get(k(i)).unwrap(), (i != 3).then(|| v("new", i)));
    }
    assert_eq!(db.stats().row_cache.hits, 100);
    drop(snap);
    // A snapshot taken after the last write sees every file whole: it may use the cache.
    let late = db.snapshot();
    for i in 0..100 {
        assert_eq!(late.get(k(i)).unwrap(), (i != 3).then(|| v("new", i)));
    }
    assert_eq!(db.stats().row_cache.hits, 200);
}

#[test]
fn row_cache_is_off_by_default_and_stats_stay_zero() {
    let db = Db::open("/db", opts()).unwrap();
    for i in 0..50 {
        db.put(k(i), v("a", i)).unwrap();
    }
    db.flush().unwrap();
    for i in 0..50 {
        assert!(db.get(k(i)).unwrap().is_some());
    }
    let s = db.stats();
    assert_eq!(s.row_cache, Default::default());
    assert!(!db.property("strata.stats").unwrap().contains("row cache"));
}

/// Loads 2000 keys as two overlapping L0 files, reads `hot` (caching its
/// blocks), compacts everything into L1, and returns the database.
fn compact_after_reading(warmup: bool, hot: std::ops::Range<u32>) -> Db {
    let db = Db::open("/db", opts().with_compaction_warmup(warmup)).unwrap();
    for i in 0..2000 {
        db.put(k(i), v("a", i)).unwrap();
    }
    db.flush().unwrap();
    for i in (0..2000).step_by(2) {
        db.put(k(i), v("b", i)).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.stats().levels[0].files, 2);
    assert_eq!(db.stats().warmup_blocks_inserted, 0, "flushes are not warmed");
    for i in hot {
        assert!(db.get(k(i)).unwrap().is_some());
    }
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!((s.levels[0].files, s.compactions), (0, 1), "{s}");
    // The two inputs are deleted (and their cached blocks dropped) when the
    // last Version holding them goes; a background thread that was looking at
    // the tree may still hold one for a moment after `compact_range` returns.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while db.stats().files_deleted < 2 {
        assert!(std::time::Instant::now() < deadline, "inputs never deleted\n{}", db.stats());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    db
}

/// Block-cache misses of reading `keys` again.
fn misses_reading(db: &Db, keys: std::ops::Range<u32>) -> u64 {
    let before = db.stats().cache.misses;
    for i in keys {
        let want = v(if i % 2 == 0 { "b" } else { "a" }, i);
        assert_eq!(db.get(k(i)).unwrap(), Some(want));
    }
    db.stats().cache.misses - before
}

#[test]
fn compaction_warmup_keeps_a_fully_cached_range_cached() {
    let db = compact_after_reading(true, 0..2000);
    let s = db.stats();
    // The inputs' blocks went with their files; what is left is the warmed
    // output, every block of it (all of it was hot).
    assert!(s.warmup_blocks_inserted > 10, "{s}");
    assert_eq!(s.cache.entries, s.warmup_blocks_inserted, "{s}");
    assert!(db.property("strata.compactions").unwrap().contains("warmed"));
    assert!(db.property("strata.stats").unwrap().contains("compaction warm-up: "));
    assert_eq!(misses_reading(&db, 0..2000), 0);

    let cold = compact_after_reading(false, 0..2000);
    assert_eq!(cold.stats().warmup_blocks_inserted, 0);
    assert_eq!(cold.stats().cache.entries, 0);
    assert!(misses_reading(&cold, 0..2000) > 10);
}

#[test]
fn compaction_warmup_loads_only_what_replaces_cached_blocks() {
    let db = compact_after_reading(true, 0..400);
    let warmed = db.stats().warmup_blocks_inserted;
    assert!(warmed > 0);
    assert_eq!(misses_reading(&db, 0..400), 0);
    // The cold part was not loaded: reading it misses, and caches more blocks
    // than were warmed (it is four times larger).
    let entries = db.stats().cache.entries;
    assert!(misses_reading(&db, 1000..2000) > warmed);
    assert!(db.stats().cache.entries > entries + warmed);

    let off = compact_after_reading(false, 0..400);
    assert!(misses_reading(&off, 0..400) > 0);
}

#[test]
fn compaction_warmup_needs_a_block_cache() {
    let err = Db::open("/db", opts().with_block_cache_capacity(0).with_compaction_warmup(true)).unwrap_err();
    assert!(matches!(err, strata::Error::InvalidArgument(_)), "{err}");
}
