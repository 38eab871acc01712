//! Runs the built `strata` binary as a user would.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{arg, fails, ok, open_here, stderr, stdout, strata, strata_stdin, tree_state, TreeState};

/// Files in `dir` whose names end in `ext`, sorted.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    v.sort();
    v
}

#[test]
fn put_get_scan_round_trip_escaped_and_hex() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let d = arg(&db);
    ok(&["put", "--db", &d, "--create", "apple", "red"]);
    ok(&["put", "--db", &d, "bin\\x00key", "v\\x5c\\xff"]);
    ok(&["put", "--db", &d, "--hex", "ff01", "00"]);
    assert_eq!(ok(&["get", "--db", &d, "apple"]), "red\n");
    assert_eq!(ok(&["get", "--db", &d, "bin\\x00key"]), "v\\x5c\\xff\n");
    assert_eq!(ok(&["get", "--db", &d, "--hex", "62696e006b6579"]), "765cff\n");
    assert_eq!(ok(&["scan", "--db", &d]), "apple\tred\nbin\\x00key\tv\\x5c\\xff\n\\xff\\x01\t\\x00\n");
    assert_eq!(ok(&["scan", "--db", &d, "--hex", "--reverse", "--limit", "1"]), "ff01\t00\n");
    ok(&["delete", "--db", &d, "apple"]);
    let o = strata(&["get", "--db", &d, "apple"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    let o = strata(&["get", "--db", &d, "--hex", "xyz"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad hex string"), "{}", stderr(&o));
}

#[test]
fn load_from_stdin_then_scan_with_limit_prefix_and_range() {
    let tmp = tempfile::tempdir().unwrap();
    let d = arg(&tmp.path().join("db"));
    let input: String =
        (0..500).map(|i| format!("user:{i:04}\tv{i}\n")).chain(["other\tx\n".into()]).collect();
    let o = strata_stdin(&["load", "--db", &d, "--create", "--batch", "64"], &input);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "501\n");
    assert_eq!(
        ok(&["scan", "--db", &d, "--prefix", "user:", "--limit", "2"]),
        "user:0000\tv0\nuser:0001\tv1\n"
    );
    assert_eq!(ok(&["scan", "--db", &d, "--prefix", "oth"]), "other\tx\n");
    assert_eq!(ok(&["scan", "--db", &d, "--from", "user:0498"]), "user:0498\tv498\nuser:0499\tv499\n");
    assert_eq!(
        ok(&[
            "scan",
            "--db",
            &d,
            "--prefix",
            "user:",
            "--from",
            "user:0010",
            "--to",
            "user:0012",
            "--reverse"
        ]),
        "user:0011\tv11\nuser:0010\tv10\n"
    );
    assert_eq!(ok(&["scan", "--db", &d]).lines().count(), 501);
    // CSV with quotes.
    let o = strata_stdin(&["load", "--db", &d, "--csv"], "\"a,b\",\"say \"\"hi\"\"\"\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ok(&["get", "--db", &d, "a,b"]), "say \"hi\"\n");
    // A bad line fails with its number.
    let o = strata_stdin(&["load", "--db", &d], "k\tv\nno tab here\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
}

/// A database with a flushed table and a WAL holding unflushed writes.
fn populated(dir: &Path) {
    let db = strata::Db::open(dir, strata::Options::default()).unwrap();
    db.put("k1", "v1").unwrap();
    db.delete("gone").unwrap();
    db.flush().unwrap();
    let ks = db.create_keyspace("users", strata::KeyspaceOptions::default()).unwrap();
    ks.put("u1", "ada").unwrap();
    ks.flush().unwrap();
    db.put("in-wal", "w").unwrap();
    db.close().unwrap();
}

#[test]
fn dump_table_manifest_and_wal_of_a_real_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    let sst = files(&dir, ".sst");
    assert_eq!(sst.len(), 1);
    let out = ok(&["dump-table", sst[0].to_str().unwrap(), "--entries"]);
    for want in
        ["entries          2 (1 deletions)", "data block 0", "filter block", "k1 @ ", "Put => v1", "gone @ "]
    {
        assert!(out.contains(want), "{want:?} missing from:\n{out}");
    }
    assert!(out.contains("Delete => "), "{out}");
    let out = ok(&["dump-manifest", "--db", &d]);
    for want in ["(CURRENT)", "add file", "add keyspace     1 \"users\"", "keyspace 1 \"users\":", "u1 @ "] {
        assert!(out.contains(want), "{want:?} missing from:\n{out}");
    }
    let wals = files(&dir, ".log");
    let all: String = wals.iter().map(|w| ok(&["dump-wal", w.to_str().unwrap()])).collect();
    assert!(all.contains("Put keyspace 0 in-wal => w"), "{all}");
    assert!(ok(&["list-keyspaces", "--db", &d]) == "default\nusers\n");
}

#[test]
fn keyspace_reads_and_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    assert_eq!(ok(&["get", "--db", &d, "--keyspace", "users", "u1"]), "ada\n");
    ok(&["put", "--db", &d, "--keyspace", "users", "u2", "grace"]);
    assert_eq!(ok(&["scan", "--db", &d, "--keyspace", "users"]), "u1\tada\nu2\tgrace\n");
    assert_eq!(
        strata(&["get", "--db", &d, "u2"]).status.code(),
        Some(1),
        "u2 is not in the default keyspace"
    );
}

#[test]
fn verify_is_clean_then_names_a_damaged_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    let out = ok(&["verify", "--db", &d]);
    assert!(out.contains(", 0 damaged"), "{out}");
    let sst = files(&dir, ".sst").remove(0);
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[3] ^= 0x40; // inside the first data block
    std::fs::write(&sst, bytes).unwrap();
    let o = strata(&["verify", "--db", &d]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let name = sst.file_name().unwrap().to_str().unwrap();
    assert!(
        stdout(&o).contains(&format!("DAMAGED {}", sst.display())),
        "{name} not named in:\n{}",
        stdout(&o)
    );
}

#[test]
fn verify_finds_damage_in_a_keyspace_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let ks_dir = dir.join("keyspaces").join("1");
    let sst = files(&ks_dir, ".sst").remove(0);
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[2] ^= 0x01;
    std::fs::write(&sst, bytes).unwrap();
    let o = strata(&["verify", "--db", &arg(&dir)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains(&sst.display().to_string()), "{}", stdout(&o));
}

#[test]
fn checkpoint_then_get_from_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let cp = tmp.path().join("cp");
    ok(&["checkpoint", "--db", &arg(&dir), cp.to_str().unwrap()]);
    assert_eq!(ok(&["get", "--db", &arg(&cp), "in-wal"]), "w\n");
    assert_eq!(ok(&["get", "--db", &arg(&cp), "--keyspace", "users", "u1"]), "ada\n");
}

