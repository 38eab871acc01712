//! Crash test: a child process writes with `sync` and reports each
//! acknowledged write; the parent SIGKILLs it at random moments, reopens, and
//! checks that every acknowledged write is present and that what survived is a
//! prefix of the write order.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use strata::{Db, Options, WriteBatch, WriteOptions};

const CYCLES: usize = 24;
const ENV_DIR: &str = "STRATA_CRASH_DIR";
const ENV_START: &str = "STRATA_CRASH_START";

fn options() -> Options {
    // Small buffers so that flushes and compactions are often in flight at the kill.
    Options::default()
        .with_write_buffer_size(32 << 10)
        .with_target_file_size_base(16 << 10)
        .with_max_bytes_for_level_base(64 << 10)
        .with_level0_file_num_compaction_trigger(2)
}

fn key(i: u64) -> Vec<u8> {
    format!("{i:010}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(40 + (i % 200) as usize, b'x');
    v
}

/// The child: writes keys start.. in order (single puts and small batches), all
/// with sync, printing the last index of each acknowledged write. Runs until killed.
#[test]
#[ignore = "run by crash_kill9_cycles as a child process"]
fn crash_child() {
    let Ok(dir) = std::env::var(ENV_DIR) else { return };
    let mut i: u64 = std::env::var(ENV_START).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let db = Db::open(&dir, options()).expect("child open");
    let wo = WriteOptions::default().with_sync(true);
    let mut out = std::io::stdout().lock();
    loop {
        if i % 7 == 3 {
            let mut b = WriteBatch::new();
            for j in i..i + 3 {
                b.put(key(j), value(j));
            }
            db.write_opt(b, &wo).expect("child write");
            i += 3;
        } else {
            db.put_opt(key(i), value(i), &wo).expect("child put");
            i += 1;
        }
        writeln!(out, "ack {}", i - 1).expect("stdout");
        out.flush().expect("flush stdout");
    }
}

/// Opens the database and returns n such that exactly keys 0..n exist with
/// the right values (the prefix property); panics otherwise.
fn check_prefix(dir: &Path, acked: Option<u64>, cycle: usize) -> u64 {
    let db = Db::open(dir, options()).unwrap_or_else(|e| panic!("cycle {cycle}: reopen failed: {e}"));
    let mut n = 0u64;
    for kv in db.iter() {
        let (k, v) = kv.unwrap_or_else(|e| panic!("cycle {cycle}: scan failed: {e}"));
        assert_eq!(k, key(n), "cycle {cycle}: not a prefix: key #{n} is {:?}", String::from_utf8_lossy(&k));
        assert_eq!(v, value(n), "cycle {cycle}: wrong value for key #{n}");
        n += 1;
    }
    if let Some(a) = acked {
        assert!(n > a, "cycle {cycle}: acknowledged write {a} lost (only {n} keys survived)");
        assert!(db.get(key(a)).expect("get").is_some(), "cycle {cycle}: get of acked {a} failed");
    }
    db.close().expect("close");
    n
}

#[test]
fn crash_kill9_cycles() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let exe = std::env::current_exe().expect("current_exe");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let mut next = 0u64;
    let mut total_acked = 0u64;
    for cycle in 0..CYCLES {
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(ENV_DIR, &dir)
            .env(ENV_START, next.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("ack ").and_then(|n| n.parse::<u64>().ok()) {
                    let _ = tx.send(n);
                }
            }
        });
        // Wait for the child to start acknowledging, then kill it at a random moment.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut acked = None;
        while acked.is_none() && Instant::now() < deadline {
            if let Ok(n) = rx.recv_timeout(Duration::from_millis(50)) {
                acked = Some(n);
            }
        }
        assert!(acked.is_some(), "cycle {cycle}: child never acknowledged a write");
        std::thread::sleep(Duration::from_millis(rng.gen_range(5..250)));
        child.kill().expect("kill -9");
        child.wait().expect("wait");
        reader.join().expect("reader");
        while let Ok(n) = rx.try_recv() {
            acked = Some(n);
        }
        let survived = check_prefix(&dir, acked, cycle);
        total_acked += acked.map_or(0, |a| a + 1 - next);
        next = survived;
    }
    eprintln!("{CYCLES} kill -9 cycles, {total_acked} acknowledged synced writes, {next} keys at the end");
}
