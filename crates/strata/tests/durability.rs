//! Regression tests for durability defects found by using Strata as a new user
//! would: each test is named after what went wrong.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::hook_vfs::HookVfs;
use common::{builtin_policies, policy_options};

use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs, PathFilter};
use strata::vfs::RawFile;
use strata::{CompactionStyle, Db, Error, MemVfs, Vfs, WriteOptions};

fn db_dir() -> PathBuf {
    PathBuf::from("/db")
}

/// Bytes of the table files on disk; the live tables' are `Stats::total_table_bytes`.
fn sst_bytes(vfs: &dyn Vfs, dir: &Path) -> u64 {
    files_with(vfs, dir, ".sst").iter().map(|n| vfs.file_size(&dir.join(n)).unwrap()).sum()
}

fn files_with(vfs: &dyn Vfs, dir: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = vfs.list_dir(dir).unwrap().into_iter().filter(|n| n.ends_with(ext)).collect();
    v.sort();
    v
}

/// A full disk during a WAL write: the caller is told the write failed, and
/// then the sync at close wrote the failed record again after its torn prefix,
/// so every reopen stopped at the torn bytes and the refused write was in the log.
#[test]
fn failed_wal_write_on_a_full_disk_is_never_rewritten_and_the_database_reopens() {
    for style in builtin_policies() {
        let vfs = FaultVfs::new(Arc::new(MemVfs::new()), FaultConfig::new(1));
        let db = Db::open(db_dir(), policy_options(&style, Arc::new(vfs.clone()))).unwrap();
        for i in 0..20 {
            db.put(format!("acked{i:02}"), [b'a'; 100]).unwrap();
        }
        let wal = files_with(vfs.inner().as_ref(), &db_dir(), ".log").pop().unwrap();
        let wal_path = db_dir().join(&wal);
        let before = vfs.inner().file_size(&wal_path).unwrap();
        vfs.set_free_space(Some(300));
        let err = db.put("refused", vec![b'r'; 2000]).unwrap_err();
        assert!(err.to_string().contains("No space left on device"), "{style:?}: {err}");
        assert!(
            matches!(db.put("later", "x"), Err(Error::ReadOnly(_))),
            "{style:?}: read-only after the failure"
        );
        // Space comes back (another file was deleted) before the close.
        vfs.set_free_space(None);
        db.close().unwrap();
        let after = vfs.inner().file_size(&wal_path).unwrap();
        assert!(after <= before + 300, "{style:?}: {after} bytes, the failed record was written again");
        let db = Db::open(db_dir(), policy_options(&style, Arc::new(vfs.clone()))).unwrap();
        for i in 0..20 {
            assert_eq!(db.get(format!("acked{i:02}")).unwrap().unwrap(), [b'a'; 100], "{style:?}");
        }
        assert_eq!(db.get("refused").unwrap(), None, "{style:?}: a refused write came back");
        assert_eq!(db.get("later").unwrap(), None);
        db.put("after-reopen", "ok").unwrap();
        db.close().unwrap();
    }
}

/// The same below the buffer with an injected short write and a failed
/// `fdatasync`: the file is never written or synced again.
#[test]
fn short_wal_write_and_failed_fdatasync_are_never_retried() {
    for (op, sync) in [(FaultOp::Write, false), (FaultOp::DataSync, true)] {
        let cfg = FaultConfig::new(4).with_filter(PathFilter::extension("log"));
        let vfs = FaultVfs::new(Arc::new(MemVfs::new()), cfg);
        // Without the info log, whose lines close writes too: every write counted is the WAL's.
        let opts = policy_options(&CompactionStyle::Leveled, Arc::new(vfs.clone())).with_info_log(false);
        let db = Db::open(db_dir(), opts.clone()).unwrap();
        db.put_opt("acked", "v", &WriteOptions::default().with_sync(true)).unwrap();
        vfs.fail_next(op);
        let wo = WriteOptions::default().with_sync(sync);
        assert!(db.put_opt("failed", vec![7u8; 500], &wo).is_err(), "{op:?}");
        assert_eq!(vfs.injected(op), 1);
        let (writes, syncs) = (vfs.seen(FaultOp::Write), vfs.seen(FaultOp::DataSync));
        db.close().unwrap();
        assert_eq!(vfs.seen(FaultOp::DataSync), syncs, "{op:?}: the failed WAL was synced at close");
        assert_eq!(vfs.seen(FaultOp::Write), writes, "{op:?}: the failed WAL was written at close");
        let db = Db::open(db_dir(), opts).unwrap();
        assert_eq!(db.get("acked").unwrap().as_deref(), Some(&b"v"[..]));
        if op == FaultOp::Write {
            // A failed write, unlike a failed sync, must not survive.
            assert_eq!(db.get("failed").unwrap(), None);
        }
        db.close().unwrap();
    }
}

