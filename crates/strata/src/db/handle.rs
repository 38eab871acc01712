//! [`Db`], the database handle: opening and closing, and the single-keyspace
//! API, each method forwarding to the default [`Keyspace`].

use std::fmt;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::Arc;

use super::keyspace::Keyspace;
use super::{policy_change, read_only, recovery, DbInner, DbIterator, DbRawIterator, Snapshot};
use crate::batch::WriteBatch;
use crate::cache::CacheStats;
use crate::error::{Error, Result};
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::pinned::PinnedValue;
use crate::stats::Stats;

/// An open database (RocksDB `DB`). Dropping it closes it.
///
/// # Examples
///
/// ```
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put("user:1", "ada")?;
/// db.put_opt("user:2", "grace", &WriteOptions::default().with_sync(true))?;
/// assert_eq!(db.get("user:1")?, Some(b"ada".to_vec()));
/// db.delete("user:1")?;
/// let users: Vec<_> = db.prefix_iterator("user:").collect::<Result<_, _>>()?;
/// assert_eq!(users, vec![(b"user:2".to_vec(), b"grace".to_vec())]);
/// db.close()?;
/// // Reopening finds what was written.
/// let db = Db::open(dir.path(), Options::default())?;
/// assert_eq!(db.get("user:2")?, Some(b"grace".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
pub struct Db {
    /// The default keyspace: the tree the single-keyspace API acts on.
    default: Keyspace,
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Db({})", self.inner().dir.display())
    }
}

impl Db {
    fn new(tree: Arc<DbInner>) -> Db {
        Db { default: Keyspace { tree } }
    }

    /// The default keyspace's tree.
    pub(super) fn inner(&self) -> &Arc<DbInner> {
        &self.default.tree
    }

