//! Options for opening a database and for each of its trees. Builders
//! follow rust-rocksdb's names; each `with_*` method names the RocksDB option
//! it matches. The per-tree setters are shared with
//! [`KeyspaceOptions`] (tree.rs), checking is in validate.rs, and the options
//! of one read or write live beside the read and write paths.

use std::sync::Arc;

use crate::compaction::filter::CompactionFilter;
use crate::events::{EventListener, Listeners};
use crate::info_log::InfoLogLimits;
use crate::merge_operator::MergeOperator;
use crate::prefix::PrefixExtractor;
use crate::vfs::{RealVfs, Vfs};
use setter::setter;
use tree::tree_setters;

pub(crate) mod kinds;
pub(crate) mod setter;
pub(crate) mod tree;
mod validate;

pub use crate::compaction::style::CompactionStyle;
pub use crate::db::read_options::ReadOptions;
pub use crate::db::write_options::WriteOptions;
pub use kinds::{BloomAllocation, CompactionPipeline, CompressionType, WalRecoveryMode};

/// Options for [`crate::Db::open`]: `with_*` builders, each naming the
/// RocksDB option it matches; [`crate::Db::open`] validates them.
///
/// # Examples
///
/// ```
/// use strata::{CompactionStyle, CompressionType, Db, Options};
/// let opts = Options::default()
///     .with_compaction_style(CompactionStyle::Lsbm)
///     .with_write_buffer_size(4 << 20)
///     .with_block_cache_capacity(64 << 20)
///     .with_bloom_bits_per_key(10.0)
///     .with_compression(CompressionType::Lz4);
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), opts)?;
/// assert_eq!(db.property("strata.policy")?, "lsbm");
/// // An invalid option is refused when the database opens.
/// let bad = Options::default().with_write_buffer_size(0);
/// assert!(matches!(Db::open(dir.path().join("other"), bad), Err(strata::Error::InvalidArgument(_))));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) create_if_missing: bool,
    pub(crate) error_if_exists: bool,
    pub(crate) write_buffer_size: usize,
    pub(crate) max_write_buffer_number: usize,
    pub(crate) level0_file_num_compaction_trigger: usize,
    pub(crate) level0_slowdown_writes_trigger: usize,
    pub(crate) level0_stop_writes_trigger: usize,
    pub(crate) max_bytes_for_level_base: u64,
    pub(crate) max_bytes_for_level_multiplier: f64,
    pub(crate) num_levels: usize,
    pub(crate) target_file_size_base: u64,
    pub(crate) block_size: usize,
    pub(crate) block_restart_interval: usize,
    pub(crate) bloom_bits_per_key: f64,
    pub(crate) bloom_allocation: BloomAllocation,
    pub(crate) prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    pub(crate) whole_key_filtering: bool,
    pub(crate) compression: CompressionType,
    pub(crate) block_cache_capacity: usize,
    pub(crate) row_cache_capacity: usize,
    pub(crate) max_open_files: usize,
    pub(crate) delayed_write_rate: u64,
    pub(crate) use_direct_reads: bool,
    pub(crate) mmap_reads: bool,
    pub(crate) max_mapped_files: usize,
    pub(crate) compaction_readahead_size: usize,
    pub(crate) compaction_pipeline: CompactionPipeline,
    pub(crate) max_background_compactions: usize,
    pub(crate) max_background_jobs: usize,
    pub(crate) compaction_subtask_bytes: usize,
    pub(crate) db_paths: Vec<std::path::PathBuf>,
    pub(crate) compaction_warmup: bool,
    pub(crate) paranoid_checks: bool,
    pub(crate) paranoid_file_checks: bool,
    pub(crate) avoid_flush_during_shutdown: bool,
    pub(crate) wal_recovery_mode: WalRecoveryMode,
    pub(crate) compaction_style: CompactionStyle,
    pub(crate) compaction_filter: Option<Arc<dyn CompactionFilter>>,
    pub(crate) merge_operator: Option<Arc<dyn MergeOperator>>,
    pub(crate) disable_auto_compactions: bool,
    pub(crate) max_manifest_file_size: u64,
    pub(crate) buffer_trim_interval: std::time::Duration,
    pub(crate) buffer_trim_threshold: f64,
    pub(crate) buffer_read_misses: bool,
    pub(crate) seek_compaction: bool,
    pub(crate) max_mem_compaction_level: usize,
    pub(crate) idle_compaction: Option<std::time::Duration>,
    pub(crate) buffer_last_level: bool,
    pub(crate) buffer_min_part_size: Option<u64>,
    pub(crate) vfs: Arc<dyn Vfs>,
    pub(crate) max_total_wal_size: u64,
    pub(crate) max_write_buffer_size_to_maintain: u64,
    pub(crate) info_log: bool,
    pub(crate) max_log_file_size: u64,
    pub(crate) keep_log_file_num: usize,
    /// Shared: every tree's options are a copy of the database's, and a
    /// database may list tens of thousands of keyspaces.
    pub(crate) keyspaces: Arc<Vec<(String, KeyspaceOptions)>>,
    pub(crate) listeners: Listeners,
    /// The persisted per-tree fields the caller set (bit `1 << F_*` of
    /// `keyspace_options`): at reopen those win over the recorded values, the
    /// others keep them.
    pub(crate) explicit: u32,
    /// Set by `TtlDb` alone: this tree's values carry write-time stamps and
    /// expire after this TTL (zero: never). Persisted (`F_TTL`); a plain open
    /// of a tree recorded with it is refused.
    pub(crate) ttl: Option<std::time::Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            num_levels: 7,
            target_file_size_base: 64 << 20,
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10.0,
            bloom_allocation: BloomAllocation::Uniform,
            prefix_extractor: None,
            whole_key_filtering: true,
            compression: CompressionType::Lz4,
            block_cache_capacity: 32 << 20,
            row_cache_capacity: 0,
            max_open_files: 1000,
            delayed_write_rate: 16 << 20,
            use_direct_reads: false,
            mmap_reads: false,
            max_mapped_files: 1000,
            compaction_readahead_size: 2 << 20,
            compaction_pipeline: CompactionPipeline::Sequential,
            max_background_compactions: 1,
            max_background_jobs: 2,
            compaction_subtask_bytes: 512 << 10,
            db_paths: Vec::new(),
            compaction_warmup: false,
            paranoid_checks: true,
            paranoid_file_checks: false,
            avoid_flush_during_shutdown: false,
            wal_recovery_mode: WalRecoveryMode::default(),
            compaction_style: CompactionStyle::default(),
            compaction_filter: None,
            merge_operator: None,
            disable_auto_compactions: false,
            max_manifest_file_size: 64 << 20,
            buffer_trim_interval: std::time::Duration::from_secs(30),
            buffer_trim_threshold: 0.8,
            buffer_read_misses: false,
            seek_compaction: false,
            max_mem_compaction_level: 0,
            idle_compaction: None,
            buffer_last_level: false,
            buffer_min_part_size: None,
            vfs: Arc::new(RealVfs::new()),
            max_total_wal_size: 0,
            max_write_buffer_size_to_maintain: 0,
            info_log: true,
            max_log_file_size: 4 << 20,
            keep_log_file_num: 5,
            keyspaces: Arc::default(),
            listeners: Default::default(),
            explicit: 0,
            ttl: None,
        }
    }
}

