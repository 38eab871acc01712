//! Keyspaces: several trees with different compaction policies in one
//! database, one WAL, atomic batches across them, recovery with per-keyspace
//! log numbers, create/drop durability, snapshots, `max_total_wal_size`, and
//! the errors.

use std::path::Path;
use std::sync::Arc;

use strata::vfs::testing::{CrashMode, CrashVfs};
use strata::{
    associative_merge_operator, CompactionStyle, Db, Error, KeyspaceOptions, MemVfs, Options, ReadOptions,
    Vfs, WriteBatch, WriteOptions,
};

fn opts(vfs: Arc<dyn Vfs>) -> Options {
    Options::default()
        .with_vfs(vfs)
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_block_cache_capacity(1 << 20)
        .with_compression(strata::CompressionType::None)
}

fn small(style: CompactionStyle) -> KeyspaceOptions {
    KeyspaceOptions::default()
        .with_compaction_style(style)
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_compression(strata::CompressionType::None)
}

fn styles() -> Vec<(&'static str, CompactionStyle)> {
    vec![
        ("hot", CompactionStyle::Lsbm),
        ("ingest", CompactionStyle::Lwc { max_segments: 4 }),
        ("index", CompactionStyle::Garnering { c: 0.8 }),
    ]
}

fn key(i: u32) -> String {
    format!("key{i:06}")
}

fn value(ks: &str, i: u32, round: u32) -> String {
    format!("{ks}-{i}-{round}-{}", "x".repeat((i % 50) as usize))
}

fn wal_files(vfs: &dyn Vfs, dir: &str) -> usize {
    vfs.list_dir(Path::new(dir)).unwrap().iter().filter(|n| n.ends_with(".log")).count()
}

#[test]
fn three_policies_in_one_database_written_concurrently_and_reopened() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Arc::new(Db::open("/db", opts(vfs.clone())).unwrap());
    for (name, style) in styles() {
        db.create_keyspace(name, small(style)).unwrap();
    }
    assert_eq!(db.list_keyspaces(), ["default", "hot", "ingest", "index"]);
    let names = ["default", "hot", "ingest", "index"];
    std::thread::scope(|s| {
        for name in names {
            let db = db.clone();
            s.spawn(move || {
                let ks = db.keyspace(name).unwrap();
                for round in 0..3 {
                    for i in 0..600 {
                        ks.put(key(i), value(name, i, round)).unwrap();
                    }
                    for i in (0..600).step_by(7) {
                        ks.delete(key(i)).unwrap();
                    }
                }
            });
        }
    });
    let check = |db: &Db| {
        for name in names {
            let ks = db.keyspace(name).unwrap();
            for i in 0..600 {
                let want = (i % 7 != 0).then(|| value(name, i, 2).into_bytes());
                assert_eq!(ks.get(key(i)).unwrap(), want, "{name} {i}");
            }
            let n = ks.iter().count();
            assert_eq!(n, 600 - 600_usize.div_ceil(7), "{name}");
        }
    };
    for name in names {
        db.keyspace(name).unwrap().wait_for_compactions().unwrap();
    }
    check(&db);
    for (name, style) in styles() {
        let ks = db.keyspace(name).unwrap();
        assert_eq!(ks.property("strata.policy").unwrap(), style.name());
        assert!(ks.stats().flushes > 0, "{name} flushed: {}", ks.stats());
    }
    assert_eq!(db.property("strata.policy").unwrap(), "leveled");
    Arc::try_unwrap(db).unwrap().close().unwrap();
    // Reopened without options: the persisted policies come back.
    let db = Db::open("/db", opts(vfs)).unwrap();
    check(&db);
    for (name, style) in styles() {
        assert_eq!(db.keyspace(name).unwrap().property("strata.policy").unwrap(), style.name());
    }
}

#[test]
fn a_batch_across_keyspaces_is_seen_whole_or_not_at_all() {
    let db = Arc::new(Db::open("/db", opts(Arc::new(MemVfs::new()))).unwrap());
    let a = db.create_keyspace("a", small(CompactionStyle::Lsbm)).unwrap();
    let b = db.create_keyspace("b", small(CompactionStyle::Tiered)).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 0..400u32 {
                let mut batch = WriteBatch::new();
                for k in 0..5 {
                    batch.put_cf(&a, key(k), round.to_string());
                    batch.put_cf(&b, key(k), round.to_string());
                    batch.put(key(k), round.to_string());
                }
                db.write(batch).unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let snap = db.snapshot();
                let ro = ReadOptions::default().with_snapshot(&snap);
                let want = db.get_opt(key(0), &ro).unwrap();
                for k in 0..5 {
                    assert_eq!(a.get_opt(key(k), &ro).unwrap(), want);
                    assert_eq!(b.get_opt(key(k), &ro).unwrap(), want);
                    assert_eq!(db.get_opt(key(k), &ro).unwrap(), want);
                }
            }
        });
    });
    assert_eq!(a.get(key(4)).unwrap(), Some(b"399".to_vec()));
}

