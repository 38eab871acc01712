//! Engine statistics: live counters (atomics bumped on the hot paths) and the
//! [`Stats`] snapshot `Db::stats()` returns.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use parking_lot::Mutex;

use crate::cache::CacheStats;
use crate::options::kinds::MAX_LEVELS;

/// How many finished compactions [`Stats::recent_compactions`] keeps.
const HISTORY: usize = 64;

/// Where the output side of a flush or compaction spent its time, summed
/// over its output tables (`Options::with_compaction_pipeline`). The rest of
/// the wall time is reading, checking and merging the inputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StageTimes {
    /// Compressing and checksumming data blocks (on the compaction thread
    /// when sequential, summed over the compute threads otherwise).
    pub compute: Duration,
    /// The write stage: appending data blocks (with a pipeline, all the write
    /// thread does between two blocks' arrivals), and each table's meta
    /// blocks, footer and sync.
    pub write: Duration,
    /// The merging thread waiting for the compute and write stages to take
    /// a block (their queues were full); 0 when sequential.
    pub merge_waiting: Duration,
    /// Reading, verifying, decompressing and merging sub-tasks, summed over
    /// the threads that merged them (`Parallel` merges only; otherwise that
    /// work is on the task's thread and not timed apart).
    pub subtask_merge: Duration,
    /// The task's thread waiting for the next sub-task's merged entries.
    pub subtask_waiting: Duration,
    /// Sub-tasks merged.
    pub subtasks: u64,
    /// Reading input readahead windows: on the merging thread(s), plus the
    /// read threads whose windows they took (the read stage's busy time).
    pub read: Duration,
    /// The merging thread(s) waiting for a read thread's window.
    pub read_waiting: Duration,
    /// Tables a pipelined output finished (last blocks, meta blocks, sync) on
    /// a thread of their own while the next table filled; with several
    /// `db_paths`, one per other path at once (S-PPCP).
    pub finished_apart: u64,
    /// The merging thread waiting for such a table to be finished.
    pub finish_waiting: Duration,
    /// CPU time used by every thread that worked on the task: its own, and
    /// the read, merge, compute, write and finish threads'. On a machine
    /// with fewer cores than busy stages this, over the cores, bounds the
    /// task (`compaction::stage_model`). Zero where the platform has no
    /// per-thread CPU clock.
    pub cpu: Duration,
}

impl std::ops::AddAssign for StageTimes {
    fn add_assign(&mut self, o: Self) {
        self.compute += o.compute;
        self.write += o.write;
        self.merge_waiting += o.merge_waiting;
        self.subtask_merge += o.subtask_merge;
        self.subtask_waiting += o.subtask_waiting;
        self.subtasks += o.subtasks;
        self.read += o.read;
        self.read_waiting += o.read_waiting;
        self.finished_apart += o.finished_apart;
        self.finish_waiting += o.finish_waiting;
        self.cpu += o.cpu;
    }
}

/// What one flush or compaction task did.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionRecord {
    /// `flush`, `merge`, `append`, `refilter` (a table's filter rebuilt), `move` or `drop`.
    pub kind: &'static str,
    /// Why the policy chose it.
    pub reason: &'static str,
    /// Level the output went to.
    pub output_level: usize,
    /// Input files.
    pub input_files: usize,
    /// Output files.
    pub output_files: usize,
    /// Bytes read from input tables.
    pub bytes_read: u64,
    /// Bytes written to output tables.
    pub bytes_written: u64,
    /// Of `bytes_read`, the bytes of inputs from levels above the output
    /// level: data the task moved down (0 for a rewrite within a level).
    pub bytes_moved_down: u64,
    /// New blocks the compaction warm-up put into the block cache.
    pub warmup_blocks_inserted: u64,
    /// Entries the compaction filter removed (`Options::with_compaction_filter`).
    pub filter_removed: u64,
    /// Values the compaction filter changed.
    pub filter_changed: u64,
    /// Wall time of the task.
    pub duration: Duration,
    /// Busy and waiting time of the output stages.
    pub stages: StageTimes,
    /// The output pipeline the task ran with (`Auto` resolved).
    pub pipeline: crate::options::CompactionPipeline,
    /// Range tombstones written to the output tables (`Db::delete_range`).
    pub range_dels_written: u64,
    /// Range tombstones the task dropped (no snapshot needs them and nothing
    /// older lies under them).
    pub range_dels_dropped: u64,
}

