//! `BackupEngine`: incremental backups whose tables are shared between
//! backups, verified, restored, purged, taken under write load and under
//! injected faults.

mod crash_sim_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use strata::vfs::testing::{CrashMode, CrashVfs, FaultConfig, FaultOp, FaultVfs};
use strata::{BackupEngine, CompactionStyle, Db, Error, KeyspaceOptions, MemVfs, Options, Vfs, WriteBatch};

use crash_sim_support::history::{value_of, History, Kv};

type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

const SPACES: [&str; 3] = ["default", "hot", "ingest"];

fn opts() -> Options {
    Options::default()
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_compression(strata::CompressionType::None)
}

fn ks_opts(style: CompactionStyle) -> KeyspaceOptions {
    KeyspaceOptions::default()
        .with_compaction_style(style)
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_compression(strata::CompressionType::None)
}

/// A database with a leveled default keyspace, `hot` under lsbm and
/// `ingest` under lwc (which appends to tables in place).
fn open_db(path: &Path, o: Options) -> Db {
    let db = Db::open(path, o).unwrap();
    db.create_keyspace("hot", ks_opts(CompactionStyle::Lsbm)).unwrap();
    db.create_keyspace("ingest", ks_opts(CompactionStyle::Lwc { max_segments: 4 })).unwrap();
    db
}

/// Waits until no keyspace has a compaction due or running.
fn settle(db: &Db) {
    db.wait_for_compactions().unwrap();
    for name in &SPACES[1..] {
        db.keyspace(name).unwrap().wait_for_compactions().unwrap();
    }
}

/// Every keyspace's entries.
fn read_all(db: &Db) -> Model {
    let mut m = Model::new();
    for name in SPACES {
        let entries = if name == "default" {
            db.iter().map(Result::unwrap).collect()
        } else {
            db.keyspace(name).unwrap().iter().map(Result::unwrap).collect()
        };
        m.insert(name.to_string(), entries);
    }
    m
}

/// Round `r` of writes: puts, point deletes and a range delete in every
/// keyspace, mirrored in `model`.
fn write_round(db: &Db, model: &mut Model, r: u32) {
    for name in SPACES {
        let m = model.entry(name.to_string()).or_default();
        let ks = (name != "default").then(|| db.keyspace(name).unwrap());
        for i in 0..800u32 {
            let k = format!("k{:05}", (i * 7 + r * 131) % 2000).into_bytes();
            let v = format!("{name}-r{r}-{i}").into_bytes();
            match &ks {
                Some(ks) => ks.put(&k, &v).unwrap(),
                None => db.put(&k, &v).unwrap(),
            }
            m.insert(k, v);
        }
        let del = format!("k{:05}", r * 17 % 2000).into_bytes();
        let (lo, hi) = (format!("k{:05}", 300 + r * 100), format!("k{:05}", 340 + r * 100));
        match &ks {
            Some(ks) => {
                ks.delete(&del).unwrap();
                ks.delete_range(&lo, &hi).unwrap();
            }
            None => {
                db.delete(&del).unwrap();
                db.delete_range(&lo, &hi).unwrap();
            }
        }
        m.remove(&del);
        m.retain(|k, _| !(k.as_slice() >= lo.as_bytes() && k.as_slice() < hi.as_bytes()));
    }
}

fn shared_files(vfs: &dyn Vfs, backups: &Path) -> Vec<String> {
    let mut v = vfs.list_dir(&backups.join("shared")).unwrap();
    v.sort();
    v
}

fn ids(engine: &BackupEngine) -> Vec<u64> {
    engine.get_backup_info().iter().map(|b| b.id).collect()
}

fn restore_and_read(engine: &BackupEngine, id: u64, dir: &Path, o: &Options) -> Model {
    engine.restore_db_from_backup(id, dir).unwrap();
    let db = Db::open(dir, o.clone()).unwrap();
    let got = read_all(&db);
    db.close().unwrap();
    got
}