#[test]
fn reopen_replays_the_wal_into_each_keyspace_after_its_own_log_number() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let flushed = db.create_keyspace("flushed", small(CompactionStyle::Leveled)).unwrap();
    let unflushed = db.create_keyspace("unflushed", small(CompactionStyle::Garnering { c: 0.5 })).unwrap();
    for i in 0..50 {
        flushed.put(key(i), "f").unwrap();
        unflushed.put(key(i), "u").unwrap();
        db.put(key(i), "d").unwrap();
    }
    flushed.flush().unwrap();
    assert_eq!(flushed.stats().levels[0].files, 1);
    for i in 50..60 {
        flushed.put(key(i), "f2").unwrap();
    }
    // Dropping the handle does not flush: the reopen replays the WAL.
    drop(db);
    let db = Db::open("/db", opts(vfs)).unwrap();
    let flushed = db.keyspace("flushed").unwrap();
    let unflushed = db.keyspace("unflushed").unwrap();
    // The flushed keyspace's 50 keys were not replayed again: one table from
    // its flush; the 10 later keys stay in its memtable (their WAL on disk).
    assert_eq!(flushed.stats().levels[0].files, 1, "{}", flushed.stats());
    for i in 0..50 {
        assert_eq!(flushed.get(key(i)).unwrap().as_deref(), Some(&b"f"[..]));
        assert_eq!(unflushed.get(key(i)).unwrap().as_deref(), Some(&b"u"[..]));
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&b"d"[..]));
    }
    for i in 50..60 {
        assert_eq!(flushed.get(key(i)).unwrap().as_deref(), Some(&b"f2"[..]));
        assert_eq!(unflushed.get(key(i)).unwrap(), None);
    }
    // Sequence numbers stay global: a new write shadows the replayed ones.
    unflushed.put(key(0), "new").unwrap();
    assert_eq!(unflushed.get(key(0)).unwrap().as_deref(), Some(&b"new"[..]));
}

/// The files of every keyspace directory, with their sizes.
fn keyspace_files(vfs: &dyn Vfs) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for id in vfs.list_dir(Path::new("/db/keyspaces")).unwrap() {
        let dir = Path::new("/db/keyspaces").join(&id);
        for n in vfs.list_dir(&dir).unwrap() {
            let size = vfs.file_size(&dir.join(&n)).unwrap();
            out.push((format!("{id}/{n}"), size));
        }
    }
    out.sort();
    out
}

/// Regression (10 000 keyspaces took 48 s to reopen): a reopen wrote a new
/// MANIFEST, a `CURRENT` and an L0 table in every keyspace. Now keyspaces
/// whose ops fit their memtable keep them there (and their WAL on disk), and
/// an idle keyspace's files are not touched.
#[test]
fn reopening_keyspaces_writes_nothing_in_their_directories() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let names = ["a", "b", "idle"];
    for n in names {
        db.create_keyspace(n, small(CompactionStyle::Leveled)).unwrap();
    }
    db.keyspace("a").unwrap().put("k", "a1").unwrap();
    db.keyspace("b").unwrap().put("k", "b1").unwrap();
    db.put("k", "d1").unwrap();
    drop(db);
    let before = keyspace_files(&*vfs);
    for round in 0..3 {
        let db = Db::open("/db", opts(vfs.clone())).unwrap();
        assert_eq!(keyspace_files(&*vfs), before, "round {round}");
        assert_eq!(db.keyspace("a").unwrap().get("k").unwrap().as_deref(), Some(&b"a1"[..]));
        assert_eq!(db.keyspace("b").unwrap().get("k").unwrap().as_deref(), Some(&b"b1"[..]));
        assert_eq!(db.keyspace("idle").unwrap().get("k").unwrap(), None);
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"d1"[..]));
        drop(db);
    }
    // Writes after a reopen land beside the kept ones, and both survive.
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let a = db.keyspace("a").unwrap();
    a.put("k2", "a2").unwrap();
    assert!(wal_files(&*vfs, "/db") >= 2, "the kept ops' WAL stays");
    drop((a, db));
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let a = db.keyspace("a").unwrap();
    assert_eq!(a.get("k").unwrap().as_deref(), Some(&b"a1"[..]));
    assert_eq!(a.get("k2").unwrap().as_deref(), Some(&b"a2"[..]));
    // Once every keyspace has flushed, the old WALs go.
    for n in ["a", "b"] {
        db.keyspace(n).unwrap().flush().unwrap();
    }
    db.flush().unwrap();
    assert_eq!(wal_files(&*vfs, "/db"), 1);
    drop((a, db));
    let db = Db::open("/db", opts(vfs)).unwrap();
    assert_eq!(db.keyspace("a").unwrap().get("k2").unwrap().as_deref(), Some(&b"a2"[..]));
    assert_eq!(db.keyspace("b").unwrap().get("k").unwrap().as_deref(), Some(&b"b1"[..]));
}

