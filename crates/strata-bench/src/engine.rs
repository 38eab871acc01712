//! The engines a benchmark can drive, behind one trait, and the mapping of the
//! benchmark's options onto each engine's own (printed, so runs are auditable).

use std::path::{Path, PathBuf};

/// Errors from any engine, as text (each engine has its own error type).
pub type BenchResult<T> = Result<T, String>;

/// Engine-independent settings, named after db_bench's flags.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Database directory.
    pub path: PathBuf,
    /// Block cache bytes, 0 = none (`--cache_size`).
    pub cache_size: usize,
    /// Row cache bytes, 0 = none (`--row_cache_size`); Strata and RocksDB only.
    pub row_cache_size: usize,
    /// Compactions warm the block cache (`--compaction_warmup`); Strata only.
    pub compaction_warmup: bool,
    /// LSbM reads fetch uncached buffer blocks (`--buffer_read_misses`); Strata only.
    pub buffer_read_misses: bool,
    /// Point reads use the dLSM paper's dispatch (`--buffer_dispatch`); Strata only.
    pub buffer_dispatch: bool,
    /// dLSM buffers its last level too (`--buffer_last_level`); Strata only.
    pub buffer_last_level: bool,
    /// LSbM's and dLSM's smallest super-file part (`--buffer_min_part_size`); Strata only.
    pub buffer_min_part_size: Option<u64>,
    /// Seek-triggered compaction (`--seek_compaction`); Strata only.
    pub seek_compaction: bool,
    /// Deepest level for a flushed table (`--max_mem_compaction_level`); Strata only.
    pub max_mem_compaction_level: usize,
    /// Seconds without a write before idle compaction (`--idle_compaction`; `None` = off).
    /// Strata's own; peers are given a full manual compaction instead (see
    /// [`Engine::compacts_when_idle`]).
    pub idle_compaction: Option<f64>,
    /// Output pipeline (`--compaction_pipeline`, `--compaction_threads`); Strata only.
    pub compaction_pipeline: strata::CompactionPipeline,
    /// Input bytes per sub-task of a parallel merge (`--compaction_subtask_bytes`); Strata only.
    pub compaction_subtask_bytes: usize,
    /// `max_subcompactions` (`--subcompactions`); RocksDB only.
    pub subcompactions: u32,
    /// Bloom filter bits per key, 0 = none (`--bloom_bits`).
    pub bloom_bits: f64,
    /// How the bloom bits are spread over the tree (`--bloom_allocation`); Strata only.
    pub bloom_allocation: strata::BloomAllocation,
    /// Memtable bytes (`--write_buffer_size`).
    pub write_buffer_size: usize,
    /// Target table file bytes (`--max_file_size`).
    pub max_file_size: u64,
    /// `none`, `lz4`, `zstd` (`--compression_type`).
    pub compression: String,
    /// O_DIRECT for table reads (`--use_direct_reads`).
    pub use_direct_reads: bool,
    /// Memory-mapped table reads (`--mmap_reads`); Strata only.
    pub mmap_reads: bool,
    /// Level-1 capacity (`--max_bytes_for_level_base`).
    pub max_bytes_for_level_base: u64,
    /// Seconds between LSbM buffer trims (`--buffer_trim_interval`); Strata only.
    pub buffer_trim_interval: f64,
    /// Ratio between adjacent levels (`--max_bytes_for_level_multiplier`).
    pub level_multiplier: f64,
    /// Garnering's `c` (`--garnering_c`); Strata's `garnering` policy only.
    pub garnering_c: f64,
    /// Strata compaction policy name (`--policy`); ignored by peers.
    pub policy: String,
    /// Sync every write (`--sync`).
    pub sync: bool,
    /// Reuse an existing database (`--use_existing_db`).
    pub use_existing_db: bool,
    /// Point reads leave values in place (`--pin_slice`; see [`Engine::get_pinned`]).
    pub pin_slice: bool,
    /// Bytes of a key that are its prefix, 0 = none (`--prefix_size`): Strata's and
    /// RocksDB's fixed-prefix extractor; LevelDB and fjall have none.
    pub prefix_size: usize,
    /// Prefix scans ask no prefix filter (`--total_order_seek`).
    pub total_order_seek: bool,
    /// The simulated drive under the database (`--drive_model`); Strata only.
    pub drive: Option<crate::smr::DriveConfig>,
}

/// [`Engine::scan_keep_last`] over an engine's own forward iterator: reads up
/// to `n` entries, returns (entries, key+value bytes), leaves the n-th key in `last`.
pub fn tally_scan<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    entries: impl Iterator<Item = BenchResult<(K, V)>>,
    n: usize,
    mut last: Option<&mut Vec<u8>>,
) -> BenchResult<(usize, usize)> {
    let (mut count, mut bytes) = (0, 0);
    for kv in entries.take(n) {
        let (k, v) = kv?;
        count += 1;
        bytes += k.as_ref().len() + v.as_ref().len();
        if count == n {
            if let Some(l) = last.take() {
                l.clear();
                l.extend_from_slice(k.as_ref());
            }
        }
    }
    Ok((count, bytes))
}

/// (keys found, key + value bytes of those) for a batch of `keys` whose
/// answers have value lengths `lens`.
pub fn tally_found(keys: &[Vec<u8>], lens: &[Option<usize>]) -> (u64, u64) {
    let (mut found, mut bytes) = (0, 0);
    for (key, len) in keys.iter().zip(lens) {
        if let Some(len) = len {
            found += 1;
            bytes += (key.len() + len) as u64;
        }
    }
    (found, bytes)
}

