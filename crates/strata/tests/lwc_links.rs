//! `lwc` appends segments to table files in place; a checkpoint (and a
//! backup, built from one) taken under a policy that never appends shares
//! tables by hard link. A database reopened under `lwc` must copy a shared
//! table before appending to it, so neither side ever sees the other's
//! segments: each keeps exactly its data, its files' bytes, and its backups
//! verify and restore.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs, PathFilter};
use strata::{BackupEngine, CompactionStyle, Db, Options, RealVfs, Stats, Vfs};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Small tables and a deep tree so data reaches L1+ and `lwc` appends soon.
fn opts(style: CompactionStyle) -> Options {
    Options::default()
        .with_compaction_style(style)
        .with_write_buffer_size(8 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_max_bytes_for_level_multiplier(4.0)
        .with_num_levels(5)
        .with_level0_file_num_compaction_trigger(2)
        .with_block_size(512)
        .with_compression(strata::CompressionType::None)
}

fn leveled() -> Options {
    opts(CompactionStyle::Leveled)
}

fn lwc() -> Options {
    opts(CompactionStyle::Lwc { max_segments: 64 })
}

fn k(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// Overwrites and deletes spread over the whole key range, so new data
/// overlaps every table below. Stops at the first refused write; `model`
/// holds the acknowledged ones.
fn try_load(db: &Db, model: &mut Model, round: u32, ops: u32) -> strata::Result<()> {
    const KEYS: u32 = 3000;
    for i in 0..ops {
        let key = k((i.wrapping_mul(7919) + round * 104_729) % KEYS);
        if i % 9 == 4 {
            db.delete(&key)?;
            model.remove(&key);
        } else {
            let v = format!("r{round}-{i}-{}", "v".repeat((i % 60) as usize)).into_bytes();
            db.put(&key, &v)?;
            model.insert(key, v);
        }
    }
    Ok(())
}

fn load(db: &Db, model: &mut Model, round: u32, ops: u32) {
    try_load(db, model, round, ops).unwrap();
}

fn check(db: &Db, model: &Model, what: &str) {
    let scan: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(Result::unwrap).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(a, b)| (a.clone(), b.clone())).collect();
    assert!(scan == want, "{what}: scan differs ({} entries, {} expected)", scan.len(), want.len());
    for (key, v) in model.iter().step_by(7) {
        assert_eq!(db.get(key).unwrap().as_ref(), Some(v), "{what}: {}", String::from_utf8_lossy(key));
    }
}

/// Every table file in `dir`: name to bytes.
fn tables(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".sst"))
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

/// Names of the tables whose bytes differ between `a` and `b` (or are in one only).
fn changed(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    a.keys().chain(b.keys()).filter(|n| a.get(*n) != b.get(*n)).cloned().collect()
}

fn below_l0(s: &Stats) -> usize {
    s.levels.iter().skip(1).map(|l| l.files).sum()
}

/// A database under leveled with its data flushed and compacted into L1+.
fn leveled_db(dir: &Path) -> (Db, Model) {
    let db = Db::open(dir, leveled()).unwrap();
    let mut model = Model::new();
    load(&db, &mut model, 0, 6000);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert!(below_l0(&db.stats()) > 0, "no table below L0\n{}", db.stats());
    (db, model)
}

/// Runs `db` under lwc until it appended to a table that `shared` (the other
/// database's tables, as they were) also holds: the case the fix is about.
fn append_into_shared(db: &Db, model: &mut Model, shared: &BTreeMap<String, Vec<u8>>, dir: &Path) {
    for round in 1..12 {
        load(db, model, round, 3000);
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let now = tables(dir);
        let grown = shared.iter().any(|(n, b)| now.get(n).is_some_and(|nb| nb.len() > b.len()));
        if db.stats().appends > 0 && grown {
            return;
        }
    }
    panic!("no append to a table the other database holds\n{}", db.stats());
}

/// Link counts of `dir`'s tables.
fn link_counts(dir: &Path) -> Vec<u64> {
    let vfs = RealVfs::new();
    tables(dir).keys().map(|n| vfs.link_count(&dir.join(n)).unwrap()).collect()
}

