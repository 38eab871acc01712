//! The background pool: every keyspace's flushes and compactions run on the
//! database's `max_background_jobs` workers, not on threads of their own.
//! The tests here take `ONE_DB` so that only one database is open in this
//! binary at a time and the thread count sees its workers alone.

use std::sync::Mutex;

use strata::{CompactionStyle, Db, Keyspace, KeyspaceOptions, Options};

static ONE_DB: Mutex<()> = Mutex::new(());

fn small() -> KeyspaceOptions {
    KeyspaceOptions::default()
        .with_compaction_style(CompactionStyle::Leveled)
        .with_write_buffer_size(8 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_level0_file_num_compaction_trigger(2)
        .with_compression(strata::CompressionType::None)
}

/// Engine background threads of this process: the pool's workers (a
/// compaction's short-lived pipeline and read threads are not the pool's).
fn background_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim_end().to_string())
        .filter(|n| {
            n.starts_with("strata-") && !["strata-seal", "strata-write", "strata-read"].contains(&n.as_str())
        })
        .count()
}

fn value(ks: usize, i: usize) -> Vec<u8> {
    format!("ks{ks}-value-{i}-{}", "x".repeat(200)).into_bytes()
}

/// Writes keys `0..n` scattered (n must not be a multiple of 7), so that
/// every flushed table spans the range and compactions merge.
fn fill(ks: &Keyspace, n: usize, i: usize) {
    for j in 0..n {
        let k = j * 7 % n;
        ks.put(format!("key{k:05}"), value(i, k)).unwrap();
    }
}

fn check(ks: &Keyspace, n: usize, i: usize) {
    for k in (0..n).step_by(7) {
        assert_eq!(ks.get(format!("key{k:05}")).unwrap(), Some(value(i, k)), "keyspace {i} key {k}");
    }
}

#[test]
fn fifty_keyspaces_share_a_bounded_pool_and_all_their_work_completes() {
    let _one = ONE_DB.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let jobs = 3;
    let db = Db::open(dir.path(), Options::default().with_max_background_jobs(jobs)).unwrap();
    let spaces: Vec<Keyspace> =
        (0..50).map(|i| db.create_keyspace(&format!("ks{i}"), small()).unwrap()).collect();
    let mut peak = background_threads();
    for (i, ks) in spaces.iter().enumerate() {
        fill(ks, 300, i);
        peak = peak.max(background_threads());
    }
    for ks in &spaces {
        ks.wait_for_compactions().unwrap();
        peak = peak.max(background_threads());
    }
    if std::path::Path::new("/proc/self/task").exists() {
        assert!(peak >= 1, "the pool's workers are named strata-bg-N");
        assert!(peak <= jobs + 1, "{peak} background threads for 50 keyspaces with {jobs} jobs");
    }
    for (i, ks) in spaces.iter().enumerate() {
        let s = ks.stats();
        assert!(s.flushes >= 2, "keyspace {i} flushed {} times", s.flushes);
        assert!(s.compactions >= 1, "keyspace {i} compacted {} times", s.compactions);
        check(ks, 300, i);
    }
    db.close().unwrap();
    assert_eq!(background_threads(), 0, "close joins the workers");
}

#[test]
fn dropping_a_keyspace_the_pool_works_on_is_safe() {
    let _one = ONE_DB.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default().with_max_background_jobs(2)).unwrap();
    let kept = db.create_keyspace("kept", small()).unwrap();
    for round in 0..5 {
        let doomed = db.create_keyspace("doomed", small()).unwrap();
        fill(&doomed, 400, round);
        fill(&kept, 100, 99);
        db.drop_keyspace("doomed").unwrap();
        assert!(doomed.get("key00000").is_err(), "the handle is dead");
    }
    kept.wait_for_compactions().unwrap();
    check(&kept, 100, 99);
    let again = db.create_keyspace("doomed", small()).unwrap();
    assert_eq!(again.get("key00000").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn close_with_pending_work_is_clean_and_keeps_everything() {
    let _one = ONE_DB.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default().with_max_background_jobs(2);
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..10 {
            fill(&db.create_keyspace(&format!("ks{i}"), small()).unwrap(), 300, i);
        }
        db.close().unwrap(); // flushes and compactions still queued
    }
    assert_eq!(background_threads(), 0);
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..10 {
        let ks = db.keyspace(&format!("ks{i}")).unwrap();
        check(&ks, 300, i);
        ks.wait_for_compactions().unwrap();
    }
    db.close().unwrap();
}

#[test]
fn read_only_opens_start_no_worker() {
    let _one = ONE_DB.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    fill(&db.create_keyspace("a", small()).unwrap(), 100, 1);
    db.close().unwrap();
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    check(&ro.keyspace("a").unwrap(), 100, 1);
    assert_eq!(background_threads(), 0);
}

#[test]
fn max_background_jobs_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [0, 257] {
        let err = Db::open(dir.path(), Options::default().with_max_background_jobs(bad)).err().unwrap();
        assert!(err.to_string().contains("max_background_jobs"), "{err}");
    }
}