#[test]
fn missing_database_is_exit_1_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nope");
    let d = arg(&dir);
    for args in [
        vec!["get", "--db", &d, "k"],
        vec!["put", "--db", &d, "k", "v"],
        vec!["scan", "--db", &d],
        vec!["verify", "--db", &d],
        vec!["stats", "--db", &d],
        vec!["compact", "--db", &d],
        vec!["dump-manifest", "--db", &d],
        vec!["list-keyspaces", "--db", &d],
    ] {
        let o = strata(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(err.starts_with("strata: error: ") && err.contains("nope"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!dir.exists(), "{args:?} created the directory");
    }
    // An empty directory is not a database either, and stays empty.
    std::fs::create_dir(&dir).unwrap();
    let o = strata(&["get", "--db", &d, "k"]);
    assert_eq!(o.status.code(), Some(1));
    let o = strata(&["put", "--db", &d, "k", "v"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no CURRENT file"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn usage_errors_are_exit_2() {
    assert_eq!(strata(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(strata(&["get"]).status.code(), Some(2));
    assert!(ok(&["--help"]).contains("dump-table"));
}

#[test]
fn read_only_refuses_writes_and_reads_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    for args in [
        vec!["put", "--db", &d, "--read-only", "k", "v"],
        vec!["delete", "--db", &d, "--read-only", "k1"],
        vec!["compact", "--db", &d, "--read-only"],
    ] {
        let o = strata(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).contains("--read-only"), "{}", stderr(&o));
    }
    let before: Vec<_> = files(&dir, "");
    assert_eq!(ok(&["get", "--db", &d, "k1"]), "v1\n");
    ok(&["scan", "--db", &d]);
    ok(&["stats", "--db", &d]);
    ok(&["properties", "--db", &d]);
    ok(&["verify", "--db", &d]);
    assert_eq!(files(&dir, ""), before, "a reading command changed the directory");
    // --read-only refuses writes only: every keyspace reads.
    assert_eq!(ok(&["get", "--db", &d, "--read-only", "--keyspace", "users", "u1"]), "ada\n");
}

#[test]
fn properties_stats_and_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    assert_eq!(ok(&["properties", "--db", &d, "strata.policy"]), "strata.policy:\nleveled\n\n");
    let o = strata(&["properties", "--db", &d, "no.such"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(ok(&["stats", "--db", &d]).contains("L0"));
    let out = ok(&["policy", "--db", &d]);
    assert!(out.contains("default: leveled") && out.contains("users: leveled"), "{out}");
    ok(&["compact", "--db", &d, "--from", "a", "--to", "z"]);
    assert_eq!(ok(&["get", "--db", &d, "in-wal"]), "w\n");
}

#[test]
fn verify_names_a_damaged_wal_and_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
        for i in 0..200 {
            db.put(format!("key{i:04}"), vec![b'x'; 100]).unwrap();
        }
        db.close().unwrap();
    }
    let d = arg(&dir);
    assert!(ok(&["verify", "--db", &d]).contains(", 0 damaged"));
    // A flipped byte early in the WAL, with valid records after it: damage, not a torn tail.
    let wal = files(&dir, ".log").into_iter().max_by_key(|p| std::fs::metadata(p).unwrap().len()).unwrap();
    let mut bytes = std::fs::read(&wal).unwrap();
    assert!(bytes.len() > 1000, "the WAL holds the writes");
    bytes[20] ^= 0x10;
    std::fs::write(&wal, bytes).unwrap();
    let o = strata(&["verify", "--db", &d]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains(&format!("DAMAGED {}", wal.display())), "{}", stdout(&o));
    // dump-wal reports it as an error too.
    let o = strata(&["dump-wal", wal.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    // The MANIFEST's first record damaged.
    let manifest = files(&dir, "").into_iter().find(|p| p.to_string_lossy().contains("MANIFEST-")).unwrap();
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[10] ^= 0x10;
    std::fs::write(&manifest, bytes).unwrap();
    let o = strata(&["verify", "--db", &d]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains(&format!("DAMAGED {}", manifest.display())), "{}", stdout(&o));
}

#[test]
fn progress_is_plain_lines_when_stderr_is_not_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let d = arg(&tmp.path().join("db"));
    let o = strata_stdin(&["load", "--db", &d, "--create"], "a\t1\nb\t2\n");
    assert!(o.status.success());
    assert_eq!(stderr(&o), "load: 2 done\n", "no control codes on a pipe");
}

#[test]
fn verify_notes_a_torn_wal_tail_without_failing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
        for i in 0..50 {
            db.put(format!("key{i:04}"), vec![b'x'; 100]).unwrap();
        }
        db.close().unwrap();
    }
    let wal = files(&dir, ".log").into_iter().max_by_key(|p| std::fs::metadata(p).unwrap().len()).unwrap();
    let len = std::fs::metadata(&wal).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&wal).unwrap().set_len(len - 7).unwrap();
    let o = strata(&["verify", "--db", &arg(&dir)]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains(&format!("NOTE {}: a torn last record", wal.display())), "{}", stdout(&o));
}