// Options and KeyspaceOptions hold each other (a keyspace's tree options are
// an `Options`, the database's options list its keyspaces), so both are
// defined here; keyspace_options.rs has the keyspace's methods and encoding.
/// Options of one keyspace (RocksDB `ColumnFamilyOptions`): its compaction
/// policy and parameters, memtable size, level shape, filters, block format
/// and per-tree hooks. Everything else (the file system, caches, WAL and
/// recovery settings, background threads) is the database's [`Options`]:
/// in particular there is no per-keyspace cache capacity, every keyspace
/// reads through the database's one block cache and one row cache, and
/// every keyspace reports to the database's event listeners
/// ([`Options::with_event_listener`]; each event names its keyspace).
/// The numeric and enum settings are persisted when the keyspace is created.
/// At a reopen, each one these options did not set with its `with_*` method
/// keeps its recorded value; one given with [`Options::with_keyspace`] that
/// was set and differs (another policy included, see
/// [`Options::with_compaction_style`]) is applied and recorded. The
/// trait objects (merge operator, compaction filter, prefix extractor) cannot
/// be persisted and are given again at open; the merge operator's name is,
/// and an operator of another name is refused.
///
/// # Examples
///
/// ```
/// use strata::{CompactionStyle, Db, KeyspaceOptions, MemVfs, Options};
///
/// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
/// let opts = KeyspaceOptions::default()
///     .with_compaction_style(CompactionStyle::Lsbm)
///     .with_write_buffer_size(1 << 20)
///     .with_bloom_bits_per_key(14.0);
/// let hot = db.create_keyspace("hot", opts)?;
/// hot.put("k", "v")?;
/// assert_eq!(hot.property("strata.policy")?, "lsbm");
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct KeyspaceOptions {
    /// Holds the per-tree fields; the others are never read.
    pub(crate) tree: Options,
    /// The merge operator's name as the MANIFEST recorded it (the operator
    /// itself cannot be persisted); used when `tree` has no operator.
    pub(crate) recorded_merge_operator: Option<String>,
    /// The TTL the MANIFEST recorded (its values carry write-time stamps).
    /// Kept apart from `tree.ttl` so a plain open, which gives none, is refused.
    pub(crate) recorded_ttl: Option<std::time::Duration>,
}

