//! Optimistic transactions: the conflicts found at commit, exactly. A
//! differential test drives interleaved transactions and plain writes against
//! a reference model of snapshot isolation (a commit fails iff a key it
//! tracked was written by a later commit), with flushes in between; the
//! scenarios below pin down each rule on its own.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::merge_operators::UInt64Add;
use strata::{
    Db, Error, KeyspaceOptions, MemVfs, OptimisticTransactionDb, Options, Transaction, TransactionOptions,
};

fn mem_opts() -> Options {
    Options::default().with_vfs(Arc::new(MemVfs::new()))
}

fn open() -> OptimisticTransactionDb {
    OptimisticTransactionDb::open("/db", mem_opts()).unwrap()
}

#[test]
fn a_key_read_for_update_and_changed_outside_fails_the_commit() {
    let db = open();
    db.put("k", "1").unwrap();
    let mut t = db.begin();
    assert_eq!(t.get_for_update("k").unwrap(), Some(b"1".to_vec()));
    db.put("k", "2").unwrap();
    t.put("other", "x").unwrap();
    let e = t.commit().unwrap_err();
    assert!(matches!(e, Error::Busy(_)), "{e}");
    assert_eq!(db.get("other").unwrap(), None, "nothing of a failed commit is written");
}

#[test]
fn the_first_of_two_writers_of_a_key_wins() {
    let db = open();
    let mut a = db.begin();
    let mut b = db.begin();
    a.put("k", "a").unwrap();
    b.put("k", "b").unwrap();
    b.put("b-only", "b").unwrap();
    a.commit().unwrap();
    assert!(matches!(b.commit(), Err(Error::Busy(_))));
    assert_eq!(db.get("k").unwrap(), Some(b"a".to_vec()));
    assert_eq!(db.get("b-only").unwrap(), None);
}

#[test]
fn transactions_on_disjoint_keys_both_commit() {
    let db = open();
    let mut a = db.begin();
    let mut b = db.begin();
    a.get_for_update("x").unwrap();
    a.put("x", "a").unwrap();
    b.get_for_update("y").unwrap();
    b.put("y", "b").unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
    assert_eq!((db.get("x").unwrap(), db.get("y").unwrap()), (Some(b"a".to_vec()), Some(b"b".to_vec())));
}

#[test]
fn a_plain_get_is_not_tracked_so_write_skew_commits_unless_reads_are_for_update() {
    // Snapshot isolation allows write skew (RocksDB too): each transaction
    // reads the other's key with a plain get and writes its own.
    let db = open();
    db.put("x", "1").unwrap();
    db.put("y", "1").unwrap();
    let mut a = db.begin();
    let mut b = db.begin();
    a.get("y").unwrap();
    a.put("x", "0").unwrap();
    b.get("x").unwrap();
    b.put("y", "0").unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
    // Reading for update tracks the key, and one of them fails.
    let mut a = db.begin();
    let mut b = db.begin();
    a.get_for_update("y").unwrap();
    a.put("x", "1").unwrap();
    b.get_for_update("x").unwrap();
    b.put("y", "1").unwrap();
    a.commit().unwrap();
    assert!(matches!(b.commit(), Err(Error::Busy(_))));
}

#[test]
fn a_range_delete_over_a_tracked_key_is_a_conflict() {
    let db = open();
    db.put("k5", "v").unwrap();
    let mut t = db.begin();
    t.get_for_update("k5").unwrap();
    t.put("k5", "w").unwrap();
    db.delete_range("k0", "k9").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))));
    assert_eq!(db.get("k5").unwrap(), None);
}

#[test]
fn a_merge_over_a_tracked_key_is_a_conflict() {
    let db =
        OptimisticTransactionDb::open("/db", mem_opts().with_merge_operator(Arc::new(UInt64Add))).unwrap();
    let mut t = db.begin();
    t.get_for_update("n").unwrap();
    db.merge("n", 1u64.to_le_bytes()).unwrap();
    t.put("n", 7u64.to_le_bytes()).unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))));
}

#[test]
fn a_transaction_that_only_read_for_update_is_checked_too() {
    let db = open();
    let mut t = db.begin();
    t.get_for_update("k").unwrap();
    db.put("k", "changed").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))), "RocksDB validates an empty commit too");
    let mut t = db.begin();
    t.get_for_update("k").unwrap();
    t.commit().unwrap();
}