impl EngineConfig {
    /// For a peer's option mapping: each Strata-only setting this run turns
    /// on, flagged UNSUPPORTED (the peer runs without it): `--bloom_allocation`
    /// other than uniform (peers give every table the same bits per key), an
    /// output pipeline other than `scp`, and the compaction buffer's and
    /// warm-up's switches. (Seek compaction and `max_mem_compaction_level`
    /// are left out: LevelDB has both built in.)
    pub fn peer_unsupported_notes(&self) -> String {
        let mut notes = String::new();
        if self.bloom_allocation != strata::BloomAllocation::Uniform {
            let name = self.bloom_allocation.name();
            notes += &format!(" bloom_allocation=UNSUPPORTED ({name}: uniform bits per key)");
        }
        if self.compaction_pipeline != strata::CompactionPipeline::Sequential {
            notes += &format!(" compaction_pipeline={}=UNSUPPORTED", self.compaction_pipeline.name());
        }
        let switches = [
            (self.compaction_warmup, "compaction_warmup"),
            (self.buffer_read_misses, "buffer_read_misses"),
            (self.buffer_dispatch, "buffer_dispatch"),
            (self.buffer_last_level, "buffer_last_level"),
        ];
        for (_, flag) in switches.iter().filter(|(on, _)| *on) {
            notes += &format!(" {flag}=UNSUPPORTED");
        }
        if self.drive.is_some() {
            notes += " drive_model=UNSUPPORTED (the simulated drive sits under Strata's file system only)";
        }
        notes
    }

    /// `--subcompactions` for a peer without them (LevelDB, fjall).
    pub fn peer_subcompactions_note(&self) -> &'static str {
        if self.subcompactions > 1 {
            " subcompactions=UNSUPPORTED"
        } else {
            ""
        }
    }

    /// Settings small enough that a few thousand puts flush and compact (for
    /// tests); change fields with struct update syntax.
    pub fn small(path: impl Into<PathBuf>) -> Self {
        EngineConfig {
            path: path.into(),
            cache_size: 1 << 20,
            row_cache_size: 0,
            compaction_warmup: false,
            buffer_read_misses: false,
            buffer_dispatch: false,
            buffer_last_level: false,
            buffer_min_part_size: None,
            seek_compaction: false,
            max_mem_compaction_level: 0,
            idle_compaction: None,
            compaction_pipeline: strata::CompactionPipeline::Sequential,
            compaction_subtask_bytes: 512 << 10,
            subcompactions: 1,
            bloom_bits: 10.0,
            bloom_allocation: strata::BloomAllocation::Uniform,
            write_buffer_size: 64 << 10,
            max_file_size: 256 << 10,
            compression: "none".into(),
            use_direct_reads: false,
            mmap_reads: false,
            max_bytes_for_level_base: 256 << 10,
            buffer_trim_interval: 30.0,
            level_multiplier: crate::strata_defaults::LEVEL_MULTIPLIER,
            garnering_c: strata::CompactionStyle::DEFAULT_GARNERING_C,
            policy: "leveled".into(),
            sync: false,
            use_existing_db: false,
            pin_slice: false,
            prefix_size: 0,
            total_order_seek: false,
            drive: None,
        }
    }

    /// For a peer without a prefix extractor (LevelDB, fjall): `--prefix_size`
    /// and `--total_order_seek` are UNSUPPORTED, prefix scans read the range.
    pub fn peer_prefix_note(&self) -> String {
        let mut note = String::new();
        if self.prefix_size > 0 {
            note += &format!(
                " prefix_size={}=UNSUPPORTED (no prefix extractor: prefix scans are range scans)",
                self.prefix_size
            );
        }
        if self.total_order_seek {
            note += " total_order_seek=UNSUPPORTED (always)";
        }
        note
    }
}

/// The smallest key after every key starting with `prefix` (`None`: there is
/// none, the prefix is empty or all 0xFF): a prefix scan's upper bound.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut succ = prefix[..=last].to_vec();
    succ[last] += 1;
    Some(succ)
}

/// Counters an engine can report; `None` where the engine has no such counter.
#[derive(Debug, Clone, Default)]
pub struct EngineStats {
    /// Block cache hits since open.
    pub cache_hits: Option<u64>,
    /// Block cache misses since open.
    pub cache_misses: Option<u64>,
    /// (flush + compaction writes) / user writes.
    pub write_amplification: Option<f64>,
    /// Time writers were stalled, in microseconds.
    pub stall_micros: Option<u64>,
    /// Deepest level holding data (0 when only L0 does).
    pub levels_in_use: Option<usize>,
    /// Bytes the compaction buffers add to the tree (their files no run
    /// lists; Strata's `LevelStats::buffer_bytes_in_no_run`), if the engine has buffers.
    pub buffer_bytes: Option<u64>,
    /// Point reads since open (Strata's `Stats::gets`).
    pub gets: Option<u64>,
    /// Tables those reads searched (`Stats::get_table_probes`: a table whose
    /// filter passed the key, or that has none; the dLSM paper's disk
    /// accesses per read when nothing is cached).
    pub get_table_probes: Option<u64>,
    /// User iterator positionings since open (`Stats::iter_seeks`).
    pub iter_seeks: Option<u64>,
    /// Tables those iterators opened to read (`Stats::iter_tables_opened`;
    /// the dLSM paper's files scanned per range query).
    pub iter_tables_opened: Option<u64>,
    /// Bytes compactions read since open (Strata's `Stats::compaction_bytes_read`).
    pub compaction_bytes_read: Option<u64>,
    /// Compactions' time by stage since open, when every task ran under
    /// one pipeline (not `auto`, which picks per task).
    pub compaction_stages: Option<strata::compaction::stage_model::StageProfile>,
    /// The simulated drive's counters (`--drive_model`).
    pub drive: Option<crate::results::DriveResult>,
}

impl EngineStats {
    /// Hits / (hits + misses), if both are known and nonzero.
    pub fn hit_ratio(&self) -> Option<f64> {
        let (h, m) = (self.cache_hits?, self.cache_misses?);
        (h + m > 0).then(|| h as f64 / (h + m) as f64)
    }
}

