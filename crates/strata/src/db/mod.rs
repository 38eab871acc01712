//! The database handle: the public API, and the shared state the write path,
//! read path and background threads work on.

mod background;
mod bounds;
mod checkpoint;
mod ddl;
mod file_get;
mod iter;
mod iter_view;
mod keyspace;
mod ks_recovery;
mod multi_get;
mod policy_change;
mod pool;
mod properties;
mod range_read;
mod raw_iter;
mod read;
mod read_only;
mod recovery;
mod repair;
mod seek;
mod shared;
mod snapshot;
mod write;

use std::collections::VecDeque;
use std::fmt;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};

pub use iter::DbIterator;
pub use keyspace::Keyspace;
pub use raw_iter::DbRawIterator;
pub use repair::{destroy, repair, RepairReport};
pub use snapshot::Snapshot;

use crate::batch::WriteBatch;
use crate::cache::{BlockCache, CacheStats, RowCache, TableCache};
use crate::compaction::executor::Env;
use crate::compaction::view::build_view;
use crate::compaction::CompactionPolicy;
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::pinned::PinnedValue;
use crate::stats::{Counters, LevelStats, Stats};
use crate::version::{Level, Version, VersionSet};
use crate::vfs::Vfs;
use shared::Shared;

/// What readers see: the memtables and the tree, swapped atomically together.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
    /// The tables of `version` that hold range tombstones.
    pub range_del_files: Vec<Arc<crate::version::FileMeta>>,
}

/// A sealed memtable waiting for its flush.
#[derive(Clone)]
pub(crate) struct Immutable {
    pub mem: Arc<MemTable>,
    /// The WAL its writes went to.
    pub wal: u64,
    /// Why it was sealed.
    pub reason: crate::events::FlushReason,
}

/// Write-side state, under `DbInner::state`.
pub(crate) struct DbState {
    pub mem: Arc<MemTable>,
    pub mem_wal: u64,
    /// Immutable memtables waiting for flush, oldest first.
    pub imms: VecDeque<Immutable>,
    /// Set by a failed WAL write/sync, flush or compaction: the DB goes read-only.
    pub bg_error: Option<String>,
    pub shutting_down: bool,
}

/// One keyspace's LSM tree (the default keyspace's is the root directory's).
pub(crate) struct DbInner {
    /// The keyspace id: 0 for the default keyspace.
    pub id: u32,
    /// The keyspace name ("default" for id 0).
    pub name: String,
    /// Set once the keyspace is dropped: its handles refuse every operation.
    pub dropped: AtomicBool,
    pub dir: PathBuf,
    pub opts: Options,
    pub vfs: Arc<dyn Vfs>,
    pub versions: Arc<VersionSet>,
    pub tables: Arc<TableCache>,
    /// This tree's handle on the database's block cache (its own namespace).
    pub block_cache: Option<Arc<BlockCache>>,
    /// This tree's handle on the database's row cache of point-lookup results
    /// by (file, user key); `None` when `row_cache_capacity` is 0.
    pub row_cache: Option<Arc<RowCache>>,
    pub policy: Arc<dyn CompactionPolicy>,
    pub sv: ArcSwap<SuperVersion>,
    pub state: Mutex<DbState>,
    /// Wakes the database's background pool for this tree (a sealed
    /// memtable, queued events, possible compaction work).
    pub bg_cv: pool::Waker,
    /// Signalled when a flush or compaction finishes (stalled writers, `flush()`).
    pub done_cv: Condvar,
    pub counters: Counters,
    /// Picking and installing tasks, background or manual, one at a time
    /// (flushes placed below L0 take it too, so no compaction lands under them
    /// meanwhile). A merge runs under it too unless several may run at once
    /// (`max_background_compactions`); then it runs outside, listed in `running`.
    pub compaction_lock: Mutex<()>,
    /// Input files of the merges running outside `compaction_lock`, one entry per merge.
    pub running: Mutex<Vec<Vec<u64>>>,
    /// Ids of tables that used up their allowed seeks, oldest first.
    pub seek_candidates: Mutex<Vec<u64>>,
    /// Held while obsolete tables are deleted, so a caller that finds nothing
    /// left to take (another thread took it) returns only once those files
    /// are gone: after `compact_range` its inputs are never still on disk.
    pub purging: Mutex<()>,
    /// What all keyspaces of the database share (WAL, sequences, snapshots, lock).
    pub shared: Arc<Shared>,
    /// Events waiting for the listeners, and the last stall condition.
    pub events: crate::events::EventHub,
}

