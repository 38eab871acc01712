//! repair, backup, keyspace creation and removal, delete-range,
//! approximate-size and scan's options, run through the built binary.

mod common;

use std::path::Path;

use common::{arg, fails, ok, stderr, stdout, strata, strata_stdin, tree_state};

/// `Db::open` in this process with the recorded options.
fn open_here(dir: &Path) -> strata::Db {
    common::open_here(dir, strata::Options::load_latest(dir).unwrap())
}

/// A database made by the tool holding `keys`, each with value `v`.
fn db_with(dir: &Path, keys: &[&str]) -> String {
    let d = arg(dir);
    let input: String = keys.iter().map(|k| format!("{k}\tv\n")).collect();
    let o = strata_stdin(&["load", "--db", &d, "--create"], &input);
    assert!(o.status.success(), "{}", stderr(&o));
    d
}

#[test]
fn repair_rebuilds_a_database_and_refuses_one_open_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = db_with(&dir, &["a", "b"]);
    ok(&["compact", "--db", &d]);
    // Without CURRENT the database no longer opens; repair rebuilds it.
    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    fails(&["get", "--db", &d, "a"]);
    let out = ok(&["repair", "--db", &d]);
    assert!(out.contains("tables: ") && out.contains("kept 2 entries"), "{out}");
    assert_eq!(ok(&["scan", "--db", &d]), "a\tv\nb\tv\n");
    // Open in another process (this one): refused, in an operator's words.
    let app = open_here(&dir);
    let err = fails(&["repair", "--db", &d]);
    assert!(err.contains("open in another process") && err.contains("stop that process"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    app.close().unwrap();
    assert!(fails(&["repair", "--db", &d, "--read-only"]).contains("--read-only"));
}

#[test]
fn backup_create_list_verify_restore_purge() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = db_with(&dir, &["k"]);
    let b = arg(&tmp.path().join("backups"));
    // A reading backup command creates no backup directory.
    assert!(fails(&["backup", "list", "--backup-dir", &b]).contains("no backup directory"));
    assert!(!tmp.path().join("backups").exists());
    assert_eq!(
        ok(&["backup", "create", "--db", &d, "--backup-dir", &b]),
        format!("backup 1 written to {b}\n")
    );
    ok(&["put", "--db", &d, "k", "v2"]);
    ok(&["backup", "create", "--db", &d, "--backup-dir", &b]);
    let list = ok(&["backup", "list", "--backup-dir", &b]);
    let ids: Vec<&str> = list.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(ids, ["1", "2"], "{list}");
    assert!(list.contains(" UTC\t") && list.contains(" files\t"), "{list}");
    assert_eq!(ok(&["backup", "verify", "--backup-dir", &b]), "backup 1: ok\nbackup 2: ok\n");
    // Restore the oldest, then (no --id) the newest.
    let r1 = arg(&tmp.path().join("r1"));
    ok(&["backup", "restore", "--backup-dir", &b, "--id", "1", &r1]);
    assert_eq!(ok(&["get", "--db", &r1, "k"]), "v\n");
    let r2 = arg(&tmp.path().join("r2"));
    ok(&["backup", "restore", "--backup-dir", &b, &r2]);
    assert_eq!(ok(&["get", "--db", &r2, "k"]), "v2\n");
    assert!(fails(&["backup", "restore", "--backup-dir", &b, "--id", "9", &r2]).contains("no backup 9"));
    // A damaged file: verify names the backup and exits 1.
    std::fs::write(tmp.path().join("backups/private/2/CURRENT"), "garbage\n").unwrap();
    let o = strata(&["backup", "verify", "--backup-dir", &b]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("backup 1: ok\nbackup 2: DAMAGED"), "{}", stdout(&o));
    assert_eq!(ok(&["backup", "purge", "--backup-dir", &b, "--keep", "1"]), "deleted 1 backups\n");
    assert!(ok(&["backup", "list", "--backup-dir", &b]).starts_with("2\t"));
    ok(&["backup", "delete", "--backup-dir", &b, "--id", "2"]);
    assert_eq!(ok(&["backup", "list", "--backup-dir", &b]), "");
}

#[test]
fn create_and_drop_keyspace() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_with(&tmp.path().join("db"), &["k"]);
    assert_eq!(
        ok(&["create-keyspace", "--db", &d, "--policy", "tiered", "users"]),
        "created keyspace \"users\" (policy tiered)\n"
    );
    assert!(ok(&["policy", "--db", &d]).contains("users: tiered"));
    ok(&["put", "--db", &d, "--keyspace", "users", "u1", "ada"]);
    assert_eq!(ok(&["get", "--db", &d, "--keyspace", "users", "u1"]), "ada\n");
    assert!(fails(&["create-keyspace", "--db", &d, "users"]).contains("already exists"));
    assert!(fails(&["drop-keyspace", "--db", &d, "--read-only", "users"]).contains("--read-only"));
    ok(&["drop-keyspace", "--db", &d, "users"]);
    assert_eq!(ok(&["list-keyspaces", "--db", &d]), "default\n");
    assert!(fails(&["drop-keyspace", "--db", &d, "users"]).contains("no keyspace \"users\""));
    // --policy still refuses other commands on an existing database.
    assert!(fails(&["put", "--db", &d, "--policy", "tiered", "k", "v"]).contains("policy --set"));
}