#[test]
fn verify_names_a_missing_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let sst = files(&dir, ".sst").remove(0);
    std::fs::remove_file(&sst).unwrap();
    let o = strata(&["verify", "--db", &arg(&dir)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains(&format!("DAMAGED {}: corruption: live table missing", sst.display())),
        "{}",
        stdout(&o)
    );
}

/// Regression: `verify` looked for every table in the database directory
/// only, so a database with data paths (`Options::with_db_paths`) was reported
/// damaged. It now reads them from the OPTIONS file, and `--db-path`.
#[test]
fn verify_finds_tables_in_data_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, a, b) = (tmp.path().join("db"), tmp.path().join("a"), tmp.path().join("b"));
    let opts = strata::Options::default()
        .with_db_paths([a.clone(), b.clone()])
        .with_write_buffer_size(64 << 10)
        .with_target_file_size_base(32 << 10)
        .with_max_bytes_for_level_base(128 << 10);
    let db = strata::Db::open(&dir, opts).unwrap();
    for i in 0..5000 {
        db.put(format!("key{i:06}"), format!("value-{i}-{}", "x".repeat(60))).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.close().unwrap();
    let in_paths = files(&a, ".sst").len() + files(&b, ".sst").len();
    assert!(in_paths > 0, "the load placed no table in a data path");
    let d = arg(&dir);
    // The OPTIONS file records the data paths.
    assert!(ok(&["verify", "--db", &d]).contains(" 0 damaged"));
    for f in files(&dir, "") {
        if f.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-") {
            std::fs::remove_file(f).unwrap();
        }
    }
    let o = strata(&["verify", "--db", &d]);
    assert_eq!(o.status.code(), Some(1), "without an OPTIONS file or --db-path the tables there are missing");
    assert!(stdout(&o).contains("live table missing"), "{}", stdout(&o));
    let (pa, pb) = (arg(&a), arg(&b));
    let out = ok(&["verify", "--db", &d, "--db-path", &pa, "--db-path", &pb]);
    assert!(out.contains(" 0 damaged"), "{out}");
    // Damage in a data path is found and named there.
    let victim = files(&a, ".sst").into_iter().chain(files(&b, ".sst")).next().unwrap();
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&victim, bytes).unwrap();
    let o = strata(&["verify", "--db", &d, "--db-path", &pa, "--db-path", &pb]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains(&format!("DAMAGED {}", victim.display())), "{}", stdout(&o));
}

