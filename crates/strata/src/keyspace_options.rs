//! [`KeyspaceOptions`]: the per-tree part of [`Options`] a keyspace has its
//! own copy of, and the byte encoding persisted in the keyspace registry.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::compaction::CompactionFilter;
use crate::error::{Error, Result};
use crate::options::{BloomAllocation, CompactionStyle, CompressionType, Options};
use crate::prefix::PrefixExtractor;
use crate::util::coding::{put_fixed64, put_length_prefixed, put_varint64, Reader};

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
    tree: Options,
    /// The merge operator's name as the MANIFEST recorded it (the operator
    /// itself cannot be persisted); used when `tree` has no operator.
    recorded_merge_operator: Option<String>,
    /// The TTL the MANIFEST recorded (its values carry write-time stamps).
    /// Kept apart from `tree.ttl` so a plain open, which gives none, is refused.
    recorded_ttl: Option<Duration>,
}

impl fmt::Debug for KeyspaceOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.tree;
        f.debug_struct("KeyspaceOptions")
            .field("compaction_style", &t.compaction_style)
            .field("write_buffer_size", &t.write_buffer_size)
            .field("num_levels", &t.num_levels)
            .field("merge_operator", &self.merge_operator_name())
            .finish_non_exhaustive()
    }
}

macro_rules! ks_setter {
    ($(#[$doc:meta])* $name:ident, $field:ident, $ty:ty, $f:ident) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, v: $ty) -> Self {
            self.tree.$field = v;
            self.tree.explicit |= 1 << $f;
            self
        }
    };
}

