//! [`ReadOptions`]: the options of one read (RocksDB's), read by point
//! reads (read.rs, multi_get.rs) and iterators.

use super::snapshot::Snapshot;
use crate::options::setter::setter;

/// Options for one read (RocksDB `ReadOptions`).
///
/// # Examples
///
/// ```
/// use strata::{Db, Options, ReadOptions};
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// for k in ["a", "b", "c", "d"] {
///     db.put(k, "1")?;
/// }
/// let snap = db.snapshot();
/// db.delete("b")?;
/// // Read as of the snapshot, within [b, d).
/// let ro = ReadOptions::default().with_snapshot(&snap).with_iterate_lower_bound("b").with_iterate_upper_bound("d");
/// let keys: Vec<Vec<u8>> = db.iter_opt(&ro).map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
/// assert_eq!(db.get_opt("b", &ro)?, Some(b"1".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ReadOptions {
    pub(crate) snapshot: Option<Snapshot>,
    /// `None`: the default rule (blocks read from the file are verified,
    /// mapped ones are not); `Some(v)`: `v` on every read path.
    pub(crate) verify_checksums: Option<bool>,
    pub(crate) fill_cache: bool,
    pub(crate) readahead_size: usize,
    pub(crate) use_compaction_buffer: bool,
    pub(crate) buffer_dispatch: bool,
    pub(crate) iterate_lower_bound: Option<Vec<u8>>,
    pub(crate) iterate_upper_bound: Option<Vec<u8>>,
    pub(crate) total_order_seek: bool,
    pub(crate) prefix_same_as_start: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            verify_checksums: None,
            fill_cache: true,
            readahead_size: 0,
            use_compaction_buffer: true,
            buffer_dispatch: false,
            iterate_lower_bound: None,
            iterate_upper_bound: None,
            total_order_seek: false,
            prefix_same_as_start: false,
        }
    }
}

impl ReadOptions {
    /// Defaults: latest state, checksums verified, blocks cached.
    pub fn new() -> Self {
        Self::default()
    }
    setter!(/// Ask no prefix filter (RocksDB `total_order_seek`; default false): a prefix
        /// iterator then opens every table covering its prefix, as without a
        /// [prefix extractor](crate::Options::with_prefix_extractor). The answers are the same;
        /// it is there to measure, or to bypass an extractor suspected of breaking
        /// its contract.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::sync::Arc;
        /// use strata::{Db, FixedPrefix, Options, ReadOptions};
        ///
        /// let dir = tempfile::tempdir()?;
        /// let db = Db::open(dir.path(), Options::default().with_prefix_extractor(Arc::new(FixedPrefix::new(4))))?;
        /// db.put(b"user0001", b"ada")?;
        /// db.flush()?;
        /// let ro = ReadOptions::default().with_total_order_seek(true);
        /// assert_eq!(db.prefix_iterator_opt("item", &ro).count(), 0);
        /// assert_eq!(db.stats().prefix_filter_checks, 0);
        /// # Ok::<(), strata::Error>(())
        /// ```
        with_total_order_seek, total_order_seek, bool);
    setter!(/// Confine a raw iterator to the prefix of its seek key (RocksDB
        /// `prefix_same_as_start`; default false): after `seek(k)` or `seek_for_prev(k)`
        /// with `k` in the [prefix extractor](crate::Options::with_prefix_extractor)'s domain, it
        /// shows only keys with `k`'s prefix (within the iterate bounds) and skips tables
        /// whose prefix filter rules that prefix out (unless `total_order_seek`). Seeks
        /// outside the domain, `seek_to_first` and `seek_to_last` see every key. Without
        /// an extractor it changes nothing.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::sync::Arc;
        /// use strata::{Db, FixedPrefix, Options, ReadOptions};
        ///
        /// let dir = tempfile::tempdir()?;
        /// let db = Db::open(dir.path(), Options::default().with_prefix_extractor(Arc::new(FixedPrefix::new(2))))?;
        /// for k in ["aa1", "aa2", "ab1"] {
        ///     db.put(k, "v")?;
        /// }
        /// let mut it = db.raw_iterator_opt(&ReadOptions::default().with_prefix_same_as_start(true));
        /// it.seek("aa2");
        /// assert_eq!(it.key(), Some(&b"aa2"[..]));
        /// it.next(); // "ab1" has another prefix
        /// assert!(!it.valid());
        /// it.seek_to_first();
        /// it.next();
        /// it.next();
        /// assert_eq!(it.key(), Some(&b"ab1"[..]));
        /// # Ok::<(), strata::Error>(())
        /// ```
        with_prefix_same_as_start, prefix_same_as_start, bool);
    /// Read as of a snapshot (RocksDB `ReadOptions::snapshot`).
    #[must_use]
    pub fn with_snapshot(mut self, snapshot: &Snapshot) -> Self {
        self.snapshot = Some(snapshot.clone());
        self
    }
    /// Verify block checksums (RocksDB `verify_checksums`). By default every
    /// block read from a table file (or decompressed) is verified, and a block
    /// served in place from a memory-mapped table
    /// ([`Options::with_mmap_reads`](crate::Options::with_mmap_reads)) is not,
    /// as in LevelDB; `true` verifies those too, on every read, and `false`
    /// verifies none.
    #[must_use]
    pub fn with_verify_checksums(mut self, v: bool) -> Self {
        self.verify_checksums = Some(v);
        self
    }