/// `disable_wal` writes were lost by a clean `close()`: shutdown never flushed.
#[test]
fn writes_without_the_wal_survive_close() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let opts = policy_options(&style, vfs.clone());
        let db = Db::open(db_dir(), opts.clone()).unwrap();
        let nowal = WriteOptions::default().with_disable_wal(true);
        db.put("logged", "1").unwrap();
        db.put_opt("unlogged", "2", &nowal).unwrap();
        db.close().unwrap();
        let db = Db::open(db_dir(), opts.clone()).unwrap();
        assert_eq!(db.get("unlogged").unwrap().as_deref(), Some(&b"2"[..]), "{style:?}");
        assert_eq!(db.get("logged").unwrap().as_deref(), Some(&b"1"[..]), "{style:?}");
        // Dropping the handle closes it the same way.
        db.put_opt("dropped", "3", &nowal).unwrap();
        drop(db);
        let db = Db::open(db_dir(), opts).unwrap();
        assert_eq!(db.get("dropped").unwrap().as_deref(), Some(&b"3"[..]), "{style:?}");
        db.close().unwrap();
    }
}

#[test]
fn avoid_flush_during_shutdown_skips_the_close_flush() {
    let vfs = Arc::new(MemVfs::new());
    let opts = policy_options(&CompactionStyle::Leveled, vfs.clone()).with_avoid_flush_during_shutdown(true);
    let db = Db::open(db_dir(), opts.clone()).unwrap();
    db.put("logged", "1").unwrap();
    db.put_opt("unlogged", "2", &WriteOptions::default().with_disable_wal(true)).unwrap();
    db.close().unwrap();
    assert!(files_with(vfs.as_ref(), &db_dir(), ".sst").is_empty(), "no flush at close");
    let db = Db::open(db_dir(), opts).unwrap();
    assert_eq!(db.get("unlogged").unwrap(), None, "lost, as the option says");
    assert_eq!(db.get("logged").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn close_reports_writes_without_the_wal_it_could_not_flush() {
    let cfg = FaultConfig::new(3).with_filter(PathFilter::extension("sst"));
    let vfs = FaultVfs::new(Arc::new(MemVfs::new()), cfg);
    let db = Db::open(db_dir(), policy_options(&CompactionStyle::Leveled, Arc::new(vfs.clone()))).unwrap();
    db.put_opt("unlogged", "2", &WriteOptions::default().with_disable_wal(true)).unwrap();
    vfs.fail_after(FaultOp::Create, 0, u64::MAX);
    let err = db.close().unwrap_err();
    assert!(err.to_string().contains("without the WAL"), "{err}");
}

/// RocksDB refuses this ("Sync writes has to enable WAL"); Strata accepted it.
#[test]
fn sync_with_disable_wal_is_refused() {
    let db = Db::open(db_dir(), policy_options(&CompactionStyle::Leveled, Arc::new(MemVfs::new()))).unwrap();
    let wo = WriteOptions::default().with_sync(true).with_disable_wal(true);
    let err = db.put_opt("k", "v", &wo).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("WAL")), "{err}");
    assert_eq!(db.get("k").unwrap(), None);
    db.put("k", "v").unwrap();
}

fn is_table(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "sst")
}

/// Reports success for every write and stores nothing.
struct Dropped;