/// The `reason` of a merge that rewrites one table in place (`lwc`).
pub const TABLE_REWRITE: &str = "table rewrite";

/// Per-level shape of the tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelStats {
    /// Level number (0 = flushed memtables).
    pub level: usize,
    /// Distinct files in the level.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Sorted runs in the level.
    pub runs: usize,
    /// The policy's score (>= 1 wants compaction).
    pub score: f64,
    /// The policy's target size, if it has one.
    pub target_bytes: Option<u64>,
    /// Compaction buffer (LSbM): tables attached to the level's runs.
    pub buffer_tables: usize,
    /// Compaction buffer: files present (a file may also be in a run).
    pub buffer_files: usize,
    /// Compaction buffer: bytes of the present files.
    pub buffer_bytes: u64,
    /// Compaction buffer: bytes of the present files that no run lists and
    /// no shallower level's buffer does, the disk space the buffer adds (a
    /// file moved down whole is in the lower run and its buffer at once, and
    /// counts in `buffer_bytes` only). The runs' `bytes` and these add up to
    /// `Stats::total_table_bytes`.
    pub buffer_bytes_in_no_run: u64,
    /// Sorted segments over the level's run files (equal to `files` unless
    /// light-weight compactions appended to them).
    pub segments: usize,
    /// Bloom bits per key in force: the average over the level's run files,
    /// weighted by entries (files moved down keep the filter they were built
    /// with). 0 for an empty level or one without filters.
    pub bloom_bits_per_key: f64,
    /// Point reads that asked the filter of a run file of this level (a file
    /// without a filter counts, as a filter that always says maybe).
    pub filter_probes: u64,
    /// Of those, the filter said the key may be there.
    pub filter_positives: u64,
    /// Of those, the file held no entry of the key visible to the read: a
    /// wasted table probe (the false positives, exactly so for reads without
    /// a snapshot).
    pub filter_false_positives: u64,
}

impl Stats {
    /// Compaction bytes written per byte of input moved down a level (0
    /// before any): the per-compaction write amplification the LWC-tree
    /// paper reports (LevelDB about 10, light-weight compaction near 2).
    pub fn compaction_write_per_moved(&self) -> f64 {
        if self.compaction_bytes_moved_down == 0 {
            0.0
        } else {
            self.compaction_bytes_written as f64 / self.compaction_bytes_moved_down as f64
        }
    }
}

impl LevelStats {
    /// Measured false-positive rate: false positives / filter probes (0 before any probe).
    pub fn false_positive_rate(&self) -> f64 {
        if self.filter_probes == 0 {
            0.0
        } else {
            self.filter_false_positives as f64 / self.filter_probes as f64
        }
    }
}