impl DbInner {
    pub(crate) fn env(&self) -> Env<'_> {
        Env {
            vfs: self.vfs.as_ref(),
            versions: &self.versions,
            tables: &self.tables,
            opts: &self.opts,
            policy: self.policy.as_ref(),
            pipeline: crate::compaction::auto::resolve(self.opts.compaction_pipeline, &self.counters),
            split_merges: Env::splits(self.opts.compaction_pipeline),
        }
    }

    /// Publishes the current memtables and version to readers. Callers hold `state`.
    pub(crate) fn install_super_version(&self, st: &DbState) {
        self.sv.store(Arc::new(SuperVersion::new(
            st.mem.clone(),
            st.imms.iter().rev().map(|i| i.mem.clone()).collect(),
            self.versions.current(),
        )));
    }

    /// Puts the database in read-only mode after a failure.
    pub(crate) fn set_bg_error(&self, e: &Error) {
        self.set_bg_error_for(e, crate::events::BackgroundErrorReason::Other);
    }

    /// [`Self::set_bg_error`], saying what failed (logged and sent to the
    /// listeners the first time). Every keyspace stops taking writes, not
    /// only this one: the failed file may be the shared WAL or the root
    /// MANIFEST's device, and a database is read-only as a whole.
    pub(crate) fn set_bg_error_for(&self, e: &Error, reason: crate::events::BackgroundErrorReason) {
        let what = match reason {
            crate::events::BackgroundErrorReason::Wal => "writing the WAL".to_string(),
            r => format!("{r} in keyspace {:?}", self.name),
        };
        let msg = format!(
            "{e} ({what}); reopen the database to go on (after freeing space if the disk is full), \
             or read the data with Db::open_read_only"
        );
        if self.set_bg_error_msg(&msg) {
            self.events.background_error(&self.name, reason, &msg);
            self.bg_cv.notify_all(); // deliver it
        }
        if self.dropped.load(Ordering::Acquire) {
            return; // its failure is none of the live keyspaces' business
        }
        for t in self.shared.all_trees() {
            if t.id != self.id {
                t.set_bg_error_msg(&msg);
            }
        }
    }

    /// A failed root-MANIFEST edit outside flushes and compactions (a
    /// keyspace created or dropped): the database goes read-only as well.
    pub(crate) fn manifest_failed(&self, e: &Error) {
        if !matches!(e, Error::InvalidArgument(_)) {
            self.set_bg_error(e);
        }
    }

    /// Sets this tree's background error unless one is set; true if it was
    /// not. Takes only this tree's state lock.
    fn set_bg_error_msg(&self, msg: &str) -> bool {
        let mut st = self.state.lock();
        let first = st.bg_error.is_none();
        if first {
            st.bg_error = Some(msg.to_string());
        }
        drop(st);
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
        first
    }

    /// Refuses a change on a read-only handle.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.shared.read_only {
            return Err(Error::opened_read_only());
        }
        Ok(())
    }

    pub(crate) fn check_bg_error(&self) -> Result<()> {
        self.check_writable()?;
        match &self.state.lock().bg_error {
            Some(e) => Err(Error::ReadOnly(e.clone())),
            None => Ok(()),
        }
    }

    /// Deletes table files no version references any more, and drops their
    /// cached blocks, cached rows and open handles.
    pub(crate) fn purge_obsolete_files(&self) {
        let _g = self.purging.lock();
        for id in self.versions.obsolete_files().take() {
            self.tables.evict(id);
            if let Some(c) = &self.block_cache {
                c.invalidate_file(id);
            }
            if let Some(c) = &self.row_cache {
                c.invalidate_file(id);
            }
            let removed = self.vfs.remove_file(&self.tables.paths().table(id)).is_ok();
            self.tables.paths().forget(id);
            if removed {
                Counters::add(&self.counters.files_deleted, 1);
            }
        }
    }

    /// Entry-weighted bloom bits per key over a level's run files. Files a
    /// MANIFEST recorded without bits (older versions) are read from their
    /// table properties.
    fn level_bloom_bits(&self, level: &Level) -> f64 {
        let (mut bits, mut entries) = (0.0, 0.0);
        for f in level.runs.iter().flat_map(|r| &r.files) {
            let b = f.bloom_bits_per_key.or_else(|| {
                self.tables.get(f.id, f.size, &f.segments).ok().map(|t| t.properties().bloom_bits_per_key)
            });
            if let Some(b) = b {
                bits += b * f.num_entries as f64;
                entries += f.num_entries as f64;
            }
        }
        if entries == 0.0 {
            0.0
        } else {
            bits / entries
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut s = Stats::default();
        self.counters.fill(&mut s);
        let version = self.versions.current();
        let view = build_view(&version, &self.versions, &Default::default());
        let scores = self.policy.scores(&view);
        s.levels = (0..version.num_levels())
            .map(|l| {
                let mut ls = LevelStats {
                    level: l,
                    files: version.level_files(l),
                    bytes: version.level_bytes(l),
                    runs: version.levels[l].runs.len(),
                    score: scores.get(l).copied().unwrap_or(0.0),
                    target_bytes: self.policy.level_target_bytes(&view, l),
                    buffer_tables: version.levels[l].buffers.iter().map(|b| b.tables.len()).sum(),
                    buffer_files: version.levels[l].buffers.iter().map(|b| b.num_files()).sum(),
                    buffer_bytes: version.levels[l].buffer_bytes(),
                    segments: version.levels[l]
                        .runs
                        .iter()
                        .flat_map(|r| &r.files)
                        .map(|f| f.num_segments())
                        .sum(),
                    bloom_bits_per_key: self.level_bloom_bits(&version.levels[l]),
                    ..LevelStats::default()
                };
                self.counters.fill_level(&mut ls);
                ls
            })
            .collect();
        s.total_table_bytes = version.live_bytes();
        if let Some(c) = &self.block_cache {
            s.cache = c.stats();
        }
        if let Some(c) = &self.row_cache {
            s.row_cache = c.stats();
        }
        let sv = self.sv.load();
        s.memtable_bytes = (sv.mem.approximate_memory_usage()
            + sv.imms.iter().map(|m| m.approximate_memory_usage()).sum::<usize>())
            as u64;
        s.open_tables = self.tables.len();
        s.table_memory_bytes = self.tables.memory_usage() as u64;
        s.background_error = self.state.lock().bg_error.clone();
        s
    }

    /// `Db::property` / `Keyspace::property` for this tree.
    /// The oldest WAL this tree's unflushed writes need.
    pub(crate) fn oldest_needed_wal(&self) -> u64 {
        let st = self.state.lock();
        st.imms.front().map_or(st.mem_wal, |i| i.wal)
    }

    /// Refuses operations on a dropped keyspace or a closed database.
    pub(crate) fn check_live(&self) -> Result<()> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::KeyspaceNotFound(format!("{:?} was dropped", self.name)));
        }
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Stops this tree's background work: waits for its running jobs, after
    /// which the pool runs none, and delivers the events left.
    pub(crate) fn stop_background(&self) {
        self.state.lock().shutting_down = true;
        self.done_cv.notify_all();
        self.shared.pool.remove(self.id);
        self.events.deliver();
    }

    /// Flushes memtables holding writes that skipped the WAL (unless
    /// `avoid_flush_during_shutdown`), stops every keyspace's background
    /// work, syncs the WAL unless it failed, and releases the directory lock.
    /// Returns the first error: a flush that could not run means those
    /// writes are lost. Called on the default keyspace's tree.
    fn shutdown(&self) -> Result<()> {
        let shared = &self.shared;
        if shared.read_only {
            // Nothing to flush, sync, delete or unlock.
            shared.closed.store(true, Ordering::SeqCst);
            shared.trees.write().clear();
            return Ok(());
        }
        if shared.closed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let trees = shared.all_trees();
        let mut result = Ok(());
        if shared.unlogged_writes.load(Ordering::Acquire) && !self.opts.avoid_flush_during_shutdown {
            for t in &trees {
                let r = t.flush_for(crate::events::FlushReason::Shutdown).map_err(|e| {
                    Error::ReadOnly(format!(
                        "close could not flush writes made without the WAL, so they are lost: {e}"
                    ))
                });
                result = result.and(r);
            }
        }
        if shared.closed.swap(true, Ordering::SeqCst) {
            return result;
        }
        for t in &trees {
            t.stop_background();
        }
        shared.pool.shutdown();
        shared.writers_cv.notify_all();
        if let Some(w) = shared.wal.lock().as_mut() {
            // A WAL that failed is never written again; its writer saw the error.
            if !w.failed() {
                result = result.and(w.sync());
            }
        }
        for t in &trees {
            t.purge_obsolete_files();
        }
        shared.trees.write().clear();
        if let Some(l) = &shared.info_log {
            match &result {
                Ok(()) => l.line("close", format_args!("closed")),
                Err(e) => l.line("close", format_args!("closed with an error: {e}")),
            }
        }
        shared.lock_file.lock().take();
        result
    }
}

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
    inner: Arc<DbInner>,
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Db({})", self.inner.dir.display())
    }
}