/// Several backups with writes (range deletes too) between, in keyspaces
/// under leveled, lsbm and lwc; each restores to the state at its call, and
/// after all of them were taken (the database kept changing, compacting).
fn backups_restore_to_their_state(vfs: Option<Arc<dyn Vfs>>) {
    let base = tempfile::tempdir().unwrap();
    let root = if vfs.is_some() { Path::new("/r").to_path_buf() } else { base.path().to_path_buf() };
    let o = match &vfs {
        Some(v) => opts().with_vfs(v.clone()),
        None => opts(),
    };
    let fs: Arc<dyn Vfs> = vfs.clone().unwrap_or_else(|| Arc::new(strata::RealVfs::new()));
    let db = open_db(&root.join("db"), o.clone());
    let engine = BackupEngine::open_with_vfs(root.join("backups"), fs.clone()).unwrap();
    let mut model = Model::new();
    let mut states = Vec::new();
    for r in 0..4 {
        write_round(&db, &mut model, r);
        if r % 2 == 1 {
            db.keyspace("ingest").unwrap().flush().unwrap();
            db.flush().unwrap();
        }
        let id = engine.create_new_backup(&db).unwrap();
        assert_eq!(read_all(&db), model, "round {r}: the model is right");
        states.push((id, model.clone()));
    }
    write_round(&db, &mut model, 9);
    db.compact_range(None, None).unwrap();
    assert_eq!(ids(&engine), [1, 2, 3, 4]);
    for (id, want) in &states {
        engine.verify_backup(*id).unwrap();
        let got = restore_and_read(&engine, *id, &root.join(format!("restored-{id}")), &o);
        assert!(got == *want, "backup {id} restores to its state");
    }
    // The restored databases and the source are separate databases.
    assert_eq!(read_all(&db), model);
    // A reopened engine lists the same backups.
    drop(engine);
    let engine = BackupEngine::open_with_vfs(root.join("backups"), fs).unwrap();
    assert_eq!(ids(&engine), [1, 2, 3, 4]);
    let got = restore_and_read(&engine, 2, &root.join("again"), &o);
    assert!(got == states[1].1);
}

#[test]
fn backups_restore_to_the_state_of_their_call_with_every_policy_real_fs() {
    backups_restore_to_their_state(None);
}

#[test]
fn backups_restore_to_the_state_of_their_call_with_every_policy_mem_vfs() {
    backups_restore_to_their_state(Some(Arc::new(MemVfs::new())));
}

/// A second backup after a few writes adds only the new table to
/// `shared/`; an unchanged database adds none.
#[test]
fn a_second_backup_adds_only_the_new_tables() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let o = Options::default().with_vfs(vfs.clone());
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..1000u32 {
        db.put(format!("k{i:05}"), "first").unwrap();
    }
    db.flush().unwrap();
    let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    engine.create_new_backup(&db).unwrap();
    let first = shared_files(vfs.as_ref(), Path::new("/b"));
    assert_eq!(first.len(), 1, "{first:?}");
    engine.create_new_backup(&db).unwrap();
    assert_eq!(shared_files(vfs.as_ref(), Path::new("/b")), first, "nothing new, nothing added");
    for i in 0..10u32 {
        db.put(format!("n{i}"), "second").unwrap();
    }
    db.flush().unwrap();
    engine.create_new_backup(&db).unwrap();
    let third = shared_files(vfs.as_ref(), Path::new("/b"));
    assert_eq!(third.len(), 2, "{third:?}");
    assert!(first.iter().all(|f| third.contains(f)));
    let info = engine.get_backup_info();
    assert!(info[2].size > info[0].size);
    assert_eq!(info[2].num_files, info[0].num_files + 1);
    // Private directories hold no tables.
    for id in ["1", "2", "3"] {
        let names = vfs.list_dir(&Path::new("/b/private").join(id)).unwrap();
        assert!(names.iter().all(|n| !n.ends_with(".sst")), "{names:?}");
    }
    engine.restore_db_from_backup(3, "/restored").unwrap();
    let restored = Db::open("/restored", o).unwrap();
    assert_eq!(restored.iter().count(), 1010);
}

