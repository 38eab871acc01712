//! Transactions (RocksDB `Transaction`): reads that see the transaction's own
//! writes, and a commit that is all or nothing, in one batch and one WAL
//! record. [`OptimisticTransactionDb`] checks at commit that nothing the
//! transaction read for update or wrote changed since (optimistic.rs);
//! [`TransactionDb`] locks those keys as it goes instead (pessimistic.rs,
//! lock_table.rs).

mod lock_table;
mod optimistic;
mod pessimistic;

use std::collections::HashMap;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::time::Duration;

use lock_table::{LockKey, LockTable, LockWait, TxnId};
pub use optimistic::OptimisticTransactionDb;
pub use pessimistic::TransactionDb;

use crate::batch_index::{BatchWithBaseIter, WriteBatchWithIndex};
use crate::db::conflict::TrackedKey;
use crate::error::{Error, Result};
use crate::key::SeqNum;
use crate::{Keyspace, ReadOptions, Snapshot, WriteOptions};

/// How a transaction begins ([`OptimisticTransactionDb::begin_with`],
/// [`TransactionDb::begin_with`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use strata::{TransactionOptions, WriteOptions};
///
/// let opts = TransactionOptions::default()
///     .with_snapshot(false)
///     .with_lock_timeout(Duration::from_millis(100))
///     .with_write_options(WriteOptions::default().with_sync(true));
/// # let _ = opts;
/// ```
#[derive(Clone, Debug)]
pub struct TransactionOptions {
    /// `None`: the kind's default (optimistic: a snapshot; pessimistic: none).
    pub(crate) snapshot: Option<bool>,
    pub(crate) write_options: WriteOptions,
    pub(crate) lock_timeout: Duration,
    pub(crate) deadlock_detect: bool,
}

impl Default for TransactionOptions {
    fn default() -> Self {
        TransactionOptions {
            snapshot: None,
            write_options: WriteOptions::default(),
            lock_timeout: Duration::from_secs(1),
            deadlock_detect: true,
        }
    }
}

impl TransactionOptions {
    /// Whether the transaction takes a snapshot when it begins. With one
    /// (snapshot isolation), its reads see the database as of the snapshot,
    /// and a key it reads for update or writes must not have changed after
    /// it: an optimistic commit fails with [`Error::Busy`], a pessimistic
    /// lock with `Busy` at once. Without one, each read sees the newest
    /// data, and a key conflicts only with changes after the transaction
    /// first read or wrote it. The default: a snapshot for optimistic
    /// transactions, none for pessimistic ones (their locks already keep a
    /// read-modify-write safe; RocksDB's default for both).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let txn = db.begin_with(&strata::TransactionOptions::default().with_snapshot(false));
    /// assert!(txn.snapshot().is_none());
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_snapshot(mut self, snapshot: bool) -> Self {
        self.snapshot = Some(snapshot);
        self
    }

    /// How long a pessimistic transaction waits for a key another one holds
    /// before failing with [`Error::TimedOut`] (RocksDB `lock_timeout`;
    /// default 1 s). Optimistic transactions take no locks.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let quick = strata::TransactionOptions::default().with_lock_timeout(std::time::Duration::from_millis(5));
    /// let mut holder = db.begin();
    /// holder.put("k", "1")?;
    /// let e = db.begin_with(&quick).put("k", "2").unwrap_err();
    /// assert!(matches!(e, strata::Error::TimedOut(_)));
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// Whether a pessimistic transaction about to wait for a lock first
    /// checks that the wait does not close a cycle of waiting transactions,
    /// failing with [`Error::Deadlock`] if it would (RocksDB
    /// `deadlock_detect`; default true here, false in RocksDB). Off, a
    /// deadlock ends when a lock timeout expires.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let txn = db.begin_with(&strata::TransactionOptions::default().with_deadlock_detect(false));
    /// txn.commit()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_deadlock_detect(mut self, detect: bool) -> Self {
        self.deadlock_detect = detect;
        self
    }

    /// The write options of the commit (sync, WAL).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let sync = strata::TransactionOptions::default().with_write_options(strata::WriteOptions::default().with_sync(true));
    /// let mut txn = db.begin_with(&sync);
    /// txn.put("k", "v")?;
    /// txn.commit()?; // one synced WAL record
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_write_options(mut self, wo: WriteOptions) -> Self {
        self.write_options = wo;
        self
    }
}