#[test]
fn without_a_snapshot_a_key_conflicts_only_with_changes_after_it_was_tracked() {
    let db = open();
    let mut t = db.begin_with(&TransactionOptions::default().with_snapshot(false));
    db.put("k", "before").unwrap();
    assert_eq!(t.get_for_update("k").unwrap(), Some(b"before".to_vec()));
    t.put("k", "mine").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"mine".to_vec()));
}

#[test]
fn keyspaces_conflict_on_their_own_keys_only() {
    let db = open();
    let ks = db.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    let mut t = db.begin();
    t.get_for_update_cf(&ks, "k").unwrap();
    t.put_cf(&ks, "k", "t").unwrap();
    db.put("k", "same key, default keyspace").unwrap();
    t.commit().unwrap();
    let mut t = db.begin();
    t.get_for_update_cf(&ks, "k").unwrap();
    ks.put("k", "outside").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))));
}

#[test]
fn a_keyspace_dropped_under_a_transaction_fails_its_commit() {
    let db = open();
    let ks = db.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    let mut t = db.begin();
    t.put_cf(&ks, "k", "v").unwrap();
    db.drop_keyspace("ks").unwrap();
    assert!(matches!(t.commit(), Err(Error::KeyspaceNotFound(_))));
}

#[test]
fn a_handle_of_another_database_is_refused() {
    let db = open();
    let other = Db::open("/other", mem_opts()).unwrap();
    let theirs = other.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    let mut t = db.begin();
    assert!(matches!(t.put_cf(&theirs, "k", "v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(t.get_for_update_cf(&theirs, "k"), Err(Error::InvalidArgument(_))));
}

#[test]
fn merge_without_an_operator_is_refused_at_once() {
    let db = open();
    let mut t = db.begin();
    assert!(
        matches!(t.merge("k", "x"), Err(Error::InvalidArgument(m)) if m.contains("Merge operator not set"))
    );
    assert!(t.is_empty());
}

#[test]
fn savepoints_undo_writes_and_the_tracking_they_added() {
    let db = open();
    let mut t = db.begin();
    t.put("a", "1").unwrap();
    t.set_savepoint();
    t.get_for_update("b").unwrap();
    t.put("c", "3").unwrap();
    t.set_savepoint();
    t.put("d", "4").unwrap();
    t.pop_savepoint().unwrap(); // "d" now belongs to the first savepoint
    t.rollback_to_savepoint().unwrap();
    assert!(t.rollback_to_savepoint().is_err(), "none left");
    assert_eq!(t.len(), 1);
    // "b", "c" and "d" were tracked after the savepoint: no longer conflicts.
    db.put("b", "x").unwrap();
    db.put("c", "x").unwrap();
    db.put("d", "x").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get("c").unwrap(), Some(b"x".to_vec()));
}

#[test]
fn a_key_tracked_before_a_savepoint_stays_tracked_after_rolling_back() {
    let db = open();
    let mut t = db.begin();
    t.get_for_update("k").unwrap();
    t.set_savepoint();
    t.put("k", "v").unwrap();
    t.rollback_to_savepoint().unwrap();
    db.put("k", "outside").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))));
}

#[test]
fn flushed_memtables_kept_as_history_still_find_conflicts() {
    let opts = mem_opts().with_max_write_buffer_size_to_maintain(64 << 20);
    let db = OptimisticTransactionDb::open("/db", opts).unwrap();
    let mut t = db.begin();
    t.get_for_update("k").unwrap();
    db.put("k", "changed").unwrap();
    db.flush().unwrap();
    db.put("other", "x").unwrap();
    db.flush().unwrap();
    assert_eq!(db.property_int("rocksdb.num-immutable-mem-table-flushed").unwrap(), 2);
    assert!(
        db.property_int("rocksdb.size-all-mem-tables").unwrap()
            > db.property_int("rocksdb.cur-size-all-mem-tables").unwrap()
    );
    assert!(matches!(t.commit(), Err(Error::Busy(_))));
    // Unchanged keys commit across the same flushes.
    let mut t = db.begin();
    t.get_for_update("quiet").unwrap();
    db.put("other", "y").unwrap();
    db.flush().unwrap();
    t.put("quiet", "v").unwrap();
    t.commit().unwrap();
}

