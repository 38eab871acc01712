//! `Db::open_read_only`: reads everything, writes nothing, works where
//! `Db::open` cannot (a full disk, a read-only file system, beside a writer).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::{builtin_policies, policy_options};

use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs};
use strata::{
    CompactionStyle, Db, Error, KeyspaceOptions, MemVfs, Options, ReadOptions, Vfs, WriteBatch, WriteOptions,
};

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Writes flushed and compacted data, then more that stays in the WAL only.
fn fill(db: &Db) -> Model {
    let mut m = Model::new();
    for i in 0..600u32 {
        let k = format!("key{:04}", (i * 7919) % 400).into_bytes();
        if i % 9 == 0 {
            db.delete(&k).unwrap();
            m.remove(&k);
        } else {
            let v = format!("v{i}-{}", "x".repeat((i % 50) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            m.insert(k, v);
        }
        if i == 400 {
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
        }
    }
    m
}

fn scan(db: &Db) -> Model {
    db.iter().map(|kv| kv.unwrap()).collect()
}

fn snapshot_of_files(vfs: &dyn Vfs) -> BTreeMap<String, Vec<u8>> {
    vfs.list_dir(&dir())
        .unwrap()
        .into_iter()
        .map(|n| (n.clone(), vfs.read_file(&dir().join(n)).unwrap()))
        .collect()
}

#[test]
fn read_only_open_writes_nothing() {
    for style in builtin_policies() {
        let vfs = FaultVfs::new(Arc::new(MemVfs::new()), FaultConfig::new(1));
        let opts = policy_options(&style, Arc::new(vfs.clone()));
        let db = Db::open(dir(), opts.clone()).unwrap();
        let model = fill(&db);
        db.close().unwrap();
        let before = snapshot_of_files(vfs.inner().as_ref());
        vfs.reset_counters();
        let db = Db::open_read_only(dir(), opts).unwrap();
        assert_eq!(scan(&db), model, "{style:?}");
        assert_eq!(db.get("key0001").unwrap(), model.get(&b"key0001"[..]).cloned());
        db.wait_for_compactions().unwrap();
        db.close().unwrap();
        for op in [
            FaultOp::Create,
            FaultOp::Append,
            FaultOp::Flush,
            FaultOp::Sync,
            FaultOp::SyncDir,
            FaultOp::Rename,
            FaultOp::Remove,
            FaultOp::Lock,
            FaultOp::Write,
            FaultOp::DataSync,
        ] {
            assert_eq!(vfs.seen(op), 0, "{style:?}: {op:?} during a read-only open");
        }
        assert_eq!(snapshot_of_files(vfs.inner().as_ref()), before, "{style:?}: files changed");
    }
}

#[test]
fn read_only_open_sees_wal_data_and_tables() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let opts = policy_options(&style, vfs.clone());
        let db = Db::open(dir(), opts.clone()).unwrap();
        let model = fill(&db);
        drop(db);
        let db = Db::open_read_only(dir(), opts).unwrap();
        assert_eq!(scan(&db), model, "{style:?}");
        let rev: Vec<_> = db.iter().rev().map(|kv| kv.unwrap()).collect();
        assert_eq!(rev, model.clone().into_iter().rev().collect::<Vec<_>>(), "{style:?}");
        let snap = db.snapshot();
        for (k, v) in model.iter().take(50) {
            assert_eq!(
                db.get_opt(k, &ReadOptions::default().with_snapshot(&snap)).unwrap().as_ref(),
                Some(v)
            );
        }
        let ranged: Vec<_> = db.range(&b"key0100"[..]..&b"key0200"[..]).map(|kv| kv.unwrap().0).collect();
        let want: Vec<_> =
            model.range(b"key0100".to_vec()..b"key0200".to_vec()).map(|(k, _)| k.clone()).collect();
        assert_eq!(ranged, want);
        assert!(db.stats().memtable_bytes > 0, "{style:?}: the WAL tail was replayed into memory");
    }
}

#[test]
fn read_only_handle_refuses_writes_flush_and_compaction() {
    let vfs = Arc::new(MemVfs::new());
    let opts = policy_options(&CompactionStyle::Lsbm, vfs);
    Db::open(dir(), opts.clone()).unwrap().put("k", "v").unwrap();
    let db = Db::open_read_only(dir(), opts).unwrap();
    // Regression: a write on a read-only handle said "read-only after an
    // earlier failure"; it is NotSupported and names open_read_only.
    let ro = |r: strata::Result<()>| matches!(r, Err(Error::NotSupported(m)) if m.contains("open_read_only"));
    assert!(ro(db.put("a", "b")));
    assert!(ro(db.delete("k")));
    assert!(ro(db.put_opt("a", "b", &WriteOptions::default().with_disable_wal(true))));
    assert!(ro(db.flush()));
    assert!(ro(db.compact_range(None, None)));
    assert!(matches!(db.trim_compaction_buffer(), Err(Error::NotSupported(_))));
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get("a").unwrap(), None);
}

