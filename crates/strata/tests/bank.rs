//! The bank test: threads move money between accounts in two keyspaces in
//! random transactions (optimistic and pessimistic), some of them aborted,
//! while a reader sums every balance at snapshots and flushes and compactions
//! run; the total never changes, under every policy. Then the same transfers
//! in a child process killed with SIGKILL at a random moment: the reopened
//! database still holds the whole total.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{
    CompactionStyle, Db, Error, Keyspace, KeyspaceOptions, MemVfs, OptimisticTransactionDb, Options,
    ReadOptions, Transaction, TransactionDb, TransactionOptions, WriteOptions,
};

const ACCOUNTS: u32 = 16;
const START: u64 = 1000;
const TOTAL: u64 = 2 * ACCOUNTS as u64 * START;

enum Bank {
    Optimistic(OptimisticTransactionDb),
    Pessimistic(TransactionDb),
}

impl Bank {
    fn open(path: &str, pessimistic: bool, opts: Options) -> Bank {
        if pessimistic {
            Bank::Pessimistic(TransactionDb::open(path, opts).unwrap())
        } else {
            Bank::Optimistic(OptimisticTransactionDb::open(path, opts).unwrap())
        }
    }

    fn db(&self) -> &Db {
        match self {
            Bank::Optimistic(d) => d.db(),
            Bank::Pessimistic(d) => d.db(),
        }
    }

    fn begin(&self, wo: &WriteOptions) -> Transaction {
        // Long lock waits: a pessimistic transfer ends by deadlock or commit.
        let opts = TransactionOptions::default()
            .with_write_options(wo.clone())
            .with_lock_timeout(Duration::from_secs(600));
        match self {
            Bank::Optimistic(d) => d.begin_with(&opts),
            Bank::Pessimistic(d) => d.begin_with(&opts),
        }
    }
}

fn account(i: u32) -> Vec<u8> {
    format!("acct{i:02}").into_bytes()
}

fn amount(v: Option<Vec<u8>>) -> u64 {
    String::from_utf8(v.expect("every account exists")).unwrap().parse().unwrap()
}

fn keyspace_options(style: &CompactionStyle) -> KeyspaceOptions {
    KeyspaceOptions::default()
        .with_compaction_style(style.clone())
        .with_write_buffer_size(4 << 10)
        .with_target_file_size_base(4 << 10)
        .with_max_bytes_for_level_base(16 << 10)
        .with_level0_file_num_compaction_trigger(2)
}

/// Creates the accounts, half in the default keyspace, half in "savings".
fn open_bank(path: &str, pessimistic: bool, opts: Options, style: &CompactionStyle) -> (Bank, Keyspace) {
    let bank = Bank::open(path, pessimistic, opts);
    let savings = match bank.db().keyspace("savings") {
        Ok(ks) => ks,
        Err(_) => {
            let ks = bank.db().create_keyspace("savings", keyspace_options(style)).unwrap();
            let mut b = strata::WriteBatch::new();
            for i in 0..ACCOUNTS {
                b.put(account(i), START.to_string());
                b.put_cf(&ks, account(i), START.to_string());
            }
            bank.db().write_opt(b, &WriteOptions::default().with_sync(true)).unwrap();
            ks
        }
    };
    (bank, savings)
}

/// One random transfer, retried until it commits or is aborted on purpose.
/// Returns whether it committed.
fn transfer(bank: &Bank, savings: &Keyspace, rng: &mut StdRng, wo: &WriteOptions) -> bool {
    let from = (rng.gen_range(0..ACCOUNTS), rng.gen_bool(0.5));
    let mut to = (rng.gen_range(0..ACCOUNTS), rng.gen_bool(0.5));
    if to == from {
        to.0 = (to.0 + 1) % ACCOUNTS;
    }
    let sum = rng.gen_range(1..50);
    let abort = rng.gen_bool(0.1);
    let default = bank.db().default_keyspace();
    let ks = |in_savings: bool| if in_savings { savings } else { &default };
    loop {
        let mut t = bank.begin(wo);
        let r = (|| -> Result<bool, Error> {
            let a = amount(t.get_for_update_cf(ks(from.1), account(from.0))?);
            let b = amount(t.get_for_update_cf(ks(to.1), account(to.0))?);
            let moved = sum.min(a);
            t.put_cf(ks(from.1), account(from.0), (a - moved).to_string())?;
            t.put_cf(ks(to.1), account(to.0), (b + moved).to_string())?;
            Ok(true)
        })();
        match r {
            Ok(_) if abort => {
                t.rollback();
                return false;
            }
            Ok(_) => match t.commit() {
                Ok(()) => return true,
                Err(e) if e.is_retryable() => continue,
                Err(e) => panic!("commit: {e}"),
            },
            Err(e) if e.is_retryable() => continue,
            Err(e) => panic!("transfer: {e}"),
        }
    }
}

/// The sum of every balance as one snapshot sees it.
fn total_at_snapshot(db: &Db, savings: &Keyspace) -> u64 {
    let snap = db.snapshot();
    let ro = ReadOptions::default().with_snapshot(&snap);
    (0..ACCOUNTS)
        .map(|i| {
            amount(db.get_opt(account(i), &ro).unwrap()) + amount(savings.get_opt(account(i), &ro).unwrap())
        })
        .sum()
}

