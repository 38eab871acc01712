//! The info log `LOG` (RocksDB's): what a read-write open writes there, its
//! rotation at each open, and that turning it off writes none.

use std::path::Path;

use strata::{CompactionStyle, Db, KeyspaceOptions, Options};

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn old_logs(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("LOG.old."))
        .count()
}

#[test]
fn the_log_records_options_flushes_compactions_and_close() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let db = Db::open(dir, Options::default().with_write_buffer_size(64 << 10)).unwrap();
    let ks = db.create_keyspace("hot", KeyspaceOptions::default()).unwrap();
    for round in 0..3 {
        for i in 0..200 {
            db.put(format!("k{i:04}"), format!("v{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    ks.put("a", "b").unwrap();
    db.close().unwrap(); // delivers the queued events
    let log = text(&dir.join("LOG"));
    for want in
        ["opening", "compaction_style=leveled", "[flush] [default]", "[compaction] [default]", "closed"]
    {
        assert!(log.contains(want), "no {want:?} in LOG:\n{log}");
    }
    // Every line starts with a UTC timestamp.
    assert!(
        log.lines().all(|l| l.as_bytes().get(4) == Some(&b'/') && l.as_bytes().get(10) == Some(&b'-')),
        "{log}"
    );

    // Each open starts a new file and keeps the last one.
    Db::open(dir, Options::default()).unwrap().close().unwrap();
    assert_eq!(old_logs(dir), 1);
    assert!(text(&dir.join("LOG")).contains("[Keyspace \"hot\"]"), "the options of every keyspace");
}

#[test]
fn a_policy_change_at_open_is_in_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    Db::open(dir, Options::default().with_compaction_style(CompactionStyle::Lsbm)).unwrap().close().unwrap();
    Db::open(dir, Options::default().with_compaction_style(CompactionStyle::Tiered))
        .unwrap()
        .close()
        .unwrap();
    let log = text(&dir.join("LOG"));
    assert!(log.contains("[policy] [default] compaction policy changed from lsbm to tiered"), "{log}");
}

#[test]
fn rotated_logs_are_bounded_and_the_log_can_be_off() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let o = || Options::default().with_keep_log_file_num(2).with_max_log_file_size(4 << 10);
    for _ in 0..5 {
        Db::open(dir, o()).unwrap().close().unwrap();
    }
    assert_eq!(old_logs(dir), 2, "keep_log_file_num");
    assert!(std::fs::metadata(dir.join("LOG")).unwrap().len() <= 4 << 10, "max_log_file_size");

    let off = tempfile::tempdir().unwrap();
    let db = Db::open(off.path(), Options::default().with_info_log(false)).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    assert!(!off.path().join("LOG").exists());
    // A read-only open writes no LOG either.
    drop(Db::open_read_only(off.path(), Options::default()).unwrap());
    assert!(!off.path().join("LOG").exists());
}

#[test]
fn destroy_removes_the_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    for _ in 0..2 {
        Db::open(&dir, Options::default()).unwrap().close().unwrap();
    }
    strata::destroy(&dir, Options::default()).unwrap();
    assert!(!dir.exists() || std::fs::read_dir(&dir).unwrap().next().is_none());
}

/// The info log never fails the database: with every operation on `LOG*`
/// failing, the database opens, writes, flushes, reopens and closes.
#[test]
fn failures_of_the_log_fail_nothing_else() {
    use std::sync::Arc;
    use strata::vfs::testing::{FaultConfig, FaultVfs, PathFilter};
    let cfg = FaultConfig::new(7).with_all_rates(1.0).with_filter(PathFilter::name_prefix("LOG"));
    let vfs = FaultVfs::new(Arc::new(strata::MemVfs::new()), cfg);
    let opts = || Options::default().with_vfs(Arc::new(vfs.clone()));
    // The first open makes a LOG (faults off), the next ones fail to rotate it.
    vfs.set_enabled(false);
    Db::open("/db", opts()).unwrap().close().unwrap();
    vfs.set_enabled(true);
    for round in 0..2 {
        let db = Db::open("/db", opts()).unwrap();
        db.put(format!("k{round}"), "v").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    assert!(vfs.injected_total() > 0, "the LOG was tried");
    let db = Db::open("/db", opts()).unwrap();
    assert_eq!(db.get("k1").unwrap().as_deref(), Some(&b"v"[..]));
}
