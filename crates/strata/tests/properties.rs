//! Properties (RocksDB `GetProperty` names under `strata.` and `rocksdb.`)
//! and `approximate_sizes`, as a user scripting against them would read them.

use std::sync::Arc;

use strata::{Db, Error, KeyspaceOptions, MemVfs, Options};

fn opts() -> Options {
    Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_write_buffer_size(64 << 10)
        .with_block_size(512)
        .with_compression(strata::CompressionType::None)
}

fn key(i: u32) -> String {
    format!("k{i:06}")
}

#[test]
fn every_listed_name_answers_and_unknown_names_are_errors() {
    let db = Db::open("/db", opts()).unwrap();
    db.put("a", "1").unwrap();
    let names = db.property_names();
    assert!(names.len() > 60, "{}", names.len());
    for name in &names {
        let v = db.property(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Ok(n) = db.property_int(name) {
            assert_eq!(v, n.to_string(), "{name}");
        }
    }
    for want in [
        "rocksdb.estimate-num-keys",
        "rocksdb.total-sst-files-size",
        "rocksdb.live-sst-files-size",
        "rocksdb.cur-size-all-mem-tables",
        "rocksdb.num-running-compactions",
        "rocksdb.estimate-pending-compaction-bytes",
        "rocksdb.num-snapshots",
        "rocksdb.block-cache-usage",
        "rocksdb.num-files-at-level6",
        "strata.num-range-deletes",
        "strata.policy",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} is listed");
    }
    let invalid = |r: Result<String, Error>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(invalid(db.property("strata.nope")));
    assert!(invalid(db.property("rocksdb.num-entries")), "Strata's own names have no rocksdb. alias");
    assert!(invalid(db.property("leveldb.stats")));
    assert!(invalid(db.property("estimate-num-keys")), "a prefix is required");
    assert!(invalid(db.property("strata.num-files-at-level7")), "7 levels: 0..=6");
    assert!(invalid(db.property("strata.num-files-at-levelx")));
    let err = db.property_int("rocksdb.stats").unwrap_err().to_string();
    assert!(err.contains("text"), "{err}");
}

#[test]
fn numbers_follow_the_database_through_writes_flushes_and_compactions() {
    let db =
        Db::open("/db", opts().with_disable_auto_compactions(true).with_write_buffer_size(4 << 20)).unwrap();
    let int = |name: &str| db.property_int(name).unwrap();
    assert_eq!(int("rocksdb.estimate-num-keys"), 0);
    for i in 0..500 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    assert_eq!(int("rocksdb.num-entries-active-mem-table"), 500);
    assert_eq!(int("rocksdb.estimate-num-keys"), 500);
    assert!(int("rocksdb.cur-size-all-mem-tables") >= 500 * 100);
    assert_eq!(int("rocksdb.live-sst-files-size"), 0);
    db.flush().unwrap();
    assert_eq!(int("rocksdb.num-entries-active-mem-table"), 0);
    assert_eq!(int("rocksdb.estimate-num-keys"), 500);
    assert_eq!(int("rocksdb.num-files-at-level0"), db.stats().levels[0].files as u64);
    let live = int("rocksdb.live-sst-files-size");
    assert_eq!(live, db.stats().total_table_bytes);
    assert!(live > 500 * 100);
    assert_eq!(int("rocksdb.total-sst-files-size"), live, "nothing but live tables on disk");

    // L0 over its trigger with auto compactions off: a compaction is pending.
    for round in 0..4u32 {
        for i in 0..50 {
            db.put(key(i * 10 + round), "newer").unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(int("rocksdb.compaction-pending"), 1);
    assert!(int("rocksdb.estimate-pending-compaction-bytes") > 0);
    // An iterator holds the old tables: on disk, not live, after compaction.
    let it = db.iter();
    db.compact_range(None, None).unwrap();
    assert_eq!(int("rocksdb.num-files-at-level0"), 0);
    assert_eq!(int("rocksdb.compaction-pending"), 0);
    assert_eq!(int("rocksdb.estimate-pending-compaction-bytes"), 0);
    assert!(int("rocksdb.total-sst-files-size") > int("rocksdb.live-sst-files-size"));
    drop(it);
    // The idle background thread deletes them soon after.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while int("rocksdb.total-sst-files-size") != int("rocksdb.live-sst-files-size") {
        assert!(std::time::Instant::now() < deadline, "the old tables were never deleted");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(int("rocksdb.estimate-num-keys"), 500);

    assert_eq!(int("rocksdb.num-snapshots"), 0);
    let s1 = db.snapshot();
    let _s2 = db.snapshot();
    assert_eq!(int("rocksdb.num-snapshots"), 2);
    assert_eq!(int("rocksdb.oldest-snapshot-sequence"), s1.sequence());
    for i in 0..500 {
        db.get(key(i)).unwrap();
    }
    assert!(int("rocksdb.block-cache-usage") > 0);
    assert_eq!(int("rocksdb.block-cache-capacity"), db.block_cache_stats().capacity_bytes);
    assert!(int("rocksdb.estimate-table-readers-mem") > 0);
    assert_eq!(int("rocksdb.is-write-stopped"), 0);
    assert_eq!(int("rocksdb.background-errors"), 0);
    assert_eq!(int("rocksdb.num-running-compactions"), 0);
    let sst = db.property("rocksdb.sstables").unwrap();
    assert!(
        sst.lines().count() >= 1 && sst.lines().all(|l| l.starts_with('L') && l.contains(" entries, [k")),
        "{sst}"
    );
}

#[test]
fn approximate_sizes_follow_the_key_distribution() {
    let db = Db::open("/db", opts()).unwrap();
    for i in 0..4000 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let total = db.property_int("rocksdb.live-sst-files-size").unwrap();
    let (k0, k1000, k2000, k4000) = (key(0), key(1000), key(2000), key(4000));
    let ranges: Vec<(&[u8], &[u8])> = vec![
        (k0.as_bytes(), k4000.as_bytes()),
        (k0.as_bytes(), k2000.as_bytes()),
        (k1000.as_bytes(), k2000.as_bytes()),
        (b"x", b"z"),
        (k2000.as_bytes(), k1000.as_bytes()),
    ];
    let sizes = db.approximate_sizes(&ranges).unwrap();
    let near = |got: u64, want: f64| (got as f64 - want).abs() < want * 0.1;
    assert!(near(sizes[0], total as f64), "{sizes:?} of {total}");
    assert!(near(sizes[1], total as f64 / 2.0), "{sizes:?} of {total}");
    assert!(near(sizes[2], total as f64 / 4.0), "{sizes:?} of {total}");
    assert_eq!(&sizes[3..], [0, 0], "no keys there; an empty range");
    // A keyspace answers for its own tree.
    let ks = db.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    assert_eq!(ks.approximate_sizes(&ranges[..1]).unwrap(), [0]);
    assert_eq!(ks.property_int("rocksdb.estimate-num-keys").unwrap(), 0);
    db.drop_keyspace("ks").unwrap();
    assert!(ks.property("strata.policy").is_err(), "a dropped keyspace answers nothing");
}