fn run_bank(style: &CompactionStyle, pessimistic: bool) {
    let label = format!("{} {}", style.name(), if pessimistic { "pessimistic" } else { "optimistic" });
    let opts = common::policy_options(style, Arc::new(MemVfs::new())).with_write_buffer_size(4 << 10);
    let (bank, savings) = open_bank("/bank", pessimistic, opts, style);
    let done = AtomicBool::new(false);
    let committed = thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut sums = 0;
            while !done.load(Ordering::Acquire) || sums == 0 {
                assert_eq!(
                    total_at_snapshot(bank.db(), &savings),
                    TOTAL,
                    "{label}: a snapshot saw money appear or vanish"
                );
                sums += 1;
            }
            sums
        });
        let movers: Vec<_> = (0..3u64)
            .map(|seed| {
                let (bank, savings) = (&bank, &savings);
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed);
                    (0..300).filter(|_| transfer(bank, savings, &mut rng, &WriteOptions::default())).count()
                })
            })
            .collect();
        let committed: usize = movers.into_iter().map(|m| m.join().unwrap()).sum();
        done.store(true, Ordering::Release);
        assert!(reader.join().unwrap() > 0);
        committed
    });
    assert!(committed > 600, "{label}: only {committed} transfers committed");
    bank.db().wait_for_compactions().unwrap();
    savings.wait_for_compactions().unwrap();
    assert_eq!(total_at_snapshot(bank.db(), &savings), TOTAL, "{label}: after compactions");
    let stats = bank.db().stats();
    assert!(stats.flushes > 0, "{label}: no flush ran during the test");
    let ks = savings.stats();
    eprintln!(
        "{label}: {committed} transfers committed; flushes, compactions: default {} {}, savings {} {}",
        stats.flushes, stats.compactions, ks.flushes, ks.compactions
    );
}

#[test]
fn the_total_never_changes_under_any_policy_with_optimistic_transactions() {
    for style in common::builtin_policies() {
        run_bank(&style, false);
    }
}

#[test]
fn the_total_never_changes_under_any_policy_with_pessimistic_transactions() {
    for style in common::builtin_policies() {
        run_bank(&style, true);
    }
}

// ---------------------------------------------------------------------------
// kill -9

const ENV_DIR: &str = "STRATA_BANK_DIR";
const ENV_KIND: &str = "STRATA_BANK_KIND";
const ENV_STYLE: &str = "STRATA_BANK_STYLE";

fn crash_options(style: &CompactionStyle) -> Options {
    Options::default()
        .with_compaction_style(style.clone())
        .with_write_buffer_size(8 << 10)
        .with_target_file_size_base(4 << 10)
        .with_max_bytes_for_level_base(16 << 10)
        .with_level0_file_num_compaction_trigger(2)
}

/// The child: transfers with synced commits until killed, printing a line
/// after each commit.
#[test]
#[ignore = "run by bank_survives_kill9 as a child process"]
fn bank_child() {
    let Ok(dir) = std::env::var(ENV_DIR) else { return };
    let pessimistic = std::env::var(ENV_KIND).is_ok_and(|k| k == "pessimistic");
    let style = CompactionStyle::from_name(&std::env::var(ENV_STYLE).unwrap()).unwrap();
    let (bank, savings) = open_bank(&dir, pessimistic, crash_options(&style), &style);
    let wo = WriteOptions::default().with_sync(true);
    // Three movers, so several commits are in flight when the kill comes.
    thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let mut rng = StdRng::from_entropy();
                loop {
                    if transfer(&bank, &savings, &mut rng, &wo) {
                        let mut out = std::io::stdout().lock();
                        writeln!(out, "committed").unwrap();
                        out.flush().unwrap();
                    }
                }
            });
        }
    });
}

#[test]
fn bank_survives_kill9() {
    let exe = std::env::current_exe().unwrap();
    let mut rng = StdRng::seed_from_u64(0xba4c);
    for style in common::builtin_policies() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("bank");
        for kind in ["optimistic", "pessimistic"] {
            let label = format!("{} {kind}", style.name());
            let mut child = Command::new(&exe)
                .args(["bank_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
                .env(ENV_DIR, &dir)
                .env(ENV_KIND, kind)
                .env(ENV_STYLE, style.name())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            // Wait for a few commits, then kill at a random moment after.
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let want = rng.gen_range(10..300);
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut seen = 0;
            while seen < want {
                assert!(Instant::now() < deadline, "{label}: the child committed only {seen} transfers");
                match lines.next() {
                    Some(Ok(line)) => seen += usize::from(line == "committed"),
                    _ => panic!("{label}: the child stopped after {seen} commits"),
                }
            }
            child.kill().unwrap();
            child.wait().unwrap();
            let db = Db::open(&dir, Options::default()).unwrap_or_else(|e| panic!("{label}: reopen: {e}"));
            let savings = db.keyspace("savings").unwrap();
            assert_eq!(total_at_snapshot(&db, &savings), TOTAL, "{label}: after kill -9");
            eprintln!(
                "{label}: killed after {seen} synced commits, {} table files",
                db.property_int("rocksdb.num-files-at-level0").unwrap()
            );
            db.close().unwrap();
        }
    }
}
