//! Options for opening a database, writing and reading. Builders follow
//! rust-rocksdb's names; each `with_*` method names the RocksDB option it matches.

use std::fmt;
use std::sync::Arc;

use crate::compaction::{CompactionFilter, CompactionPolicy};
use crate::db::Snapshot;
use crate::error::{Error, Result};
use crate::prefix::PrefixExtractor;
use crate::vfs::{RealVfs, Vfs};

/// Most levels a database may have (`num_levels`).
pub(crate) const MAX_LEVELS: usize = 20;

/// Block compression (RocksDB `CompressionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompressionType {
    /// Blocks are stored as they are.
    None,
    /// LZ4 block compression.
    Lz4,
    /// Zstandard at the given level (1–22).
    Zstd(i32),
}

impl CompressionType {
    /// Parses `none`, `lz4`, `zstd` or `zstd:N` (db_bench's names).
    pub fn parse(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "no" => Ok(CompressionType::None),
            "lz4" => Ok(CompressionType::Lz4),
            "zstd" => Ok(CompressionType::Zstd(3)),
            other => match other.strip_prefix("zstd:").map(str::parse::<i32>) {
                Some(Ok(l)) if (1..=22).contains(&l) => Ok(CompressionType::Zstd(l)),
                _ => Err(Error::invalid(format!("unknown compression type {s:?}"))),
            },
        }
    }
}

/// What WAL replay does with a damaged record (RocksDB `WALRecoveryMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalRecoveryMode {
    /// Damage at the very end of the last WAL (a torn write from a crash) is
    /// dropped; damage followed by valid records is `Corruption`. The default.
    #[default]
    TolerateCorruptedTailRecords,
    /// Any damage, even a torn tail, is `Corruption`.
    AbsoluteConsistency,
    /// Replay stops at the first damage, without error (may lose later writes).
    PointInTimeRecovery,
    /// Damaged records are skipped and replay goes on (may break batch order).
    SkipAnyCorruptedRecords,
}

/// How the bloom filter memory budget (`bloom_bits_per_key` on average over
/// all entries) is spread over the sorted runs of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BloomAllocation {
    /// Every table gets `bloom_bits_per_key` (RocksDB and LevelDB do this). The default.
    #[default]
    Uniform,
    /// Monkey (Dayan et al., SIGMOD 2017): each sorted run gets the bits that
    /// minimise the sum of false-positive rates over the runs for the same
    /// total memory, i.e. a rate proportional to its entries. Small runs (L0,
    /// upper levels) get more bits, the largest fewer or none. Chosen when a
    /// table is written, from the tree's current shape; works with every policy.
    Monkey,
}

impl BloomAllocation {
    /// Parses `uniform` or `monkey`.
    pub fn parse(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "uniform" => Ok(BloomAllocation::Uniform),
            "monkey" => Ok(BloomAllocation::Monkey),
            _ => Err(Error::invalid(format!("unknown bloom allocation {s:?} (known: uniform, monkey)"))),
        }
    }

    /// The name [`Self::parse`] takes.
    pub fn name(self) -> &'static str {
        match self {
            BloomAllocation::Uniform => "uniform",
            BloomAllocation::Monkey => "monkey",
        }
    }
}

/// How a flush or compaction runs the work of writing its output tables
/// (the pipelined-compaction paper's procedures). Every mode writes the same
/// entries; only which threads do the work differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionPipeline {
    /// One thread reads, merges, compresses, checksums and writes in turn
    /// (the paper's SCP). The default, and the reference the others are
    /// tested against.
    #[default]
    Sequential,
    /// The compaction thread reads and merges; a second thread compresses
    /// and checksums finished data blocks, a third appends them to the file
    /// (the paper's PCP), with bounded queues between them.
    Pipelined,
    /// As `Pipelined`, with `compute_threads` threads compressing and
    /// checksumming blocks out of order and the writer putting them back in
    /// order (RocksDB's `CompressionOptions::parallel_threads` does the same),
    /// and a merge's key range cut into sub-tasks of about
    /// `compaction_subtask_bytes` of input that `compute_threads` threads read,
    /// verify, decompress and merge at once, handed to the builder in key
    /// order (the paper's C-PPCP).
    Parallel {
        /// Threads merging sub-tasks, and threads compressing blocks (1–64 each).
        compute_threads: usize,
    },
    /// Chooses one of the above for each flush or compaction from the stage
    /// times of the recent ones (no engine does this; see ARCHITECTURE.md):
    /// `Sequential` when compressing and writing are a small share of the
    /// work, `Parallel` with enough compute threads (at most
    /// `max_compute_threads`) when compressing takes longer than merging,
    /// `Pipelined` otherwise. Its `Parallel` compresses on several threads
    /// but does not cut merges into sub-tasks (splitting a merge measured 9 %
    /// slower on two cores where compression was the bottleneck).
    Auto {
        /// Most compute threads a task may use (1–64).
        max_compute_threads: usize,
    },
}