/// On a real file system the tables of a backup are the checkpoint's hard
/// links: taking one copies no table bytes, and sharing holds across
/// keyspaces with equal table numbers.
#[test]
fn backups_share_tables_across_backups_and_keep_keyspaces_apart() {
    let base = tempfile::tempdir().unwrap();
    let db = open_db(&base.path().join("db"), opts());
    let mut model = Model::new();
    write_round(&db, &mut model, 0);
    for name in ["hot", "ingest"] {
        db.keyspace(name).unwrap().flush().unwrap();
    }
    db.flush().unwrap();
    // Regression (flaky CI): a background compaction in a keyspace ran
    // between the two backups below and gave the second new tables. With no
    // writes after the trees settle, no compaction can start again.
    settle(&db);
    let engine = BackupEngine::open(base.path().join("b")).unwrap();
    engine.create_new_backup(&db).unwrap();
    let shared = shared_files(&strata::RealVfs::new(), &base.path().join("b"));
    let ks: std::collections::BTreeSet<&str> = shared.iter().filter_map(|n| n.split('-').next()).collect();
    let ingest_id = db.keyspace("ingest").unwrap().id().to_string();
    assert!(ks.contains("0") && ks.contains(ingest_id.as_str()), "{shared:?}");
    engine.create_new_backup(&db).unwrap();
    assert_eq!(shared_files(&strata::RealVfs::new(), &base.path().join("b")), shared);
    // A lwc table appended in place later is a new shared file, the old kept.
    write_round(&db, &mut model, 1);
    db.keyspace("ingest").unwrap().flush().unwrap();
    engine.create_new_backup(&db).unwrap();
    let after = shared_files(&strata::RealVfs::new(), &base.path().join("b"));
    assert!(shared.iter().all(|f| after.contains(f)) && after.len() > shared.len());
    let got = restore_and_read(&engine, 3, &base.path().join("r3"), &opts());
    assert!(got == read_all(&db));
}

/// verify_backup names a file with a flipped byte and a missing file;
/// restoring such a backup fails with Corruption and leaves no database;
/// other backups stay good.
#[test]
fn verify_detects_a_flipped_byte_and_a_missing_file() {
    let mem = Arc::new(MemVfs::new());
    let vfs: Arc<dyn Vfs> = mem.clone();
    let o = opts().with_vfs(vfs.clone());
    let db = open_db(Path::new("/db"), o.clone());
    let mut model = Model::new();
    write_round(&db, &mut model, 0);
    db.flush().unwrap();
    let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    let one = engine.create_new_backup(&db).unwrap();
    write_round(&db, &mut model, 1);
    db.flush().unwrap();
    let two = engine.create_new_backup(&db).unwrap();
    engine.verify_backup(one).unwrap();
    engine.verify_backup(two).unwrap();
    assert!(matches!(engine.verify_backup(77), Err(Error::InvalidArgument(_))));

    // A table only backup two holds.
    let before: Vec<String> = {
        let engine2 = &engine;
        engine2.delete_backup(two).unwrap();
        let v = shared_files(vfs.as_ref(), Path::new("/b"));
        v
    };
    let two = engine.create_new_backup(&db).unwrap();
    let only_two: Vec<String> =
        shared_files(vfs.as_ref(), Path::new("/b")).into_iter().filter(|f| !before.contains(f)).collect();
    assert!(!only_two.is_empty());
    let victim = Path::new("/b/shared").join(&only_two[0]);
    mem.corrupt_byte(&victim, 10, 0x40).unwrap();
    let e = engine.verify_backup(two).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains(&only_two[0]), "{e}");
    let e = engine.restore_db_from_backup(two, "/bad").unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(!vfs.exists(Path::new("/bad/CURRENT")));
    engine.verify_backup(one).unwrap();
    mem.corrupt_byte(&victim, 10, 0x40).unwrap();
    engine.verify_backup(two).unwrap();

    // A missing private file.
    let names = vfs.list_dir(Path::new("/b/private/1")).unwrap();
    let manifest = names.iter().find(|n| n.starts_with("MANIFEST")).unwrap();
    vfs.remove_file(&Path::new("/b/private/1").join(manifest)).unwrap();
    let e = engine.verify_backup(one).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains(manifest.as_str()), "{e}");
    assert!(engine.restore_db_from_backup(one, "/bad2").unwrap_err().is_corruption());
    engine.verify_backup(two).unwrap();
    let got = restore_and_read(&engine, two, Path::new("/good"), &o);
    assert!(got == model);
}