#[test]
fn delete_range_is_half_open_on_the_keyspace() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_with(&tmp.path().join("db"), &["a", "b", "c", "d"]);
    ok(&["create-keyspace", "--db", &d, "ks"]);
    let o = strata_stdin(&["load", "--db", &d, "--keyspace", "ks"], "a\t1\nb\t2\nc\t3\nd\t4\n");
    assert!(o.status.success(), "{}", stderr(&o));
    ok(&["delete-range", "--db", &d, "--keyspace", "ks", "b", "d"]);
    assert_eq!(ok(&["scan", "--db", &d, "--keyspace", "ks"]), "a\t1\nd\t4\n");
    assert_eq!(ok(&["scan", "--db", &d, "--no-value"]), "a\nb\nc\nd\n", "default keyspace untouched");
    assert!(fails(&["delete-range", "--db", &d, "d", "b"]).contains("must sort before"));
}

#[test]
fn approximate_size_reads_only_and_works_beside_an_open_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let keys: Vec<String> = (0..2000).map(|i| format!("key{i:05}")).collect();
    let d = db_with(&dir, &keys.iter().map(String::as_str).collect::<Vec<_>>());
    ok(&["compact", "--db", &d]);
    let size = |from: &str, to: &str| -> u64 {
        ok(&["approximate-size", "--db", &d, from, to]).trim().parse().unwrap()
    };
    let before = tree_state(&dir);
    let all = size("key", "kez");
    assert!(all > 10_000, "{all}");
    assert!(size("key00000", "key00100") < all / 4);
    assert_eq!(size("x", "y"), 0);
    assert_eq!(tree_state(&dir), before, "approximate-size changed the database");
    // Another process has the database open: a read-only open still works.
    let app = open_here(&dir);
    assert_eq!(size("key", "kez"), all);
    app.close().unwrap();
}

#[test]
fn scan_no_value_prints_keys_only() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_with(&tmp.path().join("db"), &["a", "b\\xff"]);
    assert_eq!(ok(&["scan", "--db", &d, "--no-value"]), "a\nb\\xff\n");
    assert_eq!(ok(&["scan", "--db", &d, "--no-value", "--hex", "--reverse"]), "62ff\n61\n");
}

/// As ldb: --from inclusive, --to exclusive, as key bounds in both directions.
#[test]
fn reverse_scan_walks_from_to_backwards() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_with(&tmp.path().join("db"), &["a", "b", "c", "d", "e"]);
    let scan = |extra: &[&str]| {
        let mut args = vec!["scan", "--db", &d, "--no-value"];
        args.extend(extra);
        ok(&args)
    };
    assert_eq!(scan(&["--from", "b", "--to", "d"]), "b\nc\n");
    assert_eq!(scan(&["--reverse", "--from", "b", "--to", "d"]), "c\nb\n");
    assert_eq!(scan(&["--reverse", "--to", "c"]), "b\na\n");
    assert_eq!(scan(&["--reverse", "--from", "d"]), "e\nd\n");
    assert_eq!(scan(&["--reverse", "--to", "e", "--limit", "1"]), "d\n");
    assert_eq!(scan(&["--reverse", "--prefix", "", "--from", "b", "--to", "d"]), "c\nb\n");
    let help = ok(&["scan", "--help"]);
    assert!(help.contains("starting at the last key below `--to`"), "{help}");
}

#[test]
fn put_on_a_missing_database_suggests_create() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nope");
    let d = arg(&dir);
    for args in [vec!["put", "--db", &d, "k", "v"], vec!["load", "--db", &d]] {
        let err = fails(&args);
        assert!(err.contains("add --create"), "{args:?}: {err}");
        assert!(!dir.exists(), "{args:?} created the directory");
    }
    assert!(!fails(&["get", "--db", &d, "k"]).contains("--create"), "get cannot create");
    ok(&["put", "--db", &d, "--create", "k", "v"]);
    assert_eq!(ok(&["get", "--db", &d, "k"]), "v\n");
}

/// Repair keeps what makes a database a TTL one (its recorded TTLs).
#[test]
fn repair_keeps_a_ttl_database_a_ttl_database() {
    use strata::ttl::{recorded_ttls, TtlDb};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let hour = std::time::Duration::from_secs(3600);
    let db = TtlDb::open(&dir, strata::Options::default(), hour).unwrap();
    db.put("k", "v").unwrap();
    db.close().unwrap();
    let d = arg(&dir);
    ok(&["repair", "--db", &d]);
    assert_eq!(recorded_ttls(&dir, &strata::Options::default()).unwrap(), [("default".to_string(), hour)]);
    assert_eq!(ok(&["get", "--db", &d, "k"]), "v\n");
}