/// One key-value engine under test. Implementations must be usable from many
/// threads at once.
pub trait Engine: Send + Sync {
    /// Name shown in reports, e.g. `strata/leveled`, `rocksdb`.
    fn name(&self) -> String;
    /// Stores a value.
    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()>;
    /// Reads a value.
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>>;
    /// Reads a value where the engine holds it, without copying it into a
    /// `Vec` (`--pin_slice`), and returns its length. The default is
    /// [`Engine::get`]: engines with no such read flag `pin_slice`
    /// UNSUPPORTED in their option mapping.
    fn get_pinned(&self, key: &[u8]) -> BenchResult<Option<usize>> {
        Ok(self.get(key)?.map(|v| v.len()))
    }
    /// Reads `keys` as one batch (multireadrandom), copying the values or,
    /// with `pinned`, leaving them in place; returns (keys found, key + value
    /// bytes of those). The default is a loop of [`Engine::get`] /
    /// [`Engine::get_pinned`], for engines without a multi-get
    /// ([`Engine::has_multi_get`] false).
    fn multi_get(&self, keys: &[Vec<u8>], pinned: bool) -> BenchResult<(u64, u64)> {
        let (mut found, mut bytes) = (0, 0);
        for key in keys {
            let len = if pinned { self.get_pinned(key)? } else { self.get(key)?.map(|v| v.len()) };
            if let Some(len) = len {
                found += 1;
                bytes += (key.len() + len) as u64;
            }
        }
        Ok((found, bytes))
    }
    /// True if [`Engine::multi_get`] is the engine's own batched multi-get,
    /// false if it is the default loop of gets.
    fn has_multi_get(&self) -> bool {
        false
    }
    /// Deletes a key.
    fn delete(&self, key: &[u8]) -> BenchResult<()>;
    /// True if the engine runs idle compaction itself (Strata with
    /// `--idle_compaction`); the others get `compact_all` when writes stop.
    fn compacts_when_idle(&self) -> bool {
        false
    }
    /// Compacts the whole key space (the `compact` benchmark); `false` when
    /// the engine has no such call.
    fn compact_all(&self) -> BenchResult<bool> {
        Ok(false)
    }
    /// True if [`Engine::delete_range`] is the engine's own range delete
    /// (LevelDB and fjall have none).
    fn has_delete_range(&self) -> bool {
        false
    }
    /// Deletes every key in `[start, end)` with one range delete.
    fn delete_range(&self, _start: &[u8], _end: &[u8]) -> BenchResult<()> {
        Err(format!("{} has no range delete", self.name()))
    }
    /// Seeks to the first key >= `start` and reads up to `n` entries forward;
    /// returns (entries read, key+value bytes read).
    fn scan(&self, start: &[u8], n: usize) -> BenchResult<(usize, usize)> {
        self.scan_keep_last(start, None, n, None)
    }
    /// [`Engine::scan`] that also stops at the first key >= `end`, with the
    /// bound given to the engine's iterator (RocksDB's `iterate_upper_bound`).
    fn scan_bounded(&self, start: &[u8], end: &[u8], n: usize) -> BenchResult<(usize, usize)> {
        self.scan_keep_last(start, Some(end), n, None)
    }
    /// [`Engine::scan`] bounded by `end` when given; when all `n` entries were
    /// read and `last` is given, the n-th key is left in it, so a long scan can
    /// go on in chunks from just past it.
    fn scan_keep_last(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        n: usize,
        last: Option<&mut Vec<u8>>,
    ) -> BenchResult<(usize, usize)>;
    /// Reads every entry whose key starts with `prefix` (prefixscanrandom);
    /// returns (entries read, key+value bytes read). The default scans the
    /// prefix's range, up to its successor; engines with a prefix extractor
    /// read through it so their prefix filters can skip tables.
    fn scan_prefix(&self, prefix: &[u8]) -> BenchResult<(usize, usize)> {
        match prefix_successor(prefix) {
            Some(end) => self.scan_keep_last(prefix, Some(&end), usize::MAX, None),
            None => self.scan_keep_last(prefix, None, usize::MAX, None),
        }
    }
    /// Flushes memtables to disk and waits.
    fn flush(&self) -> BenchResult<()>;
    /// Counters since open.
    fn stats(&self) -> EngineStats;
    /// Flushes and waits until background compactions are done (db_bench's
    /// `waitforcompaction`); engines without a way to tell return at once.
    fn wait_for_compactions(&self) -> BenchResult<()> {
        self.flush()
    }
    /// Human-readable statistics dump (e.g. strata's `strata.stats` property).
    fn stats_text(&self) -> String {
        String::new()
    }
    /// How this engine's options were set from the [`EngineConfig`] (printed).
    fn option_mapping(&self) -> String;
    /// Directory holding the database.
    fn path(&self) -> &Path;
}

/// Bytes of all files under `dir` (database size on disk).
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// A `--policy` entry's own output pipeline: `leveled+pcp` is the `leveled`
/// row with `--compaction_pipeline=pcp`, so one run compares pipelines side
/// by side (the PCP paper's rows); plain `leveled` takes the flag's. A
/// `:DRIVE` suffix is left out of both parts (`leveled+pcp:hdd`), and the
/// pipeline keeps its `/SUBTASK_BYTES` (see [`split_subtask`]).
pub fn split_pipeline(policy: &str) -> (&str, Option<&str>) {
    let policy = split_drive(policy).0;
    match policy.split_once('+') {
        Some((style, pipeline)) => (style, Some(pipeline)),
        None => (policy, None),
    }
}

/// A row's pipeline with its own sub-task size: `c-ppcp/65536` is `c-ppcp`
/// with `--compaction_subtask_bytes=65536`, so one run sweeps the sub-task
/// size (the PCP paper's Fig. 11(a)); plain `c-ppcp` takes the flag's.
pub fn split_subtask(pipeline: &str) -> (&str, Option<&str>) {
    match pipeline.split_once('/') {
        Some((pipeline, bytes)) => (pipeline, Some(bytes)),
        None => (pipeline, None),
    }
}