impl RawFile for Dropped {
    fn write(&mut self, data: &[u8]) -> strata::Result<usize> {
        Ok(data.len())
    }
    fn sync(&mut self) -> strata::Result<()> {
        Ok(())
    }
}

/// A flush installed a 0-byte table the MANIFEST recorded as 164 bytes, and
/// every reopen then failed. New tables are read back before they are named.
#[test]
fn table_whose_bytes_were_dropped_is_never_installed() {
    for paranoid in [false, true] {
        let mem = MemVfs::new();
        let opts = |vfs: Arc<dyn Vfs>| {
            policy_options(&CompactionStyle::Leveled, vfs)
                .with_paranoid_file_checks(paranoid)
                .with_disable_auto_compactions(true)
        };
        let drops =
            HookVfs::new(mem.clone())
                .on_create(Box::new(|p, raw| if is_table(p) { Box::new(Dropped) } else { raw }));
        let db = Db::open(db_dir(), opts(Arc::new(drops))).unwrap();
        db.put("k", "v").unwrap();
        let err = db.flush().unwrap_err();
        assert!(err.to_string().contains("failed verification"), "{err}");
        assert!(db.put("k2", "v2").is_err(), "read-only after a failed flush");
        db.close().unwrap();
        assert!(files_with(&mem, &db_dir(), ".sst").is_empty(), "the unverified table was removed");
        let db = Db::open(db_dir(), opts(Arc::new(mem.clone()))).unwrap();
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]), "the WAL still had it");
        db.flush().unwrap();
        db.close().unwrap();
    }
}

/// With `paranoid_file_checks` every block of a new table is read back: a
/// table whose data blocks were damaged on the way to disk fails the flush.
#[test]
fn paranoid_file_checks_catch_a_damaged_data_block() {
    /// Flips a bit in a table's first write: its first data block.
    struct Flip(Box<dyn RawFile>, bool);
    impl RawFile for Flip {
        fn write(&mut self, data: &[u8]) -> strata::Result<usize> {
            if std::mem::take(&mut self.1) && data.len() > 10 {
                let mut d = data.to_vec();
                d[5] ^= 0x40;
                return self.0.write(&d);
            }
            self.0.write(data)
        }
        fn sync(&mut self) -> strata::Result<()> {
            self.0.sync()
        }
    }
    for paranoid in [false, true] {
        let vfs = Arc::new(
            HookVfs::new(MemVfs::new()).on_create(Box::new(|p, raw| Box::new(Flip(raw, is_table(p))))),
        );
        let opts = policy_options(&CompactionStyle::Leveled, vfs).with_paranoid_file_checks(paranoid);
        let db = Db::open(db_dir(), opts).unwrap();
        for i in 0..50 {
            db.put(format!("key{i:03}"), [b'v'; 40]).unwrap();
        }
        let r = db.flush();
        assert_eq!(r.is_err(), paranoid, "paranoid_file_checks={paranoid}: {r:?}");
    }
}

/// `compact_range` kept the current Version alive while it purged, so its own
/// inputs stayed on disk until some later purge.
#[test]
fn compact_range_returns_after_its_inputs_are_deleted() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let db = Db::open(db_dir(), policy_options(&style, vfs.clone()).with_disable_auto_compactions(true))
            .unwrap();
        for round in 0..10 {
            for i in 0..30 {
                db.put(format!("key{i:03}"), format!("round{round}-{}", "x".repeat(50))).unwrap();
            }
            db.compact_range(None, None).unwrap();
            let live = db.stats().total_table_bytes;
            let on_disk = sst_bytes(vfs.as_ref(), &db_dir());
            assert_eq!(on_disk, live, "{style:?} round {round}: table bytes on disk vs live");
        }
        db.close().unwrap();
    }
}

/// The background path had the same pattern: after `wait_for_compactions`
/// only live tables are on disk.
#[test]
fn background_compaction_deletes_its_inputs_before_it_reports_done() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let db = Db::open(db_dir(), policy_options(&style, vfs.clone())).unwrap();
        for i in 0..3000 {
            db.put(format!("key{:04}", (i * 7919) % 1000), [b'v'; 60]).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let s = db.stats();
        assert!(s.compactions > 0, "{style:?}: the workload must compact");
        let on_disk = sst_bytes(vfs.as_ref(), &db_dir());
        assert_eq!(on_disk, s.total_table_bytes, "{style:?}: table bytes on disk vs live");
        db.close().unwrap();
    }
}