impl Options {
    /// Default options: create if missing, 64 MiB memtables, leveled compaction.
    pub fn new() -> Self {
        Self::default()
    }

    setter!(/// Create the database if it does not exist (RocksDB `create_if_missing`; default true).
        with_create_if_missing, create_if_missing, bool);
    setter!(/// Fail if the database already exists (RocksDB `error_if_exists`).
        with_error_if_exists, error_if_exists, bool);
    setter!(/// Block cache capacity in bytes, 0 for none (RocksDB `NewLRUCache(capacity)`; default 32 MiB).
        /// One cache for the whole database: every keyspace reads through it (keyed apart by
        /// keyspace) and this bounds their blocks together, as one RocksDB `Cache` shared by all
        /// column families or fjall's cache does. `Db::block_cache_stats` reports the total.
        with_block_cache_capacity, block_cache_capacity, usize);
    setter!(/// Row cache capacity in bytes, 0 for none (RocksDB `row_cache`; default 0). Caches
        /// the result of a point lookup in one table file (value or tombstone) by (file, user
        /// key), so a repeated get of a hot key reads no block. Used by reads whose sequence
        /// sees the whole file (reads at older snapshots bypass it); rows of deleted files
        /// are dropped with them. Like the block cache, one for the whole database, shared
        /// by every keyspace (`Db::row_cache_stats` reports the total).
        with_row_cache, row_cache_capacity, usize);
    setter!(/// Open tables kept with their index and filter in memory, in the whole database: every keyspace's tables share this bound (RocksDB `max_open_files`; default 1000).
        with_max_open_files, max_open_files, usize);
    setter!(/// Bytes per second a keyspace's writes are paced to once its L0 reaches
        /// `level0_slowdown_writes_trigger` (RocksDB `delayed_write_rate`; default 16 MiB/s),
        /// 0.8 times less for each L0 file beyond the trigger. Writes go on unslowed until
        /// the pace is a millisecond behind, then sleep it off; at
        /// `level0_stop_writes_trigger` they stop until a compaction catches up.
        with_delayed_write_rate, delayed_write_rate, u64);
    setter!(/// Read tables with `O_DIRECT`, bypassing the page cache (RocksDB `use_direct_reads`).
        with_use_direct_reads, use_direct_reads, bool);
    setter!(/// Read tables through a read-only memory map (RocksDB `allow_mmap_reads`;
        /// default false). Data blocks of uncompressed tables are then served in place:
        /// no copy, no block-cache entry, and their checksums are verified only when a
        /// read asks (`ReadOptions::with_verify_checksums(true)`), as in LevelDB.
        /// Compressed blocks are decompressed and cached as without it; compactions and
        /// scans with a readahead window still read with `pread`. Excludes
        /// `use_direct_reads`. Only the real file system maps; others read as before.
        /// Off by default: with the default LZ4 compression it saves little, and a
        /// failed read of a mapped page stops the process (`SIGBUS`) where `pread`
        /// returns an error. With uncompressed tables larger than the block cache it
        /// is what makes point reads and scans as fast as LevelDB's (which maps by
        /// default): YCSB E's short scans ran 4× faster mapped (docs/BENCHMARKS.md).
        with_mmap_reads, mmap_reads, bool);
    setter!(/// With `mmap_reads`, the most tables mapped at once in the whole database
        /// (default 1000, LevelDB's bound); tables opened beyond it are read with `pread`.
        with_max_mapped_files, max_mapped_files, usize);
    setter!(/// Bytes a compaction reads from an input table at once, 0 for one block per read
        /// (RocksDB `compaction_readahead_size`; default 2 MiB, RocksDB's default too). Inputs of one
        /// run are read one table at a time, so a compaction holds one window per input run; with
        /// more than 8 input runs the windows shrink to share 16 MiB.
        with_compaction_readahead_size, compaction_readahead_size, usize);
    setter!(/// Which threads write a flush's or compaction's output tables (default
        /// [`CompactionPipeline::Sequential`]): the compaction thread alone, or with a
        /// thread (or several) compressing and checksumming blocks and another writing
        /// them. RocksDB's nearest is `CompressionOptions::parallel_threads`.
        with_compaction_pipeline, compaction_pipeline, CompactionPipeline);
    setter!(/// Input bytes per sub-task of a merge under [`CompactionPipeline::Parallel`]
        /// (default 512 KiB, the pipelined-compaction paper's best on SSD). The merge's key
        /// range is cut at input block boundaries into pieces of about this size, never
        /// between two versions of one user key, and `compute_threads` threads read,
        /// verify, decompress and merge different pieces at once (RocksDB's nearest is
        /// `max_subcompactions`, which cuts a few large ranges, each with its own output files).
        /// A read thread reads the inputs ahead in chunks of up to 2 MiB per run and hands each
        /// piece its bytes (at most 16 MiB ahead).
        with_compaction_subtask_bytes, compaction_subtask_bytes, usize);
    setter!(/// Merges that may run at once, each on its own thread (RocksDB
        /// `max_background_compactions`; default 1). Above 1, a merge runs outside the
        /// lock that picks and installs tasks, and the policy sees its inputs as busy
        /// (`FileView::being_compacted`) and picks around them. Only policies whose
        /// picks honour that (`CompactionPolicy::allows_concurrent_compactions`:
        /// leveled, Garnering, lwc) use more than one; the others keep one at a time.
        with_max_background_compactions, max_background_compactions, usize);
    setter!(/// Worker threads for the whole database's background work, all keyspaces
        /// together (RocksDB `max_background_jobs`; default 2, from 1 to 256): flushes,
        /// compactions, buffer trims, event delivery. Compactions leave one worker free
        /// for flushes (with 2 or more). `max_background_compactions` + 1 raises it.
        with_max_background_jobs, max_background_jobs, usize);
    setter!(/// Incremental warm-up (the LSbM paper's baseline; default false): a compaction puts
        /// into the block cache each new data block whose key range overlaps a cached block of
        /// its inputs, from memory as it writes it, so reads of hot keys keep hitting the cache
        /// after the inputs are deleted. RocksDB's nearest is `prepopulate_block_cache =
        /// kFlushOnly`, which caches every block a flush writes, hot or not, and nothing a
        /// compaction writes; flushes are not warmed here (a new memtable's keys are read from
        /// the memtable until then). Needs a block cache: `open` refuses it with capacity 0.
        with_compaction_warmup, compaction_warmup, bool);
    setter!(/// At open, check that every live table has its recorded size and that its footer,
        /// index and filter pass their checksums (RocksDB `paranoid_checks`; default true).
        /// Off, a damaged table is reported by the first read that touches it.
        with_paranoid_checks, paranoid_checks, bool);
    setter!(/// After writing each new table, read every block back and check its checksum and
        /// entry count before the table is installed (RocksDB `paranoid_file_checks`; default
        /// false). Off, a new table's footer, index, filter and properties are still read
        /// back and checked, and its size compared with what was written.
        with_paranoid_file_checks, paranoid_file_checks, bool);
    setter!(/// Skip flushing memtables at close (RocksDB `avoid_flush_during_shutdown`; default
        /// false). By default `close` flushes when any write since open skipped the WAL
        /// (`WriteOptions::with_disable_wal`), so those writes survive a clean close; on, they
        /// are lost at close like on a crash.
        with_avoid_flush_during_shutdown, avoid_flush_during_shutdown, bool);
    setter!(/// What WAL replay does with damage (RocksDB `wal_recovery_mode`).
        with_wal_recovery_mode, wal_recovery_mode, WalRecoveryMode);
    setter!(/// Write the info log `LOG` in the database directory (RocksDB's `LOG`; default
        /// on): the options at open, every flush, compaction, stall change, policy change and
        /// background error, one timestamped line each. Each read-write open starts a new
        /// file and renames the last one `LOG.old.<microseconds>`; a read-only open writes
        /// none. A failed write turns it off for that open and fails nothing else.
        ///
        /// ```
        /// let opts = strata::Options::default().with_info_log(false);
        /// ```
        with_info_log, info_log, bool);
    setter!(/// Rotate `LOG` once it would pass this many bytes (RocksDB `max_log_file_size`;
        /// default 4 MiB; 0: never by size, as in RocksDB).
        with_max_log_file_size, max_log_file_size, u64);
    setter!(/// How many rotated `LOG.old.*` files are kept; older ones are deleted (RocksDB
        /// `keep_log_file_num`; default 5). With a size limit the info log takes at most
        /// about `(keep_log_file_num + 1) × max_log_file_size` bytes.
        with_keep_log_file_num, keep_log_file_num, usize);
    setter!(/// MANIFEST size at which it is rewritten as a snapshot into a new file
        /// (RocksDB `max_manifest_file_size`; default 64 MiB).
        with_max_manifest_file_size, max_manifest_file_size, u64);
    setter!(/// The file system (RocksDB `Env`); default the real one.
        with_vfs, vfs, Arc<dyn Vfs>);
    setter!(/// Bytes of live WAL files above which the keyspaces whose unflushed
        /// writes hold the oldest WAL are flushed, so a rarely written keyspace
        /// cannot keep every WAL alive (RocksDB `max_total_wal_size`). 0, the
        /// default, means four times the sum of the open keyspaces' write buffers.
        ///
        /// # Examples
        ///
        /// ```
        /// let opts = strata::Options::default().with_max_total_wal_size(64 << 20);
        /// # let _ = opts;
        /// ```
        with_max_total_wal_size, max_total_wal_size, u64);
    setter!(/// Bytes of flushed memtables each keyspace keeps in memory so an
        /// optimistic transaction's commit can tell whether a key it read
        /// changed since (RocksDB `max_write_buffer_size_to_maintain`). A
        /// flushed memtable is released once the newer flushed ones hold this
        /// much. Default 0: none kept, and a transaction that began before the
        /// last flush of a keyspace it read fails to commit with
        /// [`Error::TryAgain`](crate::Error::TryAgain).
        /// [`OptimisticTransactionDb::open`](crate::OptimisticTransactionDb::open)
        /// turns a 0 into one write buffer's size.
        ///
        /// # Examples
        ///
        /// ```
        /// let opts = strata::Options::default().with_max_write_buffer_size_to_maintain(128 << 20);
        /// # let _ = opts;
        /// ```
        with_max_write_buffer_size_to_maintain, max_write_buffer_size_to_maintain, u64);