/// A row's `/SUBTASK_BYTES`: a whole number of bytes, at least 4 KiB (one
/// block), on a pipeline that cuts merges into sub-tasks (`c-ppcp`, or
/// `auto`, which may choose it).
pub fn parse_subtask(pipeline: &str, bytes: &str) -> Result<usize, String> {
    let n: usize =
        bytes.parse().map_err(|_| format!("/{bytes}: the sub-task size must be a whole number of bytes"))?;
    if n < 4096 {
        return Err(format!("/{bytes}: the sub-task size must be at least 4096 bytes"));
    }
    if !matches!(pipeline, "c-ppcp" | "auto") {
        return Err(format!("{pipeline}/{bytes}: only c-ppcp and auto cut merges into sub-tasks"));
    }
    Ok(n)
}

/// A `--policy` entry's own simulated drive: `leveled:hdd` is the `leveled`
/// row on `--drive_model=hdd`, so one run sets LevelDB on a conventional
/// disk beside rows on a shingled one (the LWC slides' LDB-HDD); plain
/// entries take the flag's. The suffix comes last (`leveled+pcp:hdd`).
pub fn split_drive(policy: &str) -> (&str, Option<&str>) {
    match policy.split_once(':') {
        Some((rest, drive)) => (rest, Some(drive)),
        None => (policy, None),
    }
}

/// The Strata compaction style a `--policy` entry names (its `+pipeline`, if
/// any, aside). `garnering@C` is Garnering with its own `c`, so one run can
/// compare several values of c; plain `garnering` takes `--garnering_c`.
/// `lwc@N` is light-weight compaction rewriting tables past N segments
/// (plain `lwc`: 8); `dlsm@last_level` is dLSM buffering its last level too.
pub fn strata_style(policy: &str, garnering_c: f64) -> Result<strata::CompactionStyle, String> {
    let policy = split_pipeline(policy).0;
    let (name, arg) = match policy.split_once('@') {
        Some((name, arg)) => (name, Some(arg)),
        None => (policy, None),
    };
    if name == SMRDB {
        return match arg {
            None => Ok(strata::CompactionStyle::Tiered),
            Some(_) => Err(format!("{policy}: smrdb takes no @")),
        };
    }
    if name == "dlsm" {
        return match arg {
            None | Some(DLSM_LAST_LEVEL) => Ok(strata::CompactionStyle::Dlsm),
            Some(a) => Err(format!("{policy}: dlsm@{a}: only dlsm@{DLSM_LAST_LEVEL}")),
        };
    }
    match strata::CompactionStyle::from_name(name).map_err(|e| e.to_string())? {
        strata::CompactionStyle::Garnering { .. } => {
            let c = match arg {
                Some(a) => a.parse().map_err(|_| format!("{policy}: c must be a number"))?,
                None => garnering_c,
            };
            if !(c > 0.0 && c <= 1.0) {
                return Err(format!("{policy}: garnering's c must be in (0, 1]"));
            }
            Ok(strata::CompactionStyle::Garnering { c })
        }
        strata::CompactionStyle::Lwc { max_segments } => {
            let max_segments = match arg {
                Some(a) => a.parse().map_err(|_| format!("{policy}: max_segments must be a whole number"))?,
                None => max_segments,
            };
            if max_segments == 0 {
                return Err(format!("{policy}: lwc's max_segments must be at least 1"));
            }
            Ok(strata::CompactionStyle::Lwc { max_segments })
        }
        _ if arg.is_some() => {
            Err(format!("{policy}: only garnering@c, lwc@max_segments and dlsm@{DLSM_LAST_LEVEL} take @"))
        }
        other => Ok(other),
    }
}

/// `--policy=dlsm@last_level`: the dLSM row with a buffer at the last level
/// too (`--buffer_last_level` for that row), beside the paper's form.
pub const DLSM_LAST_LEVEL: &str = "last_level";

/// `--policy=smrdb`: SMRDB (Pitchumani et al., SYSTOR '15), the LWC slides'
/// SMR baseline, as Strata's tiered policy in SMRDB's shape: two levels
/// (L0 and L1), runs of overlapping key ranges in each, tables as large as
/// a band of `--drive_model=smr` (without one, `--max_file_size`).
pub const SMRDB: &str = "smrdb";

/// Target sizes a table of Strata's `lwc` grows to by appends before it is
/// divided (`LwcConfig::new`'s `max_table_factor`).
const LWC_TABLE_FACTOR: u64 = 4;

/// Strata, with any of its compaction policies.
pub struct StrataEngine {
    db: strata::Db,
    /// Prefix scans' read options (`total_order_seek`).
    prefix_ro: strata::ReadOptions,
    /// Point reads' options (`buffer_dispatch`).
    get_ro: strata::ReadOptions,
    policy: String,
    mapping: String,
    /// The simulated drive under the database, if any.
    drive: Option<std::sync::Arc<crate::smr::SmrVfs>>,
    wo: strata::WriteOptions,
    path: PathBuf,
    /// Idle compaction is on.
    idle: bool,
    /// The output pipeline every compaction runs with.
    pipeline: strata::CompactionPipeline,
}