/// Removes every WAL of the database at `dir`.
fn remove_wals(vfs: &dyn Vfs, dir: &Path) -> usize {
    let wals = files_with(vfs, dir, ".log");
    for n in &wals {
        vfs.remove_file(&dir.join(n)).unwrap();
    }
    wals.len()
}

#[test]
fn a_deleted_wal_is_corruption_with_keyspaces() {
    let corrupt = |r: strata::Result<Db>, ctx: &str| match r {
        Err(Error::Corruption(m)) => {
            assert!(m.contains(".log") && m.contains("WAL") && !m.contains("outside"), "{ctx}: {m}")
        }
        Err(e) => panic!("{ctx}: {e}"),
        Ok(_) => panic!("{ctx}: opened without the WALs holding its writes"),
    };
    // The small case: one write in each keyspace, only in the WAL.
    let vfs = Arc::new(MemVfs::new());
    let opts = strata::Options::default().with_vfs(vfs.clone());
    let db = Db::open(db_dir(), opts.clone()).unwrap();
    db.put("k", "default").unwrap();
    db.create_keyspace("ks", strata::KeyspaceOptions::default()).unwrap().put("k", "ks").unwrap();
    db.close().unwrap();
    assert!(remove_wals(vfs.as_ref(), &db_dir()) > 0);
    corrupt(Db::open(db_dir(), opts.clone()), "small database");

    // A larger one: keyspaces flushed at other times, so their MANIFESTs
    // name different WALs, then writes only in the WAL.
    let vfs = Arc::new(MemVfs::new());
    let opts = strata::Options::default().with_vfs(vfs.clone()).with_write_buffer_size(4096);
    let db = Db::open(db_dir(), opts.clone()).unwrap();
    let a = db.create_keyspace("a", strata::KeyspaceOptions::default()).unwrap();
    let b = db.create_keyspace("b", strata::KeyspaceOptions::default()).unwrap();
    for i in 0..400 {
        let v = format!("value-{i:0>60}");
        db.put(format!("d{i:05}"), &v).unwrap();
        a.put(format!("a{i:05}"), &v).unwrap();
        if i % 3 == 0 {
            b.put(format!("b{i:05}"), &v).unwrap();
        }
    }
    a.flush().unwrap();
    db.put("last", "only in the WAL").unwrap();
    b.put("last", "only in the WAL").unwrap();
    drop((a, b));
    db.close().unwrap();
    assert!(remove_wals(vfs.as_ref(), &db_dir()) > 0);
    corrupt(Db::open(db_dir(), opts.clone()), "larger database");
}

#[test]
fn a_deleted_oldest_wal_is_corruption_with_keyspaces() {
    let vfs = Arc::new(MemVfs::new());
    let opts = strata::Options::default().with_vfs(vfs.clone());
    let db = Db::open(db_dir(), opts.clone()).unwrap();
    db.create_keyspace("cold", strata::KeyspaceOptions::default()).unwrap();
    db.close().unwrap();
    let db = Db::open(db_dir(), opts.clone()).unwrap();
    // "cold" holds its write in the oldest WAL while the default keyspace
    // flushes into newer ones.
    db.keyspace("cold").unwrap().put("k", "only in the oldest WAL").unwrap();
    for i in 0..3 {
        db.put(format!("d{i}"), "v").unwrap();
        db.flush().unwrap();
    }
    db.close().unwrap();
    let wals = files_with(vfs.as_ref(), &db_dir(), ".log");
    assert!(wals.len() > 2, "{wals:?}");
    vfs.remove_file(&db_dir().join(&wals[0])).unwrap();
    match Db::open(db_dir(), opts) {
        Err(Error::Corruption(m)) => assert!(m.contains(&wals[0]), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(db) => {
            panic!("opened without {}: cold's k is {:?}", wals[0], db.keyspace("cold").unwrap().get("k"))
        }
    }
}