/// A WAL with a torn record is replayed into tables, so no later WAL is
/// ever replayed after a damaged one.
#[test]
fn a_torn_wal_is_replayed_into_tables_at_reopen() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let ks = db.create_keyspace("ks", small(CompactionStyle::Leveled)).unwrap();
    ks.put("k", "v").unwrap();
    ks.put("k2", "v2").unwrap();
    drop((ks, db));
    let wal =
        vfs.list_dir(Path::new("/db")).unwrap().into_iter().filter(|n| n.ends_with(".log")).max().unwrap();
    let path = Path::new("/db").join(wal);
    let len = vfs.file_size(&path).unwrap();
    vfs.truncate(&path, len - 3).unwrap();
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let ks = db.keyspace("ks").unwrap();
    assert_eq!(ks.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(ks.get("k2").unwrap(), None, "the torn record is dropped");
    assert_eq!(ks.stats().levels[0].files, 1, "{}", ks.stats());
    ks.put("k3", "v3").unwrap();
    drop((ks, db));
    let db = Db::open("/db", opts(vfs)).unwrap();
    assert_eq!(db.keyspace("ks").unwrap().get("k3").unwrap().as_deref(), Some(&b"v3"[..]));
}

#[test]
fn drop_removes_data_and_directory_and_the_name_is_reusable() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let tmp = db.create_keyspace("tmp", small(CompactionStyle::Lsbm)).unwrap();
    for i in 0..200 {
        tmp.put(key(i), value("tmp", i, 0)).unwrap();
    }
    tmp.flush().unwrap();
    tmp.put("unflushed", "in the WAL only").unwrap();
    let dir = format!("/db/keyspaces/{}", tmp.id());
    assert!(vfs.exists(Path::new(&dir)));
    db.drop_keyspace("tmp").unwrap();
    assert!(!vfs.exists(Path::new(&dir)), "directory removed");
    assert!(matches!(tmp.get(key(1)), Err(Error::KeyspaceNotFound(_))));
    assert!(tmp.put("k", "v").is_err());
    assert!(tmp.iter().next().unwrap().is_err());
    assert!(tmp.flush().is_err());
    let mut batch = WriteBatch::new();
    batch.put_cf(&tmp, "k", "v");
    assert!(db.write(batch).is_err(), "a batch naming a dropped keyspace is refused");
    assert!(db.keyspace("tmp").is_err());
    assert_eq!(db.list_keyspaces(), ["default"]);
    drop(db);
    // The WAL still holds an op of the dropped id: replay skips it.
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    assert_eq!(db.list_keyspaces(), ["default"]);
    let again = db.create_keyspace("tmp", small(CompactionStyle::Leveled)).unwrap();
    assert_ne!(again.id(), tmp.id(), "ids are never reused");
    assert_eq!(again.get(key(1)).unwrap(), None);
    assert_eq!(again.get("unflushed").unwrap(), None);
    assert_eq!(again.iter().count(), 0);
}

