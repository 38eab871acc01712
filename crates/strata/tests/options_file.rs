//! The OPTIONS file: written at every read-write open and keyspace change,
//! checked at every open, carried by checkpoints and backups, loaded by
//! `Options::load_latest`.

use std::path::Path;
use std::sync::Arc;

use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs, PathFilter};
use strata::{BackupEngine, CompactionStyle, Db, Error, KeyspaceOptions, MemVfs, Options, Vfs};

fn options_files(vfs: &dyn Vfs, dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        vfs.list_dir(dir).unwrap().into_iter().filter(|n| n.starts_with("OPTIONS-")).collect();
    v.sort();
    v
}

fn read(vfs: &dyn Vfs, path: &Path) -> String {
    String::from_utf8(vfs.read_file(path).unwrap()).unwrap()
}

/// `text` (an edited OPTIONS file) with its checksum line recomputed, as
/// the file a newer build would write.
fn reseal(text: &str) -> String {
    let body = &text[..text.rfind("# crc32c=").expect("a checksum line")];
    format!("{body}# crc32c={:08x}\n", crc32c::crc32c(body.as_bytes()))
}

fn write_file(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) {
    let _ = vfs.remove_file(path);
    let mut f = vfs.create(path).unwrap();
    f.append(bytes).unwrap();
    f.sync().unwrap();
}

fn replace_newest(vfs: &dyn Vfs, dir: &Path, edit: impl Fn(&str) -> String) {
    let newest = dir.join(options_files(vfs, dir).pop().unwrap());
    let text = edit(&read(vfs, &newest));
    vfs.remove_file(&newest).unwrap();
    let mut f = vfs.create(&newest).unwrap();
    f.append(text.as_bytes()).unwrap();
    f.sync().unwrap();
}

#[test]
fn open_and_keyspace_changes_write_it_read_only_opens_do_not() {
    let vfs = Arc::new(MemVfs::new());
    let opts = Options::default().with_vfs(vfs.clone()).with_compaction_style(CompactionStyle::Tiered);
    let db = Db::open("/db", opts.clone()).unwrap();
    assert_eq!(options_files(vfs.as_ref(), Path::new("/db")), ["OPTIONS-000001"]);
    let text = read(vfs.as_ref(), Path::new("/db/OPTIONS-000001"));
    assert!(text.contains("[Keyspace \"default\"]\ncompaction_style=tiered\n"), "{text}");
    assert!(
        text.contains("options_file_version=1") && text.contains("comparator=leveldb.BytewiseComparator")
    );
    db.create_keyspace("hot", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Lsbm))
        .unwrap();
    assert_eq!(options_files(vfs.as_ref(), Path::new("/db")), ["OPTIONS-000001", "OPTIONS-000002"]);
    assert!(read(vfs.as_ref(), Path::new("/db/OPTIONS-000002"))
        .contains("[Keyspace \"hot\"]\ncompaction_style=lsbm"));
    db.drop_keyspace("hot").unwrap();
    assert_eq!(options_files(vfs.as_ref(), Path::new("/db")), ["OPTIONS-000002", "OPTIONS-000003"]);
    assert!(!read(vfs.as_ref(), Path::new("/db/OPTIONS-000003")).contains("hot"));
    db.close().unwrap();
    let before = vfs.list_dir(Path::new("/db")).unwrap();
    let ro = Db::open_read_only("/db", opts.clone()).unwrap();
    drop(ro);
    assert_eq!(vfs.list_dir(Path::new("/db")).unwrap(), before, "a read-only open wrote");
    Db::open("/db", opts).unwrap().close().unwrap();
    assert_eq!(options_files(vfs.as_ref(), Path::new("/db")), ["OPTIONS-000003", "OPTIONS-000004"]);
}

#[test]
fn opens_refuse_a_newer_options_file_or_another_comparator() {
    let vfs = Arc::new(MemVfs::new());
    let opts = Options::default().with_vfs(vfs.clone());
    Db::open("/db", opts.clone()).unwrap().close().unwrap();
    let dir = Path::new("/db");
    for (from, to, named) in [
        ("options_file_version=1", "options_file_version=2", "options_file_version=2"),
        ("table_format=1", "table_format=2", "table_format=2"),
        ("comparator=leveldb.BytewiseComparator", "comparator=my.Reverse", "comparator=my.Reverse"),
    ] {
        // Without a matching checksum the same text is damage, and skipped.
        replace_newest(vfs.as_ref(), dir, |t| t.replace(from, to));
        drop(Db::open_read_only(dir, opts.clone()).unwrap());
        replace_newest(vfs.as_ref(), dir, |t| reseal(&t.replace(from, to)));
        for r in [Db::open(dir, opts.clone()), Db::open_read_only(dir, opts.clone())] {
            match r {
                Err(Error::InvalidArgument(m)) => {
                    assert!(m.contains("OPTIONS-000001") && m.contains(named), "{m}")
                }
                other => panic!("expected InvalidArgument, got {other:?}"),
            }
        }
        replace_newest(vfs.as_ref(), dir, |t| reseal(&t.replace(to, from)));
    }
    Db::open(dir, opts).unwrap().close().unwrap();
}

