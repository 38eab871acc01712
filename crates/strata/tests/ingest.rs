//! Bulk ingestion: `SstFileWriter` tables added with `ingest_external_file`
//! are newer than every earlier write, invisible to older snapshots, placed
//! where each policy would place a flush, atomic, and read the same after
//! compactions and a reopen — checked against a model under every policy,
//! in the default keyspace and another.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{
    Db, Error, IngestExternalFileOptions, KeyspaceOptions, MemVfs, OptimisticTransactionDb, Options,
    SstFileWriter, Vfs,
};

fn mem() -> Options {
    Options::default().with_vfs(Arc::new(MemVfs::new()))
}

/// Options on a new in-memory file system, and that file system.
fn mem_vfs() -> (Options, Arc<MemVfs>) {
    let vfs = Arc::new(MemVfs::new());
    (Options::default().with_vfs(vfs.clone()), vfs)
}

/// Writes `entries` (None: a delete) to an external table at `path`.
fn sst(opts: &Options, path: &str, entries: &[(&str, Option<&str>)]) -> PathBuf {
    let mut w = SstFileWriter::create(path, opts).unwrap();
    for (k, v) in entries {
        match v {
            Some(v) => w.put(k, v).unwrap(),
            None => w.delete(k).unwrap(),
        }
    }
    w.finish().unwrap().path
}

fn ingest(db: &Db, paths: &[PathBuf]) -> Result<(), Error> {
    db.ingest_external_file(paths, &IngestExternalFileOptions::default())
}

#[test]
fn ingested_keys_are_newer_than_earlier_writes_and_hidden_from_older_snapshots() {
    let opts = mem();
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put("a", "old").unwrap();
    db.put("b", "old").unwrap();
    db.flush().unwrap();
    let before = db.snapshot();
    let f = sst(&opts, "/a.sst", &[("a", Some("new")), ("b", None), ("c", Some("new"))]);
    ingest(&db, &[f]).unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get("b").unwrap(), None, "the file's delete hides the older value");
    assert_eq!(db.get("c").unwrap(), Some(b"new".to_vec()));
    assert_eq!(before.get("a").unwrap(), Some(b"old".to_vec()));
    assert_eq!(before.get("c").unwrap(), None);
    db.put("a", "after").unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"after".to_vec()), "later writes are newer still");
    assert_eq!(db.stats().ingested_files, 1);
}

#[test]
fn the_writer_refuses_unsorted_and_duplicate_keys_and_empty_tables() {
    let (opts, vfs) = mem_vfs();
    let mut w = SstFileWriter::create("/w.sst", &opts).unwrap();
    w.put("b", "1").unwrap();
    assert!(matches!(w.put("a", "1"), Err(Error::InvalidArgument(_))));
    assert!(matches!(w.put("b", "2"), Err(Error::InvalidArgument(_))));
    assert!(matches!(w.delete_range("z", "a"), Err(Error::InvalidArgument(_))));
    w.put("c", "1").unwrap();
    assert_eq!(w.finish().unwrap().num_entries, 2);
    let empty = SstFileWriter::create("/empty.sst", &opts).unwrap();
    assert!(matches!(empty.finish(), Err(Error::InvalidArgument(_))));
    assert!(!vfs.exists(Path::new("/empty.sst")), "a refused table is removed");
    let dropped = SstFileWriter::create("/dropped.sst", &opts).unwrap();
    drop(dropped);
    assert!(!vfs.exists(Path::new("/dropped.sst")));
}

#[test]
fn overlapping_files_and_non_tables_are_refused_and_nothing_is_ingested() {
    let (opts, vfs) = mem_vfs();
    let db = Db::open("/db", opts.clone()).unwrap();
    let a = sst(&opts, "/a.sst", &[("a", Some("1")), ("m", Some("1"))]);
    let b = sst(&opts, "/b.sst", &[("k", Some("2")), ("z", Some("2"))]);
    assert!(matches!(ingest(&db, &[a.clone(), b]), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get("a").unwrap(), None);
    let mut junk = vfs.create(Path::new("/junk.sst")).unwrap();
    junk.append(&[7u8; 100]).unwrap();
    junk.sync().unwrap();
    drop(junk);
    assert!(matches!(ingest(&db, &[a, PathBuf::from("/junk.sst")]), Err(Error::InvalidArgument(_))));
    assert!(matches!(ingest(&db, &[PathBuf::from("/missing.sst")]), Err(Error::Io(_))));
    assert!(matches!(ingest(&db, &[] as &[PathBuf]), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get("a").unwrap(), None);
}

#[test]
fn a_table_with_several_versions_of_a_key_is_refused() {
    // A table of another database: a snapshot kept both versions of "k".
    let (opts, vfs) = mem_vfs();
    let other = Db::open("/other", opts.clone()).unwrap();
    other.put("k", "1").unwrap();
    let _snap = other.snapshot();
    other.put("k", "2").unwrap();
    other.flush().unwrap();
    let table = vfs
        .list_dir(Path::new("/other"))
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".sst"))
        .map(|n| Path::new("/other").join(n))
        .unwrap();
    let db = Db::open("/db", opts).unwrap();
    let e = ingest(&db, &[table]).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("several versions")), "{e}");
    assert_eq!(db.get("k").unwrap(), None);
}