/// A snapshot of the engine's counters (`Db::stats()`).
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Key + value bytes the user wrote.
    pub user_bytes_written: u64,
    /// Range tombstones written to tables by flushes and compactions.
    pub range_dels_written: u64,
    /// Range tombstones compactions dropped.
    pub range_dels_dropped: u64,
    /// Bytes appended to WALs.
    pub wal_bytes_written: u64,
    /// Table bytes written by flushes.
    pub flush_bytes_written: u64,
    /// Table bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Table bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// (flush + compaction bytes written) / user bytes written; 0 before any write.
    pub write_amplification: f64,
    /// Write groups committed (one WAL append each; group commit merges concurrent writers).
    pub write_groups: u64,
    /// Writes (batches) committed.
    pub writes: u64,
    /// WAL syncs performed.
    pub wal_syncs: u64,
    /// Memtables flushed.
    pub flushes: u64,
    /// Merge tasks run.
    pub compactions: u64,
    /// Files moved down without rewrite.
    pub trivial_moves: u64,
    /// Files dropped without rewrite.
    pub dropped_files: u64,
    /// Time writers spent slowed down or stopped.
    pub stall_time: Duration,
    /// Write groups paced by the L0 slowdown trigger (`Options::with_delayed_write_rate`).
    pub slowdowns: u64,
    /// Times writers stopped (too many memtables or L0 files).
    pub stops: u64,
    /// Point lookups served: each `get`, and each distinct key of a `multi_get`.
    pub gets: u64,
    /// `multi_get` calls (RocksDB's `rocksdb.number.multiget.get`).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.multi_get([b"a", b"b", b"a"]);
    /// let s = db.stats();
    /// // One batch of three keys, two of them distinct: two lookups.
    /// assert_eq!((s.multi_gets, s.multi_get_keys, s.gets), (1, 3, 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub multi_gets: u64,
    /// Keys asked for by `multi_get` calls, duplicates included (RocksDB's
    /// `rocksdb.number.multiget.keys.read`); each distinct key of a call also
    /// counts in [`Self::gets`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.multi_get([b"x"; 5]);
    /// assert_eq!((db.stats().multi_get_keys, db.stats().gets), (5, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub multi_get_keys: u64,
    /// Table segments (a table written once is one) whose prefix filter a
    /// prefix iterator asked before reading them (RocksDB's
    /// `rocksdb.bloom.filter.prefix.checked`); see
    /// [`Options::with_prefix_extractor`](crate::Options::with_prefix_extractor).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, FixedPrefix, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default().with_prefix_extractor(Arc::new(FixedPrefix::new(2))))?;
    /// db.put(b"ab1", b"x")?;
    /// db.flush()?;
    /// assert_eq!(db.prefix_iterator("ab").count(), 1);
    /// assert_eq!((db.stats().prefix_filter_checks, db.stats().prefix_filter_skips), (1, 0));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub prefix_filter_checks: u64,
    /// Of [`Self::prefix_filter_checks`], the segments skipped because their
    /// filter said no key has the prefix: none of their data blocks was read
    /// (RocksDB's `rocksdb.bloom.filter.prefix.useful`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, FixedPrefix, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default().with_prefix_extractor(Arc::new(FixedPrefix::new(2))))?;
    /// db.put(b"a01", b"x")?;
    /// db.put(b"ab1", b"x")?;
    /// db.flush()?;
    /// // "aa" lies inside the table's key range (a01..ab1), so the scan opens
    /// // the table; its filter rules "aa" out. (A table wholly past the scan's
    /// // range is not even opened, and not counted.)
    /// assert_eq!(db.prefix_iterator("aa").count(), 0);
    /// assert_eq!((db.stats().prefix_filter_checks, db.stats().prefix_filter_skips), (1, 1));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub prefix_filter_skips: u64,
    /// Tables probed by point lookups (read amplification = this / gets).
    pub get_table_probes: u64,
    /// Positionings of user iterators: each seek, seek for prev, seek to
    /// first or last, and a range iterator's first step in either direction
    /// (RocksDB's `rocksdb.number.db.seek` counts the two seeks only).
    pub iter_seeks: u64,
    /// Tables user iterators opened to read (a range read's tables scanned
    /// = this / [`Self::iter_seeks`]; the dLSM paper's Fig. 12(c)). A table
    /// wholly past the scan's upper bound, or whose prefix filter rules the
    /// scan's prefix out, is not read and not counted; compactions' reads
    /// are not counted.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put(b"a", b"1")?;
    /// db.flush()?;
    /// db.put(b"b", b"2")?;
    /// db.flush()?;
    /// // Both flushed tables overlap the scan; the memtable is not a table.
    /// assert_eq!(db.iter().count(), 2);
    /// let s = db.stats();
    /// assert_eq!((s.iter_seeks, s.iter_tables_opened), (1, 2));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub iter_tables_opened: u64,
    /// Table files deleted from disk.
    pub files_deleted: u64,
    /// Point lookups answered by a compaction-buffer file (LSbM).
    pub buffer_hits: u64,
    /// Point lookups that left a buffer for its run because the buffer file's
    /// block was not cached (the buffer serves only hot data).
    pub buffer_uncached: u64,
    /// Point lookups that found their run's own file in the run's buffer (a
    /// file moved into the run whole) and read the run instead, at no probe.
    pub buffer_same_file: u64,
    /// Runs that range reads read through their compaction buffer instead
    /// (LSbM Algorithm 4), counted once per iterator direction.
    pub buffer_range_reads: u64,
    /// New data blocks compactions put into the block cache
    /// (`Options::with_compaction_warmup`; also counted in `cache.inserts`).
    pub warmup_blocks_inserted: u64,
    /// Compaction-buffer trims run (LSbM Algorithm 2).
    pub buffer_trims: u64,
    /// Buffer files the trims removed.
    pub buffer_files_trimmed: u64,
    /// Tables that used up their allowed seeks (`Options::with_seek_compaction`).
    pub seek_candidates: u64,
    /// Tasks run because a table used up its allowed seeks.
    pub seek_compactions: u64,
    /// Tasks run by idle compaction (`Options::with_idle_compaction`).
    pub idle_compactions: u64,
    /// Table filters rebuilt at other bits without rewriting their data
    /// (Monkey's bits following the tree; `BloomAllocation::Monkey`).
    pub filter_rebuilds: u64,
    /// Memtables switched (then flushed) because the live WALs outgrew
    /// `max_total_wal_size` while this keyspace held the oldest one.
    pub wal_size_flushes: u64,
    /// External files ingested (`Db::ingest_external_file`).
    pub ingested_files: u64,
    /// Of those, the files that joined the tree as they were (linked or
    /// copied), not rewritten at a sequence of their own.
    pub ingested_files_as_is: u64,
    /// Light-weight compactions (`lwc`): victims appended to next-level tables.
    pub appends: u64,
    /// Bytes of compaction inputs that came from a level above the task's
    /// output level: written / this is the write amplification per byte moved
    /// one level down (about 1 + ratio for leveling, near 1 for `lwc`).
    pub compaction_bytes_moved_down: u64,
    /// Bytes those appends wrote (new segments; also in `compaction_bytes_written`).
    pub bytes_appended: u64,
    /// Tables rewritten in place for holding too many segments (`lwc`).
    pub table_rewrites: u64,
    /// Entries compactions removed because the compaction filter said so
    /// (`Options::with_compaction_filter`; RocksDB's ticker
    /// `COMPACTION_KEY_DROP_USER`), each written as a tombstone or dropped.
    pub compaction_filter_removed: u64,
    /// Values compactions rewrote because the compaction filter said so.
    pub compaction_filter_changed: u64,
    /// Table segments whose index a point read searched (one per table probe
    /// for tables of one segment; more when a DTable's filters let several through).
    /// The keys of a `multi_get` count as single gets would, also when they
    /// share one search of a block's index.
    pub get_segment_probes: u64,
    /// Memtable flushes whose table went below L0
    /// (`Options::with_max_mem_compaction_level`).
    pub flushes_below_l0: u64,
    /// Wall time of all compactions (merges), summed.
    pub compaction_time: Duration,
    /// Most merges seen running at once (`Options::with_max_background_compactions`).
    pub peak_running_compactions: u64,
    /// Output stage times of all compactions (merges), summed.
    pub compaction_stages: StageTimes,
    /// Per-level shape.
    pub levels: Vec<LevelStats>,
    /// Block cache counters.
    pub cache: CacheStats,
    /// Row cache counters (entries are rows; all zero when it is off).
    pub row_cache: CacheStats,
    /// Bytes of all live tables (in runs or buffers; a shared file counts once).
    pub total_table_bytes: u64,
    /// Bytes held by memtables (active + immutable).
    pub memtable_bytes: u64,
    /// Open tables in the table cache and their index+filter memory.
    pub open_tables: usize,
    /// Index and filter bytes held by open tables.
    pub table_memory_bytes: u64,
    /// The most recent flushes and compactions, oldest first.
    pub recent_compactions: Vec<CompactionRecord>,
    /// The failure that stopped writes to this keyspace (a flush, compaction
    /// or WAL error), once one did; the next write fails with it too.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// assert_eq!(db.stats().background_error, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub background_error: Option<String>,
}

