//! The error type every fallible Strata call returns.

use std::fmt;

/// Result alias used throughout Strata.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in Strata.
///
/// New variants may be added in minor releases, so a `match` needs a `_` arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system reported an I/O failure.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Stored bytes failed a checksum or could not be decoded.
    #[error("corruption: {0}")]
    Corruption(String),
    /// The caller passed an invalid option or argument.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The database directory is locked by another process or an open handle.
    #[error("database is locked: {0}")]
    Locked(String),
    /// The path does not hold a Strata database (and `create_if_missing` is off),
    /// or holds something else entirely.
    #[error("not a Strata database: {0}")]
    NotADatabase(String),
    /// A previous write or sync failed; the database refuses further writes
    /// (RocksDB's "background error" / read-only mode). Reopen to recover.
    #[error("database is read-only after an earlier failure: {0}")]
    ReadOnly(String),
    /// The call is not supported by this handle: a write, flush, compaction
    /// or checkpoint on a database opened with `Db::open_read_only`
    /// (RocksDB's `NotSupported`).
    #[error("not supported: {0}")]
    NotSupported(String),
    /// No keyspace of that name (or id) is open in this database: it was
    /// never created, or it was dropped.
    #[error("no such keyspace: {0}")]
    KeyspaceNotFound(String),
    /// The database was closed.
    #[error("database is closed")]
    Closed,
    /// A transaction's commit found that a key it read or wrote was changed
    /// by another write since (RocksDB's `Busy`): nothing was written. Retry
    /// the whole transaction. Also a secondary's catch-up while one of its
    /// snapshots is live.
    #[error("busy: {0}")]
    Busy(String),
    /// A transaction's commit could not tell whether a key it read changed
    /// since, because the memtables kept in memory do not reach back that
    /// far (RocksDB's `TryAgain`): nothing was written. Retry the whole
    /// transaction.
    #[error("try again: {0}")]
    TryAgain(String),
    /// A pessimistic transaction waited for a key's lock longer than its
    /// lock timeout (RocksDB's `TimedOut`). The transaction stays open.
    #[error("timed out: {0}")]
    TimedOut(String),
    /// A pessimistic transaction's wait for a lock would have closed a cycle
    /// of transactions waiting for each other (RocksDB's `Busy` with
    /// `kDeadlock`). The transaction stays open; roll it back and retry.
    #[error("deadlock: {0}")]
    Deadlock(String),
}

impl Error {
    /// Builds a [`Error::Corruption`] from anything printable.
    pub fn corruption(msg: impl fmt::Display) -> Self {
        Error::Corruption(msg.to_string())
    }

    /// Builds an [`Error::InvalidArgument`] from anything printable.
    pub fn invalid(msg: impl fmt::Display) -> Self {
        Error::InvalidArgument(msg.to_string())
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption(_))
    }

    /// True for the errors after which retrying a whole transaction may
    /// succeed: [`Error::Busy`], [`Error::TryAgain`], [`Error::TimedOut`]
    /// and [`Error::Deadlock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{MemVfs, OptimisticTransactionDb, Options};
    ///
    /// let db = OptimisticTransactionDb::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let mut txn = db.begin();
    /// txn.get_for_update("k")?;
    /// db.put("k", "changed")?;
    /// let e = txn.commit().unwrap_err();
    /// assert!(e.is_retryable(), "run the transaction again");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Busy(_) | Error::TryAgain(_) | Error::TimedOut(_) | Error::Deadlock(_))
    }

    /// The refusal of a change on a handle opened with `Db::open_read_only`.
    pub(crate) fn opened_read_only() -> Self {
        Error::NotSupported("the database was opened read-only (open_read_only): it takes no writes".into())
    }
}

impl Error {
    /// A copy for the other members of a write group (io::Error is not `Clone`).
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io(e) => Error::Io(std::io::Error::new(e.kind(), e.to_string())),
            Error::Corruption(s) => Error::Corruption(s.clone()),
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::Locked(s) => Error::Locked(s.clone()),
            Error::NotADatabase(s) => Error::NotADatabase(s.clone()),
            Error::ReadOnly(s) => Error::ReadOnly(s.clone()),
            Error::NotSupported(s) => Error::NotSupported(s.clone()),
            Error::KeyspaceNotFound(s) => Error::KeyspaceNotFound(s.clone()),
            Error::Closed => Error::Closed,
            Error::Busy(s) => Error::Busy(s.clone()),
            Error::TryAgain(s) => Error::TryAgain(s.clone()),
            Error::TimedOut(s) => Error::TimedOut(s.clone()),
            Error::Deadlock(s) => Error::Deadlock(s.clone()),
        }
    }
}