#[test]
fn a_damaged_options_file_is_skipped_and_rewritten() {
    let vfs = Arc::new(MemVfs::new());
    let opts = Options::default().with_vfs(vfs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put("k", "v").unwrap();
    db.close().unwrap();
    let dir = Path::new("/db");
    replace_newest(vfs.as_ref(), dir, |_| "[Version\n\u{0}garbage".to_string());
    assert!(Options::load_latest_with(dir, &opts).unwrap_err().is_corruption());
    assert_eq!(Db::open_read_only(dir, opts.clone()).unwrap().get("k").unwrap(), Some(b"v".to_vec()));
    let db = Db::open(dir, opts.clone()).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
    db.close().unwrap();
    assert_eq!(options_files(vfs.as_ref(), dir), ["OPTIONS-000001", "OPTIONS-000002"]);
    Options::load_latest_with(dir, &opts).unwrap();
}

#[test]
fn a_failed_options_write_fails_the_open_but_not_a_keyspace_change() {
    let mem: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let fault =
        Arc::new(FaultVfs::new(mem, FaultConfig::new(3).with_filter(PathFilter::name_prefix("OPTIONS-"))));
    let opts = Options::default().with_vfs(fault.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put("k", "v").unwrap();
    db.close().unwrap();
    fault.fail_next(FaultOp::Rename);
    assert!(matches!(Db::open("/db", opts.clone()), Err(Error::Io(_))));
    assert!(!fault.list_dir(Path::new("/db")).unwrap().iter().any(|n| n.ends_with(".dbtmp")));
    let db = Db::open("/db", opts.clone()).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
    fault.fail_next(FaultOp::Create);
    db.create_keyspace("kept", KeyspaceOptions::default()).unwrap().put("a", "b").unwrap();
    let newest = options_files(fault.as_ref(), Path::new("/db")).pop().unwrap();
    assert!(!read(fault.as_ref(), &Path::new("/db").join(newest)).contains("kept"), "the write failed");
    // A dropped keyspace whose OPTIONS write failed does not come back with load_latest.
    db.create_keyspace("gone", KeyspaceOptions::default()).unwrap();
    fault.fail_next(FaultOp::Create);
    db.drop_keyspace("gone").unwrap();
    db.close().unwrap();
    let loaded = Options::load_latest_with("/db", &opts).unwrap();
    assert_eq!(loaded.keyspace_names(), ["kept"]);
    let db = Db::open("/db", loaded).unwrap();
    assert_eq!(db.list_keyspaces(), ["default", "kept"]);
    assert_eq!(db.keyspace("kept").unwrap().get("a").unwrap(), Some(b"b".to_vec()));
}

#[test]
fn load_latest_reopens_with_every_keyspace_policy() {
    let vfs = Arc::new(MemVfs::new());
    let base = Options::default().with_vfs(vfs.clone());
    let opts =
        base.clone().with_compaction_style(CompactionStyle::Garnering { c: 0.5 }).with_block_size(2048);
    let db = Db::open("/db", opts).unwrap();
    for (i, name) in CompactionStyle::builtin_names().iter().enumerate() {
        let ks = KeyspaceOptions::default()
            .with_compaction_style(CompactionStyle::from_name(name).unwrap())
            .with_write_buffer_size(1 << 20 | i);
        db.create_keyspace(&format!("ks-{name}"), ks).unwrap().put("k", *name).unwrap();
    }
    db.close().unwrap();
    let loaded = Options::load_latest_with("/db", &base).unwrap();
    assert!(matches!(loaded.compaction_style(), CompactionStyle::Garnering { c } if *c == 0.5));
    let db = Db::open("/db", loaded).unwrap();
    assert_eq!(db.property("strata.policy").unwrap(), "garnering");
    for name in CompactionStyle::builtin_names() {
        let ks = db.keyspace(&format!("ks-{name}")).unwrap();
        assert_eq!(ks.property("strata.policy").unwrap(), *name);
        assert_eq!(ks.get("k").unwrap(), Some(name.as_bytes().to_vec()));
    }
}

#[test]
fn checkpoints_and_backups_carry_the_options_file_repair_writes_one_destroy_removes_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, copy, backups, restored) =
        (tmp.path().join("db"), tmp.path().join("cp"), tmp.path().join("bk"), tmp.path().join("restored"));
    let opts = Options::default().with_compaction_style(CompactionStyle::Dlsm);
    let db = Db::open(&src, opts.clone()).unwrap();
    db.put("k", "v").unwrap();
    db.checkpoint(&copy).unwrap();
    let engine = BackupEngine::open(&backups).unwrap();
    engine.create_new_backup(&db).unwrap();
    db.close().unwrap();
    let fs = strata::RealVfs::new();
    let newest = options_files(&fs, &src).pop().unwrap();
    assert_eq!(options_files(&fs, &copy), std::slice::from_ref(&newest));
    assert_eq!(read(&fs, &copy.join(&newest)), read(&fs, &src.join(&newest)));
    engine.restore_db_from_latest_backup(&restored).unwrap();
    assert_eq!(options_files(&fs, &restored), std::slice::from_ref(&newest));
    for dir in [&copy, &restored] {
        let loaded = Options::load_latest(dir).unwrap();
        assert_eq!(loaded.compaction_style().name(), "dlsm");
        let db = Db::open(dir, loaded).unwrap();
        assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
        db.close().unwrap();
        assert_eq!(options_files(&fs, dir).len(), 2, "its own open wrote a fresh one");
    }
    for n in options_files(&fs, &copy) {
        fs.remove_file(&copy.join(n)).unwrap();
    }
    strata::repair(&copy, opts.clone()).unwrap();
    assert_eq!(options_files(&fs, &copy).len(), 1, "repair writes a fresh one");
    strata::destroy(&copy, opts).unwrap();
    assert!(!copy.exists(), "destroy leaves no OPTIONS file behind");
}