/// Regression: `dump-table` printed a range-deletion block's handle only,
/// never its tombstones.
#[test]
fn dump_table_prints_range_tombstones() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
    db.put("a", "1").unwrap();
    db.delete_range("b", "d").unwrap();
    db.delete_range("x\u{1}", "z").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let sst = files(&dir, ".sst");
    assert_eq!(sst.len(), 1);
    let out = ok(&["dump-table", sst[0].to_str().unwrap()]);
    for want in ["(2 tombstones)", "[b, d) @ ", "[x\\x01, z) @ "] {
        assert!(out.contains(want), "{want:?} missing from:\n{out}");
    }
}

#[test]
fn policy_comes_from_the_database_and_set_changes_the_default_keyspace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = arg(&dir);
    ok(&["put", "--db", &d, "--create", "--policy", "lsbm", "k1", "v1"]);
    // Every later command opens with the options the database records.
    let out = ok(&["policy", "--db", &d]);
    assert!(out.contains("default: lsbm"), "{out}");
    assert_eq!(ok(&["properties", "--db", &d, "strata.policy"]), "strata.policy:\nlsbm\n\n");
    // --policy is an option of the commands that may create a database only.
    let o = strata(&["get", "--db", &d, "--policy", "tiered", "k1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unexpected argument '--policy'"), "{}", stderr(&o));
    let o = strata(&["put", "--db", &d, "--policy", "tiered", "k1", "v"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("policy --set"), "{}", stderr(&o));

    let o = strata(&["policy", "--db", &d, "--set", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown compaction policy"), "{}", stderr(&o));
    let o = strata(&["policy", "--db", &d, "--read-only", "--set", "tiered"]);
    assert_eq!(o.status.code(), Some(1));

    let out = ok(&["policy", "--db", &d, "--set", "garnering"]);
    assert!(out.contains("default: lsbm -> garnering"), "{out}");
    assert!(out.contains("LSbM compaction buffers are dropped"), "{out}");
    assert!(out.contains("deepest level in use"), "{out}");
    assert!(ok(&["policy", "--db", &d]).contains("default: garnering"));
    assert_eq!(ok(&["get", "--db", &d, "k1"]), "v1\n");
    let out = ok(&["policy", "--db", &d, "--set", "garnering"]);
    assert!(out.contains("already garnering"), "{out}");
    let out = ok(&["policy", "--db", &d, "--set", "leveled"]);
    assert!(out.contains("default: garnering -> leveled") && !out.contains("LSbM"), "{out}");
}

#[test]
fn a_database_without_an_options_file_opens_with_defaults_and_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = arg(&dir);
    ok(&["put", "--db", &d, "--create", "k", "v"]);
    for f in files(&dir, "") {
        if f.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-") {
            std::fs::remove_file(f).unwrap();
        }
    }
    let o = strata(&["get", "--db", &d, "k"]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), "v\n");
    assert!(stderr(&o).contains("no OPTIONS file"), "{}", stderr(&o));
}