    /// How blocks are verified: (read from the file or decompressed, served
    /// from a map).
    pub(crate) fn verify(&self) -> (bool, bool) {
        self.verify_checksums.map_or((true, false), |v| (v, v))
    }
    setter!(/// Put blocks read into the block cache, and rows found into the row cache
        /// (RocksDB `fill_cache`; default true).
        with_fill_cache, fill_cache, bool);
    setter!(/// Bytes an iterator reads from a table at once while moving forward, for long scans
        /// (RocksDB `readahead_size`; default 0: one block per read). Point reads ignore it.
        with_readahead_size, readahead_size, usize);
    setter!(/// Let point reads use the LSbM compaction buffer (default true). Off, reads
        /// go to the tree's own runs only: the same answers, other cache behaviour.
        with_use_compaction_buffer, use_compaction_buffer, bool);
    setter!(/// Point reads of a run whose compaction buffer is complete (it holds a copy of
        /// everything that entered the run) go to the buffer alone, never to the run:
        /// the dLSM paper's dispatch ("reads go to the compaction buffer and the last
        /// level"). A key no buffer table holds is then known to be absent from the run;
        /// a removed entry, or under LSbM an uncached block, still sends the read to the
        /// run. Default false: LSbM's Algorithm 3, where the run's own bloom filter
        /// first decides whether the level can hold the key, which costs one filter
        /// probe per level instead of one per buffer table (see docs/BENCHMARKS.md).
        /// Without a compaction buffer, or with `use_compaction_buffer` off, it changes
        /// nothing. The answers are the same either way.
        with_buffer_dispatch, buffer_dispatch, bool);

    /// Iterators see no key below `key` (inclusive; RocksDB
    /// `ReadOptions::iterate_lower_bound`). A [`DbRawIterator`](crate::DbRawIterator)
    /// seeking below it lands on the first key at or above it, and `prev` stops
    /// there; [`Db::range_opt`](crate::Db::range_opt) and the other `_opt`
    /// iterators yield the intersection of their range with the bounds. Point
    /// reads ignore it. A lower bound at or above the upper bound leaves nothing
    /// to iterate.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options, ReadOptions};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "v")?;
    /// }
    /// let ro = ReadOptions::default().with_iterate_lower_bound("b");
    /// let keys: Vec<_> = db.iter_opt(&ro).map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]);
    /// let mut it = db.raw_iterator_opt(&ro);
    /// it.seek("a"); // clamped to the bound
    /// assert_eq!(it.key(), Some(&b"b"[..]));
    /// it.prev(); // stops at the bound
    /// assert!(!it.valid());
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_iterate_lower_bound(mut self, key: impl AsRef<[u8]>) -> Self {
        self.iterate_lower_bound = Some(key.as_ref().to_vec());
        self
    }

    /// Iterators see no key at or above `key` (exclusive; RocksDB
    /// `ReadOptions::iterate_upper_bound`). A [`DbRawIterator`](crate::DbRawIterator)
    /// seeking for the last key at or before a key at or above it lands on the
    /// last key below it, and `next` stops there; [`Db::range_opt`](crate::Db::range_opt)
    /// and the other `_opt` iterators yield the intersection of their range with
    /// the bounds. Point reads ignore it.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options, ReadOptions};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "v")?;
    /// }
    /// let ro = ReadOptions::default().with_iterate_upper_bound("c");
    /// let keys: Vec<_> = db.range_opt("b".., &ro).map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"b".to_vec()]);
    /// let mut it = db.raw_iterator_opt(&ro);
    /// it.seek_to_last();
    /// assert_eq!(it.key(), Some(&b"b"[..]));
    /// it.next(); // stops at the bound
    /// assert!(!it.valid());
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_iterate_upper_bound(mut self, key: impl AsRef<[u8]>) -> Self {
        self.iterate_upper_bound = Some(key.as_ref().to_vec());
        self
    }
}