impl StrataEngine {
    /// Opens Strata with the benchmark's settings.
    pub fn open(cfg: &EngineConfig) -> BenchResult<Self> {
        let compression = strata::CompressionType::parse(&cfg.compression).map_err(|e| e.to_string())?;
        let style = strata_style(&cfg.policy, cfg.garnering_c)?;
        let trim_interval = std::time::Duration::try_from_secs_f64(cfg.buffer_trim_interval)
            .map_err(|e| format!("--buffer_trim_interval={}: {e}", cfg.buffer_trim_interval))?;
        let idle = cfg
            .idle_compaction
            .map(std::time::Duration::try_from_secs_f64)
            .transpose()
            .map_err(|e| format!("--idle_compaction: {e}"))?;
        let opts = strata::Options::default()
            .with_block_cache_capacity(cfg.cache_size)
            .with_row_cache(cfg.row_cache_size)
            .with_compaction_warmup(cfg.compaction_warmup)
            .with_bloom_bits_per_key(cfg.bloom_bits)
            .with_bloom_allocation(cfg.bloom_allocation)
            .with_write_buffer_size(cfg.write_buffer_size)
            .with_target_file_size_base(cfg.max_file_size)
            .with_compression(compression)
            .with_use_direct_reads(cfg.use_direct_reads)
            .with_mmap_reads(cfg.mmap_reads)
            .with_max_bytes_for_level_base(cfg.max_bytes_for_level_base)
            .with_max_bytes_for_level_multiplier(cfg.level_multiplier)
            .with_compaction_style(style.clone())
            .with_buffer_trim_interval(trim_interval)
            .with_buffer_read_misses(cfg.buffer_read_misses)
            .with_buffer_last_level(cfg.buffer_last_level)
            .with_buffer_min_part_size(cfg.buffer_min_part_size)
            .with_seek_compaction(cfg.seek_compaction)
            .with_max_mem_compaction_level(cfg.max_mem_compaction_level)
            .with_idle_compaction(idle)
            .with_compaction_pipeline(cfg.compaction_pipeline)
            .with_compaction_subtask_bytes(cfg.compaction_subtask_bytes)
            .with_error_if_exists(false);
        let opts = match cfg.prefix_size {
            0 => opts,
            n => opts.with_prefix_extractor(std::sync::Arc::new(strata::FixedPrefix::new(n))),
        };
        let band = cfg.drive.and_then(|d| d.shingled).map(|s| s.band_size);
        let on_bands = cfg.drive.is_some_and(|d| d.placement == crate::smr::Placement::BandPerFile);
        let smrdb = split_pipeline(&cfg.policy).0 == SMRDB;
        // LWC-store maps a table (DTable) to a band and divides it when it
        // overflows the band: Strata's lwc divides a table past
        // LWC_TABLE_FACTOR targets, so its target is that part of a band.
        let lwc_band = match (&style, band) {
            (strata::CompactionStyle::Lwc { .. }, Some(b)) if on_bands => Some(b / LWC_TABLE_FACTOR),
            _ => None,
        };
        let opts = if smrdb {
            opts.with_num_levels(2).with_target_file_size_base(band.unwrap_or(cfg.max_file_size))
        } else if let Some(target) = lwc_band {
            opts.with_target_file_size_base(target)
        } else {
            opts
        };
        let drive = cfg.drive.map(|d| {
            std::sync::Arc::new(crate::smr::SmrVfs::new(std::sync::Arc::new(strata::RealVfs::new()), d))
        });
        let opts = match &drive {
            Some(d) => opts.with_vfs(d.clone()),
            None => opts,
        };
        let drive_note = match (&cfg.drive, smrdb) {
            (Some(d), _) => format!(
                " drive_model={} (SIMULATED){}{}",
                crate::smr::describe(d),
                if smrdb {
                    " smrdb: compaction_style=tiered num_levels=2 target_file_size_base=band"
                } else {
                    ""
                },
                match lwc_band {
                    Some(t) => format!(" lwc: target_file_size_base={t} (a table grows to one band)"),
                    None => String::new(),
                }
            ),
            (None, true) => " smrdb: compaction_style=tiered num_levels=2".into(),
            (None, false) => String::new(),
        };
        let mapping = format!(
            "strata: block_cache_capacity={} row_cache={} compaction_warmup={} bloom_bits_per_key={} bloom_allocation={} write_buffer_size={} target_file_size_base={} \
             compression={:?} use_direct_reads={} mmap_reads={} max_bytes_for_level_base={} max_bytes_for_level_multiplier={} compaction_style={}{} buffer_trim_interval={:?} buffer_read_misses={} buffer_dispatch={} buffer_last_level={} buffer_min_part_size={:?} \
             seek_compaction={} max_mem_compaction_level={} idle_compaction={:?} compaction_pipeline={} compaction_subtask_bytes={} sync={} \
             pin_slice={} prefix_extractor={} total_order_seek={}{}",
            cfg.cache_size,
            cfg.row_cache_size,
            cfg.compaction_warmup,
            cfg.bloom_bits,
            cfg.bloom_allocation.name(),
            cfg.write_buffer_size,
            cfg.max_file_size,
            compression,
            cfg.use_direct_reads,
            cfg.mmap_reads,
            cfg.max_bytes_for_level_base,
            cfg.level_multiplier,
            cfg.policy.split(['@', '+', ':']).next().unwrap_or(&cfg.policy),
            match style {
                strata::CompactionStyle::Garnering { c } => format!("(c={c})"),
                strata::CompactionStyle::Lwc { max_segments } => format!("(max_segments={max_segments})"),
                _ => String::new(),
            },
            trim_interval,
            cfg.buffer_read_misses,
            cfg.buffer_dispatch,
            cfg.buffer_last_level,
            cfg.buffer_min_part_size,
            cfg.seek_compaction,
            cfg.max_mem_compaction_level,
            idle,
            cfg.compaction_pipeline.name(),
            cfg.compaction_subtask_bytes,
            cfg.sync,
            if cfg.pin_slice { "true (get_pinned, multi_get_pinned)" } else { "false" },
            if cfg.prefix_size > 0 { format!("strata.FixedPrefix.{}", cfg.prefix_size) } else { "none".into() },
            cfg.total_order_seek,
            if cfg.subcompactions > 1 { " subcompactions=UNSUPPORTED (see compaction_pipeline)" } else { "" },
        ) + &drive_note;
        let db = strata::Db::open(&cfg.path, opts).map_err(|e| e.to_string())?;
        Ok(StrataEngine {
            db,
            prefix_ro: strata::ReadOptions::default().with_total_order_seek(cfg.total_order_seek),
            get_ro: strata::ReadOptions::default().with_buffer_dispatch(cfg.buffer_dispatch),
            idle: idle.is_some(),
            pipeline: cfg.compaction_pipeline,
            policy: cfg.policy.clone(),
            mapping,
            drive,
            wo: strata::WriteOptions::default().with_sync(cfg.sync),
            path: cfg.path.clone(),
        })
    }