/// `policy --set --keyspace`: the change is recorded in the database (the
/// next open without any option uses it), the keyspace's data reads back,
/// and the default keyspace keeps its own policy.
#[test]
fn policy_set_changes_a_keyspace_and_the_database_records_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    assert!(ok(&["policy", "--db", &d]).contains("users: leveled"));
    let out = ok(&["policy", "--db", &d, "--keyspace", "users", "--set", "lwc"]);
    assert!(out.contains("users: leveled -> lwc"), "{out}");
    let out = ok(&["policy", "--db", &d]);
    assert!(out.contains("users: lwc") && out.contains("default: leveled"), "{out}");
    assert_eq!(ok(&["get", "--db", &d, "--keyspace", "users", "u1"]), "ada\n");
    // The engine's own record, not only the OPTIONS file: a plain open sees it.
    let db = open_here(&dir, strata::Options::default());
    assert_eq!(db.keyspace("users").unwrap().property("strata.policy").unwrap(), "lwc");
}

/// A path, its bytes (none for a directory) and its modification time.
/// The paths whose bytes or mtime differ between two [`tree_state`]s, or
/// that only one has.
fn changed(before: &TreeState, after: &TreeState) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = before
        .iter()
        .chain(after)
        .filter(|e| !(before.contains(e) && after.contains(e)))
        .map(|e| e.0.clone())
        .collect();
    paths.dedup();
    paths
}

/// Every reading command on keyspace `users` (whose scan is `users`) and on
/// the default keyspace.
fn read_everything(d: &str, users: &str) {
    assert_eq!(ok(&["get", "--db", d, "--keyspace", "users", "u1"]), "ada\n");
    assert_eq!(ok(&["scan", "--db", d, "--keyspace", "users"]), users);
    let first = users.lines().next().unwrap();
    assert_eq!(
        ok(&["scan", "--db", d, "--keyspace", "users", "--prefix", "u", "--limit", "1"]),
        format!("{first}\n")
    );
    assert!(ok(&["stats", "--db", d, "--keyspace", "users"]).contains("L0"));
    assert!(ok(&["properties", "--db", d, "--keyspace", "users"]).contains("strata.policy"));
    let out = ok(&["policy", "--db", d]);
    assert!(out.contains("default: leveled") && out.contains("users: leveled"), "{out}");
    assert_eq!(ok(&["get", "--db", d, "in-wal"]), "w\n");
    assert_eq!(ok(&["list-keyspaces", "--db", d]), "default\nusers\n");
}

/// Regression: `get --keyspace` (and scan, stats, properties, policy on a
/// database with keyspaces) opened the database read-write, which rewrote
/// its MANIFESTs and WAL (and so could change what it records, such as its
/// options).
#[test]
fn cli_get_on_a_keyspace_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    let before = tree_state(&dir);
    read_everything(&d, "u1\tada\n");
    assert_eq!(changed(&before, &tree_state(&dir)), Vec::<PathBuf>::new(), "changed by a reading command");
}

