//! [`TtlKeyspace`]: one tree of a [`crate::ttl::TtlDb`] read and written
//! with expiry applied. The default keyspace's methods on `TtlDb` are this
//! handle's, so every tree shares one implementation.

use std::fmt;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::time::Duration;

use super::read::{TtlIterator, TtlSnapshot};
use super::value::{split, stamp, Expiry};
use crate::db::read_options::ReadOptions;
use crate::db::write_options::WriteOptions;
use crate::db::Keyspace;
use crate::error::Result;

/// A keyspace of a [`crate::ttl::TtlDb`] whose values expire after its own
/// TTL (RocksDB's column family of a `DBWithTTL`, created with
/// `CreateColumnFamilyWithTtl`). Cheap to clone.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use strata::ttl::{ManualClock, TtlDb};
/// use strata::{KeyspaceOptions, Options};
///
/// let dir = tempfile::tempdir()?;
/// let clock = Arc::new(ManualClock::new(0));
/// let db = TtlDb::open_with_clock(dir.path(), Options::default(), Duration::from_secs(60), clock.clone())?;
/// let sessions = db.create_keyspace("sessions", KeyspaceOptions::default(), Duration::from_secs(5))?;
/// sessions.put(b"s1", b"token")?;
/// db.put(b"s1", b"kept")?;
/// clock.advance(Duration::from_secs(6));
/// assert_eq!(sessions.get(b"s1")?, None, "the keyspace's TTL");
/// assert_eq!(db.get(b"s1")?.as_deref(), Some(&b"kept"[..]), "the default keyspace's TTL");
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone)]
pub struct TtlKeyspace {
    ks: Keyspace,
    expiry: Arc<Expiry>,
}

impl fmt::Debug for TtlKeyspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TtlKeyspace({:?}, ttl {:?})", self.ks.name(), self.expiry.ttl())
    }
}

/// A stored value with its write time, as [`TtlKeyspace::get_with_write_time`]
/// returns it (expired or not), for tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StampedValue {
    /// The user's value.
    pub value: Vec<u8>,
    /// When it was written, in milliseconds since the Unix epoch.
    pub written_millis: u64,
    /// Whether it has expired by the clock now (reads hide it).
    pub expired: bool,
}

impl TtlKeyspace {
    pub(crate) fn new(ks: Keyspace, expiry: Arc<Expiry>) -> Self {
        TtlKeyspace { ks, expiry }
    }

    /// The keyspace's name (`"default"` for the default one).
    pub fn name(&self) -> &str {
        self.ks.name()
    }

    /// The TTL this handle applies (zero: values never expire).
    pub fn ttl(&self) -> Duration {
        self.expiry.ttl()
    }

    /// The underlying keyspace, whose values carry their write time (for
    /// [`crate::WriteBatch::put_cf`] through [`crate::ttl::TtlDb::write`]).
    pub fn keyspace(&self) -> &Keyspace {
        &self.ks
    }

    /// Stores a value, stamped with the current time.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Stores a value with write options.
    pub fn put_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.ks.put_opt(key, stamp(value.as_ref(), self.expiry.now()), wo)
    }

    /// Deletes a key; deleting a missing key is not an error.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.ks.delete(key)
    }

    /// Deletes a key with write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.ks.delete_opt(key, wo)
    }

    /// Deletes every key in `[start, end)`.
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.ks.delete_range(start, end)
    }

    /// Reads the value of a key; `None` if it is absent or has expired.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// Reads a key with read options (e.g. at [`TtlSnapshot::read_options`]).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        match self.ks.get_opt(key, ro)? {
            None => Ok(None),
            Some(stored) => Ok(self.expiry.live(&stored, self.expiry.now())?.map(<[u8]>::to_vec)),
        }
    }

    /// Reads a key's value with its write time, expired or not (an expired
    /// value stays until a compaction removes it); for tools that show why a
    /// key reads as absent.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use strata::ttl::{ManualClock, TtlDb};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let clock = Arc::new(ManualClock::new(1_000));
    /// let db = TtlDb::open_with_clock(dir.path(), strata::Options::default(), Duration::from_secs(1), clock.clone())?;
    /// db.put(b"k", b"v")?;
    /// clock.advance(Duration::from_secs(2));
    /// let s = db.default_keyspace().get_with_write_time(b"k")?.unwrap();
    /// assert_eq!((s.value.as_slice(), s.written_millis, s.expired), (&b"v"[..], 1_000, true));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_with_write_time(&self, key: impl AsRef<[u8]>) -> Result<Option<StampedValue>> {
        let Some(stored) = self.ks.get(key)? else { return Ok(None) };
        let (value, written) = split(&stored)?;
        let expired = self.expiry.expired(written, self.expiry.now());
        Ok(Some(StampedValue { value: value.to_vec(), written_millis: written, expired }))
    }

    /// Takes a snapshot of the database, read through this keyspace.
    pub fn snapshot(&self) -> TtlSnapshot {
        TtlSnapshot::new(self.ks.snapshot(), self.ks.clone(), self.expiry.clone())
    }

    /// Iterates all live keys in order; also backwards (`.rev()`).
    pub fn iter(&self) -> TtlIterator {
        self.range::<&[u8], _>(..)
    }

    /// Iterates the live keys in `range`, in order or reversed.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> TtlIterator {
        self.range_opt(range, &ReadOptions::default())
    }

    /// Iterates a range with read options (e.g. at [`TtlSnapshot::read_options`]).
    pub fn range_opt<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R, ro: &ReadOptions) -> TtlIterator {
        TtlIterator::new(self.ks.range_opt(range, ro), self.expiry.clone())
    }

    /// Writes the memtable to a table and waits (no filter runs in a flush).
    pub fn flush(&self) -> Result<()> {
        self.ks.flush()
    }

    /// Compacts the keys in `[start, end]` (`None`: unbounded), removing the
    /// values expired by then.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.ks.compact_range(start, end)
    }
}