impl CompactionPipeline {
    /// Parses `scp`/`sequential`, `pcp`/`pipelined`, `c-ppcp`/`parallel` with
    /// `threads` compute threads, or `auto` with at most `threads`.
    pub fn parse(s: &str, threads: usize) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "scp" | "sequential" => Ok(CompactionPipeline::Sequential),
            "pcp" | "pipelined" => Ok(CompactionPipeline::Pipelined),
            "c-ppcp" | "cppcp" | "parallel" => Ok(CompactionPipeline::Parallel { compute_threads: threads }),
            "auto" => Ok(CompactionPipeline::Auto { max_compute_threads: threads }),
            _ => Err(Error::invalid(format!("unknown compaction pipeline {s:?} (known: scp, pcp, c-ppcp)"))),
        }
    }

    /// The paper's name for the mode.
    pub fn name(self) -> String {
        match self {
            CompactionPipeline::Sequential => "scp".into(),
            CompactionPipeline::Pipelined => "pcp".into(),
            CompactionPipeline::Parallel { compute_threads } => format!("c-ppcp({compute_threads})"),
            CompactionPipeline::Auto { max_compute_threads } => format!("auto({max_compute_threads})"),
        }
    }

    /// Threads compressing blocks apart from the builder's own, 0 for
    /// `Sequential` (and for an `Auto` nobody resolved, which the engine never
    /// hands a table builder).
    pub(crate) fn compute_threads(self) -> usize {
        match self {
            CompactionPipeline::Sequential | CompactionPipeline::Auto { .. } => 0,
            CompactionPipeline::Pipelined => 1,
            CompactionPipeline::Parallel { compute_threads } => compute_threads,
        }
    }
}

