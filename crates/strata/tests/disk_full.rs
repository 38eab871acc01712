//! A full disk under every policy: the write that hits `ENOSPC` fails, the
//! database goes read-only, and after space is freed a reopen has every
//! acknowledged write and none that failed. Once on an in-memory disk with the
//! limit at a random byte (WAL, table or MANIFEST), once on a real tmpfs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::vfs::testing::{FaultConfig, FaultVfs};
use strata::{CompactionStyle, Db, Error, KeyspaceOptions, MemVfs, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn policies() -> Vec<CompactionStyle> {
    CompactionStyle::builtin_names().iter().map(|n| CompactionStyle::from_name(n).unwrap()).collect()
}

fn scan(db: &Db) -> Model {
    db.iter().map(|kv| kv.unwrap()).collect()
}

/// Which kind of file a disk-full error names.
fn file_kind(e: &Error) -> &'static str {
    let s = e.to_string();
    if s.contains("MANIFEST") {
        "manifest"
    } else if s.contains(".sst") {
        "table"
    } else if s.contains(".log") {
        "wal"
    } else {
        "other"
    }
}

/// Writes unique values until a write fails; returns the model of acknowledged
/// writes, the failed write and its error.
fn fill_until_full(
    db: &Db,
    rng: &mut StdRng,
    tag: &str,
    keys: u32,
    max: usize,
) -> (Model, (Vec<u8>, Vec<u8>), Error) {
    let mut model = Model::new();
    for i in 0..max {
        let k = format!("key{:08}", rng.gen_range(0..keys)).into_bytes();
        let mut v = format!("{tag}-w{i}-").into_bytes();
        // Random letters: compression must not make the disk last forever.
        let pad = rng.gen_range(20..400);
        v.extend((0..pad).map(|_| rng.gen_range(b'a'..=b'z')));
        let wo = WriteOptions::default().with_sync(rng.gen_bool(0.1));
        match db.put_opt(&k, &v, &wo) {
            Ok(()) => {
                model.insert(k, v);
            }
            Err(e) => return (model, (k, v), e),
        }
    }
    panic!("{tag}: the disk never filled in {max} writes");
}

fn check_failed_state(db: &Db, ctx: &str) {
    for j in 0..5 {
        let e = db.put(format!("after{j}"), "x").expect_err("read-only after the failure");
        assert!(matches!(e, Error::ReadOnly(_)), "{ctx}: {e}");
    }
}

