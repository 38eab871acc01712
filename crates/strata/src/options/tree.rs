//! The persisted per-tree options that [`Options`](crate::Options) and
//! [`KeyspaceOptions`](crate::KeyspaceOptions) both set: their field ids
//! (`F_*`, also the bits of `Options::explicit`) and their setters, written
//! once here and expanded into both types.

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
/// Idle (aggressive) compaction's threshold in nanoseconds; written only when set.
pub(crate) const F_IDLE_COMPACTION: u64 = 25;
/// dLSM's last-level buffer; written only when on.
pub(crate) const F_BUFFER_LAST_LEVEL: u64 = 26;
/// The smallest super-file part of LSbM and dLSM; written only when set.
pub(crate) const F_BUFFER_MIN_PART: u64 = 27;

/// The setters of the persisted per-tree fields, expanded in an `impl` of
/// `Options` (`tree_setters!();`) or of a type holding them in a field
/// (`tree_setters!(tree);`). Each also marks its field as set by the caller
/// (see `Options::explicit`).
macro_rules! tree_setters {
    ($($tree:ident)?) => {
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Memtable size before it is switched and flushed (RocksDB `write_buffer_size`; default 64 MiB).
            with_write_buffer_size, write_buffer_size, usize, F_WRITE_BUFFER_SIZE);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Memtables (active + immutable) before writes stop (RocksDB `max_write_buffer_number`; default 2).
            with_max_write_buffer_number, max_write_buffer_number, usize, F_MAX_WRITE_BUFFER_NUMBER);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// L0 files that trigger a compaction (RocksDB `level0_file_num_compaction_trigger`; default 4).
            with_level0_file_num_compaction_trigger, level0_file_num_compaction_trigger, usize, F_L0_TRIGGER);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// L0 files at which writes slow down (RocksDB `level0_slowdown_writes_trigger`; default 20).
            with_level0_slowdown_writes_trigger, level0_slowdown_writes_trigger, usize, F_L0_SLOWDOWN);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// L0 files at which writes stop (RocksDB `level0_stop_writes_trigger`; default 36).
            with_level0_stop_writes_trigger, level0_stop_writes_trigger, usize, F_L0_STOP);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Capacity of level 1 in bytes (RocksDB `max_bytes_for_level_base`; default 256 MiB).
            /// A smaller base merges flushed data into one sorted run sooner, at more write
            /// amplification: after a 1 M-key random load, Strata at LevelDB's fixed 10 MiB
            /// with mapped reads seeks as fast as LevelDB; at the defaults (256 MiB, `pread`)
            /// about 4× slower (docs/BENCHMARKS.md).
            with_max_bytes_for_level_base, max_bytes_for_level_base, u64, F_LEVEL_BASE);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Size ratio between adjacent levels (RocksDB `max_bytes_for_level_multiplier`; default 10).
            with_max_bytes_for_level_multiplier, max_bytes_for_level_multiplier, f64, F_MULTIPLIER);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Number of levels including L0 (RocksDB `num_levels`; default 7).
            with_num_levels, num_levels, usize, F_NUM_LEVELS);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Target size of compaction output files (RocksDB `target_file_size_base`; default 64 MiB).
            with_target_file_size_base, target_file_size_base, u64, F_TARGET_FILE_SIZE);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Uncompressed data block size (RocksDB `BlockBasedTableOptions::block_size`; default 4 KiB).
            with_block_size, block_size, usize, F_BLOCK_SIZE);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Keys between restart points in a block (RocksDB `block_restart_interval`; default 16).
            with_block_restart_interval, block_restart_interval, usize, F_RESTART_INTERVAL);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Bloom filter bits per key, 0 for none (RocksDB `NewBloomFilterPolicy(bits)`; default 10).
            /// Under [`BloomAllocation::Monkey`](crate::BloomAllocation::Monkey) this is the average over all entries of the tree.
            with_bloom_bits_per_key, bloom_bits_per_key, f64, F_BLOOM_BITS);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// How the bloom bits are spread over the sorted runs (default
            /// [`BloomAllocation::Uniform`](crate::BloomAllocation::Uniform); RocksDB has no equivalent).
            with_bloom_allocation, bloom_allocation, BloomAllocation, F_BLOOM_ALLOCATION);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Whether table filters hold whole keys (RocksDB
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
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Block compression (RocksDB `compression`; default LZ4).
            with_compression, compression, CompressionType, F_COMPRESSION);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// The compaction policy (RocksDB `compaction_style`; default leveled).
            ///
            /// The root MANIFEST records each tree's policy and the other
            /// per-tree options that shape it (those [`KeyspaceOptions`](crate::KeyspaceOptions)
            /// has). Reopening an existing database, each of them the caller did
            /// not set with its `with_*` method keeps its recorded value: options
            /// that never call this method reopen under the recorded policy. A
            /// policy set here (for a keyspace: on the options given with
            /// [`Options::with_keyspace`](crate::Options::with_keyspace)) that differs is a policy change: a
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
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Turn background compactions off; `compact_range` still works (RocksDB `disable_auto_compactions`).
            with_disable_auto_compactions, disable_auto_compactions, bool, F_DISABLE_AUTO);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// LSbM: how often the trim removes buffer files whose blocks are not
            /// cached (paper: 30 s; RocksDB has no equivalent). Default 30 s.
            with_buffer_trim_interval, buffer_trim_interval, std::time::Duration, F_TRIM_INTERVAL_NANOS);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// LSbM: a buffer file with less than this fraction of its data blocks in
            /// the block cache is removed by the trim (paper: 0.8). Default 0.8.
            with_buffer_trim_threshold, buffer_trim_threshold, f64, F_TRIM_THRESHOLD);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// LSbM: whether a read may fetch a buffer file's block from the device
            /// when it is not cached (the paper's Algorithm 3 as written; dLSM
            /// always does). Default false: a buffer file answers only from cached
            /// blocks and an uncached one sends the read to its run.
            with_buffer_read_misses, buffer_read_misses, bool, F_READ_MISSES);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Seek-triggered compaction (LevelDB's `allowed_seeks`, always on there;
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
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Deepest level a flushed memtable's table may go to (RocksDB's former
            /// `max_mem_compaction_level`, LevelDB's fixed `kMaxMemCompactLevel` = 2). Default
            /// 0: always L0, as in RocksDB today. Above 0 the policy may place a flushed
            /// table that overlaps nothing above that level lower (LevelDB's
            /// `PickLevelForMemTableOutput`; the leveled and Garnering policies do, the
            /// others keep L0), saving the L0 -> L1 rewrite of key ranges the tree does
            /// not hold yet. Clamped to the last level. Off by default so that trees
            /// benchmarked before keep their shape.
            with_max_mem_compaction_level, max_mem_compaction_level, usize, F_MAX_MEM_LEVEL);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// Idle compaction: the dLSM paper's *aggressive compaction* (§VI), for every
            /// policy. Once no write has reached the tree for this long, compaction keeps
            /// going after the policy has nothing left to do: one task at a time it merges
            /// the shallowest level holding data into the next, until all data sits in the
            /// deepest level holding any, below L0 (and, under LSbM and dLSM, the compaction
            /// buffers are empty). A write makes the tree busy again; the step running then
            /// finishes and the next one waits for the tree to be idle again. Point reads
            /// and scans then look in one level. Under LSbM and dLSM the steps are the
            /// policy's own buffered drain steps, so the block cache keeps serving hot keys
            /// from the buffer while the data moves (under dLSM until it reaches the last
            /// level, which dLSM never buffers); the buffer is emptied last, a table at a time. `Some(Duration::ZERO)` compacts whenever the policy has nothing to
            /// do. Default `None` (off; RocksDB has no equivalent: its nearest are
            /// `periodic_compaction_seconds` and a manual `CompactRange`). The tree is
            /// checked for idleness at least every 500 ms.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::sync::Arc;
            /// use std::time::Duration;
            /// use strata::{CompactionStyle, Db, MemVfs, Options};
            ///
            /// let opts = Options::default()
            ///     .with_vfs(Arc::new(MemVfs::new()))
            ///     .with_compaction_style(CompactionStyle::Dlsm)
            ///     .with_idle_compaction(Some(Duration::ZERO));
            /// let db = Db::open("/db", opts)?;
            /// db.put("k", "v")?;
            /// db.flush()?;
            /// // Idle work counts as pending compaction work.
            /// db.wait_for_compactions()?;
            /// assert_eq!(db.property("strata.num-files-at-level0")?, "0");
            /// # Ok::<(), strata::Error>(())
            /// ```
            with_idle_compaction, idle_compaction, Option<std::time::Duration>, F_IDLE_COMPACTION);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// dLSM: keep a compaction buffer at the last level (the deepest holding data)
            /// too, fed like the others by the level above's drain steps, up to 20 of its
            /// rounds. Default false, as the dLSM paper builds it: there the last level holds
            /// ~90 % of the data and is updated least, so a buffer of it would about double
            /// the tree for little. Measured under a 150-IOPS device (docs/BENCHMARKS.md): 4 %
            /// more reads on a tree whose last level was smaller than the level above, 7 %
            /// fewer in the paper's proportions, for more space either way. LSbM always
            /// buffers its last level, its trim keeping only cached files; other policies
            /// have no buffer.
            with_buffer_last_level, buffer_last_level, bool, F_BUFFER_LAST_LEVEL);
        $crate::options::tree::tree_setters!(@one [$($tree)?]
            /// LSbM and dLSM: the smallest part a super-file is cut into. These policies
            /// write each output file of `target_file_size_base` as up to four parts (the
            /// LSbM paper's super-files: compaction drains a whole super-file, the buffer's
            /// gradual removal and trim drop parts), each at least this big; a target under
            /// twice this is written whole, so the tree holds about as many tables as under
            /// `leveled`. `None` (default): the policy's own — LSbM four parts at every size,
            /// dLSM parts of at least 1 MiB. Measured with 1 MiB files (docs/BENCHMARKS.md,
            /// "LSbM's super-file parts"): whole files cost LSbM 10 % less CPU per get (fewer,
            /// bigger tables to find and look up) and read 0.9–1.1× leveled on a bare SSD
            /// against 0.8× in four parts, but under a 150-IOPS device kept only leveled's
            /// hit ratio (0.36–0.42 against 0.50–0.59), since its trim needs small files to
            /// keep the hot ones. `Some(0)` is refused; other policies ignore it.
            with_buffer_min_part_size, buffer_min_part_size, Option<u64>, F_BUFFER_MIN_PART);
    };
    (@one [$($tree:ident)?] $(#[$doc:meta])* $name:ident, $field:ident, $ty:ty, $f:ident) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, v: $ty) -> Self {
            self$(.$tree)?.$field = v;
            self$(.$tree)?.explicit |= 1 << $crate::options::tree::$f;
            self
        }
    };
}
pub(crate) use tree_setters;
