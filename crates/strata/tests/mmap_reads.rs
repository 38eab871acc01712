//! `Options::with_mmap_reads` end to end on the real file system: the same
//! answers as `pread` across flushes, compactions, light-weight appends and
//! reopens; uncompressed mapped blocks never enter the block cache; past
//! `max_mapped_files` tables read with `pread`; a flipped byte in a mapped
//! block is found by `ReadOptions::with_verify_checksums(true)` and by
//! `verify_table`; an uncommitted append cut at reopen leaves maps intact; a
//! wrapping (fault-injection) file system still sees every read.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::table::{verify_table, Expected, Table};
use strata::vfs::testing::{FaultConfig, FaultVfs};
use strata::vfs::RandomOpenOptions;
use strata::{CompactionStyle, CompressionType, Db, Options, ReadOptions, RealVfs, Vfs};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts(mmap: bool, compression: CompressionType) -> Options {
    Options::default()
        .with_mmap_reads(mmap)
        .with_compression(compression)
        .with_compaction_style(CompactionStyle::Lwc { max_segments: 8 })
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(16 << 10)
        .with_max_bytes_for_level_base(64 << 10)
        .with_max_bytes_for_level_multiplier(4.0)
        .with_level0_file_num_compaction_trigger(2)
        .with_block_size(512)
        .with_block_cache_capacity(4 << 20)
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// Overwrites and deletes, the same for every database given the same round.
fn load(db: &Db, model: &mut Model, round: u32, n: u32, ops: u32) {
    for i in 0..ops {
        let k = key((i.wrapping_mul(7919) + round * 104_729) % n);
        if i % 11 == 3 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("r{round}-{i}-{}", "v".repeat((i % 60) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
}

/// Every read kind (get, multi_get, a full scan, seeks) against the model.
fn check(db: &Db, model: &Model, n: u32) {
    let keys: Vec<Vec<u8>> = (0..n).step_by(3).map(key).collect();
    for k in &keys {
        assert_eq!(db.get(k).unwrap().as_ref(), model.get(k), "get {}", String::from_utf8_lossy(k));
    }
    let got: Vec<Option<Vec<u8>>> = db.multi_get(&keys).into_iter().map(Result::unwrap).collect();
    let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
    assert_eq!(got, want, "multi_get");
    let scan: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(Result::unwrap).collect();
    assert_eq!(scan, model.iter().map(|(a, b)| (a.clone(), b.clone())).collect::<Vec<_>>(), "scan");
    let mut it = db.raw_iterator();
    for i in (0..n).step_by(97) {
        it.seek(key(i));
        let want = model.range(key(i)..).next();
        assert_eq!(it.item(), want.map(|(a, b)| (a.as_slice(), b.as_slice())), "seek {i}");
    }
    it.status().unwrap();
}

/// Runs the same history with and without maps, checking every stage.
fn same_answers(compression: CompressionType) {
    let n = 3000;
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut models = [Model::new(), Model::new()];
    for (mmap, (dir, model)) in [false, true].into_iter().zip(dirs.iter().zip(models.iter_mut())) {
        let db = Db::open(dir.path(), opts(mmap, compression)).unwrap();
        load(&db, model, 0, n, 4000);
        db.flush().unwrap();
        check(&db, model, n);
        // A scan opened now keeps reading its tables (mapped at their
        // length then) while appends grow them.
        let before = model.clone();
        let mut old = db.iter();
        let first = old.next().unwrap().unwrap();
        for round in 1..5 {
            load(&db, model, round, n, 4000);
            db.wait_for_compactions().unwrap();
        }
        let rest: Vec<_> = std::iter::once(first).chain(old.map(Result::unwrap)).collect();
        assert_eq!(rest, before.into_iter().collect::<Vec<_>>(), "mmap {mmap}: an older scan");
        let s = db.stats();
        assert!(s.appends > 0, "mmap {mmap}: no light-weight append ran\n{s}");
        check(&db, model, n);
        db.compact_range(None, None).unwrap();
        check(&db, model, n);
        load(&db, model, 9, n, 2000);
        db.close().unwrap();
        let db = Db::open(dir.path(), opts(mmap, compression)).unwrap();
        check(&db, model, n);
        db.close().unwrap();
    }
    assert_eq!(models[0], models[1]);
}

#[test]
fn uncompressed_tables_answer_the_same_mapped_or_not() {
    same_answers(CompressionType::None);
}

#[test]
fn compressed_tables_answer_the_same_mapped_or_not() {
    same_answers(CompressionType::Lz4);
}

/// Writes keys `0..n` into `tables` flushed tables (no compaction).
fn write_tables(dir: &Path, o: Options, n: u32, tables: u32) -> Db {
    let db = Db::open(dir, o.with_disable_auto_compactions(true).with_write_buffer_size(4 << 20)).unwrap();
    for t in 0..tables {
        for i in (t..n).step_by(tables as usize) {
            db.put(key(i), format!("value-{i}-{}", "x".repeat(40))).unwrap();
        }
        db.flush().unwrap();
    }
    db
}

/// Block-cache inserts after reading every key of `tables` tables once.
fn inserts_after_reads(o: Options, tables: u32) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let n = 2000;
    let db = write_tables(dir.path(), o, n, tables);
    let before = db.block_cache_stats().inserts;
    for i in 0..n {
        assert!(db.get(key(i)).unwrap().is_some());
    }
    assert_eq!(db.iter().count(), n as usize);
    db.block_cache_stats().inserts - before
}

#[test]
fn mapped_uncompressed_blocks_stay_out_of_the_block_cache() {
    let plain = inserts_after_reads(opts(false, CompressionType::None), 1);
    assert!(plain > 0);
    assert_eq!(inserts_after_reads(opts(true, CompressionType::None), 1), 0);
    // Compressed blocks are decompressed into memory and cached as before.
    assert!(inserts_after_reads(opts(true, CompressionType::Lz4), 1) > 0);
}

#[test]
fn past_the_mapped_file_bound_tables_read_with_pread() {
    let none = inserts_after_reads(opts(true, CompressionType::None).with_max_mapped_files(0), 6);
    let some = inserts_after_reads(opts(true, CompressionType::None).with_max_mapped_files(2), 6);
    let all = inserts_after_reads(opts(true, CompressionType::None).with_max_mapped_files(6), 6);
    assert_eq!(none, inserts_after_reads(opts(false, CompressionType::None), 6));
    assert!(0 < some && some < none, "2 of 6 tables mapped: {some} inserts of {none}");
    assert_eq!(all, 0);
}

/// A wrapping file system (fault injection) does not map: every table read
/// still passes through it, so its faults reach the reads it targets.
#[test]
fn a_wrapping_file_system_sees_every_read() {
    let fault = Arc::new(FaultVfs::new(Arc::new(RealVfs::new()), FaultConfig::default()));
    let o = opts(true, CompressionType::None).with_vfs(fault);
    assert_eq!(inserts_after_reads(o, 1), inserts_after_reads(opts(false, CompressionType::None), 1));
}

fn tables_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    v.sort();
    v
}

/// Flips a byte in place: no truncation, so a live map stays valid and sees it.
fn flip_in_place(path: &Path, offset: u64) {
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8];
    f.read_exact_at(&mut b, offset).unwrap();
    f.write_all_at(&[b[0] ^ 0x10], offset).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn a_flipped_byte_in_a_mapped_block_is_found_when_verification_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2000;
    let db = write_tables(dir.path(), opts(true, CompressionType::None), n, 1);
    assert!(db.get(key(0)).unwrap().is_some()); // the table is open and mapped
    let table = tables_in(dir.path()).pop().unwrap();
    flip_in_place(&table, 40); // inside the first data block
    let verify = ReadOptions::default().with_verify_checksums(true);
    let e = db.get_opt(key(0), &verify).expect_err("the damaged block is verified");
    assert!(e.is_corruption(), "{e}");
    let e = db.iter_opt(&verify).find_map(Result::err).expect("the scan meets the damaged block");
    assert!(e.is_corruption(), "{e}");
    let e = db.multi_get_opt([key(0)], &verify).pop().unwrap().expect_err("multi_get verifies too");
    assert!(e.is_corruption(), "{e}");
    // The default read does not verify a mapped block (LevelDB's rule): it
    // may answer from the damaged bytes, but must not panic.
    let _ = db.get(key(0));
    db.close().unwrap();
    // Offline verification reads every block from the file and checks it.
    let file = RealVfs::new().open_random(&table, RandomOpenOptions::default()).unwrap();
    let len = file.len();
    let t = Arc::new(Table::open(file, 1, len, None).unwrap());
    assert!(verify_table(&t, &Expected::default()).unwrap_err().is_corruption());
}

/// A crash between a light-weight append and its MANIFEST edit leaves bytes
/// past the recorded size; the reopen cuts them before any table is opened
/// (so before any map exists), and the maps made afterwards cover only the
/// recorded size.
#[test]
fn an_uncommitted_append_is_cut_before_tables_are_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let n = 1000;
    let db = write_tables(dir.path(), opts(true, CompressionType::None), n, 1);
    db.close().unwrap();
    let table = tables_in(dir.path()).pop().unwrap();
    let size = std::fs::metadata(&table).unwrap().len();
    let f = std::fs::OpenOptions::new().append(true).open(&table).unwrap();
    f.write_all_at(&[0xEE; 5000], size).unwrap();
    drop(f);
    let db = Db::open(dir.path(), opts(true, CompressionType::None)).unwrap();
    assert_eq!(std::fs::metadata(&table).unwrap().len(), size, "cut at reopen");
    for i in 0..n {
        assert!(db.get(key(i)).unwrap().is_some());
    }
    assert_eq!(db.block_cache_stats().inserts, 0, "read through the map");
}