    /// The underlying database (for strata-only experiments).
    pub fn db(&self) -> &strata::Db {
        &self.db
    }
}

impl Engine for StrataEngine {
    fn name(&self) -> String {
        format!("strata/{}", self.policy)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
        self.db.put_opt(key, value, &self.wo).map_err(|e| e.to_string())
    }
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
        self.db.get_opt(key, &self.get_ro).map_err(|e| e.to_string())
    }
    fn get_pinned(&self, key: &[u8]) -> BenchResult<Option<usize>> {
        Ok(self.db.get_pinned_opt(key, &self.get_ro).map_err(|e| e.to_string())?.map(|v| v.len()))
    }
    fn multi_get(&self, keys: &[Vec<u8>], pinned: bool) -> BenchResult<(u64, u64)> {
        let lens: Vec<Option<usize>> = if pinned {
            let got = self.db.multi_get_pinned_opt(keys, &self.get_ro);
            got.into_iter().map(|r| r.map(|v| v.map(|v| v.len()))).collect::<Result<_, _>>()
        } else {
            let got = self.db.multi_get_opt(keys, &self.get_ro);
            got.into_iter().map(|r| r.map(|v| v.map(|v| v.len()))).collect::<Result<_, _>>()
        }
        .map_err(|e| e.to_string())?;
        Ok(tally_found(keys, &lens))
    }
    fn has_multi_get(&self) -> bool {
        true
    }
    fn delete(&self, key: &[u8]) -> BenchResult<()> {
        self.db.delete_opt(key, &self.wo).map_err(|e| e.to_string())
    }
    fn compacts_when_idle(&self) -> bool {
        self.idle
    }
    fn compact_all(&self) -> BenchResult<bool> {
        self.db.compact_range(None, None).map_err(|e| e.to_string())?;
        Ok(true)
    }
    fn has_delete_range(&self) -> bool {
        true
    }
    fn delete_range(&self, start: &[u8], end: &[u8]) -> BenchResult<()> {
        self.db.delete_range_opt(start, end, &self.wo).map_err(|e| e.to_string())
    }
    fn scan_keep_last(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        n: usize,
        mut last: Option<&mut Vec<u8>>,
    ) -> BenchResult<(usize, usize)> {
        // The borrowing cursor, as the peers scan (RocksDB's raw iterator,
        // LevelDB's C iterator): no key or value is copied per entry, which
        // `Db::range`'s owned items would (two allocations and a copy each).
        let ro = match end {
            Some(end) => strata::ReadOptions::default().with_iterate_upper_bound(end),
            None => strata::ReadOptions::default(),
        };
        let mut it = self.db.raw_iterator_opt(&ro);
        it.seek(start);
        let (mut count, mut bytes) = (0, 0);
        while count < n {
            let Some((k, v)) = it.item() else { break };
            bytes += k.len() + v.len();
            count += 1;
            if count == n {
                if let Some(l) = last.take() {
                    l.clear();
                    l.extend_from_slice(k);
                }
                break;
            }
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((count, bytes))
    }
    fn scan_prefix(&self, prefix: &[u8]) -> BenchResult<(usize, usize)> {
        let it = self.db.prefix_iterator_opt(prefix, &self.prefix_ro);
        tally_scan(it.map(|kv| kv.map_err(|e| e.to_string())), usize::MAX, None)
    }
    fn flush(&self) -> BenchResult<()> {
        self.db.flush().map_err(|e| e.to_string())
    }
    fn stats(&self) -> EngineStats {
        let s = self.db.stats();
        EngineStats {
            cache_hits: Some(s.cache.hits),
            cache_misses: Some(s.cache.misses),
            write_amplification: Some(s.write_amplification),
            stall_micros: Some(s.stall_time.as_micros() as u64),
            levels_in_use: Some(s.levels.iter().filter(|l| l.files > 0).map(|l| l.level).max().unwrap_or(0)),
            buffer_bytes: Some(s.levels.iter().map(|l| l.buffer_bytes_in_no_run).sum()),
            gets: Some(s.gets),
            get_table_probes: Some(s.get_table_probes),
            iter_seeks: Some(s.iter_seeks),
            iter_tables_opened: Some(s.iter_tables_opened),
            compaction_bytes_read: Some(s.compaction_bytes_read),
            compaction_stages: (!matches!(self.pipeline, strata::CompactionPipeline::Auto { .. })).then(
                || {
                    strata::compaction::stage_model::StageProfile::measured(
                        self.pipeline,
                        s.compaction_time,
                        &s.compaction_stages,
                        s.compaction_bytes_read,
                    )
                },
            ),
            drive: self.drive.as_ref().map(|d| crate::results::DriveResult {
                model: crate::smr::describe(&d.config()),
                stats: d.stats(),
                user_bytes: s.user_bytes_written,
                this_benchmark: d.stats(),
            }),
        }
    }
    fn wait_for_compactions(&self) -> BenchResult<()> {
        self.db.flush().and_then(|()| self.db.wait_for_compactions()).map_err(|e| e.to_string())
    }
    fn stats_text(&self) -> String {
        self.db.property("strata.stats").unwrap_or_default()
    }
    fn option_mapping(&self) -> String {
        self.mapping.clone()
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use strata::filename::{parse_file_name, FileKind};
    use strata::vfs::{RandomOpenOptions, RealVfs, Vfs};

    const ABSENT: usize = 200;

    /// The engine config the benchmark builds from `flags`, in `dir`.
    fn config(flags: &str, dir: &Path) -> EngineConfig {
        let args =
            crate::cli::parse_args(["strata-bench"].into_iter().chain(flags.split_whitespace())).unwrap();
        crate::suite::Plan::from_args(&args).engine_config(dir, "leveled")
    }

    /// Loads, flushes and reads back keys through Strata. Returns the block
    /// cache's (capacity, hits, misses) and, per table written, its bloom bits
    /// and how many of `ABSENT` absent keys its filter lets through.
    fn load(cfg: &EngineConfig) -> ((u64, u64, u64), Vec<(f64, usize)>) {
        let e = StrataEngine::open(cfg).unwrap();
        for i in 0..2000u32 {
            e.put(format!("{i:016}").as_bytes(), &[7; 100]).unwrap();
        }
        e.flush().unwrap();
        for i in 0..2000u32 {
            assert!(e.get(format!("{i:016}").as_bytes()).unwrap().is_some());
        }
        let c = e.db().stats().cache;
        drop(e);
        let vfs = RealVfs::new();
        let mut tables = Vec::new();
        for entry in std::fs::read_dir(&cfg.path).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(FileKind::Table(id)) = parse_file_name(&name) else { continue };
            let file = vfs.open_random(&path, RandomOpenOptions::default()).unwrap();
            let t = strata::table::Table::open(file.clone(), id, file.len(), None).unwrap();
            let passed = (0..ABSENT).filter(|i| t.may_contain(format!("absent{i}").as_bytes())).count();
            tables.push((t.properties().bloom_bits_per_key, passed));
        }
        assert!(!tables.is_empty());
        ((c.capacity_bytes, c.hits, c.misses), tables)
    }

    /// The row `policy` of a run with `flags`, in `dir`.
    fn row_config(flags: &str, policy: &str, dir: &Path) -> EngineConfig {
        let args =
            crate::cli::parse_args(["strata-bench"].into_iter().chain(flags.split_whitespace())).unwrap();
        crate::suite::Plan::from_args(&args).engine_config(dir, policy)
    }

    #[test]
    fn each_row_gets_its_own_simulated_drive_and_placement() {
        use crate::smr::Placement;
        let dir = tempfile::tempdir().unwrap();
        let flags = "--drive_model=smr --smr_band_size=2097152 --num=1000 --value_size=100";
        let drive = |policy: &str| row_config(flags, policy, dir.path()).drive.unwrap();
        let leveled = drive("leveled");
        let sh = leveled.shingled.unwrap();
        assert_eq!((sh.band_size, leveled.placement), (2 << 20, Placement::FileSystem));
        assert_eq!(sh.cache_size, 2 << 20, "a fifth of 116 kB is less than a band: one band");
        assert_eq!(leveled.page_cache, 1000 * 116 / 10);
        assert_eq!(drive("lwc").placement, Placement::BandPerFile);
        assert_eq!(drive("smrdb").placement, Placement::BandPerFile);
        assert_eq!(drive("leveled:hdd").shingled, None, "LDB-HDD: a conventional drive");
        assert_eq!(drive("lwc@4+pcp:smr@3").shingled.unwrap().band_size, 3 << 20);
        assert!(row_config("", "leveled", dir.path()).drive.is_none(), "no model unless asked for");
        for bad in ["leveled:ssd", "leveled:smr@0.5", "leveled:smr@x", "smrdb@2"] {
            let args = crate::cli::parse_args(["strata-bench", &format!("--policy={bad}")]);
            assert!(args.is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn dlsm_at_last_level_is_the_dlsm_row_with_a_last_level_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = row_config("--policy=dlsm,dlsm@last_level", "dlsm@last_level", dir.path());
        assert!(cfg.buffer_last_level);
        assert!(!row_config("--policy=dlsm", "dlsm", dir.path()).buffer_last_level);
        let e = StrataEngine::open(&cfg).unwrap();
        assert_eq!(e.name(), "strata/dlsm@last_level");
        assert_eq!(e.db().property("strata.policy").unwrap(), "dlsm");
        assert!(e.option_mapping().contains("buffer_last_level=true"), "{}", e.option_mapping());
        assert!(crate::cli::parse_args(["strata-bench", "--policy=dlsm@first"]).is_err());
    }

    #[test]
    fn smrdb_and_lwc_take_their_shapes_on_an_smr_drive() {
        let dir = tempfile::tempdir().unwrap();
        let flags =
            "--drive_model=smr --smr_band_size=1048576 --smr_cache_size=1048576 --max_file_size=65536 \
                     --write_buffer_size=65536 --max_bytes_for_level_base=262144";
        let run = |policy: &str| {
            let e = StrataEngine::open(&row_config(flags, policy, &dir.path().join(policy))).unwrap();
            for i in 0..6000u32 {
                e.put(format!("{:016}", i.wrapping_mul(2_654_435_761)).as_bytes(), &[7; 100]).unwrap();
            }
            e.wait_for_compactions().unwrap();
            let d = e.stats().drive.unwrap();
            (
                e.db().property("strata.policy").unwrap(),
                e.stats().levels_in_use.unwrap(),
                e.option_mapping(),
                d,
            )
        };
        let (policy, levels, mapping, d) = run("smrdb");
        assert_eq!((policy.as_str(), levels), ("tiered", 1), "two levels: L0 and L1");
        assert!(
            mapping.contains("compaction_style=tiered num_levels=2 target_file_size_base=band"),
            "{mapping}"
        );
        assert_eq!((d.stats.cached, d.stats.band_rewrites), (0, 0), "band placement: {d:?}");
        assert!(d.stats.host_written > d.user_bytes, "flushes and merges reach the drive: {d:?}");
        let (policy, _, mapping, d) = run("lwc");
        assert_eq!(policy, "lwc");
        assert!(mapping.contains("lwc: target_file_size_base=262144"), "a quarter band: {mapping}");
        assert_eq!(d.stats.awa(), 1.0, "appends at each band's write pointer: {d:?}");
        let (_, _, _, d) = run("leveled");
        assert!(d.stats.cached > 0, "LevelDB's files reuse freed space behind write pointers: {d:?}");
        assert!(d.stats.band_rewrites > 0 && d.stats.awa() > 1.0, "the cache was cleaned: {d:?}");
    }

    #[test]
    fn zero_cache_size_and_bloom_bits_mean_no_cache_and_no_filter() {
        let dir = tempfile::tempdir().unwrap();
        let off = config("--cache_size=0 --bloom_bits=0", &dir.path().join("off"));
        assert_eq!((off.cache_size, off.bloom_bits), (0, 0.0));
        let (cache, tables) = load(&off);
        assert_eq!(cache, (0, 0, 0), "no block cache: no capacity, no lookups");
        assert!(tables.iter().all(|&t| t == (0.0, ABSENT)), "no filter: {tables:?}");
        // The defaults, for contrast: a cache in use and filters that reject.
        let (cache, tables) = load(&config("", &dir.path().join("on")));
        assert!(cache.0 > 0 && cache.1 > 0 && cache.2 > 0, "{cache:?}");
        assert!(tables.iter().all(|&(bits, passed)| bits == 10.0 && passed < ABSENT / 10), "{tables:?}");
    }

    #[test]
    fn seek_compaction_and_flush_level_flags_reach_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let run = |flags: &str, name: &str| {
            let e = StrataEngine::open(&config(flags, &dir.path().join(name))).unwrap();
            // A new key range (placed below L0 if allowed), then one over it.
            for parity in [0, 1] {
                for i in (parity..2000u32).step_by(2) {
                    e.put(format!("{i:016}").as_bytes(), &[7; 100]).unwrap();
                }
                e.flush().unwrap();
            }
            // The older table's keys read the newer one in vain.
            for i in (2..2000u32).step_by(2).cycle().take(600) {
                assert!(e.get(format!("{i:016}").as_bytes()).unwrap().is_some());
            }
            e.wait_for_compactions().unwrap();
            let s = e.db().stats();
            (e.option_mapping(), s.flushes_below_l0, s.seek_compactions)
        };
        let (m, deep, seeks) = run("--seek_compaction --max_mem_compaction_level=2", "on");
        assert!(m.contains("seek_compaction=true max_mem_compaction_level=2"), "{m}");
        assert_eq!((deep, seeks), (2, 1), "L2 then L1, then the L1 table ran out of seeks");
        let (m, deep, seeks) = run("", "off");
        assert!(m.contains("seek_compaction=false max_mem_compaction_level=0"), "{m}");
        assert_eq!((deep, seeks), (0, 0));
    }

    #[test]
    fn bloom_allocation_reaches_strata_and_peers_flag_it() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config("--bloom_allocation=monkey", dir.path());
        assert_eq!(cfg.bloom_allocation, strata::BloomAllocation::Monkey);
        let m = StrataEngine::open(&cfg).unwrap().option_mapping();
        assert!(m.contains("bloom_bits_per_key=10 bloom_allocation=monkey "), "{m}");
        assert!(cfg.peer_unsupported_notes().contains("bloom_allocation=UNSUPPORTED (monkey"));
        let uniform = config("", &dir.path().join("u"));
        assert_eq!(uniform.peer_unsupported_notes(), "");
        let buffer = config("--buffer_dispatch --compaction_warmup", &dir.path().join("b"));
        assert_eq!(
            buffer.peer_unsupported_notes(),
            " compaction_warmup=UNSUPPORTED buffer_dispatch=UNSUPPORTED"
        );
        let m = StrataEngine::open(&uniform).unwrap().option_mapping();
        assert!(m.contains("bloom_allocation=uniform "), "{m}");
    }

    #[test]
    fn garnering_flags_reach_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let args = crate::cli::parse_args(
            "strata-bench --garnering_c=0.4 --max_bytes_for_level_multiplier=3".split_whitespace(),
        )
        .unwrap();
        let cfg = crate::suite::Plan::from_args(&args).engine_config(dir.path(), "garnering");
        let e = StrataEngine::open(&cfg).unwrap();
        let m = e.option_mapping();
        assert!(m.contains("compaction_style=garnering(c=0.4)"), "{m}");
        assert!(m.contains("max_bytes_for_level_multiplier=3"), "{m}");
        // Leveling ignores c and says nothing of it.
        let cfg = crate::suite::Plan::from_args(&args).engine_config(&dir.path().join("l"), "leveled");
        let m = StrataEngine::open(&cfg).unwrap().option_mapping();
        assert!(m.contains("compaction_style=leveled ") && !m.contains("c=0.4"), "{m}");
        // garnering@C overrides --garnering_c for its row.
        let cfg = crate::suite::Plan::from_args(&args).engine_config(&dir.path().join("g"), "garnering@0.6");
        let e = StrataEngine::open(&cfg).unwrap();
        assert!(e.option_mapping().contains("compaction_style=garnering(c=0.6)"), "{}", e.option_mapping());
        assert_eq!(e.name(), "strata/garnering@0.6");
    }

    #[test]
    fn strata_reports_the_deepest_level_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = EngineConfig::small(dir.path());
        let e = StrataEngine::open(&cfg).unwrap();
        assert_eq!(e.stats().levels_in_use, Some(0), "empty tree");
        // 64 KiB memtables, 256 KiB L1: 2 MB reaches L2.
        for i in 0..20_000u32 {
            e.put(&i.to_be_bytes(), &[7; 100]).unwrap();
        }
        e.wait_for_compactions().unwrap();
        let deepest = e.stats().levels_in_use.unwrap();
        assert!(deepest >= 2, "{}", e.stats_text());
    }
}
