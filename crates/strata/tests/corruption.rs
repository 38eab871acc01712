//! Flipped bytes in tables and WALs give `Corruption` (or, for a torn WAL
//! tail, recovery up to the last good record): never a panic, never a wrong value.

use std::path::{Path, PathBuf};

use strata::{Db, Error, Options, WalRecoveryMode, WriteOptions};

fn opts() -> Options {
    Options::default().with_block_size(1024).with_compression(strata::CompressionType::None)
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i}-{}", "z".repeat(i % 50)).into_bytes()
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, offset: usize) -> u8 {
    let mut data = std::fs::read(path).unwrap();
    let old = data[offset];
    data[offset] ^= 0x10;
    std::fs::write(path, &data).unwrap();
    old
}

fn restore(path: &Path, offset: usize, old: u8) {
    let mut data = std::fs::read(path).unwrap();
    data[offset] = old;
    std::fs::write(path, &data).unwrap();
}

/// Reads everything back; each answer must be right or a Corruption error.
/// Returns how many reads reported corruption.
fn read_back(db: &Db, n: usize) -> usize {
    let mut errors = 0;
    for i in (0..n).step_by(7) {
        match db.get(key(i)) {
            Ok(v) => assert_eq!(v, Some(value(i)), "wrong value for key {i}"),
            Err(e) => {
                assert!(e.is_corruption(), "unexpected error {e}");
                errors += 1;
            }
        }
    }
    let mut expect = 0;
    for kv in db.iter() {
        match kv {
            Ok((k, v)) => {
                // Entries may only be missing after an error; never wrong.
                assert_eq!((k, v), (key(expect), value(expect)), "scan returned a wrong entry");
                expect += 1;
            }
            Err(e) => {
                assert!(e.is_corruption(), "unexpected error {e}");
                errors += 1;
                break;
            }
        }
    }
    errors
}

/// Writes keys `0..n` and flushes them into one table; returns its path.
fn write_one_table(dir: &Path, n: usize) -> PathBuf {
    let db = Db::open(dir, opts()).unwrap();
    for i in 0..n {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    files_with_ext(dir, "sst").pop().expect("a table")
}

#[test]
fn flipped_bytes_in_a_table_are_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 3000;
    let table = write_one_table(tmp.path(), n);
    let len = std::fs::metadata(&table).unwrap().len() as usize;
    let mut detected = 0;
    let mut cases = 0;
    // Every region: data blocks, filter, index, properties and the footer.
    let mut offsets: Vec<usize> = (0..len).step_by(len / 150 + 1).collect();
    offsets.extend(len.saturating_sub(64)..len);
    for off in offsets {
        let old = flip(&table, off);
        match Db::open(tmp.path(), opts()) {
            Ok(db) => {
                if read_back(&db, n) > 0 {
                    detected += 1;
                }
                db.close().unwrap();
            }
            Err(e) => {
                assert!(e.is_corruption(), "open failed with a non-corruption error: {e}");
                detected += 1;
            }
        }
        restore(&table, off, old);
        cases += 1;
    }
    eprintln!("{detected}/{cases} table corruptions detected");
    assert!(detected * 10 >= cases * 9, "only {detected} of {cases} flips detected");
}

/// Regression: a corruption found by `get` or an iterator said only "block
/// checksum mismatch at offset N"; it names the table file to look at.
#[test]
fn a_corrupt_block_found_by_a_read_names_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 3000;
    let table = write_one_table(tmp.path(), n);
    flip(&table, 100); // inside the first data block
    let name = table.file_name().unwrap().to_string_lossy().into_owned();
    let db = Db::open(tmp.path(), opts()).unwrap();
    let e = db.get(key(0)).expect_err("the first block is damaged");
    assert!(e.is_corruption() && e.to_string().contains(&name), "{e}");
    let e = db.iter().find_map(Result::err).expect("the scan meets the damaged block");
    assert!(e.is_corruption() && e.to_string().contains(&name), "{e}");
}

fn write_unflushed(dir: &Path, n: usize) {
    let db = Db::open(dir, opts()).unwrap();
    let wo = WriteOptions::default().with_sync(true);
    for i in 0..n {
        db.put_opt(key(i), value(i), &wo).unwrap();
    }
    // Close syncs the WAL but does not flush the memtable: recovery must replay it.
    db.close().unwrap();
}

#[test]
fn flipped_byte_inside_the_wal_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    write_unflushed(tmp.path(), 500);
    let wal = files_with_ext(tmp.path(), "log")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let len = std::fs::metadata(&wal).unwrap().len() as usize;
    for off in [20, len / 4, len / 2] {
        let old = flip(&wal, off);
        let err = Db::open(tmp.path(), opts()).unwrap_err();
        assert!(matches!(err, Error::Corruption(_)), "offset {off}: {err}");
        restore(&wal, off, old);
    }
    let db = Db::open(tmp.path(), opts()).unwrap();
    assert_eq!(read_back(&db, 500), 0);
}

#[test]
fn torn_wal_tail_recovers_a_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 500;
    write_unflushed(tmp.path(), n);
    let wal = files_with_ext(tmp.path(), "log")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let data = std::fs::read(&wal).unwrap();
    std::fs::write(&wal, &data[..data.len() - 25]).unwrap();
    // AbsoluteConsistency refuses even a torn tail.
    let strict = opts().with_wal_recovery_mode(WalRecoveryMode::AbsoluteConsistency);
    assert!(Db::open(tmp.path(), strict).unwrap_err().is_corruption());
    let db = Db::open(tmp.path(), opts()).unwrap();
    let got: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(got.len(), n - 1, "exactly the torn last record is lost");
    for (i, (k, v)) in got.into_iter().enumerate() {
        assert_eq!((k, v), (key(i), value(i)));
    }
}

#[test]
fn paranoid_open_reports_a_damaged_or_truncated_table_and_lenient_open_defers_it() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 500;
    let table = write_one_table(tmp.path(), n);
    let len = std::fs::metadata(&table).unwrap().len() as usize;
    let lenient = || opts().with_paranoid_checks(false);

    // A flipped footer byte: paranoid open refuses; lenient open succeeds and
    // the first read of the table reports it.
    let old = flip(&table, len - 3);
    let err = Db::open(tmp.path(), opts()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let db = Db::open(tmp.path(), lenient()).unwrap();
    assert!(db.get(key(1)).unwrap_err().is_corruption());
    db.close().unwrap();
    restore(&table, len - 3, old);

    // A table shorter than the MANIFEST says is named with both sizes.
    let data = std::fs::read(&table).unwrap();
    std::fs::write(&table, &data[..len - 1]).unwrap();
    let err = Db::open(tmp.path(), opts()).unwrap_err().to_string();
    assert!(err.contains(&format!("{} bytes", len - 1)) && err.contains(&len.to_string()), "{err}");
    std::fs::write(&table, &data).unwrap();

    let db = Db::open(tmp.path(), opts()).unwrap();
    assert_eq!(read_back(&db, n), 0);
}