impl Db {
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
        let db = recovery::open(path.as_ref(), opts).map(|inner| Db { inner })?;
        // Keyspaces named with `Options::with_keyspace` that do not exist yet.
        // (The OPTIONS file is written once, below, not once per keyspace.)
        for (name, ks_opts) in wanted {
            if db.keyspace(&name).is_err() {
                db.create_tree(&name, ks_opts)?;
            }
        }
        // Dropping `db` on failure closes it: the open fails with the error.
        keyspace::persist_options(&db.inner.shared)?;
        keyspace::log_options(&db.inner.shared);
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
        // As at a read-write open, unset per-tree options keep the recorded ones.
        // A MANIFEST a writer beside us is replacing is read again by the open, which retries.
        let opts = match opts.vfs.exists(&crate::filename::current_path(path)) {
            true => match policy_change::resolve_default(opts.clone(), path) {
                Err(e @ Error::InvalidArgument(_)) => return Err(e),
                r => r.unwrap_or(opts),
            },
            false => opts,
        };
        read_only::open(path, opts).map(|inner| Db { inner })
    }

    /// Stores a value (RocksDB `Put`).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Stores a value with write options.
    pub fn put_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write_opt(b, wo)
    }

    /// Deletes a key (RocksDB `Delete`); deleting a missing key is not an error.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// Deletes a key with write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write_opt(b, wo)
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
        self.delete_range_opt(start, end, &WriteOptions::default())
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
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write_opt(b, wo)
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
        self.merge_opt(key, operand, &WriteOptions::default())
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
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        self.write_opt(b, wo)
    }

    /// Applies a batch atomically (RocksDB `Write`).
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// Applies a batch atomically with write options.
    pub fn write_opt(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        self.inner.write(batch, wo)
    }

    /// Reads the latest value of a key (RocksDB `Get`).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// Reads a key with read options (e.g. at a snapshot).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        self.inner.get_at(key.as_ref(), ro.snapshot.as_ref().map(Snapshot::sequence), ro)
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
        self.get_pinned_opt(key, &ReadOptions::default())
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
        self.inner.get_pinned_at(key.as_ref(), ro.snapshot.as_ref().map(Snapshot::sequence), ro)
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
        self.multi_get_opt(keys, &ReadOptions::default())
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
        into_vecs(self.multi_get_pinned_opt(keys, ro))
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
        self.multi_get_pinned_opt(keys, &ReadOptions::default())
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
        let keys: Vec<K> = keys.into_iter().collect();
        let refs: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.inner.multi_get_at(&refs, ro.snapshot.as_ref().map(Snapshot::sequence), ro)
    }

    /// Takes a snapshot of the current state (RocksDB `GetSnapshot`).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.inner.clone())
    }

    /// Iterates all keys in order; also iterates backwards (`.rev()`).
    pub fn iter(&self) -> DbIterator {
        self.range::<&[u8], _>(..)
    }

    /// Iterates the keys in `range`, in order or reversed.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        self.range_opt(range, &ReadOptions::default())
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
        self.range_opt::<&[u8], _>(.., ro)
    }

    /// Iterates a range with read options (e.g. at a snapshot); the range is
    /// narrowed to the options' iterate bounds.
    pub fn range_opt<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R, ro: &ReadOptions) -> DbIterator {
        DbIterator::new(self.inner.clone(), ro.snapshot.as_ref().map(Snapshot::sequence), &range, ro)
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
        self.prefix_iterator_opt(prefix, &ReadOptions::default())
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
        DbIterator::prefix(
            self.inner.clone(),
            ro.snapshot.as_ref().map(Snapshot::sequence),
            prefix.as_ref(),
            ro,
        )
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
        self.raw_iterator_opt(&ReadOptions::default())
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
        DbRawIterator::new(self.inner.clone(), ro.snapshot.as_ref().map(Snapshot::sequence), ro)
    }

    /// Writes the memtable to a table and waits (RocksDB `Flush`).
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Compacts the keys in `[start, end]` (either end open with `None`) down
    /// the tree and waits (RocksDB `CompactRange`); flushes the memtable first.
    /// With a compaction filter set, the deepest level's files in range that
    /// no merge from above rewrote are then rewritten in place, so the filter
    /// sees every entry in range (RocksDB's default `bottommost_level_compaction`,
    /// `kIfHaveCompactionFilter`); without one, they are left as they are.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.compact_range(start, end)
    }

    /// Waits until pending flushes and compactions are done: the policy has
    /// nothing left to pick (RocksDB `WaitForCompact`).
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.wait_for_compactions()
    }

    /// Runs the compaction-buffer trim now (LSbM; it also runs every
    /// `buffer_trim_interval`): buffer files whose cached-block fraction is under
    /// `buffer_trim_threshold` leave the buffer. Returns how many were removed;
    /// 0 under policies without a buffer.
    pub fn trim_compaction_buffer(&self) -> Result<usize> {
        self.inner.trim_buffers()
    }

    /// Counters and the shape of the default keyspace's tree. Its `cache` and
    /// `row_cache` count the default keyspace's own lookups and resident
    /// entries in the database's shared caches (with their whole capacity);
    /// [`Db::block_cache_stats`] and [`Db::row_cache_stats`] count everyone's.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
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
        self.inner.shared.caches.block.as_ref().map(|c| c.total_stats()).unwrap_or_default()
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
        self.inner.shared.caches.row.as_ref().map(|c| c.total_stats()).unwrap_or_default()
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
        self.inner.property(name)
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
        self.inner.property_int(name)
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
        self.inner.property_names()
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
        self.inner.approximate_sizes(ranges)
    }

    /// The directory this database lives in.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Stops background work, syncs the WAL and releases the lock. Also done on drop,
    /// where errors cannot be reported.
    pub fn close(self) -> Result<()> {
        self.inner.shutdown()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.inner.shutdown();
    }
}