#[test]
fn lwc_after_checkpoint_does_not_append_into_the_checkpoint() {
    let base = tempfile::tempdir().unwrap();
    let (src, cp) = (base.path().join("db"), base.path().join("cp"));
    let (db, mut model) = leveled_db(&src);
    db.checkpoint(&cp).unwrap();
    let cp_model = model.clone();
    drop(db);
    let cp_tables = tables(&cp);
    assert!(link_counts(&cp).iter().any(|&n| n > 1), "the checkpoint linked no table");

    let db = Db::open(&src, lwc()).unwrap();
    append_into_shared(&db, &mut model, &cp_tables, &src);
    check(&db, &model, "source under lwc");
    drop(db);

    assert_eq!(changed(&tables(&cp), &cp_tables), Vec::<String>::new(), "the checkpoint's tables changed");
    let ro = Db::open_read_only(&cp, leveled()).unwrap();
    check(&ro, &cp_model, "checkpoint read-only");
    drop(ro);
    let rw = Db::open(&cp, leveled()).unwrap();
    check(&rw, &cp_model, "checkpoint read-write");
    drop(rw);
    let db = Db::open(&src, lwc()).unwrap();
    check(&db, &model, "source reopened");
}

#[test]
fn a_checkpoint_opened_under_lwc_leaves_the_source_intact() {
    let base = tempfile::tempdir().unwrap();
    let (src, cp) = (base.path().join("db"), base.path().join("cp"));
    let (db, model) = leveled_db(&src);
    db.checkpoint(&cp).unwrap();
    db.close().unwrap();
    let src_tables = tables(&src);

    let copy = Db::open(&cp, lwc()).unwrap();
    let mut cp_model = model.clone();
    append_into_shared(&copy, &mut cp_model, &src_tables, &cp);
    check(&copy, &cp_model, "checkpoint under lwc");
    drop(copy);

    assert_eq!(changed(&tables(&src), &src_tables), Vec::<String>::new(), "the source's tables changed");
    let db = Db::open(&src, leveled()).unwrap();
    check(&db, &model, "source");
    drop(db);
    let copy = Db::open(&cp, lwc()).unwrap();
    check(&copy, &cp_model, "checkpoint reopened");
}

#[test]
fn a_backup_taken_under_leveled_verifies_and_restores_after_lwc_ran() {
    let base = tempfile::tempdir().unwrap();
    let (src, backups) = (base.path().join("db"), base.path().join("backups"));
    let (db, mut model) = leveled_db(&src);
    let engine = BackupEngine::open(&backups).unwrap();
    let id = engine.create_new_backup(&db).unwrap();
    let backed_up = model.clone();
    drop(db);
    let shared = backups.join("shared");
    assert!(link_counts(&shared).iter().any(|&n| n > 1), "the backup shares no table with the database");
    // The backup's shared tables by the database's names (`<ks>-<number>-<size>-<crc>.sst`).
    let by_db_name: BTreeMap<String, Vec<u8>> = tables(&shared)
        .into_iter()
        .map(|(n, b)| (format!("{:06}.sst", n.split('-').nth(1).unwrap().parse::<u64>().unwrap()), b))
        .collect();

    let db = Db::open(&src, lwc()).unwrap();
    append_into_shared(&db, &mut model, &by_db_name, &src);
    drop(db);

    engine.verify_backup(id).unwrap();
    let restored = base.path().join("restored");
    engine.restore_db_from_backup(id, &restored).unwrap();
    let r = Db::open(&restored, leveled()).unwrap();
    check(&r, &backed_up, "restored");
    drop(r);
    let db = Db::open(&src, lwc()).unwrap();
    check(&db, &model, "source");
}