impl KeyspaceOptions {
    /// The defaults of [`Options`] for every per-tree setting.
    ///
    /// # Examples
    ///
    /// ```
    /// let opts = strata::KeyspaceOptions::new();
    /// assert_eq!(opts.compaction_style().name(), "leveled");
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The per-tree settings of `opts` (for a keyspace shaped like the default one).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, KeyspaceOptions, Options};
    ///
    /// let db_opts = Options::default().with_compaction_style(CompactionStyle::Tiered);
    /// assert_eq!(KeyspaceOptions::from_options(&db_opts).compaction_style().name(), "tiered");
    /// ```
    pub fn from_options(opts: &Options) -> Self {
        KeyspaceOptions { tree: opts.clone(), recorded_merge_operator: None, recorded_ttl: None }
    }

    /// The name of the merge operator: the given one's, else the one the
    /// MANIFEST recorded (options read back from the registry have no operator).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{associative_merge_operator, KeyspaceOptions};
    ///
    /// let add = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    /// assert_eq!(KeyspaceOptions::new().merge_operator_name(), None);
    /// assert_eq!(KeyspaceOptions::new().with_merge_operator(add).merge_operator_name(), Some("concat"));
    /// ```
    pub fn merge_operator_name(&self) -> Option<&str> {
        match &self.tree.merge_operator {
            Some(op) => Some(op.name()),
            None => self.recorded_merge_operator.as_deref(),
        }
    }

    /// These options, remembering `name` as the recorded merge operator when
    /// they carry none (so re-recording them keeps the name).
    pub(crate) fn with_recorded_merge_operator(mut self, name: Option<&str>) -> Self {
        if self.tree.merge_operator.is_none() {
            self.recorded_merge_operator = name.map(str::to_string);
        }
        self
    }

    /// The TTL of the tree's stamped values: the one given (by `TtlDb`),
    /// else the recorded one; `None` for plain values.
    pub(crate) fn ttl(&self) -> Option<Duration> {
        self.tree.ttl.or(self.recorded_ttl)
    }

    /// These options for a tree of stamped values expiring after `ttl`,
    /// with `filter` (which wraps [`Self::compaction_filter`]).
    pub(crate) fn with_ttl(mut self, ttl: Duration, filter: Arc<dyn CompactionFilter>) -> Self {
        self.tree.ttl = Some(ttl);
        self.tree.compaction_filter = Some(filter);
        self
    }

    /// The compaction filter given, if any.
    pub(crate) fn compaction_filter(&self) -> Option<Arc<dyn CompactionFilter>> {
        self.tree.compaction_filter.clone()
    }

    /// The compaction policy.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, KeyspaceOptions};
    ///
    /// let o = KeyspaceOptions::new().with_compaction_style(CompactionStyle::Lwc { max_segments: 4 });
    /// assert_eq!(o.compaction_style().name(), "lwc");
    /// ```
    pub fn compaction_style(&self) -> &CompactionStyle {
        &self.tree.compaction_style
    }

    ks_setter!(/// The compaction policy (RocksDB `compaction_style`; default leveled).
        with_compaction_style, compaction_style, CompactionStyle, F_STYLE);
    ks_setter!(/// Memtable size before it is switched and flushed (RocksDB `write_buffer_size`; default 64 MiB).
        with_write_buffer_size, write_buffer_size, usize, F_WRITE_BUFFER_SIZE);
    ks_setter!(/// Memtables (active + immutable) before writes stop (RocksDB `max_write_buffer_number`; default 2).
        with_max_write_buffer_number, max_write_buffer_number, usize, F_MAX_WRITE_BUFFER_NUMBER);
    ks_setter!(/// L0 files that trigger a compaction (RocksDB `level0_file_num_compaction_trigger`; default 4).
        with_level0_file_num_compaction_trigger, level0_file_num_compaction_trigger, usize, F_L0_TRIGGER);
    ks_setter!(/// L0 files at which writes slow down (RocksDB `level0_slowdown_writes_trigger`; default 20).
        with_level0_slowdown_writes_trigger, level0_slowdown_writes_trigger, usize, F_L0_SLOWDOWN);
    ks_setter!(/// L0 files at which writes stop (RocksDB `level0_stop_writes_trigger`; default 36).
        with_level0_stop_writes_trigger, level0_stop_writes_trigger, usize, F_L0_STOP);
    ks_setter!(/// Capacity of level 1 in bytes (RocksDB `max_bytes_for_level_base`; default 256 MiB).
        with_max_bytes_for_level_base, max_bytes_for_level_base, u64, F_LEVEL_BASE);
    ks_setter!(/// Size ratio between adjacent levels (RocksDB `max_bytes_for_level_multiplier`; default 10).
        with_max_bytes_for_level_multiplier, max_bytes_for_level_multiplier, f64, F_MULTIPLIER);
    ks_setter!(/// Number of levels including L0 (RocksDB `num_levels`; default 7).
        with_num_levels, num_levels, usize, F_NUM_LEVELS);
    ks_setter!(/// Target size of compaction output files (RocksDB `target_file_size_base`; default 64 MiB).
        with_target_file_size_base, target_file_size_base, u64, F_TARGET_FILE_SIZE);
    ks_setter!(/// Uncompressed data block size (RocksDB `BlockBasedTableOptions::block_size`; default 4 KiB).
        with_block_size, block_size, usize, F_BLOCK_SIZE);
    ks_setter!(/// Keys between restart points in a block (RocksDB `block_restart_interval`; default 16).
        with_block_restart_interval, block_restart_interval, usize, F_RESTART_INTERVAL);
    ks_setter!(/// Bloom filter bits per key, 0 for none (RocksDB `NewBloomFilterPolicy(bits)`; default 10).
        with_bloom_bits_per_key, bloom_bits_per_key, f64, F_BLOOM_BITS);
    ks_setter!(/// How the bloom bits are spread over the sorted runs (default uniform; see [`BloomAllocation`]).
        with_bloom_allocation, bloom_allocation, BloomAllocation, F_BLOOM_ALLOCATION);
    ks_setter!(/// Whether table filters hold whole keys (RocksDB `whole_key_filtering`; default true).
        with_whole_key_filtering, whole_key_filtering, bool, F_WHOLE_KEY_FILTERING);
    ks_setter!(/// Block compression (RocksDB `compression`; default LZ4).
        with_compression, compression, CompressionType, F_COMPRESSION);
    ks_setter!(/// Turn background compactions off (RocksDB `disable_auto_compactions`).
        with_disable_auto_compactions, disable_auto_compactions, bool, F_DISABLE_AUTO);
    ks_setter!(/// LSbM: how often the trim runs (default 30 s).
        with_buffer_trim_interval, buffer_trim_interval, Duration, F_TRIM_INTERVAL_NANOS);
    ks_setter!(/// LSbM: cached-block fraction under which a buffer file is trimmed (default 0.8).
        with_buffer_trim_threshold, buffer_trim_threshold, f64, F_TRIM_THRESHOLD);
    ks_setter!(/// LSbM: whether a read may fetch a buffer file's block from the device (default false).
        with_buffer_read_misses, buffer_read_misses, bool, F_READ_MISSES);
    ks_setter!(/// Seek-triggered compaction (LevelDB's `allowed_seeks`; default false).
        with_seek_compaction, seek_compaction, bool, F_SEEK_COMPACTION);
    ks_setter!(/// Deepest level a flushed memtable's table may go to (RocksDB's former
        /// `max_mem_compaction_level`; default 0).
        with_max_mem_compaction_level, max_mem_compaction_level, usize, F_MAX_MEM_LEVEL);

    /// The keyspace's compaction filter (RocksDB `compaction_filter`); not persisted.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{CompactionFilter, Decision, KeyspaceOptions};
    ///
    /// struct DropAll;
    /// impl CompactionFilter for DropAll {
    ///     fn name(&self) -> &str { "drop-all" }
    ///     fn filter(&self, _level: usize, _key: &[u8], _value: &[u8]) -> Decision { Decision::Remove }
    /// }
    /// let _opts = KeyspaceOptions::new().with_compaction_filter(Arc::new(DropAll));
    /// ```
    #[must_use]
    pub fn with_compaction_filter(mut self, filter: Arc<dyn CompactionFilter>) -> Self {
        self.tree.compaction_filter = Some(filter);
        self
    }

    /// The keyspace's merge operator (RocksDB `merge_operator`); only its
    /// name is persisted (a reopen with an operator of another name is refused).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{associative_merge_operator, KeyspaceOptions};
    ///
    /// let add = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    /// let _opts = KeyspaceOptions::new().with_merge_operator(add);
    /// ```
    #[must_use]
    pub fn with_merge_operator(mut self, op: Arc<dyn crate::MergeOperator>) -> Self {
        self.tree.merge_operator = Some(op);
        self
    }

    /// The keyspace's prefix extractor (RocksDB `prefix_extractor`); not persisted.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{FixedPrefix, KeyspaceOptions};
    ///
    /// let _opts = KeyspaceOptions::new().with_prefix_extractor(std::sync::Arc::new(FixedPrefix::new(4)));
    /// ```
    #[must_use]
    pub fn with_prefix_extractor(mut self, extractor: Arc<dyn PrefixExtractor>) -> Self {
        self.tree.prefix_extractor = Some(extractor);
        self
    }

    /// The options a keyspace tree runs with: the database's, with this
    /// keyspace's per-tree settings. Tables of keyspaces are kept in the
    /// keyspace's own directory, so `db_paths` does not apply to them.
    pub(crate) fn apply(&self, db: &Options) -> Options {
        let t = &self.tree;
        let mut o = db.clone();
        o.write_buffer_size = t.write_buffer_size;
        o.max_write_buffer_number = t.max_write_buffer_number;
        o.level0_file_num_compaction_trigger = t.level0_file_num_compaction_trigger;
        o.level0_slowdown_writes_trigger = t.level0_slowdown_writes_trigger;
        o.level0_stop_writes_trigger = t.level0_stop_writes_trigger;
        o.max_bytes_for_level_base = t.max_bytes_for_level_base;
        o.max_bytes_for_level_multiplier = t.max_bytes_for_level_multiplier;
        o.num_levels = t.num_levels;
        o.target_file_size_base = t.target_file_size_base;
        o.block_size = t.block_size;
        o.block_restart_interval = t.block_restart_interval;
        o.bloom_bits_per_key = t.bloom_bits_per_key;
        o.bloom_allocation = t.bloom_allocation;
        o.whole_key_filtering = t.whole_key_filtering;
        o.compression = t.compression;
        o.compaction_style = t.compaction_style.clone();
        o.disable_auto_compactions = t.disable_auto_compactions;
        o.buffer_trim_interval = t.buffer_trim_interval;
        o.buffer_trim_threshold = t.buffer_trim_threshold;
        o.buffer_read_misses = t.buffer_read_misses;
        o.seek_compaction = t.seek_compaction;
        o.max_mem_compaction_level = t.max_mem_compaction_level;
        o.compaction_filter = t.compaction_filter.clone();
        o.merge_operator = t.merge_operator.clone();
        o.prefix_extractor = t.prefix_extractor.clone();
        o.db_paths = Vec::new();
        o.explicit = t.explicit;
        o.ttl = t.ttl;
        o
    }

    /// These options over what the MANIFEST recorded for the keyspace
    /// (see [`keep_recorded`]).
    pub(crate) fn over_recorded(&self, recorded: &[u8], whose: &str) -> Result<KeyspaceOptions> {
        Ok(KeyspaceOptions {
            tree: keep_recorded(&self.tree, recorded, whose)?,
            recorded_merge_operator: self.recorded_merge_operator.clone(),
            recorded_ttl: self.recorded_ttl,
        })
    }

    /// The persisted form: every numeric and enum setting as (field, value).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let t = &self.tree;
        let mut b = Vec::new();
        let int = |b: &mut Vec<u8>, field: u64, v: u64| {
            put_varint64(b, field);
            put_varint64(b, v);
        };
        int(&mut b, F_WRITE_BUFFER_SIZE, t.write_buffer_size as u64);
        int(&mut b, F_MAX_WRITE_BUFFER_NUMBER, t.max_write_buffer_number as u64);
        int(&mut b, F_L0_TRIGGER, t.level0_file_num_compaction_trigger as u64);
        int(&mut b, F_L0_SLOWDOWN, t.level0_slowdown_writes_trigger as u64);
        int(&mut b, F_L0_STOP, t.level0_stop_writes_trigger as u64);
        int(&mut b, F_LEVEL_BASE, t.max_bytes_for_level_base);
        int(&mut b, F_NUM_LEVELS, t.num_levels as u64);
        int(&mut b, F_TARGET_FILE_SIZE, t.target_file_size_base);
        int(&mut b, F_BLOCK_SIZE, t.block_size as u64);
        int(&mut b, F_RESTART_INTERVAL, t.block_restart_interval as u64);
        int(&mut b, F_BLOOM_ALLOCATION, matches!(t.bloom_allocation, BloomAllocation::Monkey) as u64);
        int(&mut b, F_WHOLE_KEY_FILTERING, t.whole_key_filtering as u64);
        int(&mut b, F_DISABLE_AUTO, t.disable_auto_compactions as u64);
        int(&mut b, F_TRIM_INTERVAL_NANOS, t.buffer_trim_interval.as_nanos().min(u64::MAX as u128) as u64);
        int(&mut b, F_READ_MISSES, t.buffer_read_misses as u64);
        int(&mut b, F_SEEK_COMPACTION, t.seek_compaction as u64);
        int(&mut b, F_MAX_MEM_LEVEL, t.max_mem_compaction_level as u64);
        for (field, v) in [
            (F_MULTIPLIER, t.max_bytes_for_level_multiplier),
            (F_BLOOM_BITS, t.bloom_bits_per_key),
            (F_TRIM_THRESHOLD, t.buffer_trim_threshold),
        ] {
            put_varint64(&mut b, field);
            put_fixed64(&mut b, v.to_bits());
        }
        put_varint64(&mut b, F_COMPRESSION);
        match t.compression {
            CompressionType::None => put_varint64(&mut b, 0),
            CompressionType::Lz4 => put_varint64(&mut b, 1),
            CompressionType::Zstd(l) => {
                put_varint64(&mut b, 2);
                put_varint64(&mut b, l.clamp(1, 22) as u64);
            }
        }
        put_varint64(&mut b, F_STYLE);
        match &t.compaction_style {
            CompactionStyle::Garnering { c } => {
                put_length_prefixed(&mut b, b"garnering");
                put_fixed64(&mut b, c.to_bits());
            }
            CompactionStyle::Lwc { max_segments } => {
                put_length_prefixed(&mut b, b"lwc");
                put_varint64(&mut b, *max_segments as u64);
            }
            // A custom policy is persisted by name; it must be supplied again at open.
            other => put_length_prefixed(&mut b, other.name().as_bytes()),
        }
        // Only when set, so options without one encode as before.
        if let Some(name) = self.merge_operator_name() {
            put_varint64(&mut b, F_MERGE_OPERATOR);
            put_length_prefixed(&mut b, name.as_bytes());
        }
        // Only for stamped values, so plain trees encode as before and an
        // older reader refuses a TTL tree (unknown field) instead of misreading it.
        if let Some(ttl) = self.ttl() {
            put_varint64(&mut b, F_TTL);
            put_varint64(&mut b, ttl_millis(ttl));
        }
        b
    }

    /// Reads the persisted form back. Trait objects are absent; a custom
    /// policy comes back as its name only (see [`PersistedStyle`]).
    pub(crate) fn decode(data: &[u8]) -> Result<(KeyspaceOptions, PersistedStyle)> {
        let bad = |what: &str| Error::corruption(format!("keyspace options: bad {what}"));
        let mut r = Reader::new(data);
        let mut o = KeyspaceOptions::default();
        let mut style = None;
        while !r.is_empty() {
            let field = r.varint64().ok_or_else(|| bad("field"))?;
            let t = &mut o.tree;
            if matches!(field, F_MULTIPLIER | F_BLOOM_BITS | F_TRIM_THRESHOLD) {
                let v = f64::from_bits(r.fixed64().ok_or_else(|| bad("number"))?);
                match field {
                    F_MULTIPLIER => t.max_bytes_for_level_multiplier = v,
                    F_BLOOM_BITS => t.bloom_bits_per_key = v,
                    _ => t.buffer_trim_threshold = v,
                }
                continue;
            }
            if field == F_MERGE_OPERATOR {
                let name = r.length_prefixed().ok_or_else(|| bad("merge operator"))?;
                let name = std::str::from_utf8(name).map_err(|_| bad("merge operator"))?;
                o.recorded_merge_operator = Some(name.to_string());
                continue;
            }
            if field == F_TTL {
                let ms = r.varint64().ok_or_else(|| bad("ttl"))?;
                o.recorded_ttl = Some(Duration::from_millis(ms));
                continue;
            }
            if field == F_STYLE {
                let name = r.length_prefixed().ok_or_else(|| bad("policy"))?;
                let name = std::str::from_utf8(name).map_err(|_| bad("policy"))?.to_string();
                style = Some(match name.as_str() {
                    "garnering" => {
                        let c = f64::from_bits(r.fixed64().ok_or_else(|| bad("garnering c"))?);
                        PersistedStyle::Builtin(CompactionStyle::Garnering { c })
                    }
                    "lwc" => {
                        let n = r.varint64().ok_or_else(|| bad("lwc segments"))?;
                        PersistedStyle::Builtin(CompactionStyle::Lwc { max_segments: n as usize })
                    }
                    n if CompactionStyle::builtin_names().contains(&n) => {
                        PersistedStyle::Builtin(CompactionStyle::from_name(n)?)
                    }
                    _ => PersistedStyle::Custom(name),
                });
                continue;
            }
            let v = r.varint64().ok_or_else(|| bad("value"))?;
            let us = usize::try_from(v).map_err(|_| bad("value"))?;
            match field {
                F_WRITE_BUFFER_SIZE => t.write_buffer_size = us,
                F_MAX_WRITE_BUFFER_NUMBER => t.max_write_buffer_number = us,
                F_L0_TRIGGER => t.level0_file_num_compaction_trigger = us,
                F_L0_SLOWDOWN => t.level0_slowdown_writes_trigger = us,
                F_L0_STOP => t.level0_stop_writes_trigger = us,
                F_LEVEL_BASE => t.max_bytes_for_level_base = v,
                F_NUM_LEVELS => t.num_levels = us,
                F_TARGET_FILE_SIZE => t.target_file_size_base = v,
                F_BLOCK_SIZE => t.block_size = us,
                F_RESTART_INTERVAL => t.block_restart_interval = us,
                F_BLOOM_ALLOCATION => {
                    t.bloom_allocation =
                        if v == 1 { BloomAllocation::Monkey } else { BloomAllocation::Uniform }
                }
                F_WHOLE_KEY_FILTERING => t.whole_key_filtering = v != 0,
                F_DISABLE_AUTO => t.disable_auto_compactions = v != 0,
                F_TRIM_INTERVAL_NANOS => t.buffer_trim_interval = Duration::from_nanos(v),
                F_READ_MISSES => t.buffer_read_misses = v != 0,
                F_SEEK_COMPACTION => t.seek_compaction = v != 0,
                F_MAX_MEM_LEVEL => t.max_mem_compaction_level = us,
                F_COMPRESSION => {
                    t.compression = match v {
                        0 => CompressionType::None,
                        1 => CompressionType::Lz4,
                        2 => {
                            let l = r.varint64().ok_or_else(|| bad("zstd level"))?;
                            CompressionType::Zstd(i32::try_from(l).map_err(|_| bad("zstd level"))?)
                        }
                        _ => return Err(bad("compression")),
                    }
                }
                other => {
                    return Err(Error::corruption(format!(
                        "keyspace options: unknown field {other} (written by a newer version?)"
                    )))
                }
            }
        }
        let style = style.ok_or_else(|| bad("policy (missing)"))?;
        if let PersistedStyle::Builtin(s) = &style {
            o.tree.compaction_style = s.clone();
        }
        Ok((o, style))
    }
}

