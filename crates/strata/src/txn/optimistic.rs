//! [`OptimisticTransactionDb`]: transactions that take no locks and are
//! checked at commit (RocksDB `OptimisticTransactionDB`). The check runs in
//! the group commit under the WAL lock (db/commit.rs), against the memtables
//! (db/conflict.rs), so it sees every write sequenced before the commit.

use std::ops::Deref;
use std::path::Path;

use super::{Mode, Transaction, TransactionOptions};
use crate::error::Result;
use crate::{Db, Options};

/// A database whose transactions are optimistic: they lock nothing while
/// they run, and their commit fails with [`Error::Busy`](crate::Error::Busy)
/// if a key they read for update or wrote was changed by another write
/// meanwhile. Everything else is the [`Db`] it derefs to; writes made
/// outside transactions are seen by the transactions' checks too.
///
/// Conflicts are found from the memtables alone, so a transaction that
/// outlives the flushes of a keyspace it tracks may fail with
/// [`Error::TryAgain`](crate::Error::TryAgain) instead. To keep that rare,
/// `open` keeps one write buffer's worth of flushed memtables per keyspace
/// when [`Options::with_max_write_buffer_size_to_maintain`] is 0.
///
/// # Examples
///
/// ```
/// use strata::{MemVfs, OptimisticTransactionDb, Options};
///
/// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
/// db.put("stock", "3")?;
/// // Two buyers read the stock, each takes one and writes it back.
/// let mut a = db.begin();
/// let mut b = db.begin();
/// for txn in [&mut a, &mut b] {
///     let n: u32 = String::from_utf8(txn.get_for_update("stock")?.unwrap()).unwrap().parse().unwrap();
///     txn.put("stock", (n - 1).to_string())?;
/// }
/// a.commit()?;
/// let lost = b.commit().unwrap_err();
/// assert!(lost.is_retryable(), "b read a value a changed: {lost}");
/// assert_eq!(db.get("stock")?, Some(b"2".to_vec()), "no update is lost");
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Debug)]
pub struct OptimisticTransactionDb {
    db: Db,
}

impl OptimisticTransactionDb {
    /// Opens (or creates) the database in `path` as [`Db::open`] does.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, mut opts: Options) -> Result<Self> {
        if opts.max_write_buffer_size_to_maintain == 0 {
            opts.max_write_buffer_size_to_maintain = opts.write_buffer_size as u64;
        }
        Ok(OptimisticTransactionDb { db: Db::open(path, opts)? })
    }

    /// Begins a transaction with the default [`TransactionOptions`]: a
    /// snapshot taken now, default write options.
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
    /// use strata::{MemVfs, OptimisticTransactionDb, Options, TransactionOptions};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin_with(&TransactionOptions::default().with_snapshot(false));
    /// db.put("k", "v")?;
    /// assert_eq!(txn.get("k")?, Some(b"v".to_vec()), "without a snapshot, reads see the newest data");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn begin_with(&self, opts: &TransactionOptions) -> Transaction {
        Transaction::new(self.db.default_keyspace(), Mode::Optimistic, opts)
    }

    /// The database underneath.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let plain: &strata::Db = db.db();
    /// plain.put("k", "v")?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Closes the database ([`Db::close`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// db.close()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn close(self) -> Result<()> {
        self.db.close()
    }
}

impl Deref for OptimisticTransactionDb {
    type Target = Db;

    fn deref(&self) -> &Db {
        &self.db
    }
}