#[test]
fn restore_refuses_a_non_empty_target_and_unknown_ids() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let o = opts().with_vfs(vfs.clone());
    let db = Db::open("/db", o.clone()).unwrap();
    db.put("k", "v").unwrap();
    let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    assert!(matches!(engine.restore_db_from_latest_backup("/r"), Err(Error::InvalidArgument(_))));
    let id = engine.create_new_backup(&db).unwrap();
    assert!(matches!(engine.restore_db_from_backup(id + 1, "/r"), Err(Error::InvalidArgument(_))));
    assert!(matches!(engine.restore_db_from_backup(id, "/db"), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()), "the target was left alone");
    // An existing empty directory is fine.
    vfs.create_dir_all(Path::new("/empty")).unwrap();
    engine.restore_db_from_backup(id, "/empty").unwrap();
    assert_eq!(Db::open("/empty", o).unwrap().get("k").unwrap(), Some(b"v".to_vec()));
    // A second engine on the same directory is refused while one is open.
    assert!(matches!(BackupEngine::open_with_vfs("/b", vfs.clone()), Err(Error::Locked(_))));
}

/// Purging the oldest backups removes the tables only they held; the
/// remaining backups verify and restore; deleting them all empties `shared/`.
#[test]
fn purge_keeps_the_rest_restorable_and_frees_unshared_tables() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let o = opts().with_vfs(vfs.clone());
    let db = open_db(Path::new("/db"), o.clone());
    let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    let mut model = Model::new();
    let mut states = BTreeMap::new();
    for r in 0..4 {
        write_round(&db, &mut model, r);
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        states.insert(engine.create_new_backup(&db).unwrap(), model.clone());
    }
    let before = shared_files(vfs.as_ref(), Path::new("/b")).len();
    engine.purge_old_backups(2).unwrap();
    assert_eq!(ids(&engine), [3, 4]);
    assert!(shared_files(vfs.as_ref(), Path::new("/b")).len() < before, "compacted-away tables were freed");
    assert!(!vfs.exists(Path::new("/b/private/1")) && !vfs.exists(Path::new("/b/meta/2")));
    for id in [3, 4] {
        engine.verify_backup(id).unwrap();
        let got = restore_and_read(&engine, id, Path::new(&format!("/r{id}")), &o);
        assert!(got == states[&id], "backup {id}");
    }
    engine.purge_old_backups(5).unwrap();
    assert_eq!(ids(&engine), [3, 4]);
    engine.purge_old_backups(0).unwrap();
    assert!(ids(&engine).is_empty());
    assert!(shared_files(vfs.as_ref(), Path::new("/b")).is_empty());
    assert!(vfs.list_dir(Path::new("/b/private")).unwrap().is_empty());
    assert_eq!(engine.create_new_backup(&db).unwrap(), 1, "ids restart when none is left");
}

/// What an interrupted backup left (a temporary checkpoint, a meta file
/// being written, a private directory and shared tables nothing lists) is
/// removed at the next open; listed backups are kept.
#[test]
fn open_removes_what_an_interrupted_backup_left() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let o = opts().with_vfs(vfs.clone());
    let db = Db::open("/db", o.clone()).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    engine.create_new_backup(&db).unwrap();
    drop(engine);
    let write = |p: &str| {
        let mut f = vfs.create(Path::new(p)).unwrap();
        f.append(b"junk").unwrap();
        f.sync().unwrap();
    };
    vfs.create_dir_all(Path::new("/b/tmp-checkpoint/keyspaces/1")).unwrap();
    write("/b/tmp-checkpoint/keyspaces/1/000001.sst");
    write("/b/meta/2.tmp");
    vfs.create_dir_all(Path::new("/b/private/2")).unwrap();
    write("/b/private/2/CURRENT");
    write("/b/shared/0-99-4-00000000.sst");
    let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    assert_eq!(ids(&engine), [1]);
    assert!(!vfs.exists(Path::new("/b/tmp-checkpoint")));
    assert!(!vfs.exists(Path::new("/b/meta/2.tmp")));
    assert!(!vfs.exists(Path::new("/b/private/2")));
    assert_eq!(shared_files(vfs.as_ref(), Path::new("/b")).len(), 1);
    engine.verify_backup(1).unwrap();
    assert_eq!(engine.create_new_backup(&db).unwrap(), 2);
    // A meta file that fails its checksum is named at open.
    drop(engine);
    let meta = vfs.read_file(Path::new("/b/meta/2")).unwrap();
    let mut f = vfs.create(Path::new("/b/meta/2")).unwrap();
    f.append(&meta[..meta.len() - 3]).unwrap();
    f.sync().unwrap();
    drop(f);
    let e = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("meta/2"), "{e}");
}

