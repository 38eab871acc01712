//! [`CompactionStyle`]: which compaction policy shapes a tree, by name or
//! as a caller's own [`CompactionPolicy`].

use std::fmt;
use std::sync::Arc;

use crate::compaction::policy::CompactionPolicy;
use crate::error::{Error, Result};

/// Which compaction policy shapes the tree. A database or keyspace may be
/// reopened under another one; see [`Options::with_compaction_style`](crate::Options::with_compaction_style).
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
    /// bLSM: two-part levels (`C_i` receiving, `C'_i` draining file by file
    /// whenever the level is full), scheduled as LevelDB schedules (bLSM's
    /// spring-and-gear pacing is not built); the structure the LSbM and dLSM
    /// compaction buffers build on. Same shape options as `Leveled`.
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
    /// dLSM: the compaction buffer without the trim and without a buffer at
    /// the last level (the deepest holding data; see
    /// [`Options::with_buffer_last_level`](crate::Options::with_buffer_last_level)),
    /// with larger bloom filters (`bits + log2(ratio)/ln 2`, 14.8 for 10 bits
    /// and ratio 10) on the tables that feed buffers, paid for by the levels
    /// that feed none, so the tree's filters still average
    /// `bloom_bits_per_key` (the same filter memory as every other policy).
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
