//! `Db::checkpoint`: an openable copy of every keyspace as of the call, tables
//! hard-linked where they can be, taken under write load.

mod crash_sim_support;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use strata::{CompactionStyle, Db, Error, KeyspaceOptions, MemVfs, Options, Vfs, WriteBatch};

use crash_sim_support::history::{value_of, History, Kv};

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

/// Every entry of the default keyspace as `d/<key>` and of `other` as `o/<key>`.
fn read_both(db: &Db, other: &str) -> Kv {
    let mut kv = Kv::new();
    for item in db.iter() {
        let (k, v) = item.unwrap();
        kv.insert([b"d/".as_slice(), &k].concat(), v);
    }
    for item in db.keyspace(other).unwrap().iter() {
        let (k, v) = item.unwrap();
        kv.insert([b"o/".as_slice(), &k].concat(), v);
    }
    kv
}

fn table_links(dir: &Path) -> Vec<u64> {
    let mut links = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().ends_with(".sst") {
            links.push(e.metadata().unwrap().nlink());
        }
    }
    links
}

#[test]
fn a_checkpoint_opens_to_the_state_of_the_call_with_every_keyspace() {
    let base = tempfile::tempdir().unwrap();
    let db = Db::open(base.path().join("db"), opts()).unwrap();
    let hot = db.create_keyspace("hot", ks_opts(CompactionStyle::Lsbm)).unwrap();
    let ingest = db.create_keyspace("ingest", ks_opts(CompactionStyle::Lwc { max_segments: 4 })).unwrap();
    for i in 0..3000u32 {
        let k = format!("k{i:05}");
        db.put(&k, format!("d{i}")).unwrap();
        hot.put(&k, format!("h{i}")).unwrap();
        ingest.put(&k, format!("i{i}")).unwrap();
    }
    db.delete_range("k00100", "k00200").unwrap();
    hot.delete("k00007").unwrap();
    let cp = base.path().join("cp");
    db.checkpoint(&cp).unwrap();
    assert!(table_links(&cp).iter().any(|&n| n > 1), "default-keyspace tables are hard links");
    let ingest_dir = cp.join("keyspaces").join(ingest.id().to_string());
    assert!(table_links(&ingest_dir).iter().all(|&n| n == 1), "lwc tables are copies (appended in place)");
    // Writes after the call are not in it.
    db.put("k00001", "later").unwrap();
    hot.delete("k00002").unwrap();
    ingest.flush().unwrap();
    db.compact_range(None, None).unwrap();

    let copy = Db::open(&cp, opts()).unwrap();
    assert_eq!(copy.list_keyspaces(), ["default", "hot", "ingest"]);
    let (chot, cingest) = (copy.keyspace("hot").unwrap(), copy.keyspace("ingest").unwrap());
    assert_eq!(copy.get("k00001").unwrap(), Some(b"d1".to_vec()));
    assert_eq!(copy.get("k00150").unwrap(), None, "the range delete is in it");
    assert_eq!(chot.get("k00002").unwrap(), Some(b"h2".to_vec()));
    assert_eq!(chot.get("k00007").unwrap(), None);
    assert_eq!(copy.iter().count(), 2900);
    assert_eq!(chot.iter().count(), 2999);
    assert_eq!(cingest.iter().count(), 3000);
    // The copy is a database of its own: writing it leaves the source alone.
    copy.put("k00003", "copy").unwrap();
    cingest.put("k00003", "copy").unwrap();
    copy.compact_range(None, None).unwrap();
    cingest.compact_range(None, None).unwrap();
    assert_eq!(db.get("k00003").unwrap(), Some(b"d3".to_vec()));
    assert_eq!(ingest.get("k00003").unwrap(), Some(b"i3".to_vec()));
    assert_eq!(db.get("k00001").unwrap(), Some(b"later".to_vec()));
    drop(copy);
    db.close().unwrap();
    let db = Db::open(base.path().join("db"), opts()).unwrap();
    assert_eq!(db.keyspace("ingest").unwrap().iter().count(), 3000);
}

#[test]
fn a_checkpoint_is_refused_over_an_existing_directory_and_from_a_read_only_handle() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let db = Db::open("/db", opts().with_vfs(vfs.clone())).unwrap();
    db.put("k", "v").unwrap();
    vfs.create_dir_all(Path::new("/taken")).unwrap();
    assert!(matches!(db.checkpoint("/taken"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.checkpoint("/db"), Err(Error::InvalidArgument(_))));
    // MemVfs cannot hard-link: the tables are copied.
    db.flush().unwrap();
    db.checkpoint("/cp").unwrap();
    db.close().unwrap();
    let ro = Db::open_read_only("/db", opts().with_vfs(vfs.clone())).unwrap();
    assert!(matches!(ro.checkpoint("/cp2"), Err(Error::NotSupported(_))));
    let copy = Db::open("/cp", opts().with_vfs(vfs)).unwrap();
    assert_eq!(copy.get("k").unwrap(), Some(b"v".to_vec()));
}

