//! A database whose values expire (RocksDB `DBWithTTL`, rust-rocksdb
//! `DB::open_with_ttl`): [`TtlDb`] stores each value with its write time,
//! hides values older than the TTL from every read, and removes them in
//! compactions through a compaction filter.

mod clock;
mod filter;
mod read;
mod value;

use std::ops::RangeBounds;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use clock::{Clock, ManualClock, SystemClock};
pub use read::{TtlIterator, TtlSnapshot};

use crate::batch::WriteBatch;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::stats::Stats;
use filter::TtlFilter;
use value::{stamp, Expiry};

/// A database whose values expire `ttl` after they were written (RocksDB
/// `DBWithTTL`, rust-rocksdb `DB::open_with_ttl`).
///
/// - **Storage.** Each value is stored with its write time appended
///   (FORMAT.md, *TTL values*); every read strips it.
/// - **Reads** (`get`, iterators, snapshots) never return a value older than
///   the TTL, compacted away or not. RocksDB is looser: it may return expired
///   values until a compaction removes them.
/// - **Removal.** A compaction filter removes expired values whenever a
///   compaction rewrites them, composed with the filter of
///   [`Options::with_compaction_filter`] if one is set (that filter sees
///   values without their write time; a value it changes keeps the old
///   value's write time). Flushes and trivial moves run no filter, and values
///   a live snapshot can see are kept until it is released, so disk space is
///   reclaimed only as compactions reach the data.
/// - **The TTL is not stored.** Reopening with another TTL applies the new
///   one to every value, old or new. A TTL of zero means values never expire
///   (RocksDB's `ttl <= 0`); they are still stamped, so a later open with a TTL
///   expires them by their write time.
/// - **Not detected yet** (no persisted options): opening a database written
///   by [`Db`] with `TtlDb`, or the reverse. `TtlDb` then reads a value of
///   fewer than 8 bytes as [`crate::Error::Corruption`] and takes the last 8
///   bytes of a longer one for a write time; `Db` returns values with their
///   write time attached.
/// - Values may be at most [`crate::MAX_ENTRY_BYTES`] minus 8 bytes with the key.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use strata::ttl::{ManualClock, TtlDb};
/// use strata::Options;
///
/// let dir = tempfile::tempdir()?;
/// let clock = Arc::new(ManualClock::new(0));
/// let db = TtlDb::open_with_clock(dir.path(), Options::default(), Duration::from_secs(60), clock.clone())?;
/// db.put(b"session", b"token")?;
/// assert_eq!(db.get(b"session")?.as_deref(), Some(&b"token"[..]));
/// clock.advance(Duration::from_secs(61));
/// assert_eq!(db.get(b"session")?, None);
/// db.close()?;
/// # Ok::<(), strata::Error>(())
/// ```
pub struct TtlDb {
    db: Db,
    ttl: Duration,
    expiry: Arc<Expiry>,
}

impl std::fmt::Debug for TtlDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TtlDb({}, ttl {:?})", self.db.path().display(), self.ttl)
    }
}