#[test]
fn a_memtable_overlapping_the_files_is_flushed_first_unless_forbidden() {
    let opts = mem();
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put("k", "in the memtable").unwrap();
    let f = sst(&opts, "/f.sst", &[("k", Some("ingested"))]);
    let no_flush = IngestExternalFileOptions::default().with_allow_blocking_flush(false);
    assert!(matches!(db.ingest_external_file(&[&f], &no_flush), Err(Error::InvalidArgument(_))));
    assert_eq!(db.stats().flushes, 0);
    ingest(&db, &[f]).unwrap();
    assert_eq!(db.stats().flushes, 1);
    assert_eq!(db.get("k").unwrap(), Some(b"ingested".to_vec()));
    // A memtable that holds other keys is left alone.
    db.put("x", "1").unwrap();
    let g = sst(&opts, "/g.sst", &[("a", Some("1"))]);
    ingest(&db, &[g]).unwrap();
    assert_eq!(db.stats().flushes, 1);
}

#[test]
fn move_removes_the_sources_and_copy_keeps_them() {
    let (opts, vfs) = mem_vfs();
    let db = Db::open("/db", opts.clone()).unwrap();
    let a = sst(&opts, "/a.sst", &[("a", Some("1"))]);
    ingest(&db, std::slice::from_ref(&a)).unwrap();
    assert!(vfs.exists(&a));
    let b = sst(&opts, "/b.sst", &[("b", Some("1"))]);
    db.ingest_external_file(&[&b], &IngestExternalFileOptions::default().with_move_files(true)).unwrap();
    assert!(!vfs.exists(&b));
    assert_eq!(db.get("b").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn an_ingestion_into_an_empty_range_goes_below_level_0_under_leveled() {
    let opts = mem();
    let db = Db::open("/db", opts.clone()).unwrap();
    let f = sst(&opts, "/f.sst", &[("a", Some("1")), ("b", Some("2"))]);
    ingest(&db, &[f]).unwrap();
    let s = db.stats();
    assert_eq!(s.levels[0].files, 0, "{:?}", s.levels);
    assert_eq!(s.levels.iter().map(|l| l.files).sum::<usize>(), 1);
}

#[test]
fn range_deletes_in_a_file_hide_older_keys_not_its_own() {
    let opts = mem();
    let db = Db::open("/db", opts.clone()).unwrap();
    for k in ["r1", "r2", "r3"] {
        db.put(k, "old").unwrap();
    }
    db.flush().unwrap();
    let mut w = SstFileWriter::create("/f.sst", &opts).unwrap();
    w.put("r2", "mine").unwrap();
    w.delete_range("r0", "r9").unwrap();
    let info = w.finish().unwrap();
    assert_eq!(info.num_range_deletions, 1);
    ingest(&db, &[info.path]).unwrap();
    let got: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, [(b"r2".to_vec(), b"mine".to_vec())]);
    db.compact_range(None, None).unwrap();
    let got: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, [(b"r2".to_vec(), b"mine".to_vec())]);
}

#[test]
fn a_read_only_database_refuses_ingestion() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), Options::default()).unwrap().close().unwrap();
    let f = sst(&Options::default(), dir.path().join("f.sst").to_str().unwrap(), &[("a", Some("1"))]);
    let db = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(matches!(ingest(&db, &[f]), Err(Error::NotSupported(_))));
}

#[test]
fn an_optimistic_transaction_that_read_before_an_ingestion_cannot_commit() {
    let opts = mem();
    let db = OptimisticTransactionDb::open("/db", opts.clone()).unwrap();
    db.put("other", "x").unwrap();
    let mut t = db.begin();
    t.get_for_update("k").unwrap();
    t.put("k", "txn").unwrap();
    let f = sst(&opts, "/f.sst", &[("k", Some("ingested"))]);
    db.ingest_external_file(&[f], &IngestExternalFileOptions::default()).unwrap();
    assert!(t.commit().unwrap_err().is_retryable());
    assert_eq!(db.get("k").unwrap(), Some(b"ingested".to_vec()));
}