impl Stats {
    /// False-positive filter probes over all levels: table reads that found nothing.
    pub fn filter_false_positives(&self) -> u64 {
        self.levels.iter().map(|l| l.filter_false_positives).sum()
    }

    /// Tables probed per point lookup.
    pub fn read_amplification(&self) -> f64 {
        if self.gets == 0 {
            0.0
        } else {
            self.get_table_probes as f64 / self.gets as f64
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "level  files  runs        bytes   score      target  bits/key  filter probes  false pos  fp rate"
        )?;
        for l in &self.levels {
            let target = l.target_bytes.map(|t| t.to_string()).unwrap_or_else(|| "-".into());
            writeln!(
                f,
                "L{:<5} {:>5} {:>5} {:>12} {:>7.2} {:>11} {:>9.2} {:>14} {:>10} {:>8.5}",
                l.level,
                l.files,
                l.runs,
                l.bytes,
                l.score,
                target,
                l.bloom_bits_per_key,
                l.filter_probes,
                l.filter_false_positives,
                l.false_positive_rate()
            )?;
        }
        writeln!(
            f,
            "user written {} B, wal {} B, flush {} B, compaction read {} B / written {} B, write-amp {:.2}; \
             moved down {} B, written per byte moved down {:.2}",
            self.user_bytes_written,
            self.wal_bytes_written,
            self.flush_bytes_written,
            self.compaction_bytes_read,
            self.compaction_bytes_written,
            self.write_amplification,
            self.compaction_bytes_moved_down,
            self.compaction_write_per_moved()
        )?;
        writeln!(f, "writes {} in {} groups, {} WAL syncs", self.writes, self.write_groups, self.wal_syncs)?;
        if let Some(e) = &self.background_error {
            writeln!(f, "background error (writes stopped): {e}")?;
        }
        writeln!(
            f,
            "flushes {}, compactions {}, trivial moves {}, dropped files {}, stall {:?} ({} slowdowns, {} stops)",
            self.flushes,
            self.compactions,
            self.trivial_moves,
            self.dropped_files,
            self.stall_time,
            self.slowdowns,
            self.stops
        )?;
        if self.appends > 0 || self.table_rewrites > 0 {
            let per_level: Vec<String> = self
                .levels
                .iter()
                .filter(|l| l.files > 0)
                .map(|l| format!("L{} {}", l.level, l.segments))
                .collect();
            writeln!(
                f,
                "light-weight compaction: appends {} ({} B), table rewrites {}, segments {}, segments probed per get {:.2}",
                self.appends,
                self.bytes_appended,
                self.table_rewrites,
                per_level.join(", "),
                if self.gets == 0 { 0.0 } else { self.get_segment_probes as f64 / self.gets as f64 }
            )?;
        }
        if self.levels.iter().any(|l| l.buffer_tables > 0) || self.buffer_trims > 0 {
            let per_level: Vec<String> = (self.levels.iter())
                .filter(|l| l.buffer_tables > 0)
                .map(|l| {
                    format!(
                        "L{} {} tables/{} files/{} B ({} B in no run)",
                        l.level, l.buffer_tables, l.buffer_files, l.buffer_bytes, l.buffer_bytes_in_no_run
                    )
                })
                .collect();
            writeln!(
                f,
                "compaction buffer: {}; hits {}, uncached {}, run's own file {}, range reads {}, trims {} ({} files removed)",
                if per_level.is_empty() { "empty".to_string() } else { per_level.join(", ") },
                self.buffer_hits,
                self.buffer_uncached,
                self.buffer_same_file,
                self.buffer_range_reads,
                self.buffer_trims,
                self.buffer_files_trimmed
            )?;
        }
        if self.compaction_filter_removed > 0 || self.compaction_filter_changed > 0 {
            writeln!(
                f,
                "compaction filter: {} entries removed, {} values changed",
                self.compaction_filter_removed, self.compaction_filter_changed
            )?;
        }
        if self.idle_compactions > 0 {
            writeln!(f, "idle compactions {}", self.idle_compactions)?;
        }
        if self.filter_rebuilds > 0 {
            writeln!(f, "filters rebuilt {}", self.filter_rebuilds)?;
        }
        if self.seek_candidates > 0 || self.flushes_below_l0 > 0 {
            writeln!(
                f,
                "seek-triggered compactions {} ({} tables out of seeks), flushes placed below L0 {}",
                self.seek_compactions, self.seek_candidates, self.flushes_below_l0
            )?;
        }
        let c = &self.cache;
        let lookups = c.hits + c.misses;
        let ratio = if lookups == 0 { 0.0 } else { c.hits as f64 / lookups as f64 };
        writeln!(
            f,
            "block cache: {}/{} B, {} blocks, hits {}, misses {} (hit ratio {:.3}), inserts {}, evictions {}, invalidations {}",
            c.usage_bytes, c.capacity_bytes, c.entries, c.hits, c.misses, ratio, c.inserts, c.evictions, c.invalidations
        )?;
        if self.warmup_blocks_inserted > 0 {
            writeln!(
                f,
                "compaction warm-up: {} blocks put into the block cache",
                self.warmup_blocks_inserted
            )?;
        }
        let r = &self.row_cache;
        if r.capacity_bytes > 0 {
            let lookups = r.hits + r.misses;
            let ratio = if lookups == 0 { 0.0 } else { r.hits as f64 / lookups as f64 };
            writeln!(
                f,
                "row cache: {}/{} B, {} rows, hits {}, misses {} (hit ratio {:.3}), inserts {}, evictions {}, invalidations {}",
                r.usage_bytes, r.capacity_bytes, r.entries, r.hits, r.misses, ratio, r.inserts, r.evictions, r.invalidations
            )?;
        }
        if self.prefix_filter_checks > 0 {
            writeln!(
                f,
                "prefix filter: {} table segments checked, {} skipped",
                self.prefix_filter_checks, self.prefix_filter_skips
            )?;
        }
        if self.multi_gets > 0 {
            writeln!(
                f,
                "multi-gets {}, {} keys (each distinct key of a call counts as a get)",
                self.multi_gets, self.multi_get_keys
            )?;
        }
        if self.iter_seeks > 0 {
            writeln!(
                f,
                "iterator seeks {}, tables opened per seek {:.2}",
                self.iter_seeks,
                self.iter_tables_opened as f64 / self.iter_seeks as f64
            )?;
        }
        write!(
            f,
            "gets {}, tables probed per get {:.2}; memtables {} B; open tables {} ({} B index+filter)",
            self.gets,
            self.read_amplification(),
            self.memtable_bytes,
            self.open_tables,
            self.table_memory_bytes
        )
    }
}