#[test]
fn read_only_open_works_beside_an_open_writer() {
    let vfs = Arc::new(MemVfs::new());
    let opts = policy_options(&CompactionStyle::Leveled, vfs);
    let writer = Db::open(dir(), opts.clone()).unwrap();
    let model = fill(&writer);
    writer.wait_for_compactions().unwrap();
    let reader = Db::open_read_only(dir(), opts.clone()).unwrap();
    assert_eq!(scan(&reader), model);
    writer.put("later", "x").unwrap();
    assert_eq!(reader.get("later").unwrap(), None, "the state as of open");
    assert!(matches!(Db::open(dir(), opts), Err(Error::Locked(_))), "the writer still holds the lock");
    writer.close().unwrap();
}

#[test]
fn read_only_open_of_missing_database_is_an_error() {
    let vfs = Arc::new(MemVfs::new());
    let e = Db::open_read_only(dir(), policy_options(&CompactionStyle::Leveled, vfs.clone())).unwrap_err();
    assert!(matches!(e, Error::NotADatabase(_)), "{e}");
    assert!(!vfs.exists(&dir()), "nothing created");
}

#[test]
fn read_only_open_drops_a_torn_wal_tail() {
    let vfs = Arc::new(MemVfs::new());
    let opts = policy_options(&CompactionStyle::Leveled, vfs.clone()).with_disable_auto_compactions(true);
    let db = Db::open(dir(), opts.clone()).unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    drop(db);
    let wal = vfs.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".log")).max().unwrap();
    let p = dir().join(wal);
    let len = vfs.file_size(&p).unwrap();
    vfs.truncate(&p, len - 3).unwrap();
    let db = Db::open_read_only(dir(), opts).unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("b").unwrap(), None, "the torn record is dropped");
    assert_eq!(vfs.file_size(&p).unwrap(), len - 3, "and not repaired on disk");
}

#[test]
fn read_only_open_reads_a_database_on_a_full_disk() {
    for style in builtin_policies() {
        let vfs = FaultVfs::new(Arc::new(MemVfs::new()), FaultConfig::new(1));
        let opts = policy_options(&style, Arc::new(vfs.clone()));
        let db = Db::open(dir(), opts.clone()).unwrap();
        let model = fill(&db);
        vfs.set_free_space(Some(0));
        assert!(db.put("refused", [b'r'; 100]).is_err());
        let _ = db.close();
        let db = Db::open_read_only(dir(), opts.clone()).unwrap();
        assert_eq!(scan(&db), model, "{style:?}: every acknowledged write, and not the refused one");
        drop(db);
        // A normal open must write; it fails, unless deleting obsolete files
        // at open freed enough space.
        match Db::open(dir(), opts.clone()) {
            Err(e) => assert!(e.to_string().contains("No space left on device"), "{style:?}: {e}"),
            Ok(db) => drop(db),
        }
        vfs.set_free_space(None);
        let db = Db::open(dir(), opts).unwrap();
        assert_eq!(scan(&db), model, "{style:?}: after space is freed");
    }
}

