//! A database whose values expire (RocksDB `DBWithTTL`, rust-rocksdb
//! `DB::open_with_ttl`): [`TtlDb`] stores each value with its write time,
//! hides values older than the TTL from every read, and removes them in
//! compactions through a compaction filter; each keyspace ([`TtlKeyspace`])
//! has its own TTL, recorded in the MANIFEST.

mod clock;
mod filter;
mod keyspace;
mod open;
mod read;
mod value;

use std::collections::HashMap;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

pub use clock::{Clock, ManualClock, SystemClock};
pub use keyspace::{StampedValue, TtlKeyspace};
pub use open::recorded_ttls;
pub use read::{TtlIterator, TtlSnapshot};

use crate::batch::WriteBatch;
use crate::db::read_options::ReadOptions;
use crate::db::write_options::WriteOptions;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::options::{KeyspaceOptions, Options};
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
/// - **Keyspaces.** Each keyspace has its own TTL:
///   [`TtlDb::create_keyspace`] makes one (RocksDB
///   `CreateColumnFamilyWithTtl`), [`TtlDb::keyspace`] returns its
///   [`TtlKeyspace`], and its compaction filter is installed at every open.
///   Keyspaces created through [`TtlDb::base_db`] hold plain values and stay
///   reachable only there.
/// - **The TTL is recorded** in the MANIFEST with each tree's options
///   (FORMAT.md, *TTL values*). As in RocksDB, the TTL given at open applies
///   to every value, old or new, and is recorded in place of the old one;
///   keyspaces keep their recorded TTL unless
///   [`TtlDb::open_with_keyspace_ttls`] gives another. A TTL of zero means
///   values never expire (RocksDB's `ttl <= 0`); they are still stamped, so a
///   later open with a TTL expires them by their write time.
/// - **Mixing is refused** with [`crate::Error::InvalidArgument`]: a plain
///   [`Db::open`] (or [`Db::open_read_only`]) of a tree recorded with TTL
///   stamps, since it would return every value with its stamp appended
///   (fjall and RocksDB users expect an open with the wrong value format to
///   fail, not to hand out rewritten data; stripping stamps would also let a
///   plain handle write unstamped values into a TTL tree); and `TtlDb` of a
///   default keyspace recorded as plain that holds data (an empty one becomes
///   a TTL tree). [`TtlDb::open_read_only`] reads a TTL database with the
///   recorded TTLs, writing nothing (tools use it).
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
    default: TtlKeyspace,
    clock: Arc<dyn Clock>,
    /// The expiry of every tree holding stamped values, by keyspace id (0: default).
    trees: RwLock<HashMap<u32, Arc<Expiry>>>,
}

impl std::fmt::Debug for TtlDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TtlDb({}, ttl {:?})", self.db.path().display(), self.ttl())
    }
}

impl TtlDb {
    /// Opens (or creates) the database in `path` with values of its default
    /// keyspace expiring `ttl` after they were written, by the system clock
    /// (RocksDB `DBWithTTL::Open`). Zero means never. `ttl` replaces the
    /// recorded TTL; each TTL keyspace keeps its own. A database whose default
    /// keyspace holds plain values (written by [`Db`]) is refused with
    /// [`Error::InvalidArgument`].
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
        opts: Options,
        ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<TtlDb> {
        open::open(path.as_ref(), opts, open::Mode::ReadWrite { ttl, keyspaces: &[] }, clock)
    }

