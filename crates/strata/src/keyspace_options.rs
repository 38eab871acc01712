//! [`KeyspaceOptions`]: the per-tree part of [`Options`] a keyspace has its
//! own copy of, and the byte encoding persisted in the keyspace registry.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::compaction::filter::CompactionFilter;
use crate::compaction::style::CompactionStyle;
use crate::error::{Error, Result};
use crate::options::kinds::{BloomAllocation, CompressionType};
use crate::options::tree::{
    tree_setters, F_BLOCK_SIZE, F_BLOOM_ALLOCATION, F_BLOOM_BITS, F_BUFFER_LAST_LEVEL, F_BUFFER_MIN_PART,
    F_COMPRESSION, F_DISABLE_AUTO, F_IDLE_COMPACTION, F_L0_SLOWDOWN, F_L0_STOP, F_L0_TRIGGER, F_LEVEL_BASE,
    F_MAX_MEM_LEVEL, F_MAX_WRITE_BUFFER_NUMBER, F_MERGE_OPERATOR, F_MULTIPLIER, F_NUM_LEVELS, F_READ_MISSES,
    F_RESTART_INTERVAL, F_SEEK_COMPACTION, F_STYLE, F_TARGET_FILE_SIZE, F_TRIM_INTERVAL_NANOS,
    F_TRIM_THRESHOLD, F_TTL, F_WHOLE_KEY_FILTERING, F_WRITE_BUFFER_SIZE,
};
use crate::options::{KeyspaceOptions, Options};
use crate::prefix::PrefixExtractor;
use crate::util::coding::{put_fixed64, put_length_prefixed, put_varint64, Reader};

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

    tree_setters!(tree);

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
        o.idle_compaction = t.idle_compaction;
        o.buffer_last_level = t.buffer_last_level;
        o.buffer_min_part_size = t.buffer_min_part_size;
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
        // Only when set, so trees without it encode as before.
        if let Some(idle) = t.idle_compaction {
            put_varint64(&mut b, F_IDLE_COMPACTION);
            put_varint64(&mut b, idle.as_nanos().min(u64::MAX as u128) as u64);
        }
        if t.buffer_last_level {
            put_varint64(&mut b, F_BUFFER_LAST_LEVEL);
            put_varint64(&mut b, 1);
        }
        if let Some(min_part) = t.buffer_min_part_size {
            put_varint64(&mut b, F_BUFFER_MIN_PART);
            put_varint64(&mut b, min_part);
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
                F_IDLE_COMPACTION => t.idle_compaction = Some(Duration::from_nanos(v)),
                F_BUFFER_LAST_LEVEL => t.buffer_last_level = v != 0,
                F_BUFFER_MIN_PART => t.buffer_min_part_size = Some(v),
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
    for f in (F_WRITE_BUFFER_SIZE..=F_MAX_MEM_LEVEL).chain([
        F_IDLE_COMPACTION,
        F_BUFFER_LAST_LEVEL,
        F_BUFFER_MIN_PART,
    ]) {
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
        F_IDLE_COMPACTION => dst.idle_compaction = src.idle_compaction,
        F_BUFFER_LAST_LEVEL => dst.buffer_last_level = src.buffer_last_level,
        F_BUFFER_MIN_PART => dst.buffer_min_part_size = src.buffer_min_part_size,
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
            .with_seek_compaction(true)
            .with_idle_compaction(Some(Duration::from_millis(2500)))
            .with_buffer_last_level(true)
            .with_buffer_min_part_size(Some(3 << 10));
        let (back, style) = KeyspaceOptions::decode(&o.encode()).unwrap();
        assert_eq!(back.encode(), o.encode());
        assert!(back.apply(&Options::default()).buffer_last_level);
        assert_eq!(back.apply(&Options::default()).buffer_min_part_size, Some(3 << 10));
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