/// Which compaction policy shapes the tree. A database or keyspace may be
/// reopened under another one; see [`Options::with_compaction_style`].
#[derive(Clone, Default)]
pub enum CompactionStyle {
    /// LevelDB-style leveling: L0 trigger by file count, ratio 10 between
    /// levels, round-robin file picking, trivial moves (RocksDB `kCompactionStyleLevel`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// let db = Db::open("/db", opts.with_compaction_style(CompactionStyle::Leveled))?;
    /// db.put("k", "v")?;
    /// db.compact_range(None, None)?;
    /// assert_eq!(db.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[default]
    Leveled,
    /// bLSM: two-part levels (`C_i` receiving, `C'_i` draining file by file)
    /// held at the level capacity by the gear scheduler; the structure the
    /// LSbM compaction buffer builds on. Same shape options as `Leveled`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// let db = Db::open("/db", opts.with_compaction_style(CompactionStyle::Blsm))?;
    /// assert_eq!(db.property("strata.policy")?, "blsm");
    /// # Ok::<(), strata::Error>(())
    /// ```
    Blsm,
    /// LSbM: bLSM plus the compaction buffer (files drained from `C'_i` are
    /// kept, unrewritten, as buffer tables of level `i+1` that serve hot reads)
    /// with the trim every `buffer_trim_interval`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// let opts = opts.with_compaction_style(CompactionStyle::Lsbm).with_buffer_trim_threshold(0.5);
    /// let db = Db::open("/db", opts)?;
    /// db.put("k", "v")?;
    /// // The trim also runs on its own every `buffer_trim_interval`.
    /// let removed = db.trim_compaction_buffer()?;
    /// assert_eq!(removed, 0, "nothing was buffered yet");
    /// # Ok::<(), strata::Error>(())
    /// ```
    Lsbm,
    /// dLSM: the compaction buffer without the trim, with larger bloom filters
    /// (`bits + log2(ratio)/ln 2`, 14.8 for 10 bits and ratio 10) on the tables
    /// that feed buffers.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// let db = Db::open("/db", opts.with_compaction_style(CompactionStyle::Dlsm))?;
    /// assert_eq!(db.property("strata.policy")?, "dlsm");
    /// # Ok::<(), strata::Error>(())
    /// ```
    Dlsm,
    /// Stepped-merge tiering (the SM-tree): each level holds up to `r` runs,
    /// `r` = `max_bytes_for_level_multiplier` rounded (at least 2); a full
    /// level's runs merge into one new run of the next level. Cheap writes,
    /// slow range reads, more space (RocksDB's nearest is universal
    /// compaction, which merges by size ratios instead of per level).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// // Up to 4 runs per level before they merge into the next.
    /// let opts = opts.with_compaction_style(CompactionStyle::Tiered).with_max_bytes_for_level_multiplier(4.0);
    /// let db = Db::open("/db", opts)?;
    /// assert_eq!(db.property("strata.policy")?, "tiered");
    /// # Ok::<(), strata::Error>(())
    /// ```
    Tiered,
    /// Garnering (the Autumn paper): leveling whose level ratios grow with the
    /// data — `T` (`max_bytes_for_level_multiplier`) between the last two levels
    /// in use, `1/c` more per level above — so fewer levels hold the same data;
    /// the deepest level is never merged into a new one, the level count grows
    /// instead. `c` in (0, 1]; 1 is leveling. RocksDB has no equivalent (its
    /// `level_compaction_dynamic_level_bytes` keeps every ratio equal).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// let db = Db::open("/db", opts.with_compaction_style(CompactionStyle::Garnering { c: 0.5 }))?;
    /// assert_eq!(db.property("strata.policy")?, "garnering");
    /// // `from_name` gives c = DEFAULT_GARNERING_C.
    /// assert_eq!(CompactionStyle::from_name("garnering")?.name(), "garnering");
    /// # Ok::<(), strata::Error>(())
    /// ```
    Garnering {
        /// Growth constant: each ratio above the last is larger by `1/c`.
        c: f64,
    },
    /// Light-weight compaction (the LWC-tree): leveling's shape and victims,
    /// but a victim's entries are appended as a new sorted segment to each
    /// next-level table they overlap instead of being merged with them, so a
    /// compaction reads and writes about one table instead of `1 + ratio`. A
    /// table of more than `max_segments` segments (or four target files) is
    /// rewritten in place into equal parts. RocksDB has no equivalent.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// let db = Db::open("/db", opts.with_compaction_style(CompactionStyle::Lwc { max_segments: 4 }))?;
    /// assert_eq!(db.property("strata.policy")?, "lwc");
    /// # Ok::<(), strata::Error>(())
    /// ```
    Lwc {
        /// Segments a table may hold before it is rewritten (at least 1).
        max_segments: usize,
    },
    /// A caller-supplied policy (the `compaction` module's unstable seam).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionStyle, Db, MemVfs, Options};
    /// let opts = Options::default().with_vfs(Arc::new(MemVfs::new()));
    /// use strata::compaction::leveled::{LeveledConfig, LeveledPolicy};
    /// let mine = LeveledPolicy::new(LeveledConfig::default())?;
    /// let db = Db::open("/db", opts.with_compaction_style(CompactionStyle::Custom(Arc::new(mine))))?;
    /// assert_eq!(db.property("strata.policy")?, "leveled");
    /// # Ok::<(), strata::Error>(())
    /// ```
    Custom(Arc<dyn CompactionPolicy>),
}

impl CompactionStyle {
    /// The `c` a policy named `garnering` gets (the paper's middle setting).
    pub const DEFAULT_GARNERING_C: f64 = 0.8;
    /// The `max_segments` a policy named `lwc` gets.
    pub const DEFAULT_LWC_MAX_SEGMENTS: usize = 8;

