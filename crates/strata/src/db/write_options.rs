//! [`WriteOptions`]: the options of one write (RocksDB's), read by the
//! write path (write.rs).

use crate::options::setter::setter;

/// Options for one write (RocksDB `WriteOptions`).
///
/// # Examples
///
/// ```
/// use strata::{Db, Options, WriteOptions};
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// // Durable against power loss once it returns.
/// db.put_opt("k", "v", &WriteOptions::default().with_sync(true))?;
/// // A sync write needs the WAL: the combination is refused.
/// let both = WriteOptions::default().with_sync(true).with_disable_wal(true);
/// assert!(db.put_opt("k", "v", &both).is_err());
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub(crate) sync: bool,
    pub(crate) disable_wal: bool,
}

impl WriteOptions {
    /// Defaults: no sync, WAL on.
    pub fn new() -> Self {
        Self::default()
    }
    setter!(/// Sync the WAL before acknowledging (RocksDB `WriteOptions::sync`). Without it a
        /// write survives a process crash but not power loss.
        with_sync, sync, bool);
    setter!(/// Skip the WAL: the write is lost on any crash until flushed (RocksDB `disableWAL`).
        with_disable_wal, disable_wal, bool);
}