#[test]
fn an_orphan_keyspace_directory_is_removed_at_open() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    db.create_keyspace("kept", KeyspaceOptions::default()).unwrap().put("k", "v").unwrap();
    db.close().unwrap();
    // What a create that crashed before the root MANIFEST recorded it leaves.
    vfs.create_dir_all(Path::new("/db/keyspaces/9")).unwrap();
    let mut f = vfs.create(Path::new("/db/keyspaces/9/MANIFEST-000001")).unwrap();
    f.append(b"junk").unwrap();
    f.sync().unwrap();
    drop(f);
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    assert!(!vfs.exists(Path::new("/db/keyspaces/9")));
    assert_eq!(db.keyspace("kept").unwrap().get("k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_snapshot_reads_every_keyspace_at_one_point() {
    let db = Db::open("/db", opts(Arc::new(MemVfs::new()))).unwrap();
    let a = db.create_keyspace("a", small(CompactionStyle::Lwc { max_segments: 4 })).unwrap();
    let b = db.create_keyspace("b", small(CompactionStyle::Garnering { c: 0.8 })).unwrap();
    for i in 0..300 {
        a.put(key(i), "old").unwrap();
        b.put(key(i), "old").unwrap();
    }
    let snap = db.snapshot();
    for i in 0..300 {
        a.put(key(i), "new").unwrap();
        b.delete(key(i)).unwrap();
    }
    a.compact_range(None, None).unwrap();
    b.compact_range(None, None).unwrap();
    let ro = ReadOptions::default().with_snapshot(&snap);
    for i in (0..300).step_by(13) {
        assert_eq!(a.get_opt(key(i), &ro).unwrap().as_deref(), Some(&b"old"[..]));
        assert_eq!(b.get_opt(key(i), &ro).unwrap().as_deref(), Some(&b"old"[..]));
        assert_eq!(b.get(key(i)).unwrap(), None);
    }
    assert_eq!(b.iter_opt(&ro).count(), 300);
    assert_eq!(b.iter().count(), 0);
    let mut it = a.raw_iterator_opt(&ro);
    it.seek_to_first();
    assert_eq!(it.value(), Some(&b"old"[..]));
}

/// Regression for a flaky test (flake hunt, under load): this test used to
/// count WAL files while the writer ran and bound the peak, but how many pile
/// up before the background flushes delete them is the scheduler's business
/// (17 on a loaded machine). What the option promises is checked once the
/// flushes are done: the cold keyspace's write reached a table on its own,
/// so after the hot keyspace's flush no WAL is pinned (without the option,
/// the next test keeps more than five).
#[test]
fn max_total_wal_size_flushes_the_cold_keyspace() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone()).with_max_total_wal_size(64 << 10)).unwrap();
    let cold = db.create_keyspace("cold", small(CompactionStyle::Leveled)).unwrap();
    cold.put("only", "write").unwrap();
    for i in 0..3000 {
        db.put(key(i), value("hot", i, 0)).unwrap();
    }
    // The cold flush first: the hot flush's memtable switch then moves the
    // empty cold memtable to the new WAL, and its own flush frees the rest.
    cold.wait_for_compactions().unwrap();
    assert!(cold.stats().wal_size_flushes >= 1, "{}", cold.stats());
    assert_eq!(cold.stats().levels[0].files, 1, "the cold write reached a table");
    db.flush().unwrap();
    assert_eq!(wal_files(vfs.as_ref(), "/db"), 1, "the cold keyspace still pins WALs");
    assert_eq!(cold.get("only").unwrap(), Some(b"write".to_vec()));
    drop(db);
    let db = Db::open("/db", opts(vfs)).unwrap();
    assert_eq!(db.keyspace("cold").unwrap().get("only").unwrap(), Some(b"write".to_vec()));
}

/// Also the regression test for "flush returned before the WALs it freed were
/// deleted": the flush thread took them off the list and was still deleting
/// when `flush` returned (CI failed on it about one run in seven).
#[test]
fn without_max_total_wal_size_a_cold_keyspace_keeps_its_wal() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone()).with_max_total_wal_size(u64::MAX)).unwrap();
    let cold = db.create_keyspace("cold", small(CompactionStyle::Leveled)).unwrap();
    cold.put("only", "write").unwrap();
    for i in 0..3000 {
        db.put(key(i), value("hot", i, 0)).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(cold.stats().wal_size_flushes, 0);
    assert!(wal_files(vfs.as_ref(), "/db") > 5, "the cold write pins the WALs since");
    cold.flush().unwrap();
    assert_eq!(wal_files(vfs.as_ref(), "/db"), 1, "its flush frees them");
}

/// Regression: `WriteBatch::put_cf` with another database's handle was routed
/// by keyspace id alone, so it wrote into whichever keyspace had that id here.
#[test]
fn a_batch_with_a_handle_of_another_database_is_refused() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let a = Db::open("/a", opts(vfs.clone())).unwrap();
    let b = Db::open("/b", opts(vfs)).unwrap();
    let ka = a.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    let kb = b.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    assert_eq!(ka.id(), kb.id(), "the same id in both databases");
    let invalid = |r: Result<(), Error>| matches!(r, Err(Error::InvalidArgument(_)));

    let mut foreign = WriteBatch::new();
    foreign.put("plain", "v");
    foreign.put_cf(&kb, "k", "b's");
    assert!(invalid(a.write(foreign.clone())));
    assert_eq!(ka.get("k").unwrap(), None, "nothing of the refused batch was written");
    assert_eq!(a.get("plain").unwrap(), None);
    b.write(foreign.clone()).unwrap();
    assert_eq!(kb.get("k").unwrap(), Some(b"b's".to_vec()));

    let mut mixed = WriteBatch::new();
    mixed.delete_cf(&ka, "k");
    mixed.delete_range_cf(&kb, "a", "z");
    assert!(invalid(a.write(mixed.clone())) && invalid(b.write(mixed.clone())));
    let mut appended = WriteBatch::new();
    appended.merge_cf(&ka, "k", "x");
    appended.append(&foreign);
    assert!(invalid(a.write(appended.clone())) && invalid(b.write(appended)));

    mixed.clear();
    mixed.put_cf(&ka, "k", "a's");
    a.write(mixed).unwrap();
    assert_eq!(ka.get("k").unwrap(), Some(b"a's".to_vec()));
    assert_eq!(kb.get("k").unwrap(), Some(b"b's".to_vec()));
}