/// Filter answers of point reads at one level.
#[derive(Debug, Default)]
pub(crate) struct FilterCounters {
    pub probes: AtomicU64,
    pub positives: AtomicU64,
    pub false_positives: AtomicU64,
}

/// The counters the engine bumps as it works.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub user_bytes: AtomicU64,
    pub range_dels_written: AtomicU64,
    pub range_dels_dropped: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub compaction_read: AtomicU64,
    pub compaction_written: AtomicU64,
    pub compaction_ns: AtomicU64,
    pub running_peak: AtomicU64,
    pub compaction_compute_ns: AtomicU64,
    pub compaction_write_ns: AtomicU64,
    pub compaction_wait_ns: AtomicU64,
    pub compaction_subtask_ns: AtomicU64,
    pub compaction_subtask_wait_ns: AtomicU64,
    pub compaction_subtasks: AtomicU64,
    pub compaction_read_ns: AtomicU64,
    pub compaction_read_wait_ns: AtomicU64,
    pub compaction_finished_apart: AtomicU64,
    pub compaction_finish_wait_ns: AtomicU64,
    pub compaction_cpu_ns: AtomicU64,
    pub write_groups: AtomicU64,
    pub writes: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub flushes: AtomicU64,
    pub compactions: AtomicU64,
    pub moves: AtomicU64,
    pub drops: AtomicU64,
    pub stall_micros: AtomicU64,
    pub slowdowns: AtomicU64,
    pub stops: AtomicU64,
    pub gets: AtomicU64,
    pub multi_gets: AtomicU64,
    pub multi_get_keys: AtomicU64,
    pub get_probes: AtomicU64,
    pub iter_seeks: AtomicU64,
    pub iter_tables_opened: AtomicU64,
    pub prefix_filter_checks: AtomicU64,
    pub prefix_filter_skips: AtomicU64,
    pub files_deleted: AtomicU64,
    pub buffer_hits: AtomicU64,
    pub buffer_uncached: AtomicU64,
    pub buffer_same_file: AtomicU64,
    pub buffer_range_reads: AtomicU64,
    pub warmup_blocks: AtomicU64,
    pub buffer_trims: AtomicU64,
    pub buffer_files_trimmed: AtomicU64,
    pub seek_candidates: AtomicU64,
    pub seek_compactions: AtomicU64,
    pub idle_compactions: AtomicU64,
    pub filter_rebuilds: AtomicU64,
    pub wal_size_flushes: AtomicU64,
    pub ingested_files: AtomicU64,
    pub ingested_files_as_is: AtomicU64,
    pub flushes_below_l0: AtomicU64,
    pub appends: AtomicU64,
    pub moved_down: AtomicU64,
    pub bytes_appended: AtomicU64,
    pub table_rewrites: AtomicU64,
    pub filter_removed: AtomicU64,
    pub filter_changed: AtomicU64,
    pub segment_probes: AtomicU64,
    /// Per level (`Options::num_levels` is at most [`MAX_LEVELS`]).
    pub filters: [FilterCounters; MAX_LEVELS],
    history: Mutex<VecDeque<CompactionRecord>>,
}