/// Regression: `load_latest` took every tree's policy from the OPTIONS file
/// alone. A crash after a policy change's MANIFEST edit but before the open
/// rewrote the file left it naming the old policy, so a tool opening with the
/// loaded options (the CLI) silently changed the policy back. The MANIFEST's
/// record now wins.
#[test]
fn load_latest_prefers_the_manifest_over_a_stale_options_file() {
    let vfs = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let base = Options::default().with_vfs(vfs.clone());
    let db = Db::open(dir, base.clone().with_compaction_style(CompactionStyle::Lsbm)).unwrap();
    db.create_keyspace("ks", KeyspaceOptions::new().with_compaction_style(CompactionStyle::Blsm)).unwrap();
    db.close().unwrap();
    let stale_name = options_files(vfs.as_ref(), dir).pop().unwrap();
    let stale = read(vfs.as_ref(), &dir.join(&stale_name));
    // Both trees change policy; then the file is put back as the crash would have left it.
    let changed = base
        .clone()
        .with_compaction_style(CompactionStyle::Tiered)
        .with_keyspace("ks", KeyspaceOptions::new().with_compaction_style(CompactionStyle::Dlsm));
    Db::open(dir, changed).unwrap().close().unwrap();
    for name in options_files(vfs.as_ref(), dir) {
        vfs.remove_file(&dir.join(name)).unwrap();
    }
    let mut f = vfs.create(&dir.join(&stale_name)).unwrap();
    f.append(stale.as_bytes()).unwrap();
    f.sync().unwrap();
    drop(f);

    let loaded = Options::load_latest_with(dir, &base).unwrap();
    assert_eq!(loaded.compaction_style().name(), "tiered");
    assert_eq!(loaded.keyspace_options("ks").unwrap().compaction_style().name(), "dlsm");
    let db = Db::open(dir, loaded).unwrap();
    assert_eq!(db.property("strata.policy").unwrap(), "tiered");
    assert_eq!(db.keyspace("ks").unwrap().property("strata.policy").unwrap(), "dlsm");
}