#[test]
fn errors_are_clear() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let ks = db.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    let invalid = |r: Result<(), Error>| matches!(r, Err(Error::InvalidArgument(_)));
    // Regression: an unknown keyspace was a plain InvalidArgument a caller
    // could not tell from a bad option.
    let missing = |r: Result<(), Error>| matches!(r, Err(Error::KeyspaceNotFound(_)));
    assert!(missing(db.keyspace("unknown").map(drop)));
    assert!(invalid(db.create_keyspace("ks", KeyspaceOptions::default()).map(drop)));
    assert!(invalid(db.create_keyspace("default", KeyspaceOptions::default()).map(drop)));
    assert!(invalid(db.create_keyspace("", KeyspaceOptions::default()).map(drop)));
    assert!(invalid(
        db.create_keyspace("bad", KeyspaceOptions::default().with_write_buffer_size(1)).map(drop)
    ));
    assert!(!vfs.exists(Path::new("/db/keyspaces/2")), "a refused create leaves nothing");
    assert!(invalid(db.drop_keyspace("default")));
    assert!(missing(db.drop_keyspace("unknown")));
    db.drop_keyspace("ks").unwrap();
    assert!(missing(db.drop_keyspace("ks")));
    assert!(missing(ks.put("k", "v")));
    assert!(missing(ks.get("k").map(drop)));
    assert!(missing(ks.compact_range(None, None)));
    assert!(ks.multi_get(["k"])[0].is_err());
    let mut it = ks.raw_iterator();
    it.seek_to_first();
    assert!(!it.valid() && it.status().is_err());
    // A handle of another database is refused by the `_cf` forms.
    let other = Db::open("/other", opts(vfs.clone())).unwrap();
    let foreign = other.create_keyspace("f", KeyspaceOptions::default()).unwrap();
    assert!(invalid(db.put_cf(&foreign, "k", "v")));
    db.close().unwrap();
    // Options for the default keyspace are refused; options for a keyspace
    // the database lacks create it; another policy changes it (recorded).
    let default = opts(vfs.clone()).with_keyspace("default", KeyspaceOptions::default());
    assert!(invalid(Db::open("/db", default).map(drop)));
    let lsbm = KeyspaceOptions::default().with_compaction_style(CompactionStyle::Lsbm);
    let db = Db::open("/db", opts(vfs.clone()).with_keyspace("lsbm", lsbm)).unwrap();
    assert_eq!(db.keyspace("lsbm").unwrap().property("strata.policy").unwrap(), "lsbm");
    db.close().unwrap();
    let leveled = KeyspaceOptions::default().with_compaction_style(CompactionStyle::Leveled);
    let changed = opts(vfs.clone()).with_keyspace("lsbm", leveled);
    Db::open("/db", changed).unwrap().close().unwrap();
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    assert_eq!(db.keyspace("lsbm").unwrap().property("strata.policy").unwrap(), "leveled");
    db.close().unwrap();
    let same = opts(vfs).with_keyspace("lsbm", small(CompactionStyle::Lsbm));
    Db::open("/db", same).unwrap();
}

#[test]
fn a_database_without_keyspaces_is_unchanged() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    for i in 0..100 {
        db.put(key(i), "v").unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    assert_eq!(db.list_keyspaces(), ["default"]);
    assert_eq!(Db::list_keyspaces_at("/db", &opts(vfs.clone())).unwrap(), ["default"]);
    assert_eq!(db.get(key(5)).unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    assert!(!vfs.exists(Path::new("/db/keyspaces")), "no keyspace directory");
    // The WAL bytes of default-keyspace ops are the old encoding.
    let mut b = WriteBatch::new();
    b.put("k", "v");
    assert_eq!(&b.data()[12..], &[1, 1, b'k', 1, b'v']);
}

#[test]
fn merge_operators_and_options_are_per_keyspace() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let concat = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    let ks_opts = small(CompactionStyle::Tiered).with_merge_operator(concat);
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let log = db.create_keyspace("log", ks_opts.clone()).unwrap();
    let mut batch = WriteBatch::new();
    batch.merge_cf(&log, "k", "a");
    batch.merge_cf(&log, "k", "b");
    let mut refused = batch.clone();
    refused.merge("k", "x");
    let err = db.write(refused).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "the default keyspace has no merge operator: {err}");
    db.write(batch).unwrap();
    assert_eq!(log.get("k").unwrap(), Some(b"ab".to_vec()));
    assert_eq!(db.get("k").unwrap(), None);
    db.close().unwrap();
    // The operator is not persisted: given again, reads work; without it, they fail.
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    assert!(db.keyspace("log").unwrap().get("k").is_err());
    db.close().unwrap();
    let db = Db::open("/db", opts(vfs).with_keyspace("log", ks_opts)).unwrap();
    assert_eq!(db.keyspace("log").unwrap().get("k").unwrap(), Some(b"ab".to_vec()));
}

