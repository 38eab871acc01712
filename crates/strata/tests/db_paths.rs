//! Data paths (`Options::with_db_paths`, RocksDB `db_paths`): tables spread
//! over several directories, found by recovery, repair and destroy wherever
//! they are; the LOCK, CURRENT, MANIFEST and WALs stay in the database
//! directory.

use std::path::{Path, PathBuf};

use strata::{Db, Error, Options};

fn options(paths: &[PathBuf]) -> Options {
    Options::default()
        .with_db_paths(paths.to_vec())
        .with_write_buffer_size(64 << 10)
        .with_target_file_size_base(32 << 10)
        .with_max_bytes_for_level_base(128 << 10)
}

fn files(dir: &Path, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default();
    v.retain(|n| n.ends_with(suffix));
    v.sort();
    v
}

fn load(db: &Db, n: u32) {
    for i in 0..n {
        db.put(format!("key{i:06}"), format!("value-{i}-{}", "x".repeat(60))).expect("put");
    }
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
}

fn check(db: &Db, n: u32) {
    for i in (0..n).step_by(97) {
        let v = db.get(format!("key{i:06}")).expect("get").expect("present");
        assert!(v.starts_with(format!("value-{i}-").as_bytes()));
    }
    assert_eq!(db.iter().count(), n as usize);
}

struct Dirs {
    _tmp: tempfile::TempDir,
    main: PathBuf,
    a: PathBuf,
    b: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (main, a, b) = (tmp.path().join("db"), tmp.path().join("a"), tmp.path().join("b"));
    Dirs { _tmp: tmp, main, a, b }
}

#[test]
fn tables_alternate_between_paths_and_the_rest_stays_in_the_main_directory() {
    let d = dirs();
    let db = Db::open(&d.main, options(&[d.a.clone(), d.b.clone()])).expect("open");
    load(&db, 20_000);
    let (a, b) = (files(&d.a, ".sst"), files(&d.b, ".sst"));
    assert!(a.len() >= 2 && b.len() >= 2, "a {a:?} b {b:?}");
    assert!(files(&d.main, ".sst").is_empty(), "no table in the main directory");
    for name in a.iter().chain(&b) {
        let id: u64 = name.trim_end_matches(".sst").parse().expect("number");
        let expect = if id.is_multiple_of(2) { &a } else { &b };
        assert!(expect.contains(name), "{name} in the wrong path");
    }
    assert!(!files(&d.main, ".log").is_empty() && d.main.join("CURRENT").exists());
    assert!(files(&d.a, ".log").is_empty() && !d.a.join("CURRENT").exists());
    db.close().expect("close");
    let db = Db::open(&d.main, options(&[d.a.clone(), d.b.clone()])).expect("reopen");
    check(&db, 20_000);
}

#[test]
fn reordered_or_added_paths_still_find_every_table() {
    let d = dirs();
    let db = Db::open(&d.main, options(&[d.a.clone(), d.b.clone()])).expect("open");
    load(&db, 10_000);
    db.close().expect("close");
    let c = d.main.parent().expect("parent").join("c");
    let db = Db::open(&d.main, options(&[d.b.clone(), c.clone(), d.a.clone()]).with_paranoid_checks(true))
        .expect("reopen with the paths reordered and one added");
    check(&db, 10_000);
    // New tables follow the new rule; old ones are read where they are.
    load(&db, 12_000);
    check(&db, 12_000);
    assert!(!files(&c, ".sst").is_empty(), "the added path gets new tables");
    db.close().expect("close");
    let db = Db::open(&d.main, options(&[d.a.clone(), d.b.clone(), c])).expect("reopen");
    check(&db, 12_000);
}

#[test]
fn a_missing_path_is_a_clear_error_naming_the_table() {
    let d = dirs();
    let db = Db::open(&d.main, options(&[d.a.clone(), d.b.clone()])).expect("open");
    load(&db, 10_000);
    db.close().expect("close");
    match Db::open(&d.main, options(std::slice::from_ref(&d.a))) {
        Err(Error::Corruption(m)) => assert!(m.contains(".sst"), "{m}"),
        other => panic!("expected a corruption error, got {other:?}"),
    }
    // Given the paths again, nothing was lost.
    let db = Db::open(&d.main, options(&[d.a.clone(), d.b.clone()])).expect("reopen");
    check(&db, 10_000);
}

#[test]
fn unreferenced_tables_in_a_data_path_are_removed_at_open() {
    let d = dirs();
    let db = Db::open(&d.main, options(&[d.a.clone(), d.b.clone()])).expect("open");
    load(&db, 5_000);
    db.close().expect("close");
    let orphan = d.b.join("999999.sst");
    std::fs::write(&orphan, b"left by a crash before its MANIFEST edit").expect("write");
    let db = Db::open(&d.main, options(&[d.a.clone(), d.b.clone()])).expect("reopen");
    assert!(!orphan.exists(), "an unreferenced table is deleted");
    check(&db, 5_000);
    // Its number is not reused for a new table either.
    load(&db, 6_000);
    check(&db, 6_000);
}

#[test]
fn a_data_path_with_tables_but_no_database_is_refused() {
    let d = dirs();
    std::fs::create_dir_all(&d.a).expect("dir");
    std::fs::write(d.a.join("000007.sst"), b"someone else's").expect("write");
    match Db::open(&d.main, options(&[d.a.clone(), d.b.clone()])) {
        Err(Error::NotADatabase(m)) => assert!(m.contains("000007.sst"), "{m}"),
        other => panic!("expected NotADatabase, got {other:?}"),
    }
    assert!(d.a.join("000007.sst").exists(), "nothing was deleted");
}

#[test]
fn repair_and_destroy_see_every_path() {
    let d = dirs();
    let opts = || options(&[d.a.clone(), d.b.clone()]);
    let db = Db::open(&d.main, opts()).expect("open");
    load(&db, 10_000);
    db.close().expect("close");
    std::fs::remove_file(d.main.join("CURRENT")).expect("lose CURRENT");
    let report = strata::repair(&d.main, opts()).expect("repair");
    assert!(report.tables_scanned >= 2, "{report:?}");
    let db = Db::open(&d.main, opts()).expect("open after repair");
    check(&db, 10_000);
    db.close().expect("close");
    strata::destroy(&d.main, opts()).expect("destroy");
    assert!(!d.main.exists() && !d.a.exists() && !d.b.exists(), "every directory removed");
}

#[test]
fn invalid_paths_are_refused() {
    let d = dirs();
    let twice = Db::open(&d.main, options(&[d.a.clone(), d.a.clone()]));
    assert!(matches!(twice, Err(Error::InvalidArgument(_))), "{twice:?}");
    let empty = Db::open(&d.main, options(&[PathBuf::new()]));
    assert!(matches!(empty, Err(Error::InvalidArgument(_))), "{empty:?}");
}