/// Backups taken while one client writes batches spanning two keyspaces
/// restore to the state after a prefix of the batches: at least every batch
/// acknowledged before the call, none cut.
#[test]
fn backups_under_write_load_restore_to_a_prefix_of_batches() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path();
    let db = Arc::new(Db::open(root.join("db"), opts()).unwrap());
    db.create_keyspace("other", ks_opts(CompactionStyle::Lwc { max_segments: 4 })).unwrap();
    let history = Arc::new(Mutex::new(History::default()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, history, stop) = (db.clone(), history.clone(), stop.clone());
        std::thread::spawn(move || {
            let other = db.keyspace("other").unwrap();
            let mut i = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (a, b) = (format!("k{:03}", i % 300), format!("k{:03}", (i * 7) % 300));
                let mut w = Vec::new();
                let mut batch = WriteBatch::new();
                let idx = history.lock().next_index();
                let (va, vb) = (value_of(idx, a.as_bytes(), 60), value_of(idx, b.as_bytes(), 60));
                batch.put(&a, &va);
                w.push((format!("d/{a}").into_bytes(), Some(va)));
                if i % 5 == 4 {
                    batch.delete_cf(&other, &b);
                    w.push((format!("o/{b}").into_bytes(), None));
                } else {
                    batch.put_cf(&other, &b, &vb);
                    w.push((format!("o/{b}").into_bytes(), Some(vb)));
                }
                history.lock().begin(w);
                db.write(batch).unwrap();
                history.lock().ack(false);
                i += 1;
            }
        })
    };
    let engine = BackupEngine::open(root.join("b")).unwrap();
    let mut taken = Vec::new();
    for _ in 0..5 {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let before = history.lock().acked();
        let id = engine.create_new_backup(&db).unwrap();
        taken.push((id, before, history.lock().next_index()));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(history.lock().acked() > 500, "the writer wrote: {}", history.lock().acked());
    for (id, before, after) in taken {
        let dir = root.join(format!("r{id}"));
        engine.restore_db_from_backup(id, &dir).unwrap();
        let copy = Db::open(&dir, opts()).unwrap();
        let mut kv = Kv::new();
        for item in copy.iter() {
            let (k, v) = item.unwrap();
            kv.insert([b"d/".as_slice(), &k].concat(), v);
        }
        for item in copy.keyspace("other").unwrap().iter() {
            let (k, v) = item.unwrap();
            kv.insert([b"o/".as_slice(), &k].concat(), v);
        }
        let n = history.lock().check_within(&kv, before, after);
        assert!(n.is_ok(), "backup {id}: {}", n.unwrap_err());
    }
}