#[test]
fn read_only_open_of_a_database_with_keyspaces_reads_every_keyspace() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let ks = db.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    let mut batch = WriteBatch::new();
    batch.put_cf(&ks, "k", "ks");
    batch.put("k", "default");
    db.write(batch).unwrap();
    drop(db);
    let ro = Db::open_read_only("/db", opts(vfs)).unwrap();
    assert_eq!(ro.get("k").unwrap(), Some(b"default".to_vec()));
    assert_eq!(ro.keyspace("ks").unwrap().get("k").unwrap(), Some(b"ks".to_vec()));
}

#[test]
fn repair_keeps_and_destroy_removes_a_database_with_keyspaces() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    db.create_keyspace("ks", KeyspaceOptions::default()).unwrap().put("k", "v").unwrap();
    db.close().unwrap();
    // Repair rebuilds the keyspace and keeps the registry.
    let report = strata::repair("/db", opts(vfs.clone())).unwrap();
    assert_eq!(report.keyspaces, 1, "{report}");
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    assert_eq!(db.keyspace("ks").unwrap().get("k").unwrap(), Some(b"v".to_vec()));
    db.close().unwrap();
    strata::destroy("/db", opts(vfs.clone())).unwrap();
    assert!(!vfs.exists(Path::new("/db/keyspaces")), "keyspace directories removed");
    assert!(!vfs.exists(Path::new("/db")));
}