/// `given` with every persisted per-tree field the caller did not set
/// (`Options::explicit`) taken from `recorded` (a tree's persisted options),
/// so reopening with options that only hand back a trait object changes
/// nothing else. Everything else, trait objects included, is `given`'s. A
/// recorded custom policy cannot be rebuilt: it must be given again.
pub(crate) fn keep_recorded(given: &Options, recorded: &[u8], whose: &str) -> Result<Options> {
    let (stored, style) =
        KeyspaceOptions::decode(recorded).map_err(|e| Error::corruption(format!("{whose}: {e}")))?;
    refuse_plain_open_of_ttl_tree(whose, &stored, given)?;
    let mut o = given.clone();
    for f in F_WRITE_BUFFER_SIZE..=F_MAX_MEM_LEVEL {
        if given.explicit & (1 << f) == 0 {
            copy_field(&mut o, &stored.tree, f);
        }
    }
    if given.explicit & (1 << F_STYLE) == 0 {
        if let PersistedStyle::Custom(name) = style {
            return Err(Error::invalid(format!(
                "{whose} uses the custom policy {name:?}, which cannot be persisted: give it again \
                 (with_compaction_style(CompactionStyle::Custom(..)))"
            )));
        }
    }
    Ok(o)
}

/// Refuses to open a tree recorded with TTL stamps without them (a plain
/// `Db`), which would return every value with its write time appended.
fn refuse_plain_open_of_ttl_tree(whose: &str, stored: &KeyspaceOptions, given: &Options) -> Result<()> {
    match (stored.ttl(), given.ttl) {
        (Some(ttl), None) => Err(Error::invalid(format!(
            "{whose} stores values with TTL stamps (TTL {ttl:?}): open it with TtlDb::open \
             (or TtlDb::open_read_only)"
        ))),
        _ => Ok(()),
    }
}