/// Flips bytes across a mapped table (closed database, the flip written in
/// place), then reads every key with and without verification: verified
/// reads give the right value or `Corruption` and find nearly every flip;
/// unverified reads of a damaged mapped block may answer wrongly (the rule
/// FORMAT.md documents) but never panic or read outside the map.
#[test]
fn flipped_bytes_across_a_mapped_table() {
    let dir = tempfile::tempdir().unwrap();
    let n = 1500;
    let value = |i: u32| format!("value-{i}-{}", "x".repeat(40)).into_bytes();
    write_tables(dir.path(), opts(true, CompressionType::None), n, 1).close().unwrap();
    let table = tables_in(dir.path()).pop().unwrap();
    let len = std::fs::metadata(&table).unwrap().len();
    let verify = ReadOptions::default().with_verify_checksums(true);
    let (mut cases, mut detected) = (0, 0);
    for offset in (0..len).step_by(len as usize / 80 + 1) {
        flip_in_place(&table, offset);
        match Db::open(dir.path(), opts(true, CompressionType::None)) {
            Ok(db) => {
                let mut found = false;
                for i in 0..n {
                    match db.get_opt(key(i), &verify) {
                        Ok(v) => {
                            assert_eq!(v, Some(value(i)), "flip at {offset}: a verified read of key {i}")
                        }
                        Err(e) => {
                            assert!(e.is_corruption(), "{e}");
                            found = true;
                        }
                    }
                    let _ = db.get(key(i));
                }
                let _ = db.iter().count();
                detected += usize::from(found);
                db.close().unwrap();
            }
            Err(e) => {
                assert!(e.is_corruption(), "flip at {offset}: {e}");
                detected += 1;
            }
        }
        flip_in_place(&table, offset);
        cases += 1;
    }
    assert!(detected * 10 >= cases * 9, "only {detected} of {cases} flips detected");
}