/// Regression: reading a keyspace other than the default (then a read-write
/// open) turned compactions off for that open, and the open recorded those
/// options in the database, so every later open ran with compactions off.
/// A read now records nothing at all.
#[test]
fn reading_a_keyspace_leaves_its_compactions_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    let before = tree_state(&dir);
    assert_eq!(ok(&["get", "--db", &d, "--keyspace", "users", "u1"]), "ada\n");
    assert_eq!(ok(&["scan", "--db", &d, "--keyspace", "users"]), "u1\tada\n");
    assert_eq!(changed(&before, &tree_state(&dir)), Vec::<PathBuf>::new(), "changed by a read");
    // A plain open uses what the database recorded; its OPTIONS file shows it.
    open_here(&dir, strata::Options::default()).close().unwrap();
    let newest =
        files(&dir, "").into_iter().filter(|f| f.to_string_lossy().contains("OPTIONS-")).max().unwrap();
    let text = std::fs::read_to_string(newest).unwrap();
    assert!(!text.contains("disable_auto_compactions=true"), "{text}");
}

/// Regression: reading a keyspace (or `policy` on a database with keyspaces)
/// failed with "database is locked" while an application had the database
/// open. Another process holds it here: the test's own open takes the LOCK.
#[test]
fn cli_reads_every_keyspace_while_the_database_is_open_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated(&dir);
    let d = arg(&dir);
    let app = open_here(&dir, strata::Options::load_latest(&dir).unwrap());
    app.keyspace("users").unwrap().put("u2", "grace").unwrap();
    assert!(matches!(strata::Db::open(&dir, strata::Options::default()), Err(strata::Error::Locked(_))));
    assert_eq!(ok(&["get", "--db", &d, "--keyspace", "users", "u2"]), "grace\n", "a write in the app's WAL");
    read_everything(&d, "u1\tada\nu2\tgrace\n");
    let o = strata(&["put", "--db", &d, "--keyspace", "users", "u3", "x"]);
    assert_eq!(o.status.code(), Some(1), "a write still needs the LOCK");
    app.close().unwrap();
}

/// Regression: a database using a merge operator could not be read at all
/// ("supply it in the options given to load_latest_with"); the engine's
/// named operators are rebuilt by name, for reads and writes.
#[test]
fn cli_reads_a_database_with_a_named_merge_operator() {
    use strata::merge_operators::{StringAppend, UInt64Add};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db =
        strata::Db::open(&dir, strata::Options::default().with_merge_operator(Arc::new(UInt64Add))).unwrap();
    let tags = db
        .create_keyspace(
            "tags",
            strata::KeyspaceOptions::default().with_merge_operator(Arc::new(StringAppend::default())),
        )
        .unwrap();
    db.merge("n", 2u64.to_le_bytes()).unwrap();
    db.flush().unwrap();
    db.merge("n", 3u64.to_le_bytes()).unwrap();
    tags.put("t", "a").unwrap();
    tags.merge("t", "b").unwrap();
    db.close().unwrap();
    let d = arg(&dir);
    assert_eq!(ok(&["get", "--db", &d, "--hex", "6e"]), format!("{}\n", "0500000000000000"));
    assert_eq!(ok(&["scan", "--db", &d, "--keyspace", "tags"]), "t\ta,b\n");
    ok(&["put", "--db", &d, "--keyspace", "tags", "u", "x"]);
    assert_eq!(ok(&["get", "--db", &d, "--keyspace", "tags", "t"]), "a,b\n");
}