#[test]
fn disk_full_at_any_byte_keeps_every_acknowledged_write() {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for style in policies() {
        for seed in 0..40u64 {
            let ctx = format!("{style:?} seed {seed}");
            let mut rng = StdRng::seed_from_u64(seed);
            let vfs = FaultVfs::new(Arc::new(MemVfs::new()), FaultConfig::new(seed));
            let opts = Options::default()
                .with_compaction_style(style.clone())
                .with_write_buffer_size(4096)
                .with_target_file_size_base(2048)
                .with_max_bytes_for_level_base(8192)
                .with_level0_file_num_compaction_trigger(2)
                .with_block_size(512)
                // Small MANIFESTs roll over often: writing a new one whole makes
                // MANIFEST writes a fair share of where the disk fills, however
                // the background work is timed.
                .with_max_manifest_file_size(if seed % 2 == 0 { 1024 } else { 64 << 20 })
                .with_vfs(Arc::new(vfs.clone()));
            let db = Db::open("/db", opts.clone()).unwrap();
            let mut model = Model::new();
            for i in 0..rng.gen_range(0..300) {
                let (k, v) = (format!("key{:08}", i % 400).into_bytes(), format!("pre{i}").into_bytes());
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            vfs.set_free_space(Some(rng.gen_range(0..40_000)));
            let (acked, (fk, fv), e) = fill_until_full(&db, &mut rng, &format!("s{seed}"), 400, 20_000);
            model.extend(acked);
            assert!(e.to_string().contains("No space left on device"), "{ctx}: {e}");
            *kinds.entry(file_kind(&e)).or_default() += 1;
            check_failed_state(&db, &ctx);
            let _ = db.close();
            // Reopening on the full disk may fail; it must not panic or damage anything.
            if let Ok(db) = Db::open("/db", opts.clone()) {
                let _ = db.close();
            }
            vfs.set_free_space(None);
            let db =
                Db::open("/db", opts).unwrap_or_else(|e| panic!("{ctx}: reopen after freeing space: {e}"));
            let got = scan(&db);
            assert_eq!(got.get(&fk).filter(|v| **v == fv), None, "{ctx}: the failed write is visible");
            assert_eq!(got, model, "{ctx}: acknowledged writes");
            db.put("after-reopen", "ok").unwrap();
            db.close().unwrap();
        }
    }
    println!("disk full hit: {kinds:?}");
    assert!(kinds.get("wal").is_some_and(|&n| n > 0), "{kinds:?}");
    assert!(kinds.get("table").is_some_and(|&n| n > 0), "{kinds:?}");
    assert!(kinds.get("manifest").is_some_and(|&n| n > 0), "{kinds:?}");
}

/// Unmounts on drop, also when the test fails.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn mount(args: &[&str], at: &Path) -> Result<(), String> {
    let out =
        Command::new("mount").args(args).arg(at).output().map_err(|e| format!("cannot run mount: {e}"))?;
    if !out.status.success() {
        return Err(format!("mount refused: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

#[test]
fn real_disk_full_on_tmpfs_keeps_every_acknowledged_write() {
    for style in policies() {
        let tmp = tempfile::tempdir().unwrap();
        if let Err(why) = mount(&["-t", "tmpfs", "-o", "size=8m", "tmpfs"], tmp.path()) {
            println!("skipped: {why}");
            return;
        }
        let guard = Mount(tmp.path().to_path_buf());
        let path = tmp.path().join("db");
        let opts = Options::default()
            .with_compaction_style(style.clone())
            .with_write_buffer_size(512 << 10)
            .with_target_file_size_base(256 << 10)
            .with_max_bytes_for_level_base(1 << 20);
        let db = Db::open(&path, opts.clone()).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let (model, (fk, fv), e) = fill_until_full(&db, &mut rng, "real", 1 << 30, 200_000);
        let kind = match &e {
            Error::Io(io) => format!("I/O error of kind {:?} in a {}", io.kind(), file_kind(&e)),
            Error::ReadOnly(_) => format!("read-only after a background failure in a {}", file_kind(&e)),
            other => panic!("{style:?}: unexpected error {other}"),
        };
        println!("{style:?}: after {} acknowledged writes, {kind}: {e}", model.len());
        assert!(e.to_string().contains("No space left on device"), "{style:?}: {e}");
        if let Error::Io(io) = &e {
            assert_eq!(io.kind(), std::io::ErrorKind::StorageFull, "{style:?}");
        }
        check_failed_state(&db, &format!("{style:?}"));
        let _ = db.close();
        mount(&["-o", "remount,size=64m"], tmp.path()).unwrap();
        let db =
            Db::open(&path, opts).unwrap_or_else(|e| panic!("{style:?}: reopen after freeing space: {e}"));
        let got = scan(&db);
        assert_eq!(got.get(&fk).filter(|v| **v == fv), None, "{style:?}: the failed write is visible");
        assert_eq!(got, model, "{style:?}: acknowledged writes");
        db.close().unwrap();
        drop(guard);
    }
}

#[test]
fn a_full_disk_in_one_keyspace_makes_the_whole_database_read_only() {
    let vfs = FaultVfs::new(Arc::new(MemVfs::new()), FaultConfig::new(7));
    let opts = Options::default().with_vfs(Arc::new(vfs.clone()));
    let db = Db::open("/db", opts.clone()).unwrap();
    let full = db.create_keyspace("full", KeyspaceOptions::default()).unwrap();
    let other = db.create_keyspace("other", KeyspaceOptions::default()).unwrap();
    db.put("d", "1").unwrap();
    other.put("o", "1").unwrap();
    for i in 0..200 {
        full.put(format!("f{i:04}"), "x".repeat(100)).unwrap();
    }
    // The flush of one keyspace hits the full disk; then space is freed, and
    // the database stays read-only until reopened.
    vfs.set_free_space(Some(0));
    let e = full.flush().expect_err("the flush cannot write its table");
    assert!(matches!(e, Error::ReadOnly(_)), "{e}");
    vfs.set_free_space(None);

    let read_only = |r: Result<(), Error>, what: &str| match r {
        Err(Error::ReadOnly(m)) => {
            assert!(
                m.contains("open_read_only") && m.contains("reopen") && m.contains("\"full\""),
                "{what}: {m}"
            )
        }
        r => panic!("{what}: {r:?}"),
    };
    read_only(db.put("d", "2"), "the default keyspace");
    read_only(other.put("o", "2"), "another keyspace");
    read_only(full.put("f", "2"), "the keyspace that failed");
    let mut batch = WriteBatch::new();
    batch.put_cf(&other, "b", "2");
    read_only(db.write(batch), "a batch");
    read_only(db.create_keyspace("new", KeyspaceOptions::default()).map(drop), "create_keyspace");
    read_only(db.drop_keyspace("other"), "drop_keyspace");
    read_only(other.flush(), "a flush of another keyspace");
    read_only(db.flush(), "a flush of the default keyspace");
    for ks in [db.default_keyspace(), other.clone(), full.clone()] {
        let advice = ks.stats().background_error.expect("every keyspace reports the error");
        assert!(advice.contains("open_read_only"), "{advice}");
    }
    // Reads go on.
    assert_eq!(db.get("d").unwrap(), Some(b"1".to_vec()));
    assert_eq!(other.get("o").unwrap(), Some(b"1".to_vec()));
    assert_eq!(full.iter().count(), 200);
    drop((full, other));
    drop(db);

    let ro = Db::open_read_only("/db", opts.clone()).unwrap();
    assert_eq!(ro.get("d").unwrap(), Some(b"1".to_vec()));
    drop(ro);
    let db = Db::open("/db", opts).unwrap();
    assert_eq!(db.get("d").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.keyspace("other").unwrap().get("o").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.keyspace("full").unwrap().iter().count(), 200);
    db.put("d", "3").unwrap();
}