/// An open transaction. Its writes are buffered in a
/// [`WriteBatchWithIndex`] that its reads see, and reach the database
/// atomically at [`Self::commit`]. Dropping it without committing discards
/// them. It owns handles on the database, so it may outlive the borrow it
/// began from and move between threads; once the database is closed every
/// call fails with [`Error::Closed`].
///
/// # Examples
///
/// ```
/// use strata::{MemVfs, OptimisticTransactionDb, Options};
///
/// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
/// db.put("alice", "100")?;
/// db.put("bob", "0")?;
/// let mut txn = db.begin();
/// let alice: u64 = String::from_utf8(txn.get_for_update("alice")?.unwrap()).unwrap().parse().unwrap();
/// txn.put("alice", (alice - 30).to_string())?;
/// txn.put("bob", "30")?;
/// assert_eq!(txn.get("bob")?, Some(b"30".to_vec()), "the transaction reads its own writes");
/// assert_eq!(db.get("bob")?, Some(b"0".to_vec()), "others do not, until it commits");
/// txn.commit()?;
/// assert_eq!(db.get("alice")?, Some(b"70".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
pub struct Transaction {
    /// The default keyspace, through which the commit goes.
    default: Keyspace,
    mode: Mode,
    write_options: WriteOptions,
    snapshot: Option<Snapshot>,
    batch: WriteBatchWithIndex,
    /// (keyspace id, key) -> the sequence the transaction's view of it
    /// started at: a later change of the key fails the commit (optimistic).
    /// A pessimistic transaction holds the lock of every key here.
    /// INVARIANT: the first tracking of a key sets it; later ones never raise it.
    tracked: HashMap<LockKey, SeqNum>,
    /// Per savepoint, oldest first: the keys first tracked since it was set.
    savepoints: Vec<Vec<LockKey>>,
}

/// How a transaction keeps its tracked keys from changing under it.
enum Mode {
    /// Checked at commit.
    Optimistic,
    /// Locked when first tracked, released when the transaction ends.
    Pessimistic { locks: Arc<LockTable>, id: TxnId, wait: LockWait },
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("snapshot", &self.snapshot)
            .field("writes", &self.batch.len())
            .field("tracked_keys", &self.tracked.len())
            .finish()
    }
}

impl Transaction {
    fn new(default: Keyspace, mode: Mode, opts: &TransactionOptions) -> Transaction {
        let optimistic = matches!(mode, Mode::Optimistic);
        let snapshot = opts.snapshot.unwrap_or(optimistic).then(|| default.snapshot());
        Transaction {
            default,
            mode,
            write_options: opts.write_options.clone(),
            snapshot,
            batch: WriteBatchWithIndex::new(),
            tracked: HashMap::new(),
            savepoints: Vec::new(),
        }
    }

