//! Wrong API use and bad input get clear errors, never a panic.

use std::sync::Arc;

use strata::{Db, Error, MemVfs, Options, Vfs};

#[test]
fn second_open_of_a_locked_directory_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    let err = Db::open(tmp.path(), Options::default()).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    db.close().unwrap();
    // Released on close.
    Db::open(tmp.path(), Options::default()).unwrap().close().unwrap();
}

#[test]
fn locked_on_the_memory_vfs_too() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let _db = Db::open("/x", Options::default().with_vfs(vfs.clone())).unwrap();
    assert!(matches!(Db::open("/x", Options::default().with_vfs(vfs)), Err(Error::Locked(_))));
}

#[test]
fn non_database_directories_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // Table files but no CURRENT: something else, or a damaged database.
    std::fs::write(tmp.path().join("000007.sst"), b"not a table").unwrap();
    assert!(matches!(Db::open(tmp.path(), Options::default()), Err(Error::NotADatabase(_))));
    // A plain file is not a directory.
    let file = tmp.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    assert!(Db::open(&file, Options::default()).is_err());
    // Missing directory without create_if_missing.
    let missing = tmp.path().join("missing");
    let err = Db::open(&missing, Options::default().with_create_if_missing(false)).unwrap_err();
    assert!(matches!(err, Error::NotADatabase(_)), "{err}");
    // error_if_exists on an existing database.
    let d = tmp.path().join("db");
    Db::open(&d, Options::default()).unwrap().close().unwrap();
    assert!(matches!(
        Db::open(&d, Options::default().with_error_if_exists(true)),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn garbage_current_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    Db::open(tmp.path(), Options::default()).unwrap().close().unwrap();
    std::fs::write(tmp.path().join("CURRENT"), b"MANIFEST-999999\n").unwrap();
    let err = Db::open(tmp.path(), Options::default()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    std::fs::write(tmp.path().join("CURRENT"), b"\xff\xfe garbage").unwrap();
    assert!(Db::open(tmp.path(), Options::default()).unwrap_err().is_corruption());
}

#[test]
fn invalid_options_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = [
        Options::default().with_write_buffer_size(10),
        Options::default().with_max_write_buffer_number(1),
        Options::default().with_level0_slowdown_writes_trigger(2),
        Options::default().with_num_levels(1),
        Options::default().with_max_bytes_for_level_multiplier(1.0),
        Options::default().with_block_size(0),
        Options::default().with_bloom_bits_per_key(-1.0),
        Options::default().with_bloom_bits_per_key(f64::NAN),
        Options::default().with_compression(strata::CompressionType::Zstd(99)),
    ];
    for o in bad {
        let err = Db::open(tmp.path().join("d"), o).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    assert!(strata::CompactionStyle::from_name("nope").is_err());
    assert!(strata::CompressionType::parse("snappy").is_err());
}

#[test]
fn writes_after_close_fail_cleanly_and_reads_of_empty_keys_work() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    db.put(b"", b"empty key").unwrap();
    db.put(b"k", b"").unwrap();
    assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b""[..]));
    db.flush().unwrap();
    assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
    let snap = db.snapshot();
    db.close().unwrap();
    // A snapshot outliving its database still reads what it pinned.
    assert_eq!(snap.get(b"k").unwrap().as_deref(), Some(&b""[..]));
}

#[test]
fn an_entry_too_large_for_a_table_is_refused_before_the_wal() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    db.put(b"before", b"1").unwrap();
    // calloc'd, so the oversized value costs one copy into the batch.
    let big = vec![0u8; strata::MAX_ENTRY_BYTES - 3];
    let err = db.put(b"four", &big).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let mut batch = strata::WriteBatch::new();
    batch.put(b"ok", b"2");
    batch.delete(vec![7u8; strata::MAX_ENTRY_BYTES + 1]);
    assert!(matches!(db.write(batch), Err(Error::InvalidArgument(_))));
    drop(big);
    // Nothing of either write was applied, and the database still flushes and reopens.
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"four").unwrap(), None);
    assert_eq!(db.get(b"ok").unwrap(), None);
}