/// Checkpoints taken while one client writes batches spanning two keyspaces
/// (with flushes and compactions running) open to the state after a prefix of
/// the batches: at least every batch acknowledged before the call, none cut.
fn checkpoints_under_write_load(style: CompactionStyle, vfs: Option<Arc<dyn Vfs>>) {
    let base = tempfile::tempdir().unwrap();
    let root = match &vfs {
        Some(_) => Path::new("/w").to_path_buf(),
        None => base.path().to_path_buf(),
    };
    let o = match &vfs {
        Some(v) => opts().with_vfs(v.clone()),
        None => opts(),
    };
    let db = Arc::new(Db::open(root.join("db"), o.clone()).unwrap());
    db.create_keyspace("other", ks_opts(style.clone())).unwrap();
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
    for round in 0..6 {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let before = history.lock().acked();
        let cp = root.join(format!("cp{round}"));
        db.checkpoint(&cp).unwrap();
        let after = history.lock().next_index();
        let copy = Db::open(&cp, o.clone()).unwrap();
        let got = read_both(&copy, "other");
        let n = history.lock().check_within(&got, before, after);
        assert!(n.is_ok(), "{style:?} checkpoint {round}: {}", n.unwrap_err());
        copy.close().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(history.lock().acked() > 500, "the writer wrote: {}", history.lock().acked());
}

#[test]
fn checkpoints_under_write_load_hold_a_prefix_of_batches_leveled_and_lsbm() {
    checkpoints_under_write_load(CompactionStyle::Lsbm, None);
}

#[test]
fn checkpoints_under_write_load_hold_a_prefix_of_batches_lwc() {
    checkpoints_under_write_load(CompactionStyle::Lwc { max_segments: 4 }, None);
}

#[test]
fn checkpoints_under_write_load_hold_a_prefix_of_batches_copying_tables() {
    checkpoints_under_write_load(CompactionStyle::Garnering { c: 0.8 }, Some(Arc::new(MemVfs::new())));
}

/// A checkpoint that fails part way (any file-system call of it, reads of the
/// source included) returns the error, leaves nothing that opens as a
/// database, and leaves the source as it was; the next one succeeds.
#[test]
fn a_failed_checkpoint_leaves_no_database_and_the_source_intact() {
    use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs};
    let mem: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let fault = Arc::new(FaultVfs::new(mem, FaultConfig::new(7)));
    let vfs: Arc<dyn Vfs> = fault.clone();
    let db = Db::open("/db", opts().with_vfs(vfs.clone())).unwrap();
    let ks = db.create_keyspace("ks", ks_opts(CompactionStyle::Leveled)).unwrap();
    for i in 0..1500u32 {
        db.put(format!("k{i:05}"), "v").unwrap();
        ks.put(format!("k{i:05}"), "w").unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    ks.wait_for_compactions().unwrap();
    db.put("unflushed", "in the WAL").unwrap();
    let mut failures = 0;
    let ops = [FaultOp::Create, FaultOp::Append, FaultOp::Sync, FaultOp::SyncDir, FaultOp::Rename];
    for (n, op) in ops.into_iter().chain([FaultOp::Open, FaultOp::ReadAt]).enumerate() {
        for skip in [0, 1, 3, 8] {
            let dir = format!("/cp-{n}-{skip}");
            fault.fail_after(op, skip, 1);
            let r = db.checkpoint(&dir);
            fault.disarm();
            if let Err(e) = r {
                failures += 1;
                assert!(!vfs.exists(&Path::new(&dir).join("CURRENT")), "{op:?}/{skip}: {e}");
                assert!(!vfs.exists(Path::new(&dir)), "{op:?}/{skip}: the partial copy was removed");
                db.checkpoint(&dir).unwrap();
            }
            let copy = Db::open(&dir, opts().with_vfs(vfs.clone())).unwrap();
            assert_eq!(copy.get("unflushed").unwrap(), Some(b"in the WAL".to_vec()), "{op:?}/{skip}");
            assert_eq!(copy.iter().count(), 1501);
            assert_eq!(copy.keyspace("ks").unwrap().iter().count(), 1500);
            copy.close().unwrap();
        }
    }
    assert!(failures >= 10, "the faults hit the checkpoint: {failures}");
    db.put("after", "all").unwrap();
    assert_eq!(ks.iter().count(), 1500);
}

/// Regression: tables spread over `db_paths` were looked for in the database
/// directory only, so the checkpoint failed. They now all go to the
/// checkpoint's directory, which opens without the paths.
#[test]
fn a_checkpoint_of_a_database_with_data_paths_gathers_its_tables() {
    let base = tempfile::tempdir().unwrap();
    let paths = [base.path().join("p0"), base.path().join("p1")];
    let db = Db::open(base.path().join("db"), opts().with_db_paths(paths.clone())).unwrap();
    for i in 0..3000u32 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    assert!(paths.iter().all(|p| !table_links(p).is_empty()), "tables in both data paths");
    db.checkpoint(base.path().join("cp")).unwrap();
    let copy = Db::open(base.path().join("cp"), opts()).unwrap();
    assert_eq!(copy.iter().count(), 3000);
    assert_eq!(copy.get("k01234").unwrap(), Some(b"v1234".to_vec()));
}