#[test]
fn a_commit_that_cannot_tell_says_try_again_and_writes_nothing() {
    // Keep as little history as possible: one flushed memtable.
    let db =
        OptimisticTransactionDb::open("/db", mem_opts().with_max_write_buffer_size_to_maintain(1)).unwrap();
    let mut t = db.begin();
    t.get_for_update("k").unwrap();
    t.put("mine", "v").unwrap();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    db.put("b", "2").unwrap();
    db.flush().unwrap();
    assert_eq!(db.property_int("rocksdb.num-immutable-mem-table-flushed").unwrap(), 1);
    let e = t.commit().unwrap_err();
    assert!(matches!(e, Error::TryAgain(_)) && e.is_retryable(), "{e}");
    assert_eq!(db.get("mine").unwrap(), None);
}

#[test]
fn a_plain_db_without_history_says_try_again_after_a_flush() {
    // Db::open keeps no history (the option's default, 0); the transaction
    // database turns 0 into one write buffer.
    let db = OptimisticTransactionDb::open("/db", mem_opts()).unwrap();
    let mut t = db.begin();
    t.get_for_update("k").unwrap();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    t.commit().unwrap();
    assert_eq!(db.property_int("rocksdb.num-immutable-mem-table-flushed").unwrap(), 1);
    db.close().unwrap();
    let plain = Db::open("/plain", mem_opts()).unwrap();
    plain.put("a", "1").unwrap();
    plain.flush().unwrap();
    assert_eq!(plain.property_int("rocksdb.num-immutable-mem-table-flushed").unwrap(), 0);
}

#[test]
fn transactions_work_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = OptimisticTransactionDb::open(dir.path(), Options::default()).unwrap();
    db.put("k", "1").unwrap();
    db.close().unwrap();
    let db = OptimisticTransactionDb::open(dir.path(), Options::default()).unwrap();
    let mut t = db.begin();
    assert_eq!(t.get_for_update("k").unwrap(), Some(b"1".to_vec()));
    t.put("k", "2").unwrap();
    t.commit().unwrap();
    let mut t = db.begin();
    t.get_for_update("k").unwrap();
    db.put("k", "3").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))), "the WAL's writes replayed at open are history too");
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"3".to_vec()));
}

#[test]
fn a_transaction_outliving_its_database_fails_cleanly() {
    let db = open();
    let mut t = db.begin();
    t.put("k", "v").unwrap();
    db.close().unwrap();
    assert_eq!(t.get("k").unwrap(), Some(b"v".to_vec()), "the transaction's own write");
    assert!(matches!(t.get("absent"), Err(Error::Closed)));
    assert!(matches!(t.commit(), Err(Error::Closed)));
}

// ---------------------------------------------------------------------------
// The differential test.

const KEYS: u32 = 6;

fn key(i: u32) -> Vec<u8> {
    format!("k{i}").into_bytes()
}

/// A transaction's own writes: key -> value (None: deleted).
type Writes = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// One open transaction as the model sees it.
struct ModelTxn {
    txn: Transaction,
    /// The committed state it reads (its snapshot's), if it took one.
    snapshot: Option<BTreeMap<Vec<u8>, Vec<u8>>>,
    writes: Writes,
    /// Commits that had happened when it began.
    began: u64,
    /// Tracked key -> the number of commits that had happened when it was tracked.
    tracked: HashMap<Vec<u8>, u64>,
    /// Per savepoint: (writes, keys tracked so far) when it was set.
    savepoints: Vec<(Writes, HashSet<Vec<u8>>)>,
}

struct Model {
    state: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Commits so far, and per key the number of the last commit writing it.
    commits: u64,
    last_write: HashMap<Vec<u8>, u64>,
}

impl Model {
    fn commit(&mut self, writes: &Writes) {
        self.commits += 1;
        for (k, v) in writes {
            match v {
                Some(v) => self.state.insert(k.clone(), v.clone()),
                None => self.state.remove(k),
            };
            self.last_write.insert(k.clone(), self.commits);
        }
    }
}

impl ModelTxn {
    fn read(&self, model: &Model, k: &[u8]) -> Option<Vec<u8>> {
        match self.writes.get(k) {
            Some(v) => v.clone(),
            None => self.snapshot.as_ref().unwrap_or(&model.state).get(k).cloned(),
        }
    }

    fn track(&mut self, model: &Model, k: &[u8]) {
        let at = if self.snapshot.is_some() { self.began } else { model.commits };
        self.tracked.entry(k.to_vec()).or_insert(at);
    }

    fn conflicts(&self, model: &Model) -> bool {
        self.tracked.iter().any(|(k, at)| model.last_write.get(k).is_some_and(|w| w > at))
    }
}