/// As `keep_recorded`'s check, for a keyspace whose `recorded` options the
/// open resolved into `given` (the keyspace's tree options).
pub(crate) fn check_ttl(whose: &str, recorded: &[u8], given: &Options) -> Result<()> {
    let (stored, _) =
        KeyspaceOptions::decode(recorded).map_err(|e| Error::corruption(format!("{whose}: {e}")))?;
    refuse_plain_open_of_ttl_tree(whose, &stored, given)
}

/// A TTL as persisted: milliseconds, rounded up (as expiry measures it).
pub(crate) fn ttl_millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// Copies persisted field `f` (an `F_*` id) from `src` to `dst`.
fn copy_field(dst: &mut Options, src: &Options, f: u64) {
    match f {
        F_WRITE_BUFFER_SIZE => dst.write_buffer_size = src.write_buffer_size,
        F_MAX_WRITE_BUFFER_NUMBER => dst.max_write_buffer_number = src.max_write_buffer_number,
        F_L0_TRIGGER => dst.level0_file_num_compaction_trigger = src.level0_file_num_compaction_trigger,
        F_L0_SLOWDOWN => dst.level0_slowdown_writes_trigger = src.level0_slowdown_writes_trigger,
        F_L0_STOP => dst.level0_stop_writes_trigger = src.level0_stop_writes_trigger,
        F_LEVEL_BASE => dst.max_bytes_for_level_base = src.max_bytes_for_level_base,
        F_MULTIPLIER => dst.max_bytes_for_level_multiplier = src.max_bytes_for_level_multiplier,
        F_NUM_LEVELS => dst.num_levels = src.num_levels,
        F_TARGET_FILE_SIZE => dst.target_file_size_base = src.target_file_size_base,
        F_BLOCK_SIZE => dst.block_size = src.block_size,
        F_RESTART_INTERVAL => dst.block_restart_interval = src.block_restart_interval,
        F_BLOOM_BITS => dst.bloom_bits_per_key = src.bloom_bits_per_key,
        F_BLOOM_ALLOCATION => dst.bloom_allocation = src.bloom_allocation,
        F_WHOLE_KEY_FILTERING => dst.whole_key_filtering = src.whole_key_filtering,
        F_COMPRESSION => dst.compression = src.compression,
        F_STYLE => dst.compaction_style = src.compaction_style.clone(),
        F_DISABLE_AUTO => dst.disable_auto_compactions = src.disable_auto_compactions,
        F_TRIM_INTERVAL_NANOS => dst.buffer_trim_interval = src.buffer_trim_interval,
        F_TRIM_THRESHOLD => dst.buffer_trim_threshold = src.buffer_trim_threshold,
        F_READ_MISSES => dst.buffer_read_misses = src.buffer_read_misses,
        F_SEEK_COMPACTION => dst.seek_compaction = src.seek_compaction,
        F_MAX_MEM_LEVEL => dst.max_mem_compaction_level = src.max_mem_compaction_level,
        _ => {}
    }
}

