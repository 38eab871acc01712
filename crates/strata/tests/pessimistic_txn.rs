//! Pessimistic transactions: locks taken as keys are read for update or
//! written, held until the transaction ends, with timeouts and deadlock
//! detection. Every wait here is for a condition (a lock outcome, a thread's
//! end), never for time.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use strata::{
    Error, KeyspaceOptions, MemVfs, Options, Transaction, TransactionDb, TransactionOptions, WriteBatch,
};

fn open() -> TransactionDb {
    TransactionDb::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new()))).unwrap()
}

fn quick() -> TransactionOptions {
    TransactionOptions::default().with_lock_timeout(Duration::from_millis(1))
}

#[test]
fn transactions_are_send() {
    fn is_send<T: Send + 'static>() {}
    is_send::<Transaction>();
}

#[test]
fn a_locked_key_waits_for_its_holder_to_end() {
    let db = open();
    let mut first = db.begin();
    first.get_for_update("k").unwrap();
    let mut second = db.begin_with(&quick());
    assert!(matches!(second.get_for_update("k"), Err(Error::TimedOut(_))));
    assert!(matches!(second.put("k", "2"), Err(Error::TimedOut(_))));
    assert!(matches!(db.put("k", "outside"), Err(Error::TimedOut(_))), "the database's writes lock too");
    second.put("other", "ok").unwrap();
    first.put("k", "1").unwrap();
    first.commit().unwrap();
    assert_eq!(
        second.get_for_update("k").unwrap(),
        Some(b"1".to_vec()),
        "reads the committed value once locked"
    );
    second.put("k", "2").unwrap();
    second.commit().unwrap();
    assert_eq!(db.db().get("k").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.db().get("other").unwrap(), Some(b"ok".to_vec()));
}

#[test]
fn a_waiter_is_granted_the_lock_when_the_holder_commits() {
    let db = Arc::new(open());
    let mut holder = db.begin();
    holder.put("k", "holder").unwrap();
    let waiter = {
        let db = db.clone();
        thread::spawn(move || {
            let mut t =
                db.begin_with(&TransactionOptions::default().with_lock_timeout(Duration::from_secs(600)));
            let seen = t.get_for_update("k").unwrap();
            t.put("k", "waiter").unwrap();
            t.commit().unwrap();
            seen
        })
    };
    holder.commit().unwrap();
    // The holder locked "k" before the waiter began: the waiter's read came
    // after the commit, whenever it started waiting.
    assert_eq!(waiter.join().unwrap(), Some(b"holder".to_vec()));
    assert_eq!(db.db().get("k").unwrap(), Some(b"waiter".to_vec()));
}

#[test]
fn of_two_transactions_waiting_for_each_other_exactly_one_gets_deadlock() {
    for _ in 0..20 {
        let db = Arc::new(open());
        let barrier = Arc::new(Barrier::new(2));
        let run = |mine: &'static str, theirs: &'static str| {
            let (db, barrier) = (db.clone(), barrier.clone());
            thread::spawn(move || {
                let mut t =
                    db.begin_with(&TransactionOptions::default().with_lock_timeout(Duration::from_secs(600)));
                t.put(mine, "x").unwrap();
                barrier.wait();
                let r = t.put(theirs, "x");
                if r.is_ok() {
                    t.commit().unwrap();
                }
                // A deadlocked transaction is dropped: its locks go.
                r
            })
        };
        let a = run("a", "b");
        let b = run("b", "a");
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        let deadlocks = [&a, &b].iter().filter(|r| matches!(r, Err(Error::Deadlock(_)))).count();
        assert_eq!(deadlocks, 1, "{a:?} {b:?}");
        assert!(a.is_ok() || b.is_ok(), "{a:?} {b:?}");
    }
}

#[test]
fn without_deadlock_detection_a_deadlock_ends_by_timeout() {
    let db = Arc::new(open());
    let barrier = Arc::new(Barrier::new(2));
    let run = |mine: &'static str, theirs: &'static str, timeout: u64| {
        let (db, barrier) = (db.clone(), barrier.clone());
        thread::spawn(move || {
            let opts = TransactionOptions::default()
                .with_deadlock_detect(false)
                .with_lock_timeout(Duration::from_millis(timeout));
            let mut t = db.begin_with(&opts);
            t.put(mine, "x").unwrap();
            barrier.wait();
            let r = t.put(theirs, "x");
            if r.is_ok() {
                t.commit().unwrap();
            }
            r
        })
    };
    let a = run("a", "b", 50);
    let b = run("b", "a", 600_000);
    assert!(matches!(a.join().unwrap(), Err(Error::TimedOut(_))));
    b.join().unwrap().unwrap();
}

#[test]
fn with_a_snapshot_a_key_changed_since_is_busy_and_left_unlocked() {
    let db = open();
    let mut t = db.begin_with(&TransactionOptions::default().with_snapshot(true));
    db.put("k", "changed").unwrap();
    assert!(matches!(t.get_for_update("k"), Err(Error::Busy(_))));
    let mut other = db.begin_with(&quick());
    other.put("k", "free").unwrap();
    other.commit().unwrap();
    assert_eq!(t.get("k").unwrap(), None, "reads stay at the snapshot");
}

#[test]
fn rolling_back_to_a_savepoint_releases_the_locks_taken_since() {
    let db = open();
    let mut t = db.begin();
    t.put("kept", "1").unwrap();
    t.set_savepoint();
    t.put("released", "1").unwrap();
    t.rollback_to_savepoint().unwrap();
    let mut other = db.begin_with(&quick());
    other.put("released", "2").unwrap();
    assert!(matches!(other.put("kept", "2"), Err(Error::TimedOut(_))));
    t.rollback();
    other.put("kept", "2").unwrap();
    other.commit().unwrap();
    t.commit().unwrap();
    assert_eq!(db.db().get("kept").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn dropping_a_transaction_releases_its_locks() {
    let db = open();
    let mut t = db.begin();
    t.put("k", "never").unwrap();
    drop(t);
    db.put("k", "v").unwrap();
    assert_eq!(db.db().get("k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn locks_are_per_keyspace() {
    let db = open();
    let ks = db.db().create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    let mut t = db.begin();
    t.put_cf(&ks, "k", "ks").unwrap();
    db.put("k", "default").unwrap();
    let mut b = WriteBatch::new();
    b.put_cf(&ks, "k", "blocked");
    assert!(matches!(db.write(b), Err(Error::TimedOut(_))));
    t.commit().unwrap();
    assert_eq!(ks.get("k").unwrap(), Some(b"ks".to_vec()));
}

#[test]
fn a_range_delete_through_the_transaction_db_is_not_supported() {
    let db = open();
    let mut b = WriteBatch::new();
    b.put("a", "1");
    b.delete_range("a", "z");
    assert!(matches!(db.write(b), Err(Error::NotSupported(_))));
    assert_eq!(db.db().get("a").unwrap(), None);
}

#[test]
fn concurrent_increments_under_locks_lose_nothing_and_never_retry() {
    let db = Arc::new(open());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            thread::spawn(move || {
                for _ in 0..150 {
                    let mut t = db.begin_with(
                        &TransactionOptions::default().with_lock_timeout(Duration::from_secs(600)),
                    );
                    let n: u64 = t
                        .get_for_update("n")
                        .unwrap()
                        .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
                    t.put("n", (n + 1).to_string()).unwrap();
                    t.commit().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(db.db().get("n").unwrap(), Some(b"600".to_vec()));
}
