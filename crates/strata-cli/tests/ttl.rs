//! The `strata` tool on a TTL database (issue 28): reading commands print
//! values without their write-time stamps and write nothing; writing
//! commands are refused with a clear message.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use strata::ttl::{ManualClock, TtlDb};
use strata::{KeyspaceOptions, Options};

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().expect("run strata")
}

fn ok(args: &[&str]) -> String {
    let o = strata(args);
    assert!(o.status.success(), "strata {args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let o = strata(args);
    assert!(!o.status.success(), "strata {args:?} succeeded: {}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A TTL database: default keyspace (1 h TTL) with `apple`, `apricot`,
/// `banana` written now; keyspace `short` (1 h TTL) whose value was written
/// 2 h ago by a hand-set clock (the tool reads the system clock);
/// keyspace `plain` of plain values.
fn ttl_database(dir: &Path) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let hour = Duration::from_secs(3600);
    let clock = Arc::new(ManualClock::new(now - 2 * 3_600_000));
    let db = TtlDb::open_with_clock(dir, Options::default(), hour, clock.clone()).unwrap();
    db.create_keyspace("short", KeyspaceOptions::default(), hour).unwrap().put("k", "v").unwrap();
    clock.advance(2 * hour);
    for (k, v) in [("apple", "red"), ("apricot", "orange"), ("banana", "yellow")] {
        db.put(k, v).unwrap();
    }
    db.base_db().create_keyspace("plain", KeyspaceOptions::default()).unwrap().put("p", "as is").unwrap();
    db.close().unwrap();
}

fn files(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().len())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn cli_get_on_a_ttl_database_prints_the_value_without_its_stamp() {
    let tmp = tempfile::tempdir().unwrap();
    ttl_database(tmp.path());
    let d = tmp.path().to_str().unwrap();
    let before = files(tmp.path());
    assert_eq!(ok(&["get", "--db", d, "apple"]), "red\n");
    assert_eq!(ok(&["scan", "--db", d]), "apple\tred\napricot\torange\nbanana\tyellow\n");
    assert_eq!(ok(&["scan", "--db", d, "--prefix", "ap", "--reverse"]), "apricot\torange\napple\tred\n");
    assert_eq!(ok(&["scan", "--db", d, "--from", "apricot", "--to", "b"]), "apricot\torange\n");
    assert_eq!(ok(&["get", "--db", d, "--keyspace", "plain", "p"]), "as is\n", "a plain keyspace as stored");

    let e = fails(&["get", "--db", d, "--keyspace", "short", "k"]);
    assert!(e.contains("key k not found: its value expired (written 72"), "{e}");
    assert_eq!(ok(&["scan", "--db", d, "--keyspace", "short"]), "", "expired values are hidden");
    assert!(fails(&["get", "--db", d, "nope"]).contains("key nope not found"));

    // Reading wrote nothing; writing is refused.
    assert_eq!(files(tmp.path()), before, "reading commands never write");
    let e = fails(&["put", "--db", d, "k", "v"]);
    assert!(e.contains("is a TTL database"), "{e}");
    assert!(!ok(&["stats", "--db", d]).is_empty(), "commands that read no values work");
}