    /// The snapshot the transaction reads at, if it took one.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// assert!(db.begin().snapshot().is_some(), "optimistic transactions take one by default");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// Takes a new snapshot now (RocksDB `SetSnapshot`): later reads see
    /// the database as of now, and keys tracked from now on conflict with
    /// changes after it. Keys already tracked keep their earlier sequence.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options, TransactionOptions};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// db.put("k", "new")?;
    /// assert_eq!(txn.get("k")?, None, "the snapshot predates the put");
    /// txn.set_snapshot();
    /// assert_eq!(txn.get("k")?, Some(b"new".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn set_snapshot(&mut self) {
        self.snapshot = Some(self.default.snapshot());
    }

    fn read_options(&self) -> ReadOptions {
        match &self.snapshot {
            Some(s) => ReadOptions::default().with_snapshot(s),
            None => ReadOptions::default(),
        }
    }

    /// Reads `key` of the default keyspace as the transaction sees it: its
    /// own writes over the database at its snapshot (or the newest data).
    /// Does not track the key; see [`Self::get_for_update`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "db")?;
    /// let mut txn = db.begin();
    /// assert_eq!(txn.get("k")?, Some(b"db".to_vec()));
    /// txn.delete("k")?;
    /// assert_eq!(txn.get("k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_cf(&self.default, key)
    }

    /// [`Self::get`] in keyspace `ks`.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{KeyspaceOptions, MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let users = db.create_keyspace("users", KeyspaceOptions::default())?;
    /// let mut txn = db.begin();
    /// txn.put_cf(&users, "u1", "ada")?;
    /// assert_eq!(txn.get_cf(&users, "u1")?, Some(b"ada".to_vec()));
    /// assert_eq!(txn.get("u1")?, None, "another keyspace");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_cf(&self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.batch.get_from_batch_and_db(ks, key, &self.read_options())
    }

    /// Reads `key` of the default keyspace like [`Self::get`] and tracks it:
    /// the commit fails with [`Error::Busy`] if another write changed it
    /// after the transaction's snapshot (or, without one, after this read).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Error, MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("counter", "1")?;
    /// let mut txn = db.begin();
    /// let seen = txn.get_for_update("counter")?;
    /// db.put("counter", "5")?; // a write outside the transaction
    /// txn.put("counter", "2")?;
    /// assert!(matches!(txn.commit(), Err(Error::Busy(_))));
    /// assert_eq!(db.get("counter")?, Some(b"5".to_vec()), "the failed commit wrote nothing");
    /// # let _ = seen;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_for_update(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let ks = self.default.clone();
        self.get_for_update_cf(&ks, key)
    }

    /// [`Self::get_for_update`] in keyspace `ks`.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// let mut txn = db.begin();
    /// txn.get_for_update_cf(&ks, "k")?;
    /// ks.put("k", "changed")?;
    /// assert!(txn.commit().unwrap_err().is_retryable());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_for_update_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        self.track(ks, key)?;
        self.get_cf(ks, key)
    }

    /// Iterates `range` of the default keyspace as the transaction sees it
    /// (its writes over the database at its snapshot). Iterated keys are not
    /// tracked. The transaction is borrowed: it takes no writes meanwhile.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// db.put("b", "2")?;
    /// let mut txn = db.begin();
    /// txn.delete("a")?;
    /// txn.put("c", "3")?;
    /// let keys: Vec<_> = txn.range::<&str, _>(..).map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> BatchWithBaseIter<'_> {
        self.range_cf(&self.default, range)
    }

    /// [`Self::range`] in keyspace `ks`.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// let mut txn = db.begin();
    /// txn.put_cf(&ks, "b", "2")?;
    /// assert_eq!(txn.range_cf::<&str, _>(&ks, ..).count(), 2);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn range_cf<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        ks: &Keyspace,
        range: R,
    ) -> BatchWithBaseIter<'_> {
        self.batch.iter_with_base(ks, range, &self.read_options())
    }

    /// Puts `key` in the default keyspace, seen by this transaction's reads
    /// and by everyone once it commits. Tracks the key (a write-write
    /// conflict fails the commit).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// txn.put("k", "v")?;
    /// txn.commit()?;
    /// assert_eq!(db.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let ks = self.default.clone();
        self.put_cf(&ks, key, value)
    }

    /// [`Self::put`] in keyspace `ks`.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// let mut txn = db.begin();
    /// txn.put_cf(&ks, "k", "v")?;
    /// txn.put("k", "default")?;
    /// txn.commit()?; // both keyspaces, one WAL record
    /// assert_eq!(ks.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.track(ks, key.as_ref())?;
        self.batch.put_cf(ks, key, value);
        Ok(())
    }

    /// Deletes `key` in the default keyspace (tracked like [`Self::put`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// let mut txn = db.begin();
    /// txn.delete("k")?;
    /// txn.commit()?;
    /// assert_eq!(db.get("k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        let ks = self.default.clone();
        self.delete_cf(&ks, key)
    }

    /// [`Self::delete`] in keyspace `ks`.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("k", "v")?;
    /// let mut txn = db.begin();
    /// txn.delete_cf(&ks, "k")?;
    /// assert_eq!(txn.get_cf(&ks, "k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<()> {
        self.track(ks, key.as_ref())?;
        self.batch.delete_cf(ks, key);
        Ok(())
    }

    /// Merges `operand` into `key` of the default keyspace (tracked like
    /// [`Self::put`]). Fails with [`Error::InvalidArgument`] if the keyspace
    /// has no merge operator.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{merge_operators::UInt64Add, MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let opts = Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())).with_merge_operator(std::sync::Arc::new(UInt64Add));
    /// let db = OptimisticTransactionDb::open("/db", opts)?;
    /// db.put("n", 40u64.to_le_bytes())?;
    /// let mut txn = db.begin();
    /// txn.merge("n", 2u64.to_le_bytes())?;
    /// assert_eq!(txn.get("n")?, Some(42u64.to_le_bytes().to_vec()));
    /// txn.commit()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        let ks = self.default.clone();
        self.merge_cf(&ks, key, operand)
    }

    /// [`Self::merge`] in keyspace `ks`.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// let mut txn = db.begin();
    /// assert!(txn.merge_cf(&ks, "k", "x").is_err(), "ks has no merge operator");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge_cf(
        &mut self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        if ks.merge_operator().is_none() {
            return Err(Error::invalid(format!(
                "Merge operator not set: keyspace {:?} has no merge operator",
                ks.name()
            )));
        }
        self.track(ks, key.as_ref())?;
        self.batch.merge_cf(ks, key, operand);
        Ok(())
    }

    /// Number of writes buffered.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// txn.put("a", "1")?;
    /// txn.put("a", "2")?;
    /// assert_eq!(txn.len(), 2, "each write counts");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// True if the transaction has buffered no write.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// assert!(txn.is_empty());
    /// txn.get_for_update("k")?;
    /// assert!(txn.is_empty(), "a read is no write");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Marks the transaction's current state, to come back to with
    /// [`Self::rollback_to_savepoint`] (RocksDB `SetSavePoint`). Savepoints nest.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// txn.put("a", "1")?;
    /// txn.set_savepoint();
    /// txn.put("b", "2")?;
    /// txn.rollback_to_savepoint()?;
    /// txn.commit()?;
    /// assert_eq!((db.get("a")?, db.get("b")?), (Some(b"1".to_vec()), None));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn set_savepoint(&mut self) {
        self.batch.set_savepoint();
        self.savepoints.push(Vec::new());
    }

    /// Undoes every write since the newest savepoint and stops tracking the
    /// keys first tracked since, then forgets that savepoint (RocksDB
    /// `RollbackToSavePoint`). Fails with [`Error::InvalidArgument`] if no
    /// savepoint is set.
    ///
    /// A pessimistic transaction also releases the locks it took since.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// txn.set_savepoint();
    /// txn.put("k", "v")?;
    /// txn.rollback_to_savepoint()?;
    /// assert!(txn.is_empty());
    /// assert!(txn.rollback_to_savepoint().is_err(), "none left");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.batch.rollback_to_savepoint()?;
        let since = self.savepoints.pop().unwrap_or_default();
        for key in &since {
            self.tracked.remove(key);
        }
        self.unlock(since);
        Ok(())
    }

    /// Forgets the newest savepoint and keeps what was done since (RocksDB
    /// `PopSavePoint`). Fails with [`Error::InvalidArgument`] if none is set.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// txn.set_savepoint();
    /// txn.put("k", "v")?;
    /// txn.pop_savepoint()?;
    /// assert_eq!(txn.len(), 1, "the write stays");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn pop_savepoint(&mut self) -> Result<()> {
        self.batch.pop_savepoint()?;
        let since = self.savepoints.pop().unwrap_or_default();
        if let Some(outer) = self.savepoints.last_mut() {
            outer.extend(since);
        }
        Ok(())
    }

    /// Discards every write and tracked key, and every savepoint, and
    /// releases every lock (RocksDB `Rollback`). The transaction stays open,
    /// with its snapshot.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// txn.put("a", "1")?;
    /// txn.rollback();
    /// assert!(txn.is_empty());
    /// txn.commit()?;
    /// assert_eq!(db.get("a")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn rollback(&mut self) {
        self.batch.clear();
        self.savepoints.clear();
        let all: Vec<LockKey> = self.tracked.drain().map(|(k, _)| k).collect();
        self.unlock(all);
    }

    /// Writes the transaction's writes atomically, in one WAL record, and
    /// ends it (a pessimistic transaction releases its locks, whatever the
    /// outcome).
    ///
    /// An optimistic commit first checks that no key it tracked changed
    /// since it was tracked. It fails with [`Error::Busy`] on such a
    /// conflict and with [`Error::TryAgain`] when the memtables kept in
    /// memory cannot tell (see
    /// [`Options::with_max_write_buffer_size_to_maintain`](crate::Options::with_max_write_buffer_size_to_maintain));
    /// then nothing was written and the whole transaction may be retried
    /// ([`Error::is_retryable`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// txn.put("k", "v")?;
    /// txn.commit()?;
    /// assert_eq!(db.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn commit(mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.batch).into_batch();
        let check = match self.mode {
            Mode::Optimistic => {
                self.tracked.drain().map(|((keyspace, key), seq)| TrackedKey { keyspace, key, seq }).collect()
            }
            // The locks kept every tracked key from changing.
            Mode::Pessimistic { .. } => Vec::new(),
        };
        self.default.write_checked(batch, &self.write_options, check)
        // Dropping `self` releases the locks.
    }

    /// Records that the transaction depends on `key` of `ks` not changing
    /// from now on (or since its snapshot); a pessimistic transaction locks it.
    fn track(&mut self, ks: &Keyspace, key: &[u8]) -> Result<()> {
        if ks.db_instance() != self.default.db_instance() {
            return Err(Error::invalid("the keyspace handle belongs to another database"));
        }
        let id = (ks.id(), key.to_vec());
        if self.tracked.contains_key(&id) {
            return Ok(());
        }
        let seq = match &self.snapshot {
            Some(s) => s.sequence(),
            None => ks.visible_sequence(),
        };
        if let Mode::Pessimistic { locks, id: txn, wait } = &self.mode {
            ks.check_live()?;
            locks.lock(*txn, &id, *wait)?;
            // Locked now; with a snapshot, it must not have changed since.
            if self.snapshot.is_some() {
                let check = TrackedKey { keyspace: id.0, key: id.1.clone(), seq };
                if let Err(e) = ks.check_unchanged(&check) {
                    locks.unlock(*txn, [id]);
                    return Err(e);
                }
            }
        }
        if let Some(sp) = self.savepoints.last_mut() {
            sp.push(id.clone());
        }
        self.tracked.insert(id, seq);
        Ok(())
    }

    /// Releases the locks of `keys` (a pessimistic transaction's).
    fn unlock(&self, keys: Vec<LockKey>) {
        if let Mode::Pessimistic { locks, id, .. } = &self.mode {
            locks.unlock(*id, keys);
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        let all: Vec<LockKey> = self.tracked.drain().map(|(k, _)| k).collect();
        self.unlock(all);
    }
}