/// The copy before an append fails (the temp file's write): the compaction
/// fails without appending, both databases keep their data, and once the
/// fault is gone the append goes ahead.
#[test]
fn a_fault_while_copying_a_shared_table_fails_the_append_and_loses_nothing() {
    let base = tempfile::tempdir().unwrap();
    let (src, cp) = (base.path().join("db"), base.path().join("cp"));
    let (db, model) = leveled_db(&src);
    db.checkpoint(&cp).unwrap();
    drop(db);
    let cp_tables = tables(&cp);

    let fault = Arc::new(FaultVfs::new(
        Arc::new(RealVfs::new()),
        FaultConfig::new(7).with_filter(PathFilter::extension("dbtmp")),
    ));
    let db = Db::open(&src, lwc().with_vfs(fault.clone())).unwrap();
    fault.fail_after(FaultOp::Write, 0, u64::MAX);
    let mut acked = model.clone();
    let failed = (1..12).any(|round| {
        try_load(&db, &mut acked, round, 3000)
            .and_then(|()| db.flush())
            .and_then(|()| db.wait_for_compactions())
            .is_err()
    });
    assert!(failed, "no copy was attempted\n{}", db.stats());
    assert!(fault.injected(FaultOp::Write) > 0);
    drop(db);
    fault.disarm();
    assert_eq!(changed(&tables(&cp), &cp_tables), Vec::<String>::new(), "the checkpoint's tables changed");
    let names: Vec<String> =
        std::fs::read_dir(&src).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(names.iter().all(|n| !n.ends_with(".dbtmp")), "temp file left: {names:?}");

    let db = Db::open(&src, lwc().with_vfs(fault.clone())).unwrap();
    check(&db, &acked, "source after the failed copy");
    append_into_shared(&db, &mut acked, &cp_tables, &src);
    check(&db, &acked, "source after the append");
    drop(db);
    assert_eq!(changed(&tables(&cp), &cp_tables), Vec::<String>::new(), "the checkpoint's tables changed");
    let copy = Db::open_read_only(&cp, leveled()).unwrap();
    check(&copy, &model, "checkpoint");
}

/// 1 for a file with one name, the number of names after a hard link; a
/// missing file is an error; `MemVfs` cannot link, so always 1.
#[test]
fn link_count_counts_hard_links() {
    let base = tempfile::tempdir().unwrap();
    let vfs = RealVfs::new();
    let a: PathBuf = base.path().join("a");
    std::fs::write(&a, b"x").unwrap();
    assert_eq!(vfs.link_count(&a).unwrap(), 1);
    vfs.hard_link(&a, &base.path().join("b")).unwrap();
    assert_eq!(vfs.link_count(&a).unwrap(), 2);
    assert!(vfs.link_count(&base.path().join("missing")).is_err());
    let mem = strata::MemVfs::new();
    mem.create_dir_all(Path::new("/d")).unwrap();
    drop(mem.create(Path::new("/d/f")).unwrap());
    assert_eq!(mem.link_count(Path::new("/d/f")).unwrap(), 1);
}

/// Regression: recovery cut every table longer than its MANIFEST records back
/// to that length in place, so a table hard-linked into a checkpoint whose
/// own append had grown it (bytes the checkpoint committed) lost that
/// segment when the source opened. Open now gives such a file a private copy
/// of the recorded bytes and leaves the other name's bytes alone.
#[test]
fn recovery_does_not_cut_bytes_another_name_of_the_table_holds() {
    let base = tempfile::tempdir().unwrap();
    let (src, cp) = (base.path().join("db"), base.path().join("cp"));
    let (db, model) = leveled_db(&src);
    db.checkpoint(&cp).unwrap();
    drop(db);
    // What an append through the other name leaves: the shared inode grew.
    let (name, mut bytes) = tables(&cp).into_iter().next().unwrap();
    assert!(RealVfs::new().link_count(&cp.join(&name)).unwrap() > 1, "{name} is not shared");
    let recorded = bytes.len();
    bytes.extend_from_slice(b"the other database's committed segment");
    std::fs::write(cp.join(&name), &bytes).unwrap();

    let db = Db::open(&src, leveled()).unwrap();
    check(&db, &model, "source after open");
    drop(db);
    assert_eq!(
        std::fs::read(src.join(&name)).unwrap().len(),
        recorded,
        "the source keeps its recorded bytes"
    );
    assert_eq!(std::fs::read(cp.join(&name)).unwrap(), bytes, "the other name's bytes were cut");
    assert_eq!(RealVfs::new().link_count(&cp.join(&name)).unwrap(), 1, "no longer shared");
}
