//! [`TransactionDb`]: pessimistic transactions (RocksDB `TransactionDB`). A
//! transaction locks each key it reads for update or writes, in the
//! database's lock table (lock_table.rs), and holds the locks until it ends,
//! so its commit needs no check. The database's own writes lock too.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::lock_table::{LockKey, LockTable, LockWait};
use super::{Mode, Transaction, TransactionOptions};
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::{Db, Options, WriteBatch, WriteOptions};

/// A database whose transactions lock the keys they read for update or
/// write (RocksDB `TransactionDB`): a second transaction wanting the same key
/// waits until the first ends, up to its lock timeout
/// ([`Error::TimedOut`]); a wait that would close a cycle fails at once
/// with [`Error::Deadlock`]. Commits never conflict.
///
/// Writes through this handle ([`Self::put`], [`Self::write`], ...) lock
/// their keys like a one-write transaction. Reads, keyspaces, snapshots and
/// maintenance are on the [`Db`] from [`Self::db`]; a write made directly on
/// that `Db` takes no lock.
///
/// Locks are exclusive (a read for update excludes other readers for
/// update too) and held in memory: they do not survive a restart, and a
/// transaction not committed before a crash leaves nothing behind.
///
/// # Examples
///
/// ```
/// use strata::{MemVfs, Options, TransactionDb};
///
/// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
/// db.put("seats", "1")?;
/// let mut txn = db.begin();
/// let left = txn.get_for_update("seats")?; // locks "seats" until the commit
/// assert_eq!(left, Some(b"1".to_vec()));
/// txn.put("seats", "0")?;
/// txn.commit()?;
/// assert_eq!(db.db().get("seats")?, Some(b"0".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
pub struct TransactionDb {
    db: Db,
    locks: Arc<LockTable>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for TransactionDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionDb").field("db", &self.db).field("locked_keys", &self.locks.len()).finish()
    }
}

impl TransactionDb {
    /// Opens (or creates) the database in `path` as [`Db::open`] does. When
    /// [`Options::with_max_write_buffer_size_to_maintain`] is 0 it keeps one
    /// write buffer of flushed memtables per keyspace, which a transaction
    /// with a snapshot checks each key against when it locks it.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, mut opts: Options) -> Result<Self> {
        if opts.max_write_buffer_size_to_maintain == 0 {
            opts.max_write_buffer_size_to_maintain = opts.write_buffer_size as u64;
        }
        let db = Db::open(path, opts)?;
        Ok(TransactionDb { db, locks: Arc::new(LockTable::new()), next_id: AtomicU64::new(1) })
    }

    /// Begins a transaction with the default [`TransactionOptions`]: no
    /// snapshot (each read sees the newest data; a locked key cannot change
    /// until the transaction ends), a 1 s lock timeout, deadlock detection.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// assert!(txn.snapshot().is_none(), "pessimistic transactions take none by default");
    /// txn.put("k", "v")?;
    /// txn.commit()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn begin(&self) -> Transaction {
        self.begin_with(&TransactionOptions::default())
    }

    /// Begins a transaction with `opts`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use strata::{Error, MemVfs, Options, TransactionDb, TransactionOptions};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut first = db.begin();
    /// first.put("k", "1")?;
    /// let mut second = db.begin_with(&TransactionOptions::default().with_lock_timeout(Duration::from_millis(10)));
    /// assert!(matches!(second.put("k", "2"), Err(Error::TimedOut(_))), "first holds the lock");
    /// first.commit()?;
    /// second.put("k", "2")?;
    /// second.commit()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn begin_with(&self, opts: &TransactionOptions) -> Transaction {
        let wait = LockWait { timeout: opts.lock_timeout, detect_deadlocks: opts.deadlock_detect };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mode = Mode::Pessimistic { locks: self.locks.clone(), id, wait };
        Transaction::new(self.db.default_keyspace(), mode, opts)
    }

    /// The database underneath, for reads, keyspaces, snapshots and
    /// maintenance. Writes made on it directly take no locks.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// assert_eq!(db.db().get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Puts `key` in the default keyspace, waiting for its lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?; // waits for the lock of "k" if a transaction holds it
    /// assert_eq!(db.db().get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b)
    }

    /// Deletes `key` in the default keyspace, waiting for its lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// db.delete("k")?;
    /// assert_eq!(db.db().get("k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b)
    }

    /// Merges `operand` into `key` of the default keyspace, waiting for its lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{merge_operators::UInt64Add, MemVfs, Options, TransactionDb};
    ///
    /// let opts = Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())).with_merge_operator(std::sync::Arc::new(UInt64Add));
    /// let db = TransactionDb::open("/db", opts)?;
    /// db.merge("n", 2u64.to_le_bytes())?;
    /// db.merge("n", 3u64.to_le_bytes())?;
    /// assert_eq!(db.db().get("n")?, Some(5u64.to_le_bytes().to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        self.write(b)
    }

    /// Writes `batch` atomically once every key it writes is locked (with
    /// the default lock timeout), releasing them after. A range delete is
    /// refused with [`Error::NotSupported`], as in RocksDB: it would have to
    /// lock every key of its range.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb, WriteBatch};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut b = WriteBatch::new();
    /// b.put("a", "1");
    /// b.put("b", "2");
    /// db.write(b)?;
    /// let mut r = WriteBatch::new();
    /// r.delete_range("a", "c");
    /// assert!(matches!(db.write(r), Err(strata::Error::NotSupported(_))));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// [`Self::write`] with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut b = strata::WriteBatch::new();
    /// b.put("a", "1");
    /// db.write_opt(b, &strata::WriteOptions::default().with_sync(true))?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn write_opt(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        let mut keys: Vec<LockKey> = Vec::new();
        for op in batch.iter() {
            let op = op?;
            if op.kind == ValueKind::RangeDelete {
                return Err(Error::NotSupported(
                    "a range delete through a TransactionDb: it cannot lock its range".into(),
                ));
            }
            keys.push((op.keyspace, op.key.to_vec()));
        }
        // Sorted, so two such writes lock in the same order and never deadlock.
        keys.sort_unstable();
        keys.dedup();
        let opts = TransactionOptions::default();
        let wait = LockWait { timeout: opts.lock_timeout, detect_deadlocks: opts.deadlock_detect };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut held = Vec::with_capacity(keys.len());
        let mut r = Ok(());
        for k in keys {
            match self.locks.lock(id, &k, wait) {
                Ok(_) => held.push(k),
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        if r.is_ok() {
            r = self.db.write_opt(batch, wo);
        }
        self.locks.unlock(id, held);
        r
    }

    /// Closes the database ([`Db::close`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, Options, TransactionDb};
    ///
    /// let db = TransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// db.close()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn close(self) -> Result<()> {
        self.db.close()
    }
}