/// Regression: a database whose merge operator is a custom one could not be
/// read by the tool, and the error told the operator to call a library
/// function. Reading commands now show a key's operands unmerged, labelled;
/// they write nothing; writing commands are refused in operator's terms.
#[test]
fn cli_reads_a_database_whose_merge_operator_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let concat =
        || strata::associative_merge_operator("my.op", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    let db = strata::Db::open(&dir, strata::Options::default().with_merge_operator(concat())).unwrap();
    let ks =
        db.create_keyspace("ks", strata::KeyspaceOptions::default().with_merge_operator(concat())).unwrap();
    for t in [db.default_keyspace(), ks] {
        t.merge("a", "x").unwrap();
        t.flush().unwrap();
        t.merge("a", "y").unwrap();
        t.put("b", "base").unwrap();
        t.merge("b", "z").unwrap();
        t.put("plain", "v").unwrap();
    }
    db.close().unwrap();
    let d = arg(&dir);
    let before = tree_state(&dir);
    let label = "[unmerged: merge operator \"my.op\" not available]";
    for ks in ["default", "ks"] {
        assert_eq!(
            ok(&["get", "--db", &d, "--keyspace", ks, "a"]),
            format!("{label} merge operands: x | y\n")
        );
        assert_eq!(
            ok(&["get", "--db", &d, "--keyspace", ks, "b"]),
            format!("{label} base value: base; merge operands: z\n")
        );
        assert_eq!(ok(&["get", "--db", &d, "--keyspace", ks, "plain"]), "v\n");
        assert_eq!(
            ok(&["scan", "--db", &d, "--keyspace", ks]),
            format!("a\t{label} merge operands: x | y\nb\t{label} base value: base; merge operands: z\nplain\tv\n")
        );
        assert_eq!(
            ok(&["scan", "--db", &d, "--keyspace", ks, "--hex", "--reverse", "--limit", "1", "--to", "62"]),
            format!("61\t{label} merge operands: 78 | 79\n")
        );
        ok(&["stats", "--db", &d, "--keyspace", ks]);
    }
    assert!(ok(&["policy", "--db", &d]).contains("ks: leveled"));
    assert_eq!(changed(&before, &tree_state(&dir)), Vec::<PathBuf>::new(), "changed by a reading command");
    for args in [
        vec!["put", "--db", &d, "k", "v"],
        vec!["compact", "--db", &d],
        vec!["policy", "--db", &d, "--set", "tiered"],
    ] {
        let o = strata(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = stderr(&o);
        assert!(e.contains("\"my.op\"") && e.contains("does not have"), "{args:?}: {e}");
        assert!(!e.contains("load_latest") && !e.contains("Options::"), "speaks to an operator: {e}");
    }
    assert_eq!(changed(&before, &tree_state(&dir)), Vec::<PathBuf>::new(), "changed by a refused write");
}

/// Regression: `verify` of a database with a custom merge operator could not
/// load its OPTIONS file, so it missed the data paths recorded there and
/// called the tables in them missing.
#[test]
fn verify_finds_data_paths_of_a_database_whose_merge_operator_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, a) = (tmp.path().join("db"), tmp.path().join("a"));
    let concat =
        strata::associative_merge_operator("my.op", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    let opts = strata::Options::default()
        .with_db_paths([a.clone()])
        .with_merge_operator(concat)
        .with_write_buffer_size(64 << 10)
        .with_target_file_size_base(32 << 10)
        .with_max_bytes_for_level_base(128 << 10);
    let db = strata::Db::open(&dir, opts).unwrap();
    for i in 0..5000 {
        db.merge(format!("key{i:06}"), format!("value-{i}-{}", "x".repeat(60))).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.close().unwrap();
    assert!(!files(&a, ".sst").is_empty(), "no table in the data path");
    let out = ok(&["verify", "--db", &arg(&dir)]);
    assert!(out.contains(" 0 damaged"), "{out}");
}

/// Issue: `--keyspace`, `--hex`, `--create` and `--policy` were global, shown
/// on (and silently ignored by) commands they do not apply to.
#[test]
fn options_are_shown_and_accepted_only_on_the_commands_they_apply_to() {
    let help = |cmd: &str| ok(&[cmd, "--help"]);
    let get = help("get");
    for flag in ["--db", "--keyspace", "--hex", "--read-only"] {
        assert!(get.contains(flag), "get --help lacks {flag}:\n{get}");
    }
    assert!(!get.contains("--create") && !get.contains("--policy"), "{get}");
    let put = help("put");
    assert!(put.contains("--create") && put.contains("--policy"), "{put}");
    let wal = help("dump-wal");
    for flag in ["--db", "--keyspace", "--create", "--read-only"] {
        assert!(!wal.contains(flag), "dump-wal --help shows {flag}:\n{wal}");
    }
    assert!(!help("list-keyspaces").contains("--keyspace"));
    assert!(help("create-keyspace").contains("--policy"));
    for args in [
        &["dump-wal", "--keyspace", "ks", "x.log"][..],
        &["verify", "--db", "d", "--hex"],
        &["get", "--create", "k"],
    ] {
        let o = strata(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("unexpected argument"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn write_sst_then_ingest_into_a_keyspace() {
    let tmp = tempfile::tempdir().unwrap();
    let d = arg(&tmp.path().join("db"));
    let sst = arg(&tmp.path().join("load.sst"));
    let input: String = (0..300).map(|i| format!("user:{i:04}\tv{i}\n")).collect();
    let o = strata_stdin(&["write-sst", &sst], &input);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("300 entries, "), "{}", stdout(&o));
    ok(&["put", "--db", &d, "--create", "user:0005", "old"]);
    ok(&["create-keyspace", "--db", &d, "users"]);
    ok(&["ingest", "--db", &d, "--keyspace", "users", "--move", &sst]);
    assert!(!tmp.path().join("load.sst").exists(), "--move removes the file");
    assert_eq!(ok(&["get", "--db", &d, "--keyspace", "users", "user:0005"]), "v5\n");
    assert_eq!(ok(&["get", "--db", &d, "user:0005"]), "old\n", "the default keyspace is untouched");
    assert_eq!(ok(&["scan", "--db", &d, "--keyspace", "users"]).lines().count(), 300);
    // Keys out of order are refused with their line, and no file is left.
    let bad = arg(&tmp.path().join("bad.sst"));
    let o = strata_stdin(&["write-sst", &bad], "b\t1\na\t2\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 2") && stderr(&o).contains("increasing"), "{}", stderr(&o));
    assert!(!tmp.path().join("bad.sst").exists());
    // Ingesting needs a writable open.
    let again = arg(&tmp.path().join("again.sst"));
    assert!(strata_stdin(&["write-sst", &again], "z\t1\n").status.success());
    let e = fails(&["ingest", "--db", &d, "--read-only", &again]);
    assert!(e.contains("read-only") || e.contains("read only"), "{e}");
    assert!(tmp.path().join("again.sst").exists());
}

/// Regression: `dump-table` stopped with "bad magic number" at a table whose
/// filter Monkey had rebuilt (a filter patch after the table's footer);
/// `verify` and `get` read such tables too.
#[test]
fn dump_table_verify_and_get_read_a_table_with_a_rebuilt_filter() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts = || {
        strata::Options::default()
            .with_bloom_allocation(strata::BloomAllocation::Monkey)
            .with_write_buffer_size(16 << 10)
            .with_target_file_size_base(8 << 10)
            .with_max_bytes_for_level_base(16 << 10)
            .with_max_bytes_for_level_multiplier(4.0)
    };
    let db = strata::Db::open(&dir, opts()).unwrap();
    for i in 0..20_000u64 {
        db.put(format!("key{:07}", (i * 7919) % 20_000), "value").unwrap();
        if i % 100 == 99 {
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert!(db.stats().filter_rebuilds > 0, "no filter was rebuilt");
    db.close().unwrap();
    let patched: Vec<PathBuf> = files(&dir, ".sst")
        .into_iter()
        .filter(|p| std::fs::read(p).unwrap().ends_with(b"STRAFPAT"))
        .collect();
    assert!(!patched.is_empty(), "no table ends in a filter patch");
    let out = ok(&["dump-table", patched[0].to_str().unwrap()]);
    for want in ["filter patch     footer offset", "filter (replaced)", "patched filter", "data block 0"] {
        assert!(out.contains(want), "{want:?} missing from:\n{out}");
    }
    let d = arg(&dir);
    assert!(ok(&["verify", "--db", &d]).contains(" 0 damaged"));
    assert_eq!(ok(&["get", "--db", &d, "key0012345"]), "value\n");
}