impl Counters {
    pub fn add(c: &AtomicU64, v: u64) {
        c.fetch_add(v, Relaxed);
    }

    /// A point read asked the filter of a file at `level`: `maybe` is its
    /// answer, `wasted` whether the file then held nothing for the read.
    pub fn filter_probe(&self, level: usize, maybe: bool, wasted: bool) {
        if let Some(c) = self.filters.get(level) {
            Self::add(&c.probes, 1);
            if maybe {
                Self::add(&c.positives, 1);
                Self::add(&c.false_positives, u64::from(wasted));
            }
        }
    }

    /// Fills the filter counters of `level`.
    pub fn fill_level(&self, l: &mut LevelStats) {
        if let Some(c) = self.filters.get(l.level) {
            l.filter_probes = c.probes.load(Relaxed);
            l.filter_positives = c.positives.load(Relaxed);
            l.filter_false_positives = c.false_positives.load(Relaxed);
        }
    }

    pub fn record(&self, r: CompactionRecord) {
        Self::add(&self.range_dels_written, r.range_dels_written);
        Self::add(&self.range_dels_dropped, r.range_dels_dropped);
        match r.kind {
            "flush" => {
                Self::add(&self.flushes, 1);
                Self::add(&self.flush_bytes, r.bytes_written);
            }
            "merge" => {
                Self::add(&self.compactions, 1);
                Self::add(&self.compaction_read, r.bytes_read);
                Self::add(&self.compaction_written, r.bytes_written);
                let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                Self::add(&self.compaction_ns, ns(r.duration));
                Self::add(&self.compaction_compute_ns, ns(r.stages.compute));
                Self::add(&self.compaction_write_ns, ns(r.stages.write));
                Self::add(&self.compaction_wait_ns, ns(r.stages.merge_waiting));
                Self::add(&self.compaction_subtask_ns, ns(r.stages.subtask_merge));
                Self::add(&self.compaction_subtask_wait_ns, ns(r.stages.subtask_waiting));
                Self::add(&self.compaction_subtasks, r.stages.subtasks);
                Self::add(&self.compaction_read_ns, ns(r.stages.read));
                Self::add(&self.compaction_read_wait_ns, ns(r.stages.read_waiting));
                Self::add(&self.compaction_finished_apart, r.stages.finished_apart);
                Self::add(&self.compaction_finish_wait_ns, ns(r.stages.finish_waiting));
                Self::add(&self.compaction_cpu_ns, ns(r.stages.cpu));
                Self::add(&self.table_rewrites, u64::from(r.reason == TABLE_REWRITE));
            }
            "append" => {
                Self::add(&self.compactions, 1);
                Self::add(&self.appends, 1);
                Self::add(&self.bytes_appended, r.bytes_written);
                Self::add(&self.compaction_read, r.bytes_read);
                Self::add(&self.compaction_written, r.bytes_written);
                let ns = u64::try_from(r.duration.as_nanos()).unwrap_or(u64::MAX);
                Self::add(&self.compaction_ns, ns);
            }
            // A filter rebuilt: the table read, the patch written (write-amp counts it).
            "refilter" => {
                Self::add(&self.filter_rebuilds, 1);
                Self::add(&self.compaction_read, r.bytes_read);
                Self::add(&self.compaction_written, r.bytes_written);
            }
            "move" => Self::add(&self.moves, r.input_files as u64),
            "drop" => Self::add(&self.drops, r.input_files as u64),
            _ => {}
        }
        Self::add(&self.warmup_blocks, r.warmup_blocks_inserted);
        Self::add(&self.filter_removed, r.filter_removed);
        Self::add(&self.filter_changed, r.filter_changed);
        if matches!(r.kind, "merge" | "append") {
            Self::add(&self.moved_down, r.bytes_moved_down);
        }
        let mut h = self.history.lock();
        if h.len() == HISTORY {
            h.pop_front();
        }
        h.push_back(r);
    }