impl TtlDb {
    /// Opens (or creates) the database in `path` with values expiring `ttl`
    /// after they were written, by the system clock (RocksDB
    /// `DBWithTTL::Open`). Zero means never.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use strata::ttl::TtlDb;
    /// use strata::Options;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = TtlDb::open(dir.path(), Options::default(), Duration::from_secs(3600))?;
    /// assert_eq!(db.ttl(), Duration::from_secs(3600));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, opts: Options, ttl: Duration) -> Result<TtlDb> {
        Self::open_with_clock(path, opts, ttl, Arc::new(SystemClock))
    }

    /// As [`TtlDb::open`], with the time read from `clock` (writes stamp its
    /// time, reads and compactions judge expiry by it); tests pass a
    /// [`ManualClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use strata::ttl::{ManualClock, TtlDb};
    /// use strata::Options;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let clock = Arc::new(ManualClock::new(0));
    /// let db = TtlDb::open_with_clock(dir.path(), Options::default(), Duration::from_secs(5), clock.clone())?;
    /// db.put(b"k", b"v")?;
    /// clock.advance(Duration::from_secs(6));
    /// assert_eq!(db.get(b"k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        mut opts: Options,
        ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<TtlDb> {
        let expiry = Arc::new(Expiry::new(ttl, clock));
        let user = opts.compaction_filter.take();
        opts.compaction_filter = Some(Arc::new(TtlFilter::new(expiry.clone(), user)));
        let db = Db::open(path, opts)?;
        Ok(TtlDb { db, ttl, expiry })
    }

    /// The TTL this handle applies.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// assert_eq!(db.ttl(), std::time::Duration::from_secs(60));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Stores a value, stamped with the current time.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// assert_eq!(db.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Stores a value with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put_opt(b"k", b"v", &strata::WriteOptions::new().with_sync(true))?;
    /// assert_eq!(db.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.db.put_opt(key, stamp(value.as_ref(), self.expiry.now()), wo)
    }

    /// Deletes a key; deleting a missing key is not an error.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// db.delete(b"k")?;
    /// assert_eq!(db.get(b"k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.db.delete(key)
    }

    /// Deletes a key with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// db.delete_opt(b"k", &strata::WriteOptions::new().with_sync(true))?;
    /// assert_eq!(db.get(b"k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.db.delete_opt(key, wo)
    }

    /// Applies a batch atomically, every value stamped with the same time
    /// (RocksDB's DBWithTTL rewrites the batch the same way).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use strata::ttl::TtlDb;
    /// use strata::{Options, WriteBatch};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = TtlDb::open(dir.path(), Options::default(), Duration::from_secs(60))?;
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"a", b"1");
    /// batch.delete(b"b");
    /// db.write(batch)?;
    /// assert_eq!(db.get(b"a")?.as_deref(), Some(&b"1"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// Applies a batch atomically with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// let mut batch = strata::WriteBatch::new();
    /// batch.put(b"a", b"1");
    /// db.write_opt(batch, &strata::WriteOptions::new().with_sync(true))?;
    /// assert_eq!(db.get(b"a")?.as_deref(), Some(&b"1"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn write_opt(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        let now = self.expiry.now();
        let mut stamped = WriteBatch::new();
        for op in &batch {
            let op = op?;
            match op.kind {
                ValueKind::Put => stamped.put(op.key, stamp(op.value, now)),
                ValueKind::Delete => stamped.delete(op.key),
                ValueKind::RangeDelete => stamped.delete_range(op.key, op.value),
                // An operand carries no timestamp, and merging stamped values
                // would need the operator to know the stamp.
                ValueKind::Merge => return Err(Error::invalid("TtlDb does not support merge operands")),
            }
        }
        self.db.write_opt(stamped, wo)
    }

    /// Deletes every key in `[start, end)` (see [`Db::delete_range`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"a1", b"1")?;
    /// db.put(b"b1", b"2")?;
    /// db.delete_range(b"a", b"b")?;
    /// assert_eq!(db.get(b"a1")?, None);
    /// assert_eq!(db.get(b"b1")?.as_deref(), Some(&b"2"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.db.write(b)
    }

    /// Reads the value of a key; `None` if it is absent or has expired.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// assert_eq!(db.get(b"missing")?, None);
    /// db.put(b"k", b"v")?;
    /// assert_eq!(db.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// Reads a key with read options (e.g. at [`TtlSnapshot::read_options`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v1")?;
    /// let snap = db.snapshot();
    /// db.put(b"k", b"v2")?;
    /// assert_eq!(db.get_opt(b"k", &snap.read_options())?.as_deref(), Some(&b"v1"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        match self.db.get_opt(key, ro)? {
            None => Ok(None),
            Some(stored) => Ok(self.expiry.live(&stored, self.expiry.now())?.map(<[u8]>::to_vec)),
        }
    }

    /// Takes a snapshot of the current state.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v1")?;
    /// let snap = db.snapshot();
    /// db.delete(b"k")?;
    /// assert_eq!(snap.get(b"k")?.as_deref(), Some(&b"v1"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn snapshot(&self) -> TtlSnapshot {
        TtlSnapshot::new(self.db.snapshot(), self.expiry.clone())
    }

    /// Iterates all live keys in order; also backwards (`.rev()`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"b", b"2")?;
    /// db.put(b"a", b"1")?;
    /// let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec()]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn iter(&self) -> TtlIterator {
        self.range::<&[u8], _>(..)
    }

    /// Iterates the live keys in `range`, in order or reversed.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// for k in [&b"a"[..], b"b", b"c"] {
    ///     db.put(k, b"v")?;
    /// }
    /// assert_eq!(db.range(&b"b"[..]..).count(), 2);
    /// assert_eq!(db.range(&b"a"[..]..&b"c"[..]).rev().next().transpose()?.map(|(k, _)| k), Some(b"b".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> TtlIterator {
        self.range_opt(range, &ReadOptions::default())
    }

    /// Iterates a range with read options (e.g. at [`TtlSnapshot::read_options`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"a", b"1")?;
    /// let snap = db.snapshot();
    /// db.put(b"b", b"2")?;
    /// assert_eq!(db.range_opt::<&[u8], _>(.., &snap.read_options()).count(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn range_opt<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R, ro: &ReadOptions) -> TtlIterator {
        TtlIterator::new(self.db.range_opt(range, ro), self.expiry.clone())
    }

    /// Writes the memtable to a table and waits (no filter runs in a flush).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// db.flush()?;
    /// assert_eq!(db.stats().flushes, 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn flush(&self) -> Result<()> {
        self.db.flush()
    }

    /// Compacts `[start, end]` down the tree and waits, removing every expired
    /// value in range that no snapshot can see (see [`Db::compact_range`]: the
    /// TTL's filter makes it rewrite the deepest level too).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// db.compact_range(None, None)?;
    /// assert_eq!(db.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.db.compact_range(start, end)
    }

    /// Waits until pending flushes and compactions are done (see [`Db::wait_for_compactions`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// db.wait_for_compactions()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.db.wait_for_compactions()
    }

    /// Counters and the shape of the tree; expired values compactions removed
    /// are in [`Stats::compaction_filter_removed`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// assert_eq!(db.stats().writes, 1);
    /// assert_eq!(db.stats().compaction_filter_removed, 0);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.db.stats()
    }

    /// Text for humans (see [`Db::property`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// assert!(db.property("strata.stats").is_ok());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn property(&self, name: &str) -> Result<String> {
        self.db.property(name)
    }

    /// The directory this database lives in.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// assert_eq!(db.path(), dir.path());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn path(&self) -> &Path {
        self.db.path()
    }

    /// The database underneath (RocksDB `DBWithTTL::GetBaseDB`): its reads
    /// return values with their write time appended, expired or not, and a
    /// value written through it without one reads back as corruption here.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use strata::ttl::TtlDb;
    /// use strata::Options;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = TtlDb::open(dir.path(), Options::default(), Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// assert_eq!(db.base_db().get(b"k")?.map(|v| v.len()), Some(1 + 8), "value and write time");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn base_db(&self) -> &Db {
        &self.db
    }

    /// Stops background work, syncs the WAL and releases the lock (see [`Db::close`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// db.close()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn close(self) -> Result<()> {
        self.db.close()
    }
}