    /// Options for keyspace `name` at open (RocksDB's column family
    /// descriptors), the only way to give an existing keyspace back its
    /// trait objects (merge operator, compaction filter, prefix extractor).
    /// For an existing keyspace they are laid over its recorded options:
    /// every persisted option `opts` did not set with its `with_*` method
    /// keeps the recorded value, so `KeyspaceOptions::default()` plus an
    /// operator changes nothing else; one it set that differs is applied and
    /// recorded, and another policy is a policy change (see
    /// [`Options::with_compaction_style`]). A keyspace the database does not
    /// have yet is created with `opts` as they are, defaults included, once
    /// the open has recovered (fjall's open-or-create). Keyspaces not named
    /// here reopen with their recorded options. Naming `"default"` is
    /// refused: the default keyspace uses these `Options`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{associative_merge_operator, Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let vfs = Arc::new(MemVfs::new());
    /// let concat = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    /// let ks_opts = KeyspaceOptions::default().with_merge_operator(concat);
    /// let db = Db::open("/db", Options::default().with_vfs(vfs.clone()))?;
    /// db.create_keyspace("log", ks_opts.clone())?.merge("k", "a")?;
    /// db.close()?;
    /// let db = Db::open("/db", Options::default().with_vfs(vfs).with_keyspace("log", ks_opts))?;
    /// let log = db.keyspace("log")?;
    /// log.merge("k", "b")?;
    /// assert_eq!(log.get("k")?, Some(b"ab".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_keyspace(mut self, name: impl Into<String>, opts: KeyspaceOptions) -> Self {
        let name = name.into();
        let list = Arc::make_mut(&mut self.keyspaces);
        list.retain(|(n, _)| *n != name);
        list.push((name, opts));
        self
    }

    /// A filter that removes or rewrites values as compactions rewrite them
    /// (RocksDB `compaction_filter`, rust-rocksdb `Options::set_compaction_filter`;
    /// default none). It runs in every compaction that rewrites entries under
    /// every policy, never in flushes or trivial moves, and sees only the
    /// newest value of a key that no live snapshot can see: see
    /// [`CompactionFilter`]. With it, `Db::compact_range` also rewrites the
    /// deepest level's files in range, as RocksDB does with a filter set, so
    /// the filter sees every entry in range. The filter's name is not persisted yet, so
    /// reopening with another filter, or none, is not detected.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, Decision, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let drop_tmp = |_level: usize, key: &[u8], _value: &[u8]| {
    ///     if key.starts_with(b"tmp/") { Decision::Remove } else { Decision::Keep }
    /// };
    /// let db = Db::open(dir.path(), Options::default().with_compaction_filter(Arc::new(drop_tmp)))?;
    /// db.put(b"tmp/scratch", b"x")?;
    /// db.put(b"user/1", b"ada")?;
    /// db.compact_range(None, None)?;
    /// assert_eq!(db.get(b"tmp/scratch")?, None);
    /// assert_eq!(db.get(b"user/1")?.as_deref(), Some(&b"ada"[..]));
    /// assert_eq!(db.stats().compaction_filter_removed, 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_compaction_filter(mut self, filter: Arc<dyn CompactionFilter>) -> Self {
        self.compaction_filter = Some(filter);
        self
    }

    /// The operator that combines merge operands written with
    /// [`Db::merge`](crate::Db::merge) (RocksDB `merge_operator`, rust-rocksdb
    /// `Options::set_merge_operator`; default none). Reading a key that has
    /// merge operands without one is [`Error::InvalidArgument`](crate::Error);
    /// a merge the operator fails is [`Error::Corruption`](crate::Error). Its
    /// name is recorded in the MANIFEST: reopening with an operator of
    /// another name is refused with `InvalidArgument` (reopening without one
    /// is allowed, as in RocksDB, and keeps the recorded name). With an operator set, iterators do not read through LSbM/dLSM
    /// compaction buffers (point reads still do, but collect a key's operands
    /// without them): a buffer may still hold copies of operands that a deeper
    /// run also holds, which a merge would count twice.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{associative_merge_operator, Db, MemVfs, Options};
    ///
    /// let add = associative_merge_operator("add", |_key, existing, operand| {
    ///     let n = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<i64>().ok();
    ///     Some((existing.map_or(Some(0), n)? + n(operand)?).to_string().into_bytes())
    /// });
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(add);
    /// let db = Db::open("/db", opts)?;
    /// db.merge("n", "40")?;
    /// db.merge("n", "2")?;
    /// assert_eq!(db.get("n")?, Some(b"42".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_merge_operator(mut self, op: Arc<dyn MergeOperator>) -> Self {
        self.merge_operator = Some(op);
        self
    }

    /// Adds a listener for flushes, compactions, write stalls and background
    /// errors (RocksDB `listeners`; default none). Several may be added; each
    /// sees every event, in order. Keyspaces inherit the database's listeners
    /// (each event names its keyspace). See [`crate::EventListener`] for where
    /// and when the methods run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, EventListener, MemVfs, Options, StallInfo};
    ///
    /// struct LogStalls;
    /// impl EventListener for LogStalls {
    ///     fn on_stall_conditions_changed(&self, info: &StallInfo) {
    ///         eprintln!("{}: {} -> {}", info.keyspace, info.previous, info.current);
    ///     }
    /// }
    ///
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new())).with_event_listener(Arc::new(LogStalls));
    /// let db = Db::open("/db", opts)?;
    /// db.put("k", "v")?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_event_listener(mut self, listener: Arc<dyn EventListener>) -> Self {
        self.listeners.0.push(listener);
        self
    }

    /// The prefix of each key that table filters also hold (RocksDB
    /// `prefix_extractor`, rust-rocksdb `Options::set_prefix_extractor`; default
    /// none). A [`Db::prefix_iterator`](crate::Db::prefix_iterator) whose prefix is
    /// in the extractor's domain then skips, without reading a data block, every
    /// table (and every segment of an `lwc` DTable) whose filter says no key has
    /// that prefix ([`crate::Stats::prefix_filter_checks`] and
    /// [`crate::Stats::prefix_filter_skips`] count them). Tables record the
    /// extractor's name; one written with another extractor, or none, is never
    /// skipped, so changing it between opens is safe and takes effect as
    /// compactions rewrite the tables. Filters need `bloom_bits_per_key` above 0;
    /// memtables are always read.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{Db, FixedPrefix, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default().with_prefix_extractor(Arc::new(FixedPrefix::new(4))))?;
    /// db.put(b"acct0001", b"1")?;
    /// db.put(b"user0001", b"ada")?;
    /// db.flush()?;
    /// // "item" lies inside the table's key range, so only the filter rules it out.
    /// assert_eq!(db.prefix_iterator("item").count(), 0);
    /// assert_eq!(db.stats().prefix_filter_skips, 1);
    /// assert_eq!(db.prefix_iterator("user").count(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[must_use]
    pub fn with_prefix_extractor(mut self, extractor: Arc<dyn PrefixExtractor>) -> Self {
        self.prefix_extractor = Some(extractor);
        self
    }

    /// The data paths given with [`Options::with_db_paths`] (or loaded by
    /// [`Options::load_latest`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let opts = strata::Options::default().with_db_paths(["/ssd", "/hdd"]);
    /// assert_eq!(opts.db_paths(), [std::path::PathBuf::from("/ssd"), "/hdd".into()]);
    /// ```
    pub fn db_paths(&self) -> &[std::path::PathBuf] {
        &self.db_paths
    }

    /// Directories that hold the table files (RocksDB `db_paths`; default none:
    /// tables live in the database directory). Table `N` is written to path
    /// `N mod P`, so consecutive outputs alternate between them and, on separate
    /// devices, a compaction's reads and writes are spread over the devices (the
    /// pipelined-compaction paper's S-PPCP): under a pipelined
    /// [`CompactionPipeline`], a table finishes and
    /// syncs on each other path while the next fills. The LOCK, CURRENT, MANIFEST and WAL
    /// files stay in the database directory. Missing paths are created at open;
    /// open finds a table in any of the paths, so paths may be reordered or
    /// added between opens, but every path holding live tables must be given.
    #[must_use]
    pub fn with_db_paths<P: Into<std::path::PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.db_paths = paths.into_iter().map(Into::into).collect();
        self
    }

    tree_setters!();

    /// The info log's rotation limits.
    pub(crate) fn info_log_limits(&self) -> InfoLogLimits {
        InfoLogLimits { max_file_size: self.max_log_file_size, keep_old: self.keep_log_file_num }
    }
}