fn run_differential(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let opts = mem_opts().with_write_buffer_size(4 << 10).with_max_write_buffer_size_to_maintain(1 << 30);
    let db = OptimisticTransactionDb::open("/db", opts).unwrap();
    let mut model = Model { state: BTreeMap::new(), commits: 0, last_write: HashMap::new() };
    let mut open: Vec<ModelTxn> = Vec::new();
    let (mut committed, mut conflicted) = (0, 0);
    for step in 0..600 {
        let at = format!("seed {seed} step {step}");
        let k = key(rng.gen_range(0..KEYS));
        match rng.gen_range(0..100) {
            0..=9 if open.len() < 4 => {
                let snapshot = rng.gen_bool(0.7);
                let txn = db.begin_with(&TransactionOptions::default().with_snapshot(snapshot));
                open.push(ModelTxn {
                    txn,
                    snapshot: snapshot.then(|| model.state.clone()),
                    writes: BTreeMap::new(),
                    began: model.commits,
                    tracked: HashMap::new(),
                    savepoints: Vec::new(),
                });
            }
            0..=14 => {
                // A plain write outside any transaction: one commit.
                let v = format!("plain{step}").into_bytes();
                let mut w = BTreeMap::new();
                if rng.gen_bool(0.8) {
                    db.put(&k, &v).unwrap();
                    w.insert(k, Some(v));
                } else {
                    db.delete(&k).unwrap();
                    w.insert(k, None);
                }
                model.commit(&w);
            }
            15..=17 => db.flush().unwrap(),
            _ if open.is_empty() => {}
            r => {
                let i = rng.gen_range(0..open.len());
                let t = &mut open[i];
                match r {
                    18..=37 => assert_eq!(t.txn.get(&k).unwrap(), t.read(&model, &k), "{at}: get"),
                    38..=52 => {
                        let want = t.read(&model, &k);
                        t.track(&model, &k);
                        assert_eq!(t.txn.get_for_update(&k).unwrap(), want, "{at}: get_for_update");
                    }
                    53..=67 => {
                        let v = format!("t{step}").into_bytes();
                        t.track(&model, &k);
                        t.txn.put(&k, &v).unwrap();
                        t.writes.insert(k, Some(v));
                    }
                    68..=72 => {
                        t.track(&model, &k);
                        t.txn.delete(&k).unwrap();
                        t.writes.insert(k, None);
                    }
                    73..=76 => {
                        let mut want: Vec<_> =
                            t.snapshot.as_ref().unwrap_or(&model.state).clone().into_iter().collect();
                        want.retain(|(k, _)| !t.writes.contains_key(k));
                        want.extend(t.writes.iter().filter_map(|(k, v)| Some((k.clone(), v.clone()?))));
                        want.sort();
                        let got: Vec<_> = t.txn.range::<&[u8], _>(..).collect::<Result<_, _>>().unwrap();
                        assert_eq!(got, want, "{at}: range");
                    }
                    77..=80 => {
                        t.txn.set_savepoint();
                        t.savepoints.push((t.writes.clone(), t.tracked.keys().cloned().collect()));
                    }
                    81..=84 => match t.savepoints.pop() {
                        Some((writes, tracked)) => {
                            t.txn.rollback_to_savepoint().unwrap();
                            t.writes = writes;
                            t.tracked.retain(|k, _| tracked.contains(k));
                        }
                        None => assert!(t.txn.rollback_to_savepoint().is_err()),
                    },
                    85..=86 => {
                        if t.savepoints.pop().is_some() {
                            t.txn.pop_savepoint().unwrap();
                        }
                    }
                    _ => {
                        let t = open.swap_remove(i);
                        let conflict = t.conflicts(&model);
                        match t.txn.commit() {
                            Ok(()) => {
                                assert!(!conflict, "{at}: committed despite a conflict");
                                if !t.writes.is_empty() {
                                    model.commit(&t.writes);
                                }
                                committed += 1;
                            }
                            Err(Error::Busy(m)) => {
                                assert!(conflict, "{at}: a conflict reported where none was: {m}");
                                conflicted += 1;
                            }
                            Err(e) => panic!("{at}: {e}"),
                        }
                    }
                }
            }
        }
        if step % 50 == 0 {
            for i in 0..KEYS {
                assert_eq!(db.get(key(i)).unwrap(), model.state.get(&key(i)).cloned(), "{at}: db");
            }
        }
    }
    assert!(committed > 5 && conflicted > 0, "seed {seed}: {committed} committed, {conflicted} conflicted");
}

#[test]
fn conflicts_match_a_model_of_snapshot_isolation() {
    for seed in 0..30 {
        run_differential(seed);
    }
}