/// One workload step: what it wrote, for the check after a crash.
#[derive(Clone, Debug)]
enum Acked {
    /// `(keyspace, key, value)` triples written by one acknowledged synced batch.
    Batch(Vec<(&'static str, String, String)>),
    /// Keyspace `b` dropped (acknowledged).
    Dropped,
}

/// Create, write (synced, across keyspaces), flush, drop and re-create,
/// stopping at the first error (the crash).
fn crash_workload(vfs: Arc<dyn Vfs>, acked: &mut Vec<Acked>) -> strata::Result<()> {
    let db = Db::open("/db", opts(vfs).with_write_buffer_size(4096))?;
    let a = db.create_keyspace("a", small(CompactionStyle::Lsbm).with_write_buffer_size(4096))?;
    let b = db
        .create_keyspace("b", small(CompactionStyle::Lwc { max_segments: 4 }).with_write_buffer_size(4096))?;
    let wo = WriteOptions::default().with_sync(true);
    for round in 0..12u32 {
        let mut batch = WriteBatch::new();
        let mut ops = Vec::new();
        for k in 0..3u32 {
            let v = format!("{round}-{}", "v".repeat(300));
            batch.put_cf(&a, key(k), &v);
            batch.put_cf(&b, key(k + round), &v);
            batch.put(key(k), &v);
            ops.push(("a", key(k), v.clone()));
            ops.push(("b", key(k + round), v.clone()));
            ops.push(("default", key(k), v));
        }
        db.write_opt(batch, &wo)?;
        acked.push(Acked::Batch(ops));
        match round {
            3 => a.flush()?,
            7 => {
                db.drop_keyspace("b")?;
                acked.push(Acked::Dropped);
                return Ok(());
            }
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn a_crash_at_every_step_keeps_acknowledged_writes_and_batch_atomicity() {
    let mut n = 0u64;
    loop {
        let crash = Arc::new(CrashVfs::new());
        crash.set_crash_after(Some(n));
        let mut acked = Vec::new();
        let finished = crash_workload(crash.clone(), &mut acked).is_ok();
        let image: Arc<dyn Vfs> = Arc::new(crash.image(CrashMode::PowerLoss));
        let db = Db::open("/db", opts(image)).unwrap_or_else(|e| panic!("crash after op {n}: {e}"));
        let dropped = acked.iter().any(|a| matches!(a, Acked::Dropped));
        if dropped {
            assert!(db.keyspace("b").is_err(), "crash after op {n}: the drop was acknowledged");
        }
        // Each synced batch is all there, or (if not acknowledged) all there or all absent.
        let batches: Vec<&Vec<(&str, String, String)>> =
            acked.iter().filter_map(|a| if let Acked::Batch(ops) = a { Some(ops) } else { None }).collect();
        let read = |ks: &str, k: &str| -> Option<Vec<u8>> {
            match db.keyspace(ks) {
                Ok(h) => h.get(k).unwrap(),
                Err(_) => None,
            }
        };
        if let Some(last) = batches.last() {
            for (ks, k, v) in last.iter() {
                if *ks == "b" && dropped {
                    continue;
                }
                // Later batches may overwrite a key only with a newer round.
                let got = read(ks, k).unwrap_or_else(|| panic!("crash after op {n}: {ks}/{k} lost"));
                let round =
                    |s: &[u8]| String::from_utf8_lossy(s).split('-').next().unwrap().parse::<u32>().unwrap();
                assert!(round(&got) >= round(v.as_bytes()), "crash after op {n}: {ks}/{k} went back");
            }
        }
        // Atomicity: the default keyspace's key0 round equals keyspace a's key0 round.
        let r0 = read("default", &key(0));
        let a0 = read("a", &key(0));
        if db.keyspace("a").is_ok() {
            assert_eq!(r0, a0, "crash after op {n}: a batch was applied in part");
        }
        drop(db);
        if finished {
            break;
        }
        n += 1;
    }
    assert!(n > 20, "the workload has {n} mutating steps");
}

/// The `.sst` files of every non-default keyspace directory, with their sizes.
fn keyspace_tables(vfs: &dyn Vfs) -> Vec<Vec<(String, u64)>> {
    let base = Path::new("/db/keyspaces");
    let mut dirs = vfs.list_dir(base).unwrap();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let dir = base.join(d);
            let mut names: Vec<String> =
                vfs.list_dir(&dir).unwrap().into_iter().filter(|n| n.ends_with(".sst")).collect();
            names.sort();
            names.into_iter().map(|n| (n.clone(), vfs.file_size(&dir.join(&n)).unwrap())).collect()
        })
        .collect()
}

/// Regression guard for the shared caches: file numbers are per keyspace, so
/// two keyspaces hold tables with the same numbers, sizes and block offsets
/// but different contents. A block or row cache keyed by file alone would
/// hand each keyspace the other's block or row.
#[test]
fn equal_file_numbers_in_two_keyspaces_read_their_own_values_through_the_shared_caches() {
    // Each cache alone, so a row-cache hit never hides a block-cache mistake.
    for (block_cache, row_cache) in [(1 << 20, 0), (0, 1 << 20)] {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let db = Db::open(
            "/db",
            opts(vfs.clone()).with_block_cache_capacity(block_cache).with_row_cache(row_cache),
        )
        .unwrap();
        // One memtable, one flush, no compaction: both trees number alike.
        let one_table = small(CompactionStyle::Leveled)
            .with_write_buffer_size(1 << 20)
            .with_disable_auto_compactions(true);
        let a = db.create_keyspace("a", one_table.clone()).unwrap();
        let b = db.create_keyspace("b", one_table).unwrap();
        for i in 0..300 {
            a.put(key(i), value("a", i, 0)).unwrap();
            b.put(key(i), value("b", i, 0)).unwrap();
        }
        a.flush().unwrap();
        b.flush().unwrap();
        let tables = keyspace_tables(vfs.as_ref());
        assert_eq!(tables.len(), 2);
        assert!(!tables[0].is_empty());
        assert_eq!(tables[0], tables[1], "same file numbers and sizes in both keyspaces");
        for round in 0..3 {
            for i in (0..300).rev() {
                assert_eq!(a.get(key(i)).unwrap(), Some(value("a", i, 0).into_bytes()), "round {round}");
                assert_eq!(b.get(key(i)).unwrap(), Some(value("b", i, 0).into_bytes()), "round {round}");
            }
        }
        for (ks, name) in [(&a, "a"), (&b, "b")] {
            let got: Vec<Vec<u8>> = ks.iter().map(|kv| kv.unwrap().1).collect();
            assert_eq!(got, (0..300).map(|i| value(name, i, 0).into_bytes()).collect::<Vec<_>>());
            let s = ks.stats();
            if block_cache > 0 {
                assert!(s.cache.hits > 0 && s.cache.usage_bytes > 0, "{name}: {:?}", s.cache);
            } else {
                assert!(s.row_cache.hits >= 300 && s.row_cache.entries > 0, "{name}: {:?}", s.row_cache);
            }
        }
        let (sa, sb, sd, total) = (a.stats(), b.stats(), db.stats(), db.block_cache_stats());
        assert_eq!(total.hits, sa.cache.hits + sb.cache.hits + sd.cache.hits);
        assert_eq!(total.usage_bytes, sa.cache.usage_bytes + sb.cache.usage_bytes + sd.cache.usage_bytes);
        let rows = db.row_cache_stats();
        assert_eq!(rows.entries, sa.row_cache.entries + sb.row_cache.entries + sd.row_cache.entries);
        assert_eq!(rows.capacity_bytes, row_cache as u64);
    }
}

/// One `block_cache_capacity` (and one row cache capacity) bounds the whole
/// database: several keyspaces, each with more table bytes than the cache,
/// read hot together, stay within it (caches per keyspace would hold up to
/// the capacity each). The charge is exact, so there is no slack.
#[test]
fn one_cache_capacity_bounds_every_keyspace_read_hot_together() {
    let (cap, row_cap) = (256 << 10, 64 << 10);
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs).with_block_cache_capacity(cap).with_row_cache(row_cap)).unwrap();
    let names = ["k0", "k1", "k2", "k3"];
    let spaces: Vec<_> =
        names.iter().map(|n| db.create_keyspace(n, small(CompactionStyle::Leveled)).unwrap()).collect();
    let big = |i: u32| format!("{i:06}-{}", "v".repeat(200));
    for ks in &spaces {
        for i in 0..2000 {
            ks.put(key(i), big(i)).unwrap();
        }
        ks.flush().unwrap();
        ks.wait_for_compactions().unwrap();
        assert!(ks.stats().total_table_bytes > cap as u64);
    }
    let mut peak = 0;
    for round in 0..3 {
        for i in 0..2000 {
            for ks in &spaces {
                assert_eq!(ks.get(key(i)).unwrap(), Some(big(i).into_bytes()), "round {round}");
            }
            if i % 250 == 0 {
                let (blocks, rows) = (db.block_cache_stats(), db.row_cache_stats());
                assert!(blocks.usage_bytes <= cap as u64, "{blocks:?}");
                assert!(rows.usage_bytes <= row_cap as u64, "{rows:?}");
                peak = peak.max(blocks.usage_bytes);
            }
        }
    }
    let (blocks, rows) = (db.block_cache_stats(), db.row_cache_stats());
    assert!(blocks.evictions > 0 && rows.evictions > 0);
    assert!(peak > cap as u64 / 2, "the cache was used: peak {peak}");
    let per_ks: Vec<_> = spaces.iter().map(|k| k.stats()).collect();
    let sum = |f: fn(&strata::Stats) -> u64| per_ks.iter().map(f).sum::<u64>() + f(&db.stats());
    assert_eq!(sum(|s| s.cache.usage_bytes), blocks.usage_bytes);
    assert_eq!(sum(|s| s.cache.entries), blocks.entries);
    assert_eq!(sum(|s| s.row_cache.usage_bytes), rows.usage_bytes);
    for s in &per_ks {
        assert!(s.cache.usage_bytes > 0 && s.cache.capacity_bytes == cap as u64);
    }
    // A dropped keyspace gives its memory back at once.
    let before = db.block_cache_stats().usage_bytes;
    let gone = per_ks[3].cache.usage_bytes;
    drop(per_ks);
    db.drop_keyspace("k3").unwrap();
    drop(spaces);
    assert_eq!(db.block_cache_stats().usage_bytes, before - gone);
}

/// Regression (10 000 keyspaces with data failed to reopen with "Too many
/// open files"): each keyspace kept `max_open_files` tables open of its own.
/// The bound is the database's now.
#[test]
fn max_open_files_bounds_the_open_tables_of_all_keyspaces_together() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs).with_max_open_files(16)).unwrap();
    let names: Vec<String> = (0..40).map(|i| format!("ks{i}")).collect();
    let made = db.create_keyspaces(names.iter().map(|n| (n, small(CompactionStyle::Leveled)))).unwrap();
    for ks in &made {
        ks.put("k", "v").unwrap();
        ks.flush().unwrap();
    }
    for ks in &made {
        assert_eq!(ks.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    }
    let open: usize = made.iter().map(|ks| ks.stats().open_tables).sum();
    assert!((1..=16).contains(&open), "{open} tables open");
    // Every keyspace still reads its own table, reopened on demand.
    for ks in made.iter().rev() {
        assert_eq!(ks.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}

/// Regression: a WAL deleted from the middle of the chain was not noticed
/// once a database had keyspaces (only the WALs at the trees' log numbers
/// and the floor were checked), and the writes in it were silently gone.
#[test]
fn a_wal_deleted_from_the_middle_of_the_chain_is_corruption() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    let hot = db.create_keyspace("hot", small(CompactionStyle::Leveled)).unwrap();
    let cold = db.create_keyspace("cold", small(CompactionStyle::Leveled)).unwrap();
    for round in 0..3u32 {
        cold.put(format!("c{round}"), "v").unwrap();
        // Fills hot's memtable: a switch to a new WAL; cold's stays unflushed.
        for i in 0..200 {
            hot.put(key(i), value("hot", i, round).repeat(2)).unwrap();
        }
    }
    // The flushes record the WALs the switches created in the root MANIFEST.
    hot.flush().unwrap();
    drop((hot, cold, db));
    // Intact, every write of cold is there.
    let db = Db::open("/db", opts(vfs.clone())).unwrap();
    for round in 0..3 {
        assert_eq!(
            db.keyspace("cold").unwrap().get(format!("c{round}")).unwrap().as_deref(),
            Some(&b"v"[..])
        );
    }
    drop(db);
    let mut wals: Vec<String> =
        vfs.list_dir(Path::new("/db")).unwrap().into_iter().filter(|n| n.ends_with(".log")).collect();
    wals.sort();
    assert!(wals.len() >= 3, "the reopen kept cold's WALs: {wals:?}");
    let middle = &wals[1];
    vfs.remove_file(&Path::new("/db").join(middle)).unwrap();
    let err = Db::open("/db", opts(vfs)).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains(middle.as_str()), "{err}");
}