    /// As [`TtlDb::open_with_clock`], giving keyspaces other TTLs than they
    /// recorded (rust-rocksdb `open_cf_descriptors_with_ttl`); each must be a
    /// keyspace of stamped values. The others keep their recorded TTL.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use strata::ttl::{SystemClock, TtlDb};
    /// use strata::{KeyspaceOptions, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = TtlDb::open(dir.path(), Options::default(), Duration::from_secs(60))?;
    /// db.create_keyspace("a", KeyspaceOptions::default(), Duration::from_secs(5))?;
    /// db.close()?;
    /// let long = [("a", Duration::from_secs(50))];
    /// let db = TtlDb::open_with_keyspace_ttls(dir.path(), Options::default(), Duration::from_secs(60), &long, Arc::new(SystemClock))?;
    /// assert_eq!(db.keyspace("a")?.ttl(), Duration::from_secs(50));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open_with_keyspace_ttls(
        path: impl AsRef<Path>,
        opts: Options,
        ttl: Duration,
        keyspace_ttls: &[(&str, Duration)],
        clock: Arc<dyn Clock>,
    ) -> Result<TtlDb> {
        open::open(path.as_ref(), opts, open::Mode::ReadWrite { ttl, keyspaces: keyspace_ttls }, clock)
    }

    /// Opens a TTL database read-only (see [`Db::open_read_only`]), every
    /// tree with the TTL it recorded, by the system clock: what tools use to
    /// read one. Writes return [`Error::ReadOnly`]. A database whose default
    /// keyspace is not recorded as holding stamped values is refused.
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
    /// db.close()?;
    /// let ro = TtlDb::open_read_only(dir.path(), Options::default())?;
    /// assert_eq!(ro.ttl(), Duration::from_secs(60));
    /// assert_eq!(ro.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// assert!(ro.put(b"k", b"w").is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<TtlDb> {
        Self::open_read_only_with_clock(path, opts, Arc::new(SystemClock))
    }

    /// As [`TtlDb::open_read_only`], with the time read from `clock`.
    pub fn open_read_only_with_clock(
        path: impl AsRef<Path>,
        opts: Options,
        clock: Arc<dyn Clock>,
    ) -> Result<TtlDb> {
        open::open(path.as_ref(), opts, open::Mode::ReadOnly, clock)
    }

    /// Creates keyspace `name` whose values expire `ttl` after they were
    /// written (RocksDB `CreateColumnFamilyWithTtl`); the TTL is recorded
    /// with its options, and `opts`' compaction filter, if any, runs after
    /// the TTL's (see the type's docs).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// let ks = db.create_keyspace("cache", strata::KeyspaceOptions::default(), std::time::Duration::from_secs(5))?;
    /// ks.put(b"k", b"v")?;
    /// assert_eq!(db.keyspace("cache")?.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// assert_eq!(db.list_keyspaces(), ["default", "cache"]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn create_keyspace(&self, name: &str, opts: KeyspaceOptions, ttl: Duration) -> Result<TtlKeyspace> {
        let expiry = Arc::new(Expiry::new(ttl, self.clock.clone()));
        let filter = Arc::new(TtlFilter::new(expiry.clone(), opts.compaction_filter()));
        let ks = self.db.create_keyspace(name, opts.with_ttl(ttl, filter))?;
        self.trees.write().insert(ks.id(), expiry.clone());
        Ok(TtlKeyspace::new(ks, expiry))
    }

    /// The handle of keyspace `name` (`"default"`: the default keyspace);
    /// [`Error::KeyspaceNotFound`] if there is none, and
    /// [`Error::InvalidArgument`] for a keyspace of plain values (made
    /// through [`TtlDb::base_db`]: read it there).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.base_db().create_keyspace("plain", strata::KeyspaceOptions::default())?;
    /// assert!(db.keyspace("plain").is_err());
    /// assert!(db.keyspace("nope").is_err());
    /// assert_eq!(db.keyspace("default")?.ttl(), std::time::Duration::from_secs(60));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn keyspace(&self, name: &str) -> Result<TtlKeyspace> {
        let ks = self.db.keyspace(name)?;
        let expiry = self.trees.read().get(&ks.id()).cloned().ok_or_else(|| {
            Error::invalid(format!(
                "keyspace {name:?} stores plain values (it was created without a TTL): read it through \
                 TtlDb::base_db"
            ))
        })?;
        Ok(TtlKeyspace::new(ks, expiry))
    }

    /// The default keyspace's handle (the tree `TtlDb`'s own methods use).
    pub fn default_keyspace(&self) -> &TtlKeyspace {
        &self.default
    }

    /// Drops keyspace `name` and its data (see [`Db::drop_keyspace`]).
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        let id = self.db.keyspace(name)?.id();
        self.db.drop_keyspace(name)?;
        self.trees.write().remove(&id);
        Ok(())
    }

    /// The names of every keyspace, `"default"` first (plain ones too).
    pub fn list_keyspaces(&self) -> Vec<String> {
        self.db.list_keyspaces()
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
        self.default.ttl()
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
        self.default.put_opt(key, value, wo)
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
        self.default.delete(key)
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
        self.default.delete_opt(key, wo)
    }

    /// Applies a batch atomically, every value of a TTL keyspace stamped with
    /// the same time (RocksDB's DBWithTTL rewrites the batch the same way);
    /// ops of plain keyspaces are left as they are.
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
        let now = self.clock.now_millis();
        let trees = self.trees.read();
        let mut stamped = WriteBatch::new();
        for op in &batch {
            let op = op?;
            let ttl_tree = trees.contains_key(&op.keyspace);
            match op.kind {
                ValueKind::Put if ttl_tree => {
                    stamped.push_op(op.keyspace, op.kind, op.key, &stamp(op.value, now))
                }
                // An operand carries no timestamp, and merging stamped values
                // would need the operator to know the stamp.
                ValueKind::Merge if ttl_tree => {
                    return Err(Error::invalid("TtlDb does not support merge operands in a TTL keyspace"))
                }
                _ => stamped.push_op(op.keyspace, op.kind, op.key, op.value),
            }
        }
        drop(trees);
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
        self.default.delete_range(start, end)
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
        self.default.get_opt(key, ro)
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
        self.default.snapshot()
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
        self.default.range_opt(range, ro)
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

    /// The underlying database, whose values carry their write time: for
    /// tools that read no values (statistics, properties). Its TTL trees keep
    /// their compaction filters.
    pub fn into_base_db(self) -> Db {
        self.db
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
