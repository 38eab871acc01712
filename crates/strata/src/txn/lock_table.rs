//! The per-key exclusive locks of pessimistic transactions (RocksDB's
//! `PointLockManager`): keys hashed over stripes, each a map from key to
//! holder with a condition variable its waiters sleep on, and a wait-for
//! graph that finds deadlocks before a waiter sleeps.
//!
//! Written by hand: a lock table is the transaction layer itself, and its
//! deadlock rule (who waits for whom, when an edge is dropped) must match the
//! commit path exactly.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

/// A transaction's id in the lock table (never 0).
pub(crate) type TxnId = u64;

/// A locked key: (keyspace id, user key).
pub(crate) type LockKey = (u32, Vec<u8>);

const STRIPES: usize = 64;

/// How far a deadlock search follows the wait-for chain (RocksDB's
/// `deadlock_detect_depth` default).
const MAX_DEPTH: usize = 50;

#[derive(Default)]
struct Stripe {
    /// Key -> the transaction holding it.
    held: Mutex<HashMap<LockKey, TxnId>>,
    /// Signalled when a key of this stripe is released.
    released: Condvar,
}

/// The lock table of one [`TransactionDb`](crate::TransactionDb).
pub(crate) struct LockTable {
    stripes: Vec<Stripe>,
    /// Waiter -> the transaction holding the key it waits for. INVARIANT: a
    /// transaction has an edge only while it sleeps on (or is about to sleep
    /// on) a key, so every cycle is a real deadlock.
    waits_for: Mutex<HashMap<TxnId, TxnId>>,
}

/// How long to wait for a lock, and whether to look for deadlocks first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LockWait {
    pub timeout: Duration,
    pub detect_deadlocks: bool,
}

impl LockTable {
    pub(crate) fn new() -> LockTable {
        LockTable { stripes: (0..STRIPES).map(|_| Stripe::default()).collect(), waits_for: Mutex::default() }
    }

    fn stripe(&self, key: &LockKey) -> &Stripe {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        &self.stripes[(h.finish() as usize) % STRIPES]
    }

    /// Takes `key` for `txn`, waiting up to `wait.timeout` for its holder.
    /// Returns true if `txn` took it now (false: it held it already). Fails
    /// with [`Error::Deadlock`] if waiting would close a cycle of waiters, and
    /// with [`Error::TimedOut`] when the time is up.
    pub(crate) fn lock(&self, txn: TxnId, key: &LockKey, wait: LockWait) -> Result<bool> {
        let stripe = self.stripe(key);
        let deadline = Instant::now() + wait.timeout;
        let mut held = stripe.held.lock();
        let mut waited = false;
        loop {
            let holder = match held.get(key) {
                None => {
                    held.insert(key.clone(), txn);
                    if waited {
                        self.waits_for.lock().remove(&txn);
                    }
                    return Ok(true);
                }
                Some(&h) if h == txn => return Ok(false),
                Some(&h) => h,
            };
            if wait.detect_deadlocks {
                self.wait_for(txn, holder, key)?;
            }
            waited = true;
            if stripe.released.wait_until(&mut held, deadline).timed_out() && held.get(key).is_some() {
                self.waits_for.lock().remove(&txn);
                return Err(Error::TimedOut(format!(
                    "lock on key {:?} of keyspace {} not granted within {:?}",
                    String::from_utf8_lossy(&key.1),
                    key.0,
                    wait.timeout
                )));
            }
        }
    }

    /// Records that `txn` waits for `holder`, unless that closes a cycle.
    fn wait_for(&self, txn: TxnId, holder: TxnId, key: &LockKey) -> Result<()> {
        let mut graph = self.waits_for.lock();
        let mut at = holder;
        for _ in 0..MAX_DEPTH {
            if at == txn {
                graph.remove(&txn);
                return Err(Error::Deadlock(format!(
                    "waiting for key {:?} of keyspace {} would deadlock: its holder waits, through other transactions, for this one",
                    String::from_utf8_lossy(&key.1),
                    key.0
                )));
            }
            match graph.get(&at) {
                Some(&next) => at = next,
                None => break,
            }
        }
        graph.insert(txn, holder);
        Ok(())
    }

    /// Releases `keys`, held by `txn`, and wakes their waiters.
    pub(crate) fn unlock(&self, txn: TxnId, keys: impl IntoIterator<Item = LockKey>) {
        for key in keys {
            let stripe = self.stripe(&key);
            let mut held = stripe.held.lock();
            if held.get(&key) == Some(&txn) {
                held.remove(&key);
                stripe.released.notify_all();
            }
        }
    }

    /// Keys held now (a property and tests).
    pub(crate) fn len(&self) -> usize {
        self.stripes.iter().map(|s| s.held.lock().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;

    use super::*;

    const WAIT: LockWait = LockWait { timeout: Duration::from_secs(60), detect_deadlocks: true };

    fn k(s: &str) -> LockKey {
        (0, s.as_bytes().to_vec())
    }

    #[test]
    fn a_lock_is_exclusive_reentrant_and_released() {
        let t = LockTable::new();
        assert!(t.lock(1, &k("a"), WAIT).unwrap());
        assert!(!t.lock(1, &k("a"), WAIT).unwrap(), "held already");
        let short = LockWait { timeout: Duration::from_millis(1), detect_deadlocks: true };
        assert!(matches!(t.lock(2, &k("a"), short), Err(Error::TimedOut(_))));
        assert!(t.lock(2, &k("b"), short).unwrap(), "another key is free");
        t.unlock(1, [k("a")]);
        assert!(t.lock(2, &k("a"), short).unwrap());
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn a_waiter_gets_the_lock_when_its_holder_releases_it() {
        let t = Arc::new(LockTable::new());
        t.lock(1, &k("a"), WAIT).unwrap();
        let waiter = {
            let t = t.clone();
            thread::spawn(move || t.lock(2, &k("a"), WAIT))
        };
        // Wait for the condition (the waiter's edge), not for time.
        while t.waits_for.lock().get(&2) != Some(&1) {
            thread::yield_now();
        }
        t.unlock(1, [k("a")]);
        assert!(waiter.join().unwrap().unwrap());
        assert!(t.waits_for.lock().is_empty(), "the granted waiter's edge is gone");
    }

    #[test]
    fn the_waiter_that_closes_a_cycle_gets_deadlock() {
        let t = Arc::new(LockTable::new());
        t.lock(1, &k("a"), WAIT).unwrap();
        t.lock(2, &k("b"), WAIT).unwrap();
        t.lock(3, &k("c"), WAIT).unwrap();
        let spawn_wait = |txn, key: &'static str| {
            let t = t.clone();
            thread::spawn(move || t.lock(txn, &k(key), WAIT))
        };
        let one = spawn_wait(1, "b"); // 1 waits for 2
        while !t.waits_for.lock().contains_key(&1) {
            thread::yield_now();
        }
        let two = spawn_wait(2, "c"); // 2 waits for 3
        while !t.waits_for.lock().contains_key(&2) {
            thread::yield_now();
        }
        // 3 waiting for 1 closes 3 -> 1 -> 2 -> 3.
        assert!(matches!(t.lock(3, &k("a"), WAIT), Err(Error::Deadlock(_))));
        assert!(!t.waits_for.lock().contains_key(&3));
        t.unlock(3, [k("c")]);
        assert!(two.join().unwrap().unwrap());
        t.unlock(2, [k("b"), k("c")]);
        assert!(one.join().unwrap().unwrap());
    }
}