    /// The policy's name as the benchmark tool spells it.
    pub fn name(&self) -> String {
        match self {
            CompactionStyle::Leveled => "leveled".to_string(),
            CompactionStyle::Blsm => "blsm".to_string(),
            CompactionStyle::Lsbm => "lsbm".to_string(),
            CompactionStyle::Dlsm => "dlsm".to_string(),
            CompactionStyle::Tiered => "tiered".to_string(),
            CompactionStyle::Garnering { .. } => "garnering".to_string(),
            CompactionStyle::Lwc { .. } => "lwc".to_string(),
            CompactionStyle::Custom(p) => p.name().to_string(),
        }
    }

    /// Names of every built-in policy, for tests and tools that run each one.
    pub fn builtin_names() -> &'static [&'static str] {
        &["leveled", "blsm", "lsbm", "dlsm", "tiered", "garnering", "lwc"]
    }

    /// Looks a built-in policy up by name (`leveled`, `blsm`, `lsbm`, `dlsm`, `tiered`,
    /// `garnering` with c = [`Self::DEFAULT_GARNERING_C`], `lwc` with
    /// [`Self::DEFAULT_LWC_MAX_SEGMENTS`]).
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "leveled" | "leveling" | "level" => Ok(CompactionStyle::Leveled),
            "blsm" => Ok(CompactionStyle::Blsm),
            "lsbm" => Ok(CompactionStyle::Lsbm),
            "dlsm" => Ok(CompactionStyle::Dlsm),
            "tiered" | "stepped-merge" | "sm" => Ok(CompactionStyle::Tiered),
            "garnering" | "autumn" => Ok(CompactionStyle::Garnering { c: Self::DEFAULT_GARNERING_C }),
            "lwc" | "lwc-tree" => Ok(CompactionStyle::Lwc { max_segments: Self::DEFAULT_LWC_MAX_SEGMENTS }),
            other => Err(Error::invalid(format!(
                "unknown compaction policy {other:?} (known: {})",
                Self::builtin_names().join(", ")
            ))),
        }
    }
}

impl fmt::Debug for CompactionStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

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
    pub(crate) use_direct_reads: bool,
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
    pub(crate) merge_operator: Option<Arc<dyn crate::MergeOperator>>,
    pub(crate) disable_auto_compactions: bool,
    pub(crate) max_manifest_file_size: u64,
    pub(crate) buffer_trim_interval: std::time::Duration,
    pub(crate) buffer_trim_threshold: f64,
    pub(crate) buffer_read_misses: bool,
    pub(crate) seek_compaction: bool,
    pub(crate) max_mem_compaction_level: usize,
    pub(crate) vfs: Arc<dyn Vfs>,
    pub(crate) max_total_wal_size: u64,
    pub(crate) info_log: bool,
    pub(crate) max_log_file_size: u64,
    pub(crate) keep_log_file_num: usize,
    pub(crate) keyspaces: Vec<(String, crate::KeyspaceOptions)>,
    pub(crate) listeners: crate::events::Listeners,
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
            use_direct_reads: false,
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
            vfs: Arc::new(RealVfs::new()),
            max_total_wal_size: 0,
            info_log: true,
            max_log_file_size: 4 << 20,
            keep_log_file_num: 5,
            keyspaces: Vec::new(),
            listeners: Default::default(),
            explicit: 0,
            ttl: None,
        }
    }
}