/// Unmounts on drop, also when the test fails.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn mount_tmpfs(at: &Path, size: &str) -> Result<Mount, String> {
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .output()
        .map_err(|e| format!("cannot run mount: {e}"))?;
    if !out.status.success() {
        return Err(format!("mount refused: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(Mount(at.to_path_buf()))
}

#[test]
fn read_only_open_on_a_read_only_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let mount = match mount_tmpfs(tmp.path(), "16m") {
        Ok(m) => m,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let path = tmp.path().join("db");
    let opts = || Options::default().with_write_buffer_size(64 << 10);
    let db = Db::open(&path, opts()).unwrap();
    let mut model = Model::new();
    for i in 0..3000u32 {
        let (k, v) = (format!("key{i:05}").into_bytes(), format!("value{i}").into_bytes());
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.close().unwrap();
    let st = Command::new("mount").args(["-o", "remount,ro"]).arg(&mount.0).status().unwrap();
    assert!(st.success(), "remount read-only");
    let e = Db::open(&path, opts()).expect_err("a read-only file system refuses Db::open");
    println!("Db::open on a read-only file system: {e}");
    let db = Db::open_read_only(&path, opts()).unwrap();
    assert_eq!(scan(&db), model);
    db.close().unwrap();
}

/// A read-only open beside a writer whose flushes and compactions delete WALs
/// and tables while the open reads them must still open, at a state at least
/// as new as every write acknowledged before it began (it used to fail when a
/// WAL or table it had listed was deleted under it).
#[test]
fn read_only_opens_beside_a_busy_writer_always_succeed() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let opts = policy_options(&style, vfs).with_write_buffer_size(64 << 10);
        let writer = Arc::new(Db::open(dir(), opts.clone()).unwrap());
        let acked = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let w = {
            let (writer, acked, stop) = (writer.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    writer.put(format!("key{i:06}"), "x".repeat(40)).unwrap();
                    acked.store(i + 1, std::sync::atomic::Ordering::SeqCst);
                    i += 1;
                    // ~50 k writes/s: a flush every ~30 ms, compactions after them.
                    if i.is_multiple_of(50) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
            })
        };
        // Opens until the writer has flushed (and so deleted WALs and, by
        // compactions, tables) many times meanwhile.
        let mut opens = 0;
        while opens < 40 || writer.stats().flushes < 15 {
            assert!(opens < 5000, "{style:?}: the writer never flushed");
            opens += 1;
            let before = acked.load(std::sync::atomic::Ordering::SeqCst);
            let reader = Db::open_read_only(dir(), opts.clone())
                .unwrap_or_else(|e| panic!("{style:?}: read-only open beside a writer: {e}"));
            // Its reads may still meet a file the writer deleted since (an
            // error, never a wrong answer); a scan that completes holds every
            // write acknowledged before the open.
            let keys: Result<Vec<_>, _> = reader.iter().map(|kv| kv.map(|(k, _)| k)).collect();
            if let Ok(keys) = keys {
                let want = (0..before).map(|i| format!("key{i:06}").into_bytes());
                assert!(
                    keys.len() >= before as usize,
                    "{style:?}: {} keys, {before} acknowledged",
                    keys.len()
                );
                assert!(want.zip(&keys).all(|(a, b)| a == *b), "{style:?}: an acknowledged key is missing");
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        w.join().unwrap();
    }
}

/// Every file under `dir`, keyspace directories included, with its bytes.
fn files_under(vfs: &dyn Vfs, dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for n in vfs.list_dir(dir).unwrap() {
        let p = dir.join(n);
        match vfs.read_file(&p) {
            Ok(bytes) => {
                out.insert(p, bytes);
            }
            Err(_) => out.extend(files_under(vfs, &p)),
        }
    }
    out
}

/// The keyspaces of the read-only tests: name and policy.
fn ro_keyspaces() -> Vec<(&'static str, CompactionStyle)> {
    vec![
        ("hot", CompactionStyle::Lsbm),
        ("ingest", CompactionStyle::Lwc { max_segments: 3 }),
        ("tiers", CompactionStyle::from_name("tiered").unwrap()),
    ]
}

fn ks_opts(style: &CompactionStyle) -> KeyspaceOptions {
    KeyspaceOptions::from_options(&common::small_options().with_compaction_style(style.clone()))
}

/// Fills the default keyspace and every keyspace of [`ro_keyspaces`] with
/// flushed, compacted and WAL-only data (one batch spans every keyspace);
/// returns each keyspace's model, the default's first.
fn fill_keyspaces(db: &Db) -> Vec<(String, Model)> {
    let mut out = vec![("default".to_string(), fill(db))];
    for (n, (name, style)) in ro_keyspaces().into_iter().enumerate() {
        let ks = db.create_keyspace(name, ks_opts(&style)).unwrap();
        let mut m = Model::new();
        for i in 0..500u32 {
            let k = format!("{name}{:04}", (i * 7919) % 300).into_bytes();
            if i % 11 == 0 {
                ks.delete(&k).unwrap();
                m.remove(&k);
            } else {
                let v = format!("{n}:{i}-{}", "y".repeat((i % 40) as usize)).into_bytes();
                ks.put(&k, &v).unwrap();
                m.insert(k, v);
            }
            if i == 300 {
                ks.flush().unwrap();
                ks.wait_for_compactions().unwrap();
            }
        }
        out.push((name.to_string(), m));
    }
    let mut batch = WriteBatch::new();
    for (name, m) in out.iter_mut().skip(1) {
        let ks = db.keyspace(name).unwrap();
        batch.put_cf(&ks, "batched", name.as_bytes());
        m.insert(b"batched".to_vec(), name.as_bytes().to_vec());
    }
    db.write(batch).unwrap();
    out
}

/// Checks reads, iterators (both ways), snapshot reads and multi_get of every keyspace.
fn check_keyspaces(db: &Db, models: &[(String, Model)]) {
    let snap = db.snapshot();
    for (name, m) in models {
        let ks = db.keyspace(name).unwrap_or_else(|e| panic!("keyspace {name}: {e}"));
        let all: Model = ks.iter().map(|kv| kv.unwrap()).collect();
        assert_eq!(&all, m, "{name}: scan");
        let rev: Vec<_> = ks.iter().rev().map(|kv| kv.unwrap()).collect();
        assert_eq!(rev, m.clone().into_iter().rev().collect::<Vec<_>>(), "{name}: reverse scan");
        let keys: Vec<&Vec<u8>> = m.keys().take(40).collect();
        for k in &keys {
            assert_eq!(ks.get(k).unwrap().as_ref(), m.get(*k), "{name}: get");
            let at = ks.get_opt(k, &ReadOptions::default().with_snapshot(&snap)).unwrap();
            assert_eq!(at.as_ref(), m.get(*k), "{name}: snapshot get");
        }
        let got = ks.multi_get(keys.iter().map(|k| k.as_slice()).chain([&b"absent"[..]]));
        let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| m.get(*k).cloned()).chain([None]).collect();
        assert_eq!(got.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(), want, "{name}: multi_get");
        let cf = db.multi_get_cf(keys.iter().map(|k| (&ks, k.as_slice())));
        assert!(cf.iter().zip(&want).all(|(a, b)| a.as_ref().unwrap() == b), "{name}: multi_get_cf");
    }
}

/// Regression: a read-only open opened only the default keyspace (its
/// `keyspace(name)` failed and other keyspaces' WAL ops were skipped).
#[test]
fn read_only_open_reads_every_keyspace() {
    let vfs = FaultVfs::new(Arc::new(MemVfs::new()), FaultConfig::new(1));
    let opts = policy_options(&CompactionStyle::Leveled, Arc::new(vfs.clone()));
    let db = Db::open(dir(), opts.clone()).unwrap();
    let models = fill_keyspaces(&db);
    db.close().unwrap();
    let before = files_under(vfs.inner().as_ref(), &dir());
    assert!(before.keys().any(|p| p.starts_with(dir().join("keyspaces"))), "keyspaces have files");
    vfs.reset_counters();
    // Without with_keyspace: every keyspace opens with its recorded options.
    let db = Db::open_read_only(dir(), opts).unwrap();
    assert_eq!(db.list_keyspaces(), ["default", "hot", "ingest", "tiers"]);
    check_keyspaces(&db, &models);
    for (name, style) in ro_keyspaces() {
        let ks = db.keyspace(name).unwrap();
        assert_eq!(ks.options().compaction_style().name(), style.name(), "{name}: its recorded policy");
        assert!(ks.stats().memtable_bytes > 0, "{name}: its WAL ops were replayed into memory");
        ks.wait_for_compactions().unwrap();
    }
    assert!(matches!(db.keyspace("nope"), Err(Error::KeyspaceNotFound(_))));
    db.close().unwrap();
    for op in [
        FaultOp::Create,
        FaultOp::Append,
        FaultOp::Flush,
        FaultOp::Sync,
        FaultOp::SyncDir,
        FaultOp::Rename,
        FaultOp::Remove,
        FaultOp::Lock,
        FaultOp::Write,
        FaultOp::DataSync,
    ] {
        assert_eq!(vfs.seen(op), 0, "{op:?} during a read-only open of keyspaces");
    }
    assert_eq!(files_under(vfs.inner().as_ref(), &dir()), before, "files changed");
}

/// Regression: writes, DDL, flushes and compactions on a keyspace of a
/// read-only handle are refused with NotSupported (the keyspace could not
/// be opened at all).
#[test]
fn read_only_keyspace_refuses_writes() {
    let vfs = Arc::new(MemVfs::new());
    let opts = policy_options(&CompactionStyle::Leveled, vfs);
    let db = Db::open(dir(), opts.clone()).unwrap();
    db.create_keyspace("hot", ks_opts(&CompactionStyle::Lsbm)).unwrap().put("k", "v").unwrap();
    db.close().unwrap();
    let db = Db::open_read_only(dir(), opts).unwrap();
    let ks = db.keyspace("hot").unwrap();
    let ro = |r: strata::Result<()>| matches!(r, Err(Error::NotSupported(m)) if m.contains("open_read_only"));
    assert!(ro(ks.put("a", "b")));
    assert!(ro(ks.delete("k")));
    assert!(ro(ks.delete_range("a", "z")));
    assert!(ro(ks.merge("k", "x")));
    assert!(ro(db.put_cf(&ks, "a", "b")));
    let mut batch = WriteBatch::new();
    batch.put_cf(&ks, "a", "b");
    assert!(ro(db.write(batch)));
    assert!(ro(ks.flush()));
    assert!(ro(ks.compact_range(None, None)));
    assert!(matches!(db.create_keyspace("new", KeyspaceOptions::default()), Err(Error::NotSupported(_))));
    assert!(matches!(db.drop_keyspace("hot"), Err(Error::NotSupported(_))));
    assert_eq!(ks.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(ks.get("a").unwrap(), None);
}

/// Regression: beside a writer that holds the database (and its LOCK), a
/// read-only open reads every keyspace as of the open.
#[test]
fn read_only_open_reads_every_keyspace_beside_an_open_writer() {
    let vfs = Arc::new(MemVfs::new());
    let opts = policy_options(&CompactionStyle::Leveled, vfs);
    let writer = Db::open(dir(), opts.clone()).unwrap();
    let models = fill_keyspaces(&writer);
    let reader = Db::open_read_only(dir(), opts.clone()).unwrap();
    check_keyspaces(&reader, &models);
    writer.keyspace("hot").unwrap().put("later", "x").unwrap();
    assert_eq!(reader.keyspace("hot").unwrap().get("later").unwrap(), None, "the state as of open");
    assert!(matches!(Db::open(dir(), opts), Err(Error::Locked(_))), "the writer still holds the lock");
    writer.close().unwrap();
}

/// A read-only open beside a writer whose flushes and compactions in a
/// keyspace delete that keyspace's tables while the open reads them must
/// still open (the retry watches every keyspace's MANIFEST, not only the
/// root's).
#[test]
fn read_only_opens_beside_a_writer_busy_in_a_keyspace_always_succeed() {
    let vfs = Arc::new(MemVfs::new());
    let opts = policy_options(&CompactionStyle::Leveled, vfs);
    let writer = Arc::new(Db::open(dir(), opts.clone()).unwrap());
    let ks_o = KeyspaceOptions::from_options(
        &common::small_options()
            .with_compaction_style(CompactionStyle::Leveled)
            .with_write_buffer_size(64 << 10),
    );
    let ks = writer.create_keyspace("busy", ks_o).unwrap();
    // The writer writes a burst, then waits while the reader opens: the open
    // overlaps the flushes and compactions that burst starts (which delete
    // tables under it), but never an endless stream of them, so the retry
    // converges however slow the machine is. (Regression: with an unbounded
    // writer, a loaded machine kept every attempt losing for 5 s.)
    let (burst_done, bursts) = std::sync::mpsc::sync_channel::<u32>(0);
    let (go, go_rx) = std::sync::mpsc::sync_channel::<bool>(0);
    let w = {
        let ks = ks.clone();
        std::thread::spawn(move || {
            let mut i = 0u32;
            loop {
                for _ in 0..400 {
                    // Overwrites over 20 000 keys (7919 is prime to it): real merges, not moves.
                    ks.put(format!("key{:06}", (i * 7919) % 20_000), "x".repeat(40)).unwrap();
                    i += 1;
                }
                burst_done.send(i).unwrap();
                if !go_rx.recv().unwrap() {
                    return;
                }
            }
        })
    };
    let mut opens = 0;
    loop {
        let acked = bursts.recv().unwrap();
        opens += 1;
        let reader = Db::open_read_only(dir(), opts.clone())
            .unwrap_or_else(|e| panic!("read-only open beside a writer busy in a keyspace: {e}"));
        let r = reader.keyspace("busy").unwrap();
        let keys: Result<Vec<_>, _> = r.iter().map(|kv| kv.map(|(k, _)| k)).collect();
        if let Ok(keys) = keys {
            assert!(keys.len() >= acked.min(20_000) as usize, "{} keys, {acked} acknowledged", keys.len());
        }
        let more = opens < 40 || ks.stats().compactions < 10;
        assert!(opens < 500, "the writer never compacted");
        go.send(more).unwrap();
        if !more {
            break;
        }
    }
    w.join().unwrap();
}