    /// Opens (or creates, with `create_if_missing`) the database in `path`.
    /// Fails with [`Error::Locked`] if another handle or process has it open.
    ///
    /// A new database takes `opts` as they are. An existing one keeps, for
    /// each tree, the value its MANIFEST records of every per-tree option
    /// (policy, sizes, level shape, L0 triggers, filters, block format,
    /// compression) that `opts` did not set with its `with_*` method (for a
    /// keyspace: the options given with [`Options::with_keyspace`]); one set
    /// that differs is applied and recorded, another policy as a policy
    /// change (see [`Options::with_compaction_style`]). So
    /// `Db::open(path, Options::default())` reopens a database as it was
    /// recorded. The database-wide options (caches, WAL, threads) are
    /// always `opts`'s.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let wanted = opts.keyspaces.clone();
        let db = recovery::open(path.as_ref(), opts).map(Db::new)?;
        // Dropping `db` on failure closes it: the open fails with the error.
        db.finish_open(&wanted)?;
        Ok(db)
    }

    /// Opens an existing database for reads only (RocksDB `OpenForReadOnly`),
    /// writing nothing at all: no MANIFEST, no WAL, no table, no deletion, not
    /// even the LOCK file, so it works on a full or read-only disk and beside a
    /// process that has the database open. Every keyspace is opened
    /// ([`Db::keyspace`]); WALs are replayed into memory. The
    /// handle sees the database as it was at open. Beside a writer whose flush
    /// or compaction deletes a file the open was reading, the open starts again
    /// from the newer state (while the MANIFEST keeps changing, up to 5 s). If a
    /// writer later deletes
    /// tables (compaction), reads that need them fail with an I/O error, never
    /// with wrong data — reopen to see newer data. Writes, `flush`,
    /// `compact_range`, checkpoints, keyspace changes and the buffer trim
    /// return [`Error::NotSupported`];
    /// `wait_for_compactions` returns at once. Per-tree options not set in
    /// `opts` keep their recorded values, as with [`Db::open`].
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let path = path.as_ref();
        read_only::open(path, Self::recorded_options(path, opts)?, None).map(Db::new)
    }

    /// Per-tree options not set in `opts` keep the values recorded at `path`.
    /// A MANIFEST a writer beside us is replacing is read again by the
    /// open, which retries.
    fn recorded_options(path: &Path, opts: Options) -> Result<Options> {
        if !opts.vfs.exists(&crate::filename::current_path(path)) {
            return Ok(opts);
        }
        match policy_change::resolve_default(opts.clone(), path) {
            Err(e @ Error::InvalidArgument(_)) => Err(e),
            r => Ok(r.unwrap_or(opts)),
        }
    }

    /// Opens a secondary instance of the database at `primary` (RocksDB
    /// `OpenAsSecondary`): it reads every keyspace as the primary's files
    /// hold it, beside a primary that keeps writing, without taking its
    /// lock or writing to its directory. `secondary` is the instance's own
    /// directory (created if missing), where it keeps its info `LOG`. Reads
    /// see the state of the last open or
    /// [`Self::try_catch_up_with_primary`]: only writes the primary has
    /// put in its WAL or tables, whole records only. Writes and maintenance
    /// return [`Error::NotSupported`], as on [`Db::open_read_only`].
    ///
    /// As in RocksDB, the primary does not know its secondaries: a file it
    /// deletes after a compaction may still be read by an iterator the
    /// secondary opened before its last catch-up, which then fails with an
    /// I/O error (open a new one). A catch-up is refused with
    /// [`Error::Busy`] while a snapshot of the secondary is live: the
    /// primary's compactions keep no version for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let primary = Db::open(dir.path().join("db"), Options::default())?;
    /// primary.put("k", "1")?;
    /// let secondary = Db::open_as_secondary(dir.path().join("db"), dir.path().join("secondary"), Options::default())?;
    /// assert_eq!(secondary.get("k")?, Some(b"1".to_vec()));
    /// primary.put("k", "2")?;
    /// assert_eq!(secondary.get("k")?, Some(b"1".to_vec()), "not until it catches up");
    /// secondary.try_catch_up_with_primary()?;
    /// assert_eq!(secondary.get("k")?, Some(b"2".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open_as_secondary(
        primary: impl AsRef<Path>,
        secondary: impl AsRef<Path>,
        opts: Options,
    ) -> Result<Db> {
        let primary = primary.as_ref();
        if !opts.vfs.exists(&crate::filename::current_path(primary)) {
            return Err(Error::NotADatabase(format!(
                "{} holds no database (no CURRENT file); a secondary creates nothing",
                primary.display()
            )));
        }
        let opts = Self::recorded_options(primary, opts)?;
        read_only::open(primary, opts, Some(secondary.as_ref())).map(Db::new)
    }

    /// Brings a secondary instance up to date with its primary (RocksDB
    /// `TryCatchUpWithPrimary`): reads the primary's MANIFESTs and live WALs
    /// again, so every keyspace shows the writes the primary made since,
    /// the keyspaces it dropped are dropped here (their handles then fail
    /// with [`Error::KeyspaceNotFound`]) and those it created can be opened
    /// with [`Db::keyspace`]. A database not opened with
    /// [`Db::open_as_secondary`] returns [`Error::NotSupported`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, IngestExternalFileOptions, Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("k", "v")?;
    /// let f = w.finish()?.path;
    /// let secondary = Db::open_as_secondary(dir.path().join("db"), dir.path().join("s"), Options::default())?;
    /// db.ingest_external_file(&[f], &IngestExternalFileOptions::default())?;
    /// secondary.try_catch_up_with_primary()?;
    /// assert_eq!(secondary.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn try_catch_up_with_primary(&self) -> Result<()> {
        self.inner().catch_up_with_primary()
    }

    /// Stores a value (RocksDB `Put`).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.default.put(key, value)
    }

    /// Stores a value with write options.
    pub fn put_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.default.put_opt(key, value, wo)
    }

    /// Deletes a key (RocksDB `Delete`); deleting a missing key is not an error.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.default.delete(key)
    }

    /// Deletes a key with write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.default.delete_opt(key, wo)
    }

    /// Deletes every key in `[start, end)` (RocksDB `DeleteRange`: start
    /// inclusive, end exclusive) with one write, whatever the number of keys.
    /// Writes after it are not affected; snapshots taken before it still see
    /// the keys. A range with `start >= end` is empty: the call succeeds and
    /// deletes nothing (as RocksDB returns OK for it). Covered keys are read
    /// as absent at once and physically removed by later compactions.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())))?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "v")?;
    /// }
    /// let before = db.snapshot();
    /// db.delete_range("b", "d")?;
    /// let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, vec![b"a".to_vec(), b"d".to_vec()]);
    /// assert_eq!(before.get("c")?, Some(b"v".to_vec()));
    /// db.delete_range("z", "a")?; // empty: nothing happens
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.default.delete_range(start, end)
    }

    /// [`Self::delete_range`] with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, MemVfs, Options, WriteOptions};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())))?;
    /// db.put("k1", "v")?;
    /// db.delete_range_opt("k", "l", &WriteOptions::new().with_sync(true))?;
    /// assert_eq!(db.get("k1")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range_opt(
        &self,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
        wo: &WriteOptions,
    ) -> Result<()> {
        self.default.delete_range_opt(start, end, wo)
    }

    /// Writes a merge operand for a key (RocksDB `Merge`): reads combine it
    /// with the key's older versions through the
    /// [`MergeOperator`](crate::MergeOperator) set with
    /// [`Options::with_merge_operator`]. Without an operator the write is
    /// refused with [`Error::InvalidArgument`](crate::Error) (as in RocksDB),
    /// so no key holds operands nothing can combine.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{associative_merge_operator, Db, MemVfs, Options};
    ///
    /// let append = associative_merge_operator("append", |_key, existing, operand| {
    ///     Some([existing.unwrap_or_default(), b",", operand].concat())
    /// });
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(append))?;
    /// db.put("tags", "red")?;
    /// db.merge("tags", "blue")?;
    /// assert_eq!(db.get("tags")?, Some(b"red,blue".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.default.merge(key, operand)
    }

    /// [`Self::merge`] with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{associative_merge_operator, Db, MemVfs, Options, WriteOptions};
    ///
    /// let max = associative_merge_operator("max", |_key, existing, operand| {
    ///     Some(existing.map_or(operand, |e| e.max(operand)).to_vec())
    /// });
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(max))?;
    /// db.merge_opt("best", "7", &WriteOptions::default())?;
    /// db.merge_opt("best", "3", &WriteOptions::default())?;
    /// assert_eq!(db.get("best")?, Some(b"7".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge_opt(
        &self,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
        wo: &WriteOptions,
    ) -> Result<()> {
        self.default.merge_opt(key, operand, wo)
    }

    /// Applies a batch atomically (RocksDB `Write`).
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.default.write_batch(batch, &WriteOptions::default())
    }

    /// Applies a batch atomically with write options.
    pub fn write_opt(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        self.default.write_batch(batch, wo)
    }

    /// Reads the latest value of a key (RocksDB `Get`).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.default.get(key)
    }

    /// Reads a key with read options (e.g. at a snapshot).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        self.default.get_opt(key, ro)
    }

    /// Reads the latest value of a key without copying it out of the table
    /// block that holds it (rust-rocksdb `get_pinned`, RocksDB `Get` into a
    /// `PinnableSlice`): see [`PinnedValue`] for what it holds and for how
    /// long. Same answer, rules and counters as [`Db::get`], which copies.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", vec![1u8; 4096])?;
    /// db.flush()?;
    /// let v = db.get_pinned(b"k")?.expect("present");
    /// assert!(v.is_pinned() && v.iter().all(|&b| b == 1));
    /// assert_eq!(db.get_pinned(b"missing")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<PinnedValue>> {
        self.default.get_pinned(key)
    }

    /// [`Db::get_pinned`] with read options (rust-rocksdb `get_pinned_opt`).
    /// With `fill_cache(false)` the block read for the value is not cached
    /// but still pinned by the value.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options, ReadOptions};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"old")?;
    /// let snap = db.snapshot();
    /// db.put(b"k", b"new")?;
    /// let v = db.get_pinned_opt(b"k", &ReadOptions::new().with_snapshot(&snap))?;
    /// assert_eq!(v.as_deref(), Some(&b"old"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_pinned_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<PinnedValue>> {
        self.default.get_pinned_opt(key, ro)
    }

    /// Reads many keys at once (rust-rocksdb `multi_get`, RocksDB's batched
    /// `MultiGet`): one answer per key, in the order given. The whole batch
    /// reads one consistent state. Keys are sorted internally, a duplicate is
    /// looked up once, the keys that fall in one table share its handle and
    /// those that fall in one data block read it once. An error (a damaged
    /// block, an unreadable file) is the answer of the keys that needed that
    /// block or file; the other keys are still answered.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"a", b"1")?;
    /// db.put(b"c", b"3")?;
    /// let got = db.multi_get([&b"c"[..], b"b", b"a", b"c"]);
    /// let got: Vec<Option<Vec<u8>>> = got.into_iter().collect::<Result<_, _>>()?;
    /// assert_eq!(got, [Some(b"3".to_vec()), None, Some(b"1".to_vec()), Some(b"3".to_vec())]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get<K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        self.default.multi_get(keys)
    }

    /// [`Db::multi_get`] with read options (rust-rocksdb `multi_get_opt`).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options, ReadOptions};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"a", b"1")?;
    /// let snap = db.snapshot();
    /// db.delete(b"a")?;
    /// let got = db.multi_get_opt([b"a"], &ReadOptions::new().with_snapshot(&snap));
    /// assert_eq!(got[0].as_ref().ok(), Some(&Some(b"1".to_vec())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get_opt<K, I>(&self, keys: I, ro: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        self.default.multi_get_opt(keys, ro)
    }

    /// [`Db::multi_get`] returning [`PinnedValue`]s (rust-rocksdb
    /// `batched_multi_get_cf`): values found in table blocks are not copied.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"a", b"1")?;
    /// db.flush()?;
    /// let got = db.multi_get_pinned([b"a", b"z"]);
    /// let a = got[0].as_ref().expect("no error").as_ref().expect("present");
    /// assert!(a.is_pinned() && a == &b"1"[..]);
    /// assert!(matches!(got[1], Ok(None)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get_pinned<K, I>(&self, keys: I) -> Vec<Result<Option<PinnedValue>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        self.default.multi_get_pinned(keys)
    }

    /// [`Db::multi_get_pinned`] with read options (rust-rocksdb
    /// `batched_multi_get_cf_opt`).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options, ReadOptions};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"a", b"1")?;
    /// db.flush()?;
    /// let ro = ReadOptions::new().with_fill_cache(false);
    /// let got = db.multi_get_pinned_opt([b"a"], &ro);
    /// assert_eq!(got[0].as_ref().ok().cloned().flatten().map(|v| v.into_vec()), Some(b"1".to_vec()));
    /// assert_eq!(db.stats().cache.inserts, 0, "the block was read but not cached");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get_pinned_opt<K, I>(&self, keys: I, ro: &ReadOptions) -> Vec<Result<Option<PinnedValue>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        self.default.multi_get_pinned_opt(keys, ro)
    }

    /// Takes a snapshot of the current state (RocksDB `GetSnapshot`).
    pub fn snapshot(&self) -> Snapshot {
        self.default.snapshot()
    }

    /// Iterates all keys in order; also iterates backwards (`.rev()`).
    pub fn iter(&self) -> DbIterator {
        self.default.iter()
    }

    /// Iterates the keys in `range`, in order or reversed.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        self.default.range(range)
    }

    /// Iterates all keys with read options (rust-rocksdb `iterator_opt`): at a
    /// snapshot, within the iterate bounds, and so on.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options, ReadOptions};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// let snap = db.snapshot();
    /// db.put("b", "2")?;
    /// let at_snap: Vec<_> = db.iter_opt(&ReadOptions::default().with_snapshot(&snap)).collect::<Result<_, _>>()?;
    /// assert_eq!(at_snap, [(b"a".to_vec(), b"1".to_vec())]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn iter_opt(&self, ro: &ReadOptions) -> DbIterator {
        self.default.iter_opt(ro)
    }

    /// Iterates a range with read options (e.g. at a snapshot); the range is
    /// narrowed to the options' iterate bounds.
    pub fn range_opt<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R, ro: &ReadOptions) -> DbIterator {
        self.default.range_opt(range, ro)
    }

    /// Iterates exactly the keys that start with `prefix`, in order or
    /// reversed (rust-rocksdb `prefix_iterator`, fjall `prefix`). The range
    /// ends before the prefix's successor (the prefix without trailing 0xFF
    /// bytes, last byte plus one), so no key past the prefix is read; a
    /// prefix of only 0xFF bytes (or an empty one) is unbounded above. With a
    /// [prefix extractor](crate::Options::with_prefix_extractor) whose domain
    /// holds `prefix`, tables whose prefix filter rules it out are not read.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// for k in ["user:1", "user:2", "userx", "video:1"] {
    ///     db.put(k, "v")?;
    /// }
    /// let users: Vec<_> = db.prefix_iterator("user:").map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(users, [b"user:1".to_vec(), b"user:2".to_vec()]);
    /// let last = db.prefix_iterator("user:").next_back().transpose()?;
    /// assert_eq!(last.map(|(k, _)| k), Some(b"user:2".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn prefix_iterator(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        self.default.prefix_iterator(prefix)
    }

    /// [`Self::prefix_iterator`] with read options (at a snapshot, checksums,
    /// caching, …); iterate bounds narrow the prefix's range further.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options, ReadOptions};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// for k in ["p1", "p2", "p3", "q1"] {
    ///     db.put(k, "v")?;
    /// }
    /// let ro = ReadOptions::default().with_iterate_lower_bound("p2").with_fill_cache(false);
    /// let keys: Vec<_> = db.prefix_iterator_opt("p", &ro).map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"p2".to_vec(), b"p3".to_vec()]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn prefix_iterator_opt(&self, prefix: impl AsRef<[u8]>, ro: &ReadOptions) -> DbIterator {
        self.default.prefix_iterator_opt(prefix, ro)
    }

    /// A seekable cursor over the latest state (rust-rocksdb `raw_iterator`);
    /// see [`DbRawIterator`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// let mut it = db.raw_iterator();
    /// db.put("b", "2")?; // after the iterator was made: not seen
    /// it.seek_to_last();
    /// assert_eq!(it.key(), Some(&b"a"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn raw_iterator(&self) -> DbRawIterator {
        self.default.raw_iterator()
    }

    /// A seekable cursor with read options (rust-rocksdb `raw_iterator_opt`):
    /// at a snapshot, within the iterate bounds, and so on.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options, ReadOptions};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// let snap = db.snapshot();
    /// db.put("a", "2")?;
    /// let mut it = db.raw_iterator_opt(&ReadOptions::default().with_snapshot(&snap));
    /// it.seek("a");
    /// assert_eq!(it.value(), Some(&b"1"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn raw_iterator_opt(&self, ro: &ReadOptions) -> DbRawIterator {
        self.default.raw_iterator_opt(ro)
    }

    /// Writes the memtable to a table and waits (RocksDB `Flush`).
    pub fn flush(&self) -> Result<()> {
        self.default.flush()
    }

    /// Adds the tables at `paths`, written by [`SstFileWriter`](crate::SstFileWriter),
    /// to the default keyspace, atomically (RocksDB `IngestExternalFile`;
    /// see [`Keyspace::ingest_external_file`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, IngestExternalFileOptions, Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("k", "v")?;
    /// let f = w.finish()?.path;
    /// db.ingest_external_file(&[f], &IngestExternalFileOptions::default())?;
    /// assert_eq!(db.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn ingest_external_file<P: AsRef<Path>>(
        &self,
        paths: &[P],
        opts: &crate::IngestExternalFileOptions,
    ) -> Result<()> {
        self.default.ingest_external_file(paths, opts)
    }

    /// Compacts the keys in `[start, end]` (either end open with `None`) down
    /// the tree and waits (RocksDB `CompactRange`); flushes the memtable first.
    /// With a compaction filter set, the deepest level's files in range that
    /// no merge from above rewrote are then rewritten in place, so the filter
    /// sees every entry in range (RocksDB's default `bottommost_level_compaction`,
    /// `kIfHaveCompactionFilter`); without one, they are left as they are.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.default.compact_range(start, end)
    }

    /// Waits until pending flushes and compactions are done: the policy has
    /// nothing left to pick (RocksDB `WaitForCompact`).
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.default.wait_for_compactions()
    }

    /// Runs the compaction-buffer trim now (LSbM; it also runs every
    /// `buffer_trim_interval`): buffer files whose cached-block fraction is under
    /// `buffer_trim_threshold` leave the buffer. Returns how many were removed;
    /// 0 under policies without a buffer.
    pub fn trim_compaction_buffer(&self) -> Result<usize> {
        self.default.trim_compaction_buffer()
    }

    /// Counters and the shape of the default keyspace's tree. Its `cache` and
    /// `row_cache` count the default keyspace's own lookups and resident
    /// entries in the database's shared caches (with their whole capacity);
    /// [`Db::block_cache_stats`] and [`Db::row_cache_stats`] count everyone's.
    pub fn stats(&self) -> Stats {
        self.default.stats()
    }

    /// Counters of the database's one block cache, which every keyspace shares
    /// (`Options::with_block_cache_capacity` bounds its usage): the sum of every
    /// keyspace's lookups and entries. All zero without a block cache.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default())?;
    /// db.put("a", "1")?;
    /// ks.put("a", "2")?;
    /// db.flush()?;
    /// ks.flush()?;
    /// db.get("a")?;
    /// ks.get("a")?;
    /// let total = db.block_cache_stats();
    /// assert_eq!(total.misses, db.stats().cache.misses + ks.stats().cache.misses);
    /// assert!(total.usage_bytes <= total.capacity_bytes);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn block_cache_stats(&self) -> CacheStats {
        self.inner().shared.caches.block.as_ref().map(|c| c.total_stats()).unwrap_or_default()
    }

    /// Counters of the database's one row cache, which every keyspace shares
    /// (`Options::with_row_cache`). All zero without a row cache.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let opts = Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())).with_row_cache(1 << 20);
    /// let db = Db::open("/db", opts)?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// ks.flush()?;
    /// ks.get("a")?;
    /// ks.get("a")?;
    /// assert_eq!((db.row_cache_stats().hits, ks.stats().row_cache.hits, db.stats().row_cache.hits), (1, 1, 0));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn row_cache_stats(&self) -> CacheStats {
        self.inner().shared.caches.row.as_ref().map(|c| c.total_stats()).unwrap_or_default()
    }

    /// A property of the default keyspace (RocksDB `GetProperty`), under
    /// `strata.` or, for RocksDB's names, `rocksdb.`: reports
    /// (`stats`, `levels`, `sstables`, `compactions`, `policy`,
    /// `compaction-pipeline`) and numbers in decimal (`estimate-num-keys`,
    /// `total-sst-files-size`, `live-sst-files-size`, `cur-size-all-mem-tables`,
    /// `num-running-compactions`, `estimate-pending-compaction-bytes`,
    /// `num-snapshots`, `block-cache-usage`, `num-files-at-level<N>`, ...;
    /// [`Db::property_names`] lists them all). `strata.num-entries` counts the
    /// point entries in the tree's tables (all versions and tombstones) and
    /// `strata.num-range-deletes` the range tombstones in tables and
    /// memtables. An unknown name is `InvalidArgument`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// db.delete_range("a", "b")?;
    /// db.flush()?;
    /// assert_eq!(db.property("strata.num-range-deletes")?, "1");
    /// db.compact_range(None, None)?; // at the bottom, both go
    /// assert_eq!(db.property("rocksdb.estimate-num-keys")?, "0");
    /// assert_eq!(db.property_int("strata.num-entries")?, 0);
    /// assert!(db.property("strata.levels")?.contains("L0"));
    /// assert!(db.property("rocksdb.no-such-property").is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn property(&self, name: &str) -> Result<String> {
        self.default.property(name)
    }

    /// A numeric property's value (rust-rocksdb `property_int_value`); a
    /// report property or an unknown name is `InvalidArgument`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// assert!(db.property_int("rocksdb.cur-size-all-mem-tables")? > 0);
    /// let _snap = db.snapshot();
    /// assert_eq!(db.property_int("rocksdb.num-snapshots")?, 1);
    /// assert!(db.property_int("strata.stats").is_err(), "a report, not a number");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn property_int(&self, name: &str) -> Result<u64> {
        self.default.property_int(name)
    }

    /// Every name [`Db::property`] answers, with both prefixes.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())))?;
    /// for name in db.property_names() {
    ///     db.property(&name)?; // every listed name answers
    /// }
    /// assert!(db.property_names().iter().any(|n| n == "rocksdb.total-sst-files-size"));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn property_names(&self) -> Vec<String> {
        self.default.property_names()
    }

    /// Approximate bytes of the default keyspace's tables that hold keys in
    /// each `[start, end)` (RocksDB `GetApproximateSizes` over files; memtables
    /// not counted): from table metadata and index blocks, reading no data
    /// block. Compaction-buffer tables (LSbM, dLSM) are copies and not counted.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())).with_block_size(256))?;
    /// for i in 0..1000u32 {
    ///     db.put(format!("k{i:04}"), [7u8; 100])?;
    /// }
    /// db.flush()?;
    /// let sizes = db.approximate_sizes(&[(&b"k0000"[..], &b"k0500"[..]), (b"k0500", b"k0600"), (b"x", b"z")])?;
    /// assert!(sizes[0] > 4 * sizes[1] && sizes[1] > 0, "{sizes:?}");
    /// assert_eq!(sizes[2], 0);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Result<Vec<u64>> {
        self.default.approximate_sizes(ranges)
    }

    /// The directory this database lives in.
    pub fn path(&self) -> &Path {
        &self.inner().dir
    }

    /// Stops background work, syncs the WAL and releases the lock. Also done on drop,
    /// where errors cannot be reported.
    pub fn close(self) -> Result<()> {
        self.inner().shutdown()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.inner().shutdown();
    }
}