    /// The newest `n` finished flushes and merges that ran at least `min`, oldest first.
    pub(crate) fn recent_output_tasks(&self, n: usize, min: Duration) -> Vec<CompactionRecord> {
        let h = self.history.lock();
        let mut out: Vec<CompactionRecord> = h
            .iter()
            .rev()
            .filter(|r| matches!(r.kind, "merge" | "flush") && r.duration >= min)
            .take(n)
            .cloned()
            .collect();
        out.reverse();
        out
    }

    /// Fills the counter part of a [`Stats`].
    pub fn fill(&self, s: &mut Stats) {
        let g = |c: &AtomicU64| c.load(Relaxed);
        s.user_bytes_written = g(&self.user_bytes);
        s.range_dels_written = g(&self.range_dels_written);
        s.range_dels_dropped = g(&self.range_dels_dropped);
        s.wal_bytes_written = g(&self.wal_bytes);
        s.flush_bytes_written = g(&self.flush_bytes);
        s.compaction_bytes_read = g(&self.compaction_read);
        s.compaction_bytes_written = g(&self.compaction_written);
        s.compaction_time = Duration::from_nanos(g(&self.compaction_ns));
        s.peak_running_compactions = g(&self.running_peak);
        s.compaction_stages = StageTimes {
            compute: Duration::from_nanos(g(&self.compaction_compute_ns)),
            write: Duration::from_nanos(g(&self.compaction_write_ns)),
            merge_waiting: Duration::from_nanos(g(&self.compaction_wait_ns)),
            subtask_merge: Duration::from_nanos(g(&self.compaction_subtask_ns)),
            subtask_waiting: Duration::from_nanos(g(&self.compaction_subtask_wait_ns)),
            subtasks: g(&self.compaction_subtasks),
            read: Duration::from_nanos(g(&self.compaction_read_ns)),
            read_waiting: Duration::from_nanos(g(&self.compaction_read_wait_ns)),
            finished_apart: g(&self.compaction_finished_apart),
            finish_waiting: Duration::from_nanos(g(&self.compaction_finish_wait_ns)),
            cpu: Duration::from_nanos(g(&self.compaction_cpu_ns)),
        };
        s.write_amplification = if s.user_bytes_written == 0 {
            0.0
        } else {
            (s.flush_bytes_written + s.compaction_bytes_written) as f64 / s.user_bytes_written as f64
        };
        s.write_groups = g(&self.write_groups);
        s.writes = g(&self.writes);
        s.wal_syncs = g(&self.wal_syncs);
        s.flushes = g(&self.flushes);
        s.compactions = g(&self.compactions);
        s.trivial_moves = g(&self.moves);
        s.dropped_files = g(&self.drops);
        s.stall_time = Duration::from_micros(g(&self.stall_micros));
        s.slowdowns = g(&self.slowdowns);
        s.stops = g(&self.stops);
        s.gets = g(&self.gets);
        s.multi_gets = g(&self.multi_gets);
        s.multi_get_keys = g(&self.multi_get_keys);
        s.get_table_probes = g(&self.get_probes);
        s.iter_seeks = g(&self.iter_seeks);
        s.iter_tables_opened = g(&self.iter_tables_opened);
        s.prefix_filter_checks = g(&self.prefix_filter_checks);
        s.prefix_filter_skips = g(&self.prefix_filter_skips);
        s.files_deleted = g(&self.files_deleted);
        s.buffer_hits = g(&self.buffer_hits);
        s.buffer_uncached = g(&self.buffer_uncached);
        s.buffer_same_file = g(&self.buffer_same_file);
        s.buffer_range_reads = g(&self.buffer_range_reads);
        s.warmup_blocks_inserted = g(&self.warmup_blocks);
        s.buffer_trims = g(&self.buffer_trims);
        s.buffer_files_trimmed = g(&self.buffer_files_trimmed);
        s.seek_candidates = g(&self.seek_candidates);
        s.seek_compactions = g(&self.seek_compactions);
        s.idle_compactions = g(&self.idle_compactions);
        s.filter_rebuilds = g(&self.filter_rebuilds);
        s.wal_size_flushes = g(&self.wal_size_flushes);
        s.ingested_files = g(&self.ingested_files);
        s.ingested_files_as_is = g(&self.ingested_files_as_is);
        s.flushes_below_l0 = g(&self.flushes_below_l0);
        s.appends = g(&self.appends);
        s.compaction_bytes_moved_down = g(&self.moved_down);
        s.bytes_appended = g(&self.bytes_appended);
        s.table_rewrites = g(&self.table_rewrites);
        s.compaction_filter_removed = g(&self.filter_removed);
        s.compaction_filter_changed = g(&self.filter_changed);
        s.get_segment_probes = g(&self.segment_probes);
        s.recent_compactions = self.history.lock().iter().cloned().collect();
    }
}