/// Issue 28: one flipped byte (85 of 1 586, e.g. in `comparator=`) made the
/// open refuse the database, through a file the MANIFEST does not even need.
/// Now only a file that passes its checksum can refuse an open; `load_latest`
/// passes a damaged newest file over for the previous one.
#[test]
fn one_flipped_byte_in_the_options_file_never_makes_the_database_unopenable() {
    let vfs = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let opts = Options::default().with_vfs(vfs.clone());
    let db = Db::open(dir, opts.clone().with_compaction_style(CompactionStyle::Tiered)).unwrap();
    db.create_keyspace("ks", KeyspaceOptions::new().with_compaction_style(CompactionStyle::Lsbm)).unwrap();
    db.put("k", "v").unwrap();
    db.close().unwrap();
    let names = options_files(vfs.as_ref(), dir);
    let [previous, newest] =
        [&names[0], &names[1]].map(|n| (dir.join(n), vfs.read_file(&dir.join(n)).unwrap()));
    assert!(String::from_utf8_lossy(&newest.1).contains("comparator="));
    // Failures are collected, so a run shows how many flips each path fails on.
    let (mut refused, mut unloadable) = (Vec::new(), Vec::new());
    for i in 0..newest.1.len() {
        for flip in [1u8 << (i % 8), 0x20, 0xff] {
            let mut damaged = newest.1.clone();
            damaged[i] ^= flip;
            for name in options_files(vfs.as_ref(), dir) {
                vfs.remove_file(&dir.join(name)).unwrap();
            }
            write_file(vfs.as_ref(), &previous.0, &previous.1);
            write_file(vfs.as_ref(), &newest.0, &damaged);
            let what = format!("byte {i} ^ {flip:#04x}");
            match Options::load_latest_with(dir, &opts) {
                Ok(o) => assert_eq!(o.compaction_style().name(), "tiered", "{what}"),
                Err(e) => unloadable.push(format!("{what}: {e}")),
            }
            match Db::open(dir, opts.clone()) {
                Ok(db) => {
                    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()), "{what}");
                    assert_eq!(db.property("strata.policy").unwrap(), "tiered", "{what}");
                    db.close().unwrap();
                }
                Err(e) => refused.push(format!("{what}: {e}")),
            }
            // With no previous file, loading names the damaged one or reads it right.
            for name in options_files(vfs.as_ref(), dir) {
                vfs.remove_file(&dir.join(name)).unwrap();
            }
            write_file(vfs.as_ref(), &newest.0, &damaged);
            match Options::load_latest_with(dir, &opts) {
                Ok(o) => assert_eq!(o.compaction_style().name(), "tiered", "{what}"),
                Err(e) => assert!(e.is_corruption() && e.to_string().contains("OPTIONS-"), "{what}: {e}"),
            }
        }
    }
    assert!(
        refused.is_empty(),
        "{} opens refused, e.g. {:?}",
        refused.len(),
        &refused[..refused.len().min(3)]
    );
    assert!(
        unloadable.is_empty(),
        "{} loads failed, e.g. {:?}",
        unloadable.len(),
        &unloadable[..unloadable.len().min(3)]
    );
}

/// Files written before the checksum line still load, and still refuse
/// nothing on their own: only damage could make them name another
/// comparator or a newer version.
#[test]
fn an_options_file_without_a_checksum_still_loads() {
    let vfs = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let opts = Options::default().with_vfs(vfs.clone());
    Db::open(dir, opts.clone().with_compaction_style(CompactionStyle::Blsm)).unwrap().close().unwrap();
    let unsealed = |t: &str| t[..t.rfind("# crc32c=").unwrap()].to_string();
    replace_newest(vfs.as_ref(), dir, unsealed);
    assert_eq!(Options::load_latest_with(dir, &opts).unwrap().compaction_style().name(), "blsm");
    replace_newest(vfs.as_ref(), dir, |t| t.replace("BytewiseComparator", "BytewiseComparatoR"));
    let db = Db::open(dir, opts.clone()).unwrap();
    assert_eq!(db.property("strata.policy").unwrap(), "blsm");
    db.close().unwrap();
    let newest = options_files(vfs.as_ref(), dir).pop().unwrap();
    assert!(read(vfs.as_ref(), &dir.join(newest)).contains("\n# crc32c="), "rewritten with one");
}

/// A damaged newest file: `load_latest` uses the previous one (kept by every
/// write), or fails naming the damaged file when there is none.
#[test]
fn load_latest_passes_a_damaged_newest_file_over_for_the_previous_one() {
    let vfs = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let opts = Options::default().with_vfs(vfs.clone());
    Db::open(dir, opts.clone().with_write_buffer_size(1 << 20)).unwrap().close().unwrap();
    Db::open(dir, opts.clone().with_max_open_files(321)).unwrap().close().unwrap();
    replace_newest(vfs.as_ref(), dir, |t| t.replace("max_open_files=321", "max_open_files=322"));
    let loaded = Options::load_latest_with(dir, &opts).unwrap();
    assert!(format!("{loaded:?}").contains("max_open_files: 1000"), "the previous file's: {loaded:?}");
    let names = options_files(vfs.as_ref(), dir);
    vfs.remove_file(&dir.join(&names[0])).unwrap();
    let err = Options::load_latest_with(dir, &opts).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains(&names[1]), "{err}");
}