/// Waits out every flush and compaction, so only the backup does I/O.
fn quiesce(db: &Db) {
    for name in ["hot", "ingest"] {
        let ks = db.keyspace(name).unwrap();
        ks.flush().unwrap();
        ks.wait_for_compactions().unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
}

/// A fault at any file-system call of create_new_backup (the checkpoint's
/// and the engine's own) returns the error, lists no new backup (also after
/// reopening), leaves the earlier backups verifiable and restorable, and
/// the next attempt succeeds.
#[test]
fn a_fault_during_a_backup_leaves_earlier_backups_intact_and_no_half_backup() {
    let mem: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    // Faults hit the backup directory and the database's tables and logs
    // (which the backup reads); the database is quiet while one is armed.
    let in_scope = |p: &Path| p.starts_with("/b") || p.extension().is_some_and(|e| e == "sst" || e == "log");
    let filter = strata::vfs::testing::PathFilter::new("backup and source files", in_scope);
    let fault = Arc::new(FaultVfs::new(mem, FaultConfig::new(11).with_filter(filter)));
    let vfs: Arc<dyn Vfs> = fault.clone();
    let o = opts().with_vfs(vfs.clone());
    let db = open_db(Path::new("/db"), o.clone());
    let mut model = Model::new();
    write_round(&db, &mut model, 0);
    db.flush().unwrap();
    let mut engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    let first = engine.create_new_backup(&db).unwrap();
    let first_state = model.clone();
    let mut failures = 0;
    let mut round = 1;
    let ops = [FaultOp::Create, FaultOp::Append, FaultOp::Sync, FaultOp::SyncDir, FaultOp::Rename];
    for op in ops.into_iter().chain([FaultOp::Open, FaultOp::ReadAt]) {
        for skip in [0, 2, 5, 9, 14, 30] {
            write_round(&db, &mut model, round);
            round += 1;
            quiesce(&db);
            let listed = ids(&engine);
            fault.fail_after(op, skip, 1);
            let r = engine.create_new_backup(&db);
            fault.disarm();
            match r {
                Ok(id) => assert_eq!(ids(&engine), [listed.clone(), vec![id]].concat()),
                Err(e) => {
                    failures += 1;
                    assert_eq!(ids(&engine), listed, "{op:?}/{skip}: {e}");
                    drop(engine);
                    engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
                    assert_eq!(ids(&engine), listed, "{op:?}/{skip} after reopening");
                    assert!(!vfs.exists(Path::new("/b/tmp-checkpoint")));
                    for id in &listed {
                        engine.verify_backup(*id).unwrap();
                    }
                    engine.create_new_backup(&db).unwrap();
                }
            }
            // Keep the directory small: the first backup and the newest.
            let all = ids(&engine);
            for id in &all[1..all.len() - 1] {
                engine.delete_backup(*id).unwrap();
            }
            let newest = *ids(&engine).last().unwrap();
            let got = restore_and_read(&engine, newest, Path::new(&format!("/r-{round}")), &o);
            assert!(got == model, "{op:?}/{skip}: the newest backup restores to the model");
        }
    }
    assert!(failures >= 15, "the faults hit the backups: {failures}");
    engine.verify_backup(first).unwrap();
    let got = restore_and_read(&engine, first, Path::new("/r-first"), &o);
    assert!(got == first_state);
}

/// A database with keyspaces, tables and WAL data in `/db` of `mem`, its
/// backup (id returned) in `/b`, and what a whole restore of it reads.
fn backed_up(mem: &MemVfs) -> (u64, Model) {
    let vfs: Arc<dyn Vfs> = Arc::new(mem.clone());
    let db = open_db(Path::new("/db"), opts().with_vfs(vfs.clone()));
    let mut model = Model::new();
    write_round(&db, &mut model, 0);
    quiesce(&db);
    // Left in the WAL.
    db.put("wal", "default").unwrap();
    db.keyspace("hot").unwrap().put("wal", "hot").unwrap();
    model.get_mut("default").unwrap().insert(b"wal".to_vec(), b"default".to_vec());
    model.get_mut("hot").unwrap().insert(b"wal".to_vec(), b"hot".to_vec());
    let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    let id = engine.create_new_backup(&db).unwrap();
    db.close().unwrap();
    let got = restore_and_read(&engine, id, Path::new("/whole"), &opts().with_vfs(vfs));
    assert!(got == model, "a whole restore reads the backup's data");
    (id, got)
}

/// After a restore into `target` stopped (crash or error): the target is as
/// before (missing or empty), or open refuses it as an unfinished restore and
/// a second restore finishes it, or it opens with exactly the backup's data.
/// Never an empty database. Returns whether open refused it.
fn check_stopped_restore(vfs: Arc<dyn Vfs>, id: u64, target: &Path, want: &Model, ctx: &str) -> bool {
    let o = opts().with_vfs(vfs.clone());
    if !vfs.exists(target) || vfs.list_dir(target).unwrap().is_empty() {
        return false;
    }
    let mut refused = false;
    if vfs.exists(&target.join("RESTORE-INCOMPLETE")) {
        let err = Db::open(target, o.clone())
            .err()
            .unwrap_or_else(|| panic!("{ctx}: an unfinished restore opened"));
        assert!(matches!(&err, Error::NotADatabase(m) if m.contains("restore incomplete")), "{ctx}: {err}");
        assert!(Db::open_read_only(target, o.clone()).is_err(), "{ctx}: read-only open");
        assert!(strata::repair(target, o.clone()).is_err(), "{ctx}: repair");
        let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
        engine.restore_db_from_backup(id, target).unwrap_or_else(|e| panic!("{ctx}: restore again: {e}"));
        refused = true;
    }
    let db = Db::open(target, o).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    assert_eq!(
        db.list_keyspaces(),
        ["default", "hot", "ingest"],
        "{ctx}: opened as another (empty) database"
    );
    let got = read_all(&db);
    assert!(got == *want, "{ctx}: the target opens with other data than the backup's");
    db.close().unwrap();
    refused
}

#[test]
fn a_restore_killed_at_any_step_never_opens_as_an_empty_database() {
    let base = MemVfs::new();
    let (id, want) = backed_up(&base);
    let image = CrashVfs::from_mem(base);
    let target = Path::new("/restored");
    let engine_on = |vfs: &CrashVfs| BackupEngine::open_with_vfs("/b", Arc::new(vfs.clone())).unwrap();
    let probe = CrashVfs::from_mem(image.image(CrashMode::ProcessKill));
    let engine = engine_on(&probe);
    let start = probe.ops_done();
    engine.restore_db_from_backup(id, target).unwrap();
    let total = probe.ops_done() - start;
    let mut refused = 0;
    for n in 0..=total {
        for mode in [CrashMode::ProcessKill, CrashMode::PowerLoss] {
            let vfs = CrashVfs::from_mem(image.image(CrashMode::ProcessKill));
            let engine = engine_on(&vfs);
            vfs.set_crash_after(Some(vfs.ops_done() + n));
            let _ = engine.restore_db_from_backup(id, target);
            vfs.crash_now();
            drop(engine);
            let ctx = format!("kill after op {n} of {total} ({mode:?})");
            refused += usize::from(check_stopped_restore(Arc::new(vfs.image(mode)), id, target, &want, &ctx));
        }
    }
    assert!(refused > total as usize, "most kills leave an unfinished restore: {refused}");
}

#[test]
fn a_restore_failing_at_any_step_leaves_nothing_that_opens_empty() {
    let mem = MemVfs::new();
    let (id, want) = backed_up(&mem);
    let in_scope = |p: &Path| p.starts_with("/t");
    let filter = strata::vfs::testing::PathFilter::new("restore targets", in_scope);
    let fault = Arc::new(FaultVfs::new(Arc::new(mem), FaultConfig::new(5).with_filter(filter)));
    let vfs: Arc<dyn Vfs> = fault.clone();
    let engine = BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    let mut failures = 0;
    let ops = [FaultOp::Create, FaultOp::Append, FaultOp::Sync, FaultOp::SyncDir, FaultOp::Remove];
    for (i, op) in ops.into_iter().enumerate() {
        for skip in [0, 1, 2, 5, 9, 14, 30] {
            let target = Path::new("/t").join(format!("{i}-{skip}"));
            fault.fail_after(op, skip, 1);
            let r = engine.restore_db_from_backup(id, &target);
            fault.disarm();
            let ctx = format!("{op:?} fails after {skip}");
            if r.is_err() {
                failures += 1;
            }
            check_stopped_restore(vfs.clone(), id, &target, &want, &ctx);
            // Whatever was left, a restore into a fresh target works.
            let again = Path::new("/t").join(format!("{i}-{skip}-again"));
            engine.restore_db_from_backup(id, &again).unwrap();
        }
    }
    assert!(failures >= 20, "the faults hit the restores: {failures}");
}