/// A setter of a persisted per-tree field: it also marks the field as set
/// by the caller (see `Options::explicit`).
macro_rules! tree_setter {
    ($(#[$doc:meta])* $name:ident, $field:ident, $ty:ty, $f:ident) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, v: $ty) -> Self {
            self.$field = v;
            self.explicit |= 1 << crate::keyspace_options::$f;
            self
        }
    };
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident, $field:ident, $ty:ty) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, v: $ty) -> Self {
            self.$field = v;
            self
        }
    };
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
    tree_setter!(/// Memtable size before it is switched and flushed (RocksDB `write_buffer_size`; default 64 MiB).
        with_write_buffer_size, write_buffer_size, usize, F_WRITE_BUFFER_SIZE);
    tree_setter!(/// Memtables (active + immutable) before writes stop (RocksDB `max_write_buffer_number`; default 2).
        with_max_write_buffer_number, max_write_buffer_number, usize, F_MAX_WRITE_BUFFER_NUMBER);
    tree_setter!(/// L0 files that trigger a compaction (RocksDB `level0_file_num_compaction_trigger`; default 4).
        with_level0_file_num_compaction_trigger, level0_file_num_compaction_trigger, usize, F_L0_TRIGGER);
    tree_setter!(/// L0 files at which writes slow down (RocksDB `level0_slowdown_writes_trigger`; default 20).
        with_level0_slowdown_writes_trigger, level0_slowdown_writes_trigger, usize, F_L0_SLOWDOWN);
    tree_setter!(/// L0 files at which writes stop (RocksDB `level0_stop_writes_trigger`; default 36).
        with_level0_stop_writes_trigger, level0_stop_writes_trigger, usize, F_L0_STOP);
    tree_setter!(/// Capacity of level 1 in bytes (RocksDB `max_bytes_for_level_base`; default 256 MiB).
        with_max_bytes_for_level_base, max_bytes_for_level_base, u64, F_LEVEL_BASE);
    tree_setter!(/// Size ratio between adjacent levels (RocksDB `max_bytes_for_level_multiplier`; default 10).
        with_max_bytes_for_level_multiplier, max_bytes_for_level_multiplier, f64, F_MULTIPLIER);
    tree_setter!(/// Number of levels including L0 (RocksDB `num_levels`; default 7).
        with_num_levels, num_levels, usize, F_NUM_LEVELS);
    tree_setter!(/// Target size of compaction output files (RocksDB `target_file_size_base`; default 64 MiB).
        with_target_file_size_base, target_file_size_base, u64, F_TARGET_FILE_SIZE);
    tree_setter!(/// Uncompressed data block size (RocksDB `BlockBasedTableOptions::block_size`; default 4 KiB).
        with_block_size, block_size, usize, F_BLOCK_SIZE);
    tree_setter!(/// Keys between restart points in a block (RocksDB `block_restart_interval`; default 16).
        with_block_restart_interval, block_restart_interval, usize, F_RESTART_INTERVAL);
    tree_setter!(/// Bloom filter bits per key, 0 for none (RocksDB `NewBloomFilterPolicy(bits)`; default 10).
        /// Under [`BloomAllocation::Monkey`] this is the average over all entries of the tree.
        with_bloom_bits_per_key, bloom_bits_per_key, f64, F_BLOOM_BITS);
    tree_setter!(/// How the bloom bits are spread over the sorted runs (default
        /// [`BloomAllocation::Uniform`]; RocksDB has no equivalent).
        with_bloom_allocation, bloom_allocation, BloomAllocation, F_BLOOM_ALLOCATION);
    tree_setter!(/// Whether table filters hold whole keys (RocksDB
        /// `BlockBasedTableOptions::whole_key_filtering`; default true). Off, with a
        /// [prefix extractor](Self::with_prefix_extractor), filters hold only prefixes:
        /// smaller, but point reads then ask no filter of those tables. Off without an
        /// extractor, tables get no filter at all. Each table records what its filter
        /// holds, so reopening with another setting reads every table correctly.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::sync::Arc;
        /// use strata::{Db, FixedPrefix, Options};
        ///
        /// let dir = tempfile::tempdir()?;
        /// let opts = Options::default()
        ///     .with_prefix_extractor(Arc::new(FixedPrefix::new(4)))
        ///     .with_whole_key_filtering(false);
        /// let db = Db::open(dir.path(), opts)?;
        /// db.put(b"user0001", b"ada")?;
        /// db.flush()?;
        /// assert_eq!(db.get(b"user0001")?.as_deref(), Some(&b"ada"[..]));
        /// # Ok::<(), strata::Error>(())
        /// ```
        with_whole_key_filtering, whole_key_filtering, bool, F_WHOLE_KEY_FILTERING);
    tree_setter!(/// Block compression (RocksDB `compression`; default LZ4).
        with_compression, compression, CompressionType, F_COMPRESSION);
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
    setter!(/// Open tables kept with their index and filter in memory (RocksDB `max_open_files`; default 1000).
        with_max_open_files, max_open_files, usize);
    setter!(/// Read tables with `O_DIRECT`, bypassing the page cache (RocksDB `use_direct_reads`).
        with_use_direct_reads, use_direct_reads, bool);
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
        /// leveled, Garnering) use more than one; the others keep one at a time.
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
    tree_setter!(/// The compaction policy (RocksDB `compaction_style`; default leveled).
        ///
        /// The root MANIFEST records each tree's policy and the other
        /// per-tree options that shape it (those [`KeyspaceOptions`](crate::KeyspaceOptions)
        /// has). Reopening an existing database, each of them the caller did
        /// not set with its `with_*` method keeps its recorded value: options
        /// that never call this method reopen under the recorded policy. A
        /// policy set here (for a keyspace: on the options given with
        /// [`Options::with_keyspace`]) that differs is a policy change: a
        /// read-write open logs it, drops the LSbM/dLSM compaction buffers
        /// unless the new policy keeps them (they hold copies only), clears
        /// the old policy's state before any compaction runs, records the new
        /// policy and reports it to [`EventListener::on_policy_changed`](crate::EventListener::on_policy_changed);
        /// the new policy then reshapes the tree as it compacts. No built-in
        /// pair is refused. Refused at open: a `num_levels` below the deepest
        /// level holding data, a merge operator of another name than the
        /// recorded one, and leaving out a recorded custom policy (it cannot
        /// be rebuilt: give it again). A read-only open reads under the
        /// resolved policy and records nothing. A new database or keyspace
        /// uses these options as they are, defaults included.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::sync::Arc;
        /// use strata::{CompactionStyle, Db, MemVfs, Options};
        ///
        /// let vfs = Arc::new(MemVfs::new());
        /// let opts = |s| Options::default().with_vfs(vfs.clone()).with_compaction_style(s);
        /// let db = Db::open("/db", opts(CompactionStyle::Lsbm))?;
        /// db.put("k", "v")?;
        /// drop(db);
        /// let db = Db::open("/db", opts(CompactionStyle::Tiered))?;
        /// assert_eq!(db.property("strata.policy")?, "tiered");
        /// assert_eq!(db.get("k")?, Some(b"v".to_vec()));
        /// drop(db);
        /// // Options that set no policy keep the recorded one.
        /// let db = Db::open("/db", Options::default().with_vfs(vfs))?;
        /// assert_eq!(db.property("strata.policy")?, "tiered");
        /// # Ok::<(), strata::Error>(())
        /// ```
        with_compaction_style, compaction_style, CompactionStyle, F_STYLE);
    tree_setter!(/// Turn background compactions off; `compact_range` still works (RocksDB `disable_auto_compactions`).
        with_disable_auto_compactions, disable_auto_compactions, bool, F_DISABLE_AUTO);
    setter!(/// MANIFEST size at which it is rewritten as a snapshot into a new file
        /// (RocksDB `max_manifest_file_size`; default 64 MiB).
        with_max_manifest_file_size, max_manifest_file_size, u64);
    tree_setter!(/// LSbM: how often the trim removes buffer files whose blocks are not
        /// cached (paper: 30 s; RocksDB has no equivalent). Default 30 s.
        with_buffer_trim_interval, buffer_trim_interval, std::time::Duration, F_TRIM_INTERVAL_NANOS);
    tree_setter!(/// LSbM: a buffer file with less than this fraction of its data blocks in
        /// the block cache is removed by the trim (paper: 0.8). Default 0.8.
        with_buffer_trim_threshold, buffer_trim_threshold, f64, F_TRIM_THRESHOLD);
    tree_setter!(/// LSbM: whether a read may fetch a buffer file's block from the device
        /// when it is not cached (the paper's Algorithm 3 as written; dLSM
        /// always does). Default false: a buffer file answers only from cached
        /// blocks and an uncached one sends the read to its run.
        with_buffer_read_misses, buffer_read_misses, bool, F_READ_MISSES);
    tree_setter!(/// Seek-triggered compaction (LevelDB's `allowed_seeks`, always on there;
        /// RocksDB removed it in 3.2 with its `disable_seek_compaction`). Default false.
        /// A point read that has to look in a second table charges one seek to the
        /// first table it read in vain (iterators sample one read per ~1 MiB they
        /// return); a table that used up `max(100, size / 16 KiB)` seeks is compacted
        /// into the next level, by the policy's manual-compaction pick, when the
        /// policy has nothing else to do. Under `lwc` an iterator seek also charges
        /// each DTable it lands in one seek per extra segment (a cursor, and a block
        /// read, in each), and such a table is rewritten in place into one segment
        /// instead: scans win back what appends saved, where they keep scanning.
        /// Off by default because it makes reads
        /// cause writes: every policy's write amplification and cache behaviour
        /// under read-heavy runs would change, and with bloom filters most wasted
        /// probes cost no block read (RocksDB's reason to drop it).
        with_seek_compaction, seek_compaction, bool, F_SEEK_COMPACTION);
    tree_setter!(/// Deepest level a flushed memtable's table may go to (RocksDB's former
        /// `max_mem_compaction_level`, LevelDB's fixed `kMaxMemCompactLevel` = 2). Default
        /// 0: always L0, as in RocksDB today. Above 0 the policy may place a flushed
        /// table that overlaps nothing above that level lower (LevelDB's
        /// `PickLevelForMemTableOutput`; the leveled and Garnering policies do, the
        /// others keep L0), saving the L0 -> L1 rewrite of key ranges the tree does
        /// not hold yet. Clamped to the last level. Off by default so that trees
        /// benchmarked before keep their shape.
        with_max_mem_compaction_level, max_mem_compaction_level, usize, F_MAX_MEM_LEVEL);
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
    pub fn with_keyspace(mut self, name: impl Into<String>, opts: crate::KeyspaceOptions) -> Self {
        let name = name.into();
        self.keyspaces.retain(|(n, _)| *n != name);
        self.keyspaces.push((name, opts));
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
    pub fn with_merge_operator(mut self, op: Arc<dyn crate::MergeOperator>) -> Self {
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
    pub fn with_event_listener(mut self, listener: Arc<dyn crate::EventListener>) -> Self {
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
    /// db.put(b"user0001", b"ada")?;
    /// db.flush()?;
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
    /// pipelined-compaction paper's S-PPCP). The LOCK, CURRENT, MANIFEST and WAL
    /// files stay in the database directory. Missing paths are created at open;
    /// open finds a table in any of the paths, so paths may be reordered or
    /// added between opens, but every path holding live tables must be given.
    #[must_use]
    pub fn with_db_paths<P: Into<std::path::PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.db_paths = paths.into_iter().map(Into::into).collect();
        self
    }

    /// The info log's rotation limits.
    pub(crate) fn info_log_limits(&self) -> crate::info_log::InfoLogLimits {
        crate::info_log::InfoLogLimits {
            max_file_size: self.max_log_file_size,
            keep_old: self.keep_log_file_num,
        }
    }

    /// Checks that the options make sense together.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::invalid(m));
        if self.write_buffer_size < 4096 {
            return bad("write_buffer_size must be at least 4 KiB");
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number must be at least 2");
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return bad("level0_file_num_compaction_trigger must be at least 1");
        }
        if self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger
            || self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger
        {
            return bad("need level0 compaction trigger <= slowdown trigger <= stop trigger");
        }
        if !(2..=MAX_LEVELS).contains(&self.num_levels) {
            return bad("num_levels must be between 2 and 20");
        }
        if !(self.max_bytes_for_level_multiplier >= 2.0 && self.max_bytes_for_level_multiplier <= 1000.0) {
            return bad("max_bytes_for_level_multiplier must be between 2 and 1000");
        }
        if self.max_bytes_for_level_base < 4096 || self.target_file_size_base < 1024 {
            return bad("max_bytes_for_level_base must be >= 4 KiB and target_file_size_base >= 1 KiB");
        }
        if !(256..=(16 << 20)).contains(&self.block_size) {
            return bad("block_size must be between 256 B and 16 MiB");
        }
        if !(1..=1024).contains(&self.block_restart_interval) {
            return bad("block_restart_interval must be between 1 and 1024");
        }
        if !(self.bloom_bits_per_key >= 0.0 && self.bloom_bits_per_key <= 64.0) {
            return bad("bloom_bits_per_key must be between 0 and 64");
        }
        if self.prefix_extractor.as_ref().is_some_and(|p| p.name().is_empty() || p.name().len() > 255) {
            return bad("prefix_extractor name must be 1 to 255 bytes");
        }
        if self.max_manifest_file_size < 1024 {
            return bad("max_manifest_file_size must be at least 1 KiB");
        }
        if !(self.buffer_trim_threshold >= 0.0 && self.buffer_trim_threshold <= 1.0) {
            return bad("buffer_trim_threshold must be between 0 and 1");
        }
        if self.buffer_trim_interval.is_zero() {
            return bad("buffer_trim_interval must be above zero");
        }
        if self.compaction_warmup && self.block_cache_capacity == 0 {
            return bad("compaction_warmup needs a block cache (block_cache_capacity > 0)");
        }
        if self.max_open_files < 16 {
            return bad("max_open_files must be at least 16");
        }
        if !(1..=256).contains(&self.max_background_jobs) {
            return bad("max_background_jobs must be between 1 and 256");
        }
        if let CompactionPipeline::Parallel { compute_threads: k }
        | CompactionPipeline::Auto { max_compute_threads: k } = self.compaction_pipeline
        {
            if !(1..=64).contains(&k) {
                return bad("compaction_pipeline compute_threads must be between 1 and 64");
            }
        }
        if !(1..=1 << 30).contains(&self.compaction_subtask_bytes) {
            return bad("compaction_subtask_bytes must be between 1 and 1 GiB");
        }
        if self.db_paths.len() > 16 {
            return bad("at most 16 db_paths");
        }
        for (i, p) in self.db_paths.iter().enumerate() {
            if p.as_os_str().is_empty() {
                return bad("a db_path is empty");
            }
            if self.db_paths[..i].contains(p) {
                return Err(Error::invalid(format!("db_path {} is given twice", p.display())));
            }
        }
        if !(1..=16).contains(&self.max_background_compactions) {
            return bad("max_background_compactions must be between 1 and 16");
        }
        if let CompressionType::Zstd(l) = self.compression {
            if !(1..=22).contains(&l) {
                return bad("zstd level must be between 1 and 22");
            }
        }
        Ok(())
    }
}

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
    pub(crate) verify_checksums: bool,
    pub(crate) fill_cache: bool,
    pub(crate) readahead_size: usize,
    pub(crate) use_compaction_buffer: bool,
    pub(crate) iterate_lower_bound: Option<Vec<u8>>,
    pub(crate) iterate_upper_bound: Option<Vec<u8>>,
    pub(crate) total_order_seek: bool,
    pub(crate) prefix_same_as_start: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            verify_checksums: true,
            fill_cache: true,
            readahead_size: 0,
            use_compaction_buffer: true,
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
        /// [prefix extractor](Options::with_prefix_extractor). The answers are the same;
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
        /// with `k` in the [prefix extractor](Options::with_prefix_extractor)'s domain, it
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
    setter!(/// Verify block checksums (RocksDB `verify_checksums`; default true).
        with_verify_checksums, verify_checksums, bool);
    setter!(/// Put blocks read into the block cache, and rows found into the row cache
        /// (RocksDB `fill_cache`; default true).
        with_fill_cache, fill_cache, bool);
    setter!(/// Bytes an iterator reads from a table at once while moving forward, for long scans
        /// (RocksDB `readahead_size`; default 0: one block per read). Point reads ignore it.
        with_readahead_size, readahead_size, usize);
    setter!(/// Let point reads use the LSbM compaction buffer (default true). Off, reads
        /// go to the tree's own runs only: the same answers, other cache behaviour.
        with_use_compaction_buffer, use_compaction_buffer, bool);

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
