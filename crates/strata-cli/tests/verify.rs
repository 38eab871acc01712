//! `strata verify` on damage a crash cannot leave: it must name the damaged
//! file and exit 1, where a torn tail a crash can leave is only a note.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn verify(dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["verify", "--db", dir.to_str().expect("utf-8 path")])
        .output()
        .expect("run strata")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Files in `dir` whose names contain `part`, sorted.
fn files(dir: &Path, part: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().contains(part)))
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, from_end: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.len() - from_end;
    bytes[at] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

/// Regression: a flipped bit in the MANIFEST's last record (a compaction
/// whose inputs were then deleted) was noted as a torn record, and verify
/// named an intact, correctly deleted table as missing instead.
#[test]
fn a_damaged_last_manifest_record_names_the_manifest_not_a_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db =
            strata::Db::open(&dir, strata::Options::default().with_disable_auto_compactions(true)).unwrap();
        for round in 0..2 {
            for i in 0..100 {
                db.put(format!("key{i:04}"), format!("v{round}")).unwrap();
            }
            db.flush().unwrap();
        }
        db.compact_range(None, None).unwrap();
        db.close().unwrap();
    }
    let manifest = files(&dir, "MANIFEST-").pop().expect("a MANIFEST");
    assert!(verify(&dir).status.success(), "clean before the flip");
    flip(&manifest, 3);
    let o = verify(&dir);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains(&format!("DAMAGED {}", manifest.display())), "{out}");
    assert!(!out.contains("live table missing"), "{out}");
}

/// Regression: a WAL cut in half exited 0 when a newer WAL held writes (the
/// engine syncs a WAL before writing to the next, so its tail is not torn).
#[test]
fn an_older_wal_cut_in_half_is_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
        let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default()).unwrap();
        for i in 0..200 {
            ks.put(format!("key{i:04}"), vec![b'k'; 100]).unwrap();
        }
        // The default keyspace's flush starts a new WAL; `ks` still needs the old one.
        db.put("d", "1").unwrap();
        db.flush().unwrap();
        for i in 0..20 {
            db.put(format!("new{i:04}"), "x").unwrap();
        }
        db.close().unwrap();
    }
    let wals = files(&dir, ".log");
    assert!(wals.len() >= 2, "two WALs: {wals:?}");
    let older = &wals[0];
    assert!(verify(&dir).status.success(), "clean before the cut");
    let len = std::fs::metadata(older).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(older).unwrap().set_len(len / 2).unwrap();
    let o = verify(&dir);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains(&format!("DAMAGED {}", older.display())), "{out}");
}

/// Regression: with the WALs deleted, `verify` exited 0 (the writes in them
/// were gone); it names what open refuses, with keyspaces or without.
#[test]
fn deleted_wals_are_damage() {
    for keyspaces in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        {
            let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
            if keyspaces {
                db.create_keyspace("ks", strata::KeyspaceOptions::default()).unwrap().put("k", "v").unwrap();
            }
            db.put("d", "1").unwrap();
            db.close().unwrap();
        }
        assert!(verify(&dir).status.success(), "clean before the delete");
        for wal in files(&dir, ".log") {
            std::fs::remove_file(wal).unwrap();
        }
        let o = verify(&dir);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "keyspaces {keyspaces}: {out}");
        assert!(out.contains("DAMAGED") && out.contains(".log"), "{out}");
        assert!(strata::Db::open(&dir, strata::Options::default()).is_err(), "open refuses it too");
    }
}