/// Random loads and ingestions under one policy, in two keyspaces, checked
/// against a model after each step, after compactions and after a reopen.
fn run_model(style: &strata::CompactionStyle, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let opts = common::policy_options(style, Arc::new(strata::RealVfs));
    let label = format!("{} seed {seed}", style.name());
    let db = Db::open(dir.path().join("db"), opts.clone()).unwrap();
    let ks =
        db.create_keyspace("ks", KeyspaceOptions::default().with_compaction_style(style.clone())).unwrap();
    let mut models = [BTreeMap::new(), BTreeMap::new()];
    let mut rng = StdRng::seed_from_u64(seed);
    let key = |i: u32| format!("key{i:05}");
    for step in 0..24 {
        let which = rng.gen_range(0..2);
        let target = if which == 0 { db.default_keyspace() } else { ks.clone() };
        if rng.gen_bool(0.4) {
            for _ in 0..rng.gen_range(10..200) {
                let k = key(rng.gen_range(0..3000));
                let v = format!("put{step}-{}", rng.gen::<u32>());
                target.put(&k, &v).unwrap();
                models[which].insert(k, v);
            }
        } else {
            // One or two disjoint files of sorted keys.
            let mut paths = Vec::new();
            let split = rng.gen_range(500..2500);
            for (n, range) in [(0, 0..split), (1, split..3000)] {
                if n == 1 && rng.gen_bool(0.5) {
                    continue;
                }
                let path = dir.path().join(format!("in-{step}-{n}.sst"));
                let mut w = SstFileWriter::create(&path, &opts).unwrap();
                let mut written = 0;
                for i in range {
                    match rng.gen_range(0..20) {
                        0 => {
                            w.delete(key(i)).unwrap();
                            models[which].remove(&key(i));
                            written += 1;
                        }
                        1..=3 => {
                            let v = format!("ing{step}-{i}");
                            w.put(key(i), &v).unwrap();
                            models[which].insert(key(i), v);
                            written += 1;
                        }
                        _ => {}
                    }
                }
                if written > 0 {
                    paths.push(w.finish().unwrap().path);
                }
            }
            if !paths.is_empty() {
                target.ingest_external_file(&paths, &IngestExternalFileOptions::default()).unwrap();
            }
        }
        if step % 6 == 5 {
            check(&label, step, &db, &ks, &models);
        }
    }
    db.wait_for_compactions().unwrap();
    ks.wait_for_compactions().unwrap();
    check(&label, 100, &db, &ks, &models);
    db.compact_range(None, None).unwrap();
    check(&label, 101, &db, &ks, &models);
    drop(ks);
    db.close().unwrap();
    let db = Db::open(dir.path().join("db"), opts).unwrap();
    let ks = db.keyspace("ks").unwrap();
    check(&label, 102, &db, &ks, &models);
}

fn check(label: &str, step: usize, db: &Db, ks: &strata::Keyspace, models: &[BTreeMap<String, String>; 2]) {
    for (tree, model) in [db.default_keyspace(), ks.clone()].iter().zip(models) {
        let got: Vec<(Vec<u8>, Vec<u8>)> = tree.iter().collect::<Result<_, _>>().unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone().into_bytes(), v.clone().into_bytes())).collect();
        assert_eq!(got.len(), want.len(), "{label} step {step} keyspace {}", tree.name());
        assert!(got == want, "{label} step {step} keyspace {}: contents differ", tree.name());
    }
}

#[test]
fn ingestion_matches_a_model_under_every_policy() {
    for style in common::builtin_policies() {
        run_model(&style, 7);
    }
}

#[test]
fn files_over_an_empty_range_join_as_they_are_unless_a_snapshot_is_live() {
    let (opts, vfs) = mem_vfs();
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    // Nothing of [m, n] is in the tree and no snapshot is live: linked.
    let f = sst(&opts, "/f.sst", &[("m", Some("1")), ("n", Some("1"))]);
    db.ingest_external_file(&[&f], &IngestExternalFileOptions::default().with_move_files(true)).unwrap();
    assert!(!vfs.exists(&f));
    assert_eq!(db.stats().ingested_files_as_is, 1);
    let after = db.snapshot();
    assert_eq!(after.get("m").unwrap(), Some(b"1".to_vec()), "a later snapshot sees the data");
    // A live snapshot must not see the next file: it is rewritten at a new sequence.
    let g = sst(&opts, "/g.sst", &[("x", Some("1"))]);
    ingest(&db, &[g]).unwrap();
    assert_eq!(db.stats().ingested_files_as_is, 1);
    assert_eq!(after.get("x").unwrap(), None);
    assert_eq!(db.get("x").unwrap(), Some(b"1".to_vec()));
    drop(after);
    // A file over keys the tree holds is rewritten too.
    let h = sst(&opts, "/h.sst", &[("a", Some("2"))]);
    ingest(&db, &[h]).unwrap();
    assert_eq!((db.stats().ingested_files, db.stats().ingested_files_as_is), (3, 1));
    assert_eq!(db.get("a").unwrap(), Some(b"2".to_vec()));
    // Everything reads the same after compactions and a reopen.
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let db = Db::open("/db", opts).unwrap();
    let got: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = [("a", "2"), ("m", "1"), ("n", "1"), ("x", "1")]
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    assert_eq!(got, want);
}