/// `multi_get`'s answers with their values copied out.
pub(crate) fn into_vecs(answers: Vec<Result<Option<PinnedValue>>>) -> Vec<Result<Option<Vec<u8>>>> {
    answers.into_iter().map(|a| a.map(|v| v.map(PinnedValue::into_vec))).collect()
}

/// `strata.compaction-pipeline`: the mode, and where all merges' time went.
fn pipeline_report(s: &Stats, mode: crate::options::CompactionPipeline) -> String {
    let secs = s.compaction_time.as_secs_f64();
    let mb = |b: u64| b as f64 / 1e6;
    let bw = if secs > 0.0 { mb(s.compaction_bytes_read) / secs } else { 0.0 };
    let st = s.compaction_stages;
    format!(
        "mode {}\ncompactions {}\ninput {:.1} MB, output {:.1} MB, wall {:.3} s, bandwidth {:.1} MB/s\n\
         compute (compress+checksum) {:.3} s, write {:.3} s, merge waiting on output {:.3} s\n\
         sub-tasks {}, merging them {:.3} s, waiting for them {:.3} s\n\
         read {:.3} s, merge waiting on reads {:.3} s",
        mode.name(),
        s.compactions,
        mb(s.compaction_bytes_read),
        mb(s.compaction_bytes_written),
        secs,
        bw,
        st.compute.as_secs_f64(),
        st.write.as_secs_f64(),
        st.merge_waiting.as_secs_f64(),
        st.subtasks,
        st.subtask_merge.as_secs_f64(),
        st.subtask_waiting.as_secs_f64(),
        st.read.as_secs_f64(),
        st.read_waiting.as_secs_f64(),
    )
}