/// The policy a keyspace was created with, as the registry recorded it.
#[derive(Debug)]
pub(crate) enum PersistedStyle {
    /// A built-in policy, rebuilt with its parameters.
    Builtin(CompactionStyle),
    /// A custom policy's name: the user must supply the policy at open.
    Custom(String),
}

impl PersistedStyle {
    pub(crate) fn name(&self) -> String {
        match self {
            PersistedStyle::Builtin(s) => s.name(),
            PersistedStyle::Custom(n) => n.clone(),
        }
    }
}

pub(crate) const F_WRITE_BUFFER_SIZE: u64 = 1;
pub(crate) const F_MAX_WRITE_BUFFER_NUMBER: u64 = 2;
pub(crate) const F_L0_TRIGGER: u64 = 3;
pub(crate) const F_L0_SLOWDOWN: u64 = 4;
pub(crate) const F_L0_STOP: u64 = 5;
pub(crate) const F_LEVEL_BASE: u64 = 6;
pub(crate) const F_MULTIPLIER: u64 = 7;
pub(crate) const F_NUM_LEVELS: u64 = 8;
pub(crate) const F_TARGET_FILE_SIZE: u64 = 9;
pub(crate) const F_BLOCK_SIZE: u64 = 10;
pub(crate) const F_RESTART_INTERVAL: u64 = 11;
pub(crate) const F_BLOOM_BITS: u64 = 12;
pub(crate) const F_BLOOM_ALLOCATION: u64 = 13;
pub(crate) const F_WHOLE_KEY_FILTERING: u64 = 14;
pub(crate) const F_COMPRESSION: u64 = 15;
pub(crate) const F_STYLE: u64 = 16;
pub(crate) const F_DISABLE_AUTO: u64 = 17;
pub(crate) const F_TRIM_INTERVAL_NANOS: u64 = 18;
pub(crate) const F_TRIM_THRESHOLD: u64 = 19;
pub(crate) const F_READ_MISSES: u64 = 20;
pub(crate) const F_SEEK_COMPACTION: u64 = 21;
pub(crate) const F_MAX_MEM_LEVEL: u64 = 22;
/// The merge operator's name; written only when one is set.
pub(crate) const F_MERGE_OPERATOR: u64 = 23;
/// The TTL in ms of a tree whose values carry write-time stamps (`TtlDb`);
/// written only for such a tree.
pub(crate) const F_TTL: u64 = 24;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persisted_options_round_trip() {
        let o = KeyspaceOptions::new()
            .with_compaction_style(CompactionStyle::Garnering { c: 0.5 })
            .with_write_buffer_size(12345)
            .with_max_bytes_for_level_multiplier(7.5)
            .with_compression(CompressionType::Zstd(5))
            .with_bloom_allocation(BloomAllocation::Monkey)
            .with_buffer_trim_interval(Duration::from_millis(1500))
            .with_seek_compaction(true);
        let (back, style) = KeyspaceOptions::decode(&o.encode()).unwrap();
        assert_eq!(back.encode(), o.encode());
        assert_eq!(style.name(), "garnering");
        let (_, lwc) = KeyspaceOptions::decode(
            &KeyspaceOptions::new().with_compaction_style(CompactionStyle::Lwc { max_segments: 3 }).encode(),
        )
        .unwrap();
        assert!(matches!(lwc, PersistedStyle::Builtin(CompactionStyle::Lwc { max_segments: 3 })));
        let plain = KeyspaceOptions::new();
        let ttl = plain.clone().with_ttl(
            Duration::from_micros(1500),
            Arc::new(|_: usize, _: &[u8], _: &[u8]| crate::compaction::Decision::Keep),
        );
        assert_eq!(ttl.encode()[..plain.encode().len()], plain.encode()[..], "the TTL field comes last");
        let (back, _) = KeyspaceOptions::decode(&ttl.encode()).unwrap();
        assert_eq!(back.ttl(), Some(Duration::from_millis(2)), "rounded up to a millisecond");
        assert_eq!(back.apply(&Options::default()).ttl, None, "a recorded TTL is not one given");
        assert_eq!(back.encode(), ttl.encode());
    }

    #[test]
    fn damaged_persisted_options_are_corruption() {
        let good = KeyspaceOptions::new().encode();
        for i in 0..good.len() {
            let _ = KeyspaceOptions::decode(&good[..i]);
        }
        assert!(KeyspaceOptions::decode(&[99, 1]).unwrap_err().is_corruption());
        assert!(KeyspaceOptions::decode(&[]).unwrap_err().is_corruption(), "no policy");
    }
}
