//! The command line, with db_bench's flag names and meanings so that one command
//! line can be replayed against RocksDB's and LevelDB's own `db_bench`.
//!
//! Boolean flags accept db_bench's spellings too: `--sync`, `--sync=1`,
//! `--sync=true`, `--sync=0`, `--sync=false`.

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use std::ffi::OsString;
use std::path::PathBuf;

/// Every benchmark name `--benchmarks` accepts, in the order `--help` lists them.
pub const BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "filluniquerandom",
    "waitforcompaction",
    "compact",
    "overwrite",
    "readrandom",
    "multireadrandom",
    "readmissing",
    "readseq",
    "seekrandom",
    "seekrandomnext10",
    "seekrandomnext100",
    "prefixscanrandom",
    "deleterange",
    "deletepoint",
    "readwhilewriting",
    "seekrandomwhilewriting",
    "ycsba",
    "ycsbb",
    "ycsbc",
    "ycsbd",
    "ycsbe",
    "ycsbf",
];

/// db_bench's `--value_size` default.
pub const DEFAULT_VALUE_SIZE: usize = 100;

/// Engines `--engines` accepts (peers only work when their cargo feature is on).
pub const ENGINES: &[&str] = &["strata", "rocksdb", "leveldb", "fjall"];

/// Compression names `--compression_type` accepts.
pub const COMPRESSIONS: &[&str] = &["none", "lz4", "zstd"];

/// Parses a db_bench-style boolean (`1/0/true/false/yes/no`).
fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("expected a boolean (true/false/1/0), got {s:?}")),
    }
}

/// Parses `uniform` or `monkey`.
fn parse_bloom_allocation(s: &str) -> Result<strata::BloomAllocation, String> {
    strata::BloomAllocation::parse(s).map_err(|e| e.to_string())
}

/// All flags. Defaults follow db_bench unless noted in the flag's help.
#[derive(Parser, Debug, Clone, PartialEq)]
#[command(
    name = "strata-bench",
    version,
    rename_all = "snake_case",
    // A flag given twice takes the last value, as with db_bench's gflags.
    args_override_self = true,
    about = "db_bench- and YCSB-style benchmarks for Strata and its peers.\n\
             With no arguments, runs the default suite on a fresh temporary directory."
)]
pub struct Args {
    /// Comma-separated benchmarks, run in order on the same database: fillseq, fillrandom,
    /// overwrite, readrandom, multireadrandom (batches of --batch_size random keys, one
    /// multi-get each), readmissing (gets of absent keys inside the key range), readseq,
    /// seekrandom, seekrandomnext10, seekrandomnext100, readwhilewriting, seekrandomwhilewriting, ycsba..ycsbf. seekrandomnextN is seekrandom
    /// with --seek_nexts=N (a seek, then N nexts: up to N + 1 entries read). prefixscanrandom reads
    /// every key of the --prefix_size-byte prefix of a random key (needs --prefix_size).
    /// deleterange deletes --delete_fraction of the keys as --delete_ranges contiguous ranges,
    /// evenly spaced over the key space, with one range delete each (engines without range
    /// deletes, LevelDB and fjall, are skipped with a warning); deletepoint deletes exactly the
    /// same keys with one point delete per key. Both report the time the deletes took; measure
    /// space (after waitforcompaction or compact) and readrandom/seekrandom after them. compact
    /// compacts the whole key space (Strata `compact_range`, RocksDB `CompactRange`; engines
    /// without one wait for their compactions instead, with a warning).
    #[arg(long, value_delimiter = ',', default_value = "fillrandom,readrandom,seekrandom")]
    pub benchmarks: Vec<String>,
    /// Number of keys (key space [0, num)); each fill thread writes this many entries.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Reads per reader thread (db_bench semantics); default: --num.
    #[arg(long)]
    pub reads: Option<u64>,
    /// Key size in bytes (db_bench benchmarks; YCSB keys are `user` + a 64-bit hash).
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Bytes of a key that are its prefix (db_bench's `--prefix_size`; 0 = none): Strata and
    /// RocksDB get a fixed-prefix extractor (`FixedPrefix` / `NewFixedPrefixTransform`), whose
    /// filters let prefix scans (prefixscanrandom) skip tables; LevelDB and fjall flag it
    /// UNSUPPORTED and scan the prefix's range. Compare runs with and without it.
    #[arg(long, default_value_t = 0)]
    pub prefix_size: usize,
    /// Prefix scans ask no prefix filter (db_bench's `--total_order_seek`, RocksDB's and
    /// Strata's `ReadOptions` `total_order_seek`): prefixscanrandom with and without the prefix
    /// bloom on the same database. LevelDB and fjall have no prefix filter to skip.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub total_order_seek: bool,
    /// Keys sharing each prefix (db_bench's `--keys_per_prefix`; 0 = the prefix is just the
    /// key's first --prefix_size digits). Above 0, as in db_bench, key index i gets prefix
    /// i mod (num / keys_per_prefix), written as --prefix_size decimal digits before i's own.
    #[arg(long, default_value_t = 0)]
    pub keys_per_prefix: u64,
    /// Value size in bytes [default: 100]. For YCSB workloads the record size (one field of this
    /// many bytes); without it they keep YCSB's default 1000-byte records (10 fields x 100 B).
    #[arg(long)]
    pub value_size: Option<usize>,
    /// Worker threads (readers for *whilewriting, which add one writer thread).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Block cache bytes, the same for every engine (db_bench's 8 MiB); 0 = no block cache.
    #[arg(long, default_value_t = 8 << 20)]
    pub cache_size: usize,
    /// Row cache bytes, 0 = none (db_bench's flag; RocksDB's `row_cache`). Strata and RocksDB
    /// only: LevelDB and fjall have none (flagged UNSUPPORTED in their option mapping).
    #[arg(long, default_value_t = 0)]
    pub row_cache_size: usize,
    /// Strata only: compactions put the new blocks that replace cached blocks of their inputs
    /// into the block cache (the engine's `compaction_warmup`; no db_bench flag). RocksDB's
    /// `prepopulate_block_cache` is flush-only, so peers flag it UNSUPPORTED. Needs --cache_size > 0.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub compaction_warmup: bool,
    /// Strata LSbM only: reads may fetch an uncached block of a compaction-buffer file from the
    /// device (the engine's `buffer_read_misses`; default false: only cached blocks are used).
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub buffer_read_misses: bool,
    /// Strata LSbM/dLSM only: point reads of a run whose compaction buffer is complete go to the
    /// buffer alone (the dLSM paper's dispatch; `ReadOptions::with_buffer_dispatch`). Default
    /// false: LSbM's Algorithm 3, the run's own filter first.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub buffer_dispatch: bool,
    /// Strata dLSM only: keep a compaction buffer at the last level too (the engine's
    /// `buffer_last_level`; default false, as the dLSM paper builds it).
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub buffer_last_level: bool,
    /// Strata LSbM and dLSM only: the smallest part a super-file is cut into, bytes (the
    /// engine's `buffer_min_part_size`): each `--max_file_size` output is written as up to
    /// four parts of at least this size, whole below twice it. Default: the policy's own
    /// (LSbM four parts at every size, dLSM parts of at least 1 MiB).
    #[arg(long)]
    pub buffer_min_part_size: Option<u64>,
    /// Strata only: seek-triggered compaction (the engine's `seek_compaction`, LevelDB's
    /// `allowed_seeks`): a table that point reads keep reading in vain is compacted into the
    /// next level. LevelDB always does it; RocksDB removed it in 3.2 (flagged UNSUPPORTED).
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub seek_compaction: bool,
    /// Strata only: deepest level a flushed memtable's table may go to when nothing above it
    /// holds its keys (the engine's `max_mem_compaction_level`; leveled and garnering use it).
    /// 0 = always L0, as RocksDB today; LevelDB fixes it at 2.
    #[arg(long, default_value_t = 0)]
    pub max_mem_compaction_level: usize,
    /// Idle compaction after this many seconds without a write (the dLSM paper's aggressive
    /// compaction; the engine's `idle_compaction`); negative = off. Peers have none: in
    /// *whilewriting they get a full manual compaction (`CompactRange`) this many seconds
    /// after the writer stops (`--writes_stop_after`), labelled in their option mapping.
    #[arg(long, default_value_t = -1.0, allow_negative_numbers = true)]
    pub idle_compaction: f64,
    /// *whilewriting: the writer stops after this many seconds while the readers go on (the
    /// dLSM paper's dynamic workload, Fig. 13); 0 = it writes until the end.
    #[arg(long, default_value_t = 0.0)]
    pub writes_stop_after: f64,
    /// Strata only: which threads write flush and compaction output (the engine's
    /// `compaction_pipeline`): `scp` (sequential, the default), `pcp` (compress and write on
    /// their own threads), `c-ppcp` (--compaction_threads compress threads) or `auto` (chosen per
    /// task from recent stage times, at most --compaction_threads). RocksDB's nearest is
    /// --subcompactions; peers flag anything but scp UNSUPPORTED.
    #[arg(long, default_value = "scp")]
    pub compaction_pipeline: String,
    /// Compress threads, and threads merging sub-tasks, of `--compaction_pipeline=c-ppcp` (the
    /// most `auto` may use).
    #[arg(long, default_value_t = 2)]
    pub compaction_threads: usize,
    /// Strata only: input bytes per sub-task of a `c-ppcp` merge (the engine's
    /// `compaction_subtask_bytes`).
    #[arg(long, default_value_t = 512 << 10)]
    pub compaction_subtask_bytes: usize,
    /// RocksDB only: `max_subcompactions` (db_bench's `--subcompactions`); Strata and LevelDB
    /// flag values above 1 UNSUPPORTED.
    #[arg(long, default_value_t = 1)]
    pub subcompactions: u32,
    /// Bloom filter bits per key, 0 = no filter. Default 10, unlike db_bench (RocksDB's and
    /// LevelDB's default to no filter): pass --bloom_bits=10 to db_bench when replaying a run.
    #[arg(long, default_value_t = 10.0)]
    pub bloom_bits: f64,
    /// Strata only: `uniform` (every table gets --bloom_bits) or `monkey` (--bloom_bits is the
    /// average over all entries, spread so small runs get more bits and the largest fewer; the
    /// engine's `bloom_allocation`). Peers flag `monkey` UNSUPPORTED.
    #[arg(long, default_value = "uniform", value_parser = parse_bloom_allocation)]
    pub bloom_allocation: strata::BloomAllocation,
    /// Memtable bytes, the same for every engine.
    #[arg(long, default_value_t = 64 << 20)]
    pub write_buffer_size: usize,
    /// Target table file bytes.
    #[arg(long, default_value_t = 64 << 20)]
    pub max_file_size: u64,
    /// Level-1 capacity in bytes (RocksDB's name; LevelDB's is fixed at 10 MiB).
    #[arg(long, default_value_t = crate::strata_defaults::MAX_BYTES_FOR_LEVEL_BASE)]
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels (db_bench's flag; RocksDB
    /// `max_bytes_for_level_multiplier`, fjall's `level_ratio`; LevelDB's is fixed at 10).
    /// Garnering's `T`, the ratio between its last two levels.
    #[arg(long, default_value_t = crate::strata_defaults::LEVEL_MULTIPLIER)]
    pub max_bytes_for_level_multiplier: f64,
    /// Strata `garnering` only: the growth constant `c` in (0, 1] (each level ratio above the last
    /// is `1/c` larger; 1 is leveling). No peer has an equivalent.
    #[arg(long, default_value_t = strata::CompactionStyle::DEFAULT_GARNERING_C)]
    pub garnering_c: f64,
    /// Strata LSbM only: seconds between compaction-buffer trims (the engine's
    /// `buffer_trim_interval`; no db_bench equivalent). Short runs need a short one.
    #[arg(long, default_value_t = 30.0)]
    pub buffer_trim_interval: f64,
    /// none | lz4 | zstd. Default none: engines' compressors differ, so fair
    /// cross-engine runs compare storage engines, not compressors.
    #[arg(long, default_value = "none")]
    pub compression_type: String,
    /// Values are generated to shrink to this fraction of their size when compressed.
    #[arg(long, default_value_t = 0.5)]
    pub compression_ratio: f64,
    /// O_DIRECT for table reads.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub use_direct_reads: bool,
    /// Strata only: read tables through a memory map (`Options::with_mmap_reads`); peers keep
    /// their own default (LevelDB always maps, RocksDB does not).
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub mmap_reads: bool,
    /// Slow-device profile every step runs under: none | cloud (3000 read IOPS, 125 MB/s) | hdd
    /// (150 read IOPS, 150 MB/s). Read limits on the disk holding --db and a memory limit bounding
    /// the page cache, applied with Linux cgroups to the whole process, so every engine sees the
    /// same device (needs root and cgroups; see scripts/slow-device.sh for other commands).
    #[arg(long, default_value = "none")]
    pub device_profile: String,
    /// Strata only, SIMULATED: a drive model under Strata's file system that counts what the
    /// drive would do with the engine's I/O (nothing is slowed down): none | hdd (a conventional
    /// disk: seeks and transfers) | smr (a drive-managed shingled disk: bands written only at
    /// their write pointer, a persistent cache, band read-modify-writes). Results gain the
    /// drive's counters: auxiliary write amplification, band rewrites, busy seconds.
    #[arg(long, default_value = "none")]
    pub drive_model: String,
    /// Bytes per band of `--drive_model=smr` (the LWC slides measure 20-60 MB).
    #[arg(long, default_value_t = 40 << 20)]
    pub smr_band_size: u64,
    /// Bytes of the smr drive's persistent cache; 0 = a fifth of the data written (`--num` x
    /// (key + value)), the ratio of the slides' drive (about 20 GB) to their 100 GB load.
    #[arg(long, default_value_t = 0)]
    pub smr_cache_size: u64,
    /// Bytes of page cache in front of the modelled drive (recently written or read data is read
    /// again without it); 0 = a tenth of the data written: a database ten times memory.
    #[arg(long, default_value_t = 0)]
    pub drive_page_cache: u64,
    /// How files are laid out on the modelled drive: auto (band for lwc and smrdb, whose stores
    /// map a table to bands of its own; fs for the rest) | fs (a file system's first-fit
    /// allocator reusing freed space) | band (each file in bands of its own, reset when freed).
    #[arg(long, default_value = "auto")]
    pub drive_placement: String,
    /// Memory limit in bytes under --device_profile (memory charged after entering it: the block
    /// cache as it fills, new allocations, the page cache); 0 = --cache_size + 128 MiB.
    #[arg(long, default_value_t = 0)]
    pub device_memory: u64,
    /// Database directory (each engine row gets a subdirectory); default: a fresh temporary directory.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Reuse the database in --db instead of starting empty.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub use_existing_db: bool,
    /// Seed of every random generator (fixed by default so runs are reproducible).
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Keys per batch of multireadrandom (db_bench's flag): one operation of the latency
    /// percentiles is one batch, while ops/s, micros/op and found count keys, as db_bench reports it.
    #[arg(long, default_value_t = 100)]
    pub batch_size: usize,
    /// Point reads of readrandom, readmissing, multireadrandom and readwhilewriting leave values
    /// where the engine holds them instead of copying each into a `Vec` (db_bench's flag: RocksDB
    /// `get_pinned` / `batched_multi_get_cf`, Strata `get_pinned` / `multi_get_pinned`, fjall's
    /// `Slice`). Default false, unlike db_bench (true): the harness's reads have always copied.
    /// LevelDB's C API copies every value, so it flags the flag UNSUPPORTED.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub pin_slice: bool,
    /// Next calls after each seek in seekrandom and seekrandomwhilewriting (db_bench's meaning:
    /// a seek then N nexts, up to N + 1 entries read; seekrandomnext10/100 fix N at 10/100).
    #[arg(long, default_value_t = 0)]
    pub seek_nexts: usize,
    /// Fraction of the key space deleterange and deletepoint delete.
    #[arg(long, default_value_t = 0.1)]
    pub delete_fraction: f64,
    /// Contiguous ranges deleterange and deletepoint spread their deletes over.
    #[arg(long, default_value_t = 10)]
    pub delete_ranges: u64,
    /// When > 0, each seek of seekrandom and seekrandomwhilewriting from key index i also stops at
    /// key index i + N, given to the engine as an iterator upper bound (db_bench's
    /// `--max_scan_distance`; RocksDB `iterate_upper_bound`): a bounded range query.
    #[arg(long, default_value_t = 0)]
    pub max_scan_distance: u64,
    /// Writer rate limit in bytes/s for *whilewriting (key + value bytes); 0 = unlimited.
    #[arg(long, default_value_t = 0)]
    pub benchmark_write_rate_limit: u64,
    /// *whilewriting without the writer: the same readers on a tree no write changes, the
    /// read-only reference a hit ratio under writes is compared with (no db_bench flag).
    #[arg(long)]
    pub no_writer: bool,
    /// Reader key distribution for *whilewriting: uniform | zipfian | latest (= latest_zipfian) |
    /// latest_uniform | latest_rangehot | rangehot; latest_zipfian and latest_uniform draw among the
    /// keys written so far in the run (the fills', then every timed step's writer's), newest
    /// first; latest_rangehot reads as rangehot does, and the writer updates the same hot range
    /// (its keys are the recent data; the writer is uniform otherwise).
    #[arg(long, default_value = "uniform")]
    pub read_dist: String,
    /// Zipfian constant (YCSB's 0.99).
    #[arg(long, default_value_t = 0.99)]
    pub zipf_const: f64,
    /// Fraction of the key space that is hot (rangehot).
    #[arg(long, default_value_t = 0.15)]
    pub hot_fraction: f64,
    /// Probability that a read goes to the hot range (rangehot).
    #[arg(long, default_value_t = 0.98)]
    pub hot_prob: f64,
    /// Seconds: how long *whilewriting runs (0 = until each reader did --reads reads); for the
    /// other db_bench benchmarks a time limit, stopping them early if --num/--reads operations
    /// are not done by then (0 = none). YCSB workloads ignore it.
    #[arg(long, default_value_t = 0.0)]
    pub duration: f64,
    /// *whilewriting: run the same workload this many seconds first, unmeasured and outside
    /// --device_profile, so the block cache starts warm (the LSbM paper measures a warm cache).
    #[arg(long, default_value_t = 0.0)]
    pub warmup_seconds: f64,
    /// Sampling interval of the time series, seconds.
    #[arg(long, default_value_t = 1.0)]
    pub stats_interval_seconds: f64,
    /// Comma-separated engines: strata, rocksdb, leveldb, fjall; default: all compiled in.
    #[arg(long, value_delimiter = ',')]
    pub engines: Vec<String>,
    /// Comma-separated Strata compaction policies; each is its own row `strata/<policy>`.
    /// `garnering@C` sets Garnering's c for that row (`--policy=leveled,garnering@0.8,garnering@0.4`),
    /// `lwc@N` light-weight compaction's segment limit (`--policy=leveled,lwc,lwc@16`),
    /// `dlsm@last_level` dLSM with a buffer at its last level too (`--policy=dlsm,dlsm@last_level`);
    /// `+PIPELINE` gives a row its own `--compaction_pipeline` (`--policy=leveled+scp,leveled+pcp`),
    /// `+c-ppcp/BYTES` (or `+auto/BYTES`) also its own `--compaction_subtask_bytes`
    /// (`--policy=leveled+c-ppcp/65536,leveled+c-ppcp/4194304`),
    /// `:DRIVE` its own `--drive_model` (`--drive_model=smr --policy=leveled,lwc,leveled:hdd`),
    /// `:smr@MIB` also its own `--smr_band_size` in MiB (`--policy=leveled:smr@20,leveled:smr@60`).
    /// `smrdb` is SMRDB's shape of `tiered`: two levels, tables as large as an smr band.
    #[arg(long, value_delimiter = ',', default_value = "leveled")]
    pub policy: Vec<String>,
    /// Repetitions, interleaved across engines (A B A B ...); the table shows medians.
    #[arg(long, default_value_t = 1)]
    pub repetitions: usize,
    /// Engine row the ratio column compares against (e.g. `rocksdb`); default: the first row.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Directory for CSV/JSON of every result and sample, and charts.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No progress on stderr: neither the bar (plain lines every 5 s when stderr is not a
    /// terminal) nor the time-series intervals printed as they are measured.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub quiet: bool,
    /// Sync every write.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub sync: bool,
    /// Print each benchmark's latency histogram.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub histogram: bool,
}

impl Args {
    /// Value bytes of the db_bench benchmarks (`--value_size`, db_bench's default 100).
    pub fn value_size(&self) -> usize {
        self.value_size.unwrap_or(DEFAULT_VALUE_SIZE)
    }

    /// How key indices become keys (`--key_size`, `--prefix_size`, `--keys_per_prefix`).
    pub fn key_format(&self) -> crate::gen::KeyFormat {
        let prefixes = self.num.checked_div(self.keys_per_prefix).unwrap_or(0);
        crate::gen::KeyFormat { key_size: self.key_size, prefix_size: self.prefix_size, prefixes }
    }

    /// Reads per reader thread (`--reads`, defaulting to `--num`).
    pub fn reads(&self) -> u64 {
        self.reads.unwrap_or(self.num)
    }

    /// The engines to run: `--engines`, or every engine compiled in.
    pub fn engine_kinds(&self) -> Vec<String> {
        if self.engines.is_empty() {
            compiled_engines().iter().map(|s| s.to_string()).collect()
        } else {
            self.engines.clone()
        }
    }

    /// Checks values clap cannot check alone; the message names the flag.
    pub fn validate(&self) -> Result<(), String> {
        for b in &self.benchmarks {
            if !BENCHMARKS.contains(&b.as_str()) {
                return Err(format!(
                    "--benchmarks: unknown benchmark {b:?} (known: {})",
                    BENCHMARKS.join(", ")
                ));
            }
        }
        check(self.num > 0, "--num must be > 0")?;
        check(self.reads() > 0, "--reads must be > 0")?;
        check((8..=1024).contains(&self.key_size), "--key_size must be in 8..=1024")?;
        // Keys are zero-padded decimal indices; a wider index would make longer keys.
        let digits = self.num.to_string().len();
        check(self.key_size >= digits, &format!("--key_size must hold the {digits} digits of --num"))?;
        check(self.prefix_size <= self.key_size, "--prefix_size must be at most --key_size")?;
        let deletes = self.benchmarks.iter().any(|b| b == "deleterange" || b == "deletepoint");
        check(
            !deletes || ((0.0..=1.0).contains(&self.delete_fraction) && self.delete_ranges > 0),
            "--delete_fraction must be in [0, 1] and --delete_ranges > 0",
        )?;
        check(
            !deletes || self.keys_per_prefix == 0,
            "deleterange and deletepoint need key order = index order (--keys_per_prefix=0)",
        )?;
        check(
            self.prefix_size > 0 || !self.benchmarks.iter().any(|b| b == "prefixscanrandom"),
            "prefixscanrandom needs --prefix_size > 0",
        )?;
        if self.keys_per_prefix > 0 {
            check(self.prefix_size > 0, "--keys_per_prefix needs --prefix_size > 0")?;
            check(self.keys_per_prefix <= self.num, "--keys_per_prefix must be at most --num")?;
            let prefixes = (self.num / self.keys_per_prefix).saturating_sub(1).to_string().len();
            check(
                self.prefix_size >= prefixes,
                &format!("--prefix_size must hold the {prefixes} digits of a prefix"),
            )?;
            check(
                self.key_size >= self.prefix_size + digits,
                &format!("--key_size must hold --prefix_size plus the {digits} digits of --num"),
            )?;
        }
        check(self.value_size != Some(0), "--value_size must be > 0")?;
        check((1..=1024).contains(&self.threads), "--threads must be in 1..=1024")?;
        check((1..=1_000_000).contains(&self.batch_size), "--batch_size must be in 1..=1000000")?;
        check(
            !self.compaction_warmup || self.cache_size > 0,
            "--compaction_warmup needs a block cache (--cache_size > 0)",
        )?;
        check(self.bloom_bits >= 0.0 && self.bloom_bits <= 64.0, "--bloom_bits must be in [0, 64]")?;
        check(self.write_buffer_size >= 4096, "--write_buffer_size must be >= 4096")?;
        check(
            self.max_bytes_for_level_multiplier >= 1.0 && self.max_bytes_for_level_multiplier <= 1000.0,
            "--max_bytes_for_level_multiplier must be in [1, 1000]",
        )?;
        check(self.garnering_c > 0.0 && self.garnering_c <= 1.0, "--garnering_c must be in (0, 1]")?;
        check(self.max_file_size >= 4096, "--max_file_size must be >= 4096")?;
        one_of("--compression_type", &self.compression_type, COMPRESSIONS)?;
        check(
            self.compression_ratio > 0.0 && self.compression_ratio <= 1.0,
            "--compression_ratio must be in (0, 1]",
        )?;
        one_of("--read_dist", &self.read_dist, crate::gen::READ_DISTS)?;
        check(
            self.zipf_const > 0.0 && self.zipf_const < 1.0,
            "--zipf_const must be in (0, 1) (YCSB's zipfian generator)",
        )?;
        check(self.hot_fraction > 0.0 && self.hot_fraction <= 1.0, "--hot_fraction must be in (0, 1]")?;
        check((0.0..=1.0).contains(&self.hot_prob), "--hot_prob must be in [0, 1]")?;
        check(self.duration >= 0.0 && self.duration.is_finite(), "--duration must be >= 0")?;
        check(
            self.warmup_seconds >= 0.0 && self.warmup_seconds.is_finite(),
            "--warmup_seconds must be >= 0",
        )?;
        check(
            self.stats_interval_seconds >= 0.01 && self.stats_interval_seconds.is_finite(),
            "--stats_interval_seconds must be >= 0.01",
        )?;
        check(self.repetitions >= 1, "--repetitions must be >= 1")?;
        let kinds = self.engine_kinds();
        check(!kinds.is_empty(), "--engines: no engine selected")?;
        for e in &kinds {
            one_of("--engines", e, ENGINES)?;
            check(
                compiled_engines().contains(&e.as_str()),
                &format!(
                    "--engines: {e} is not built in; rebuild with `--features {e}` (see docs/BENCHMARKS.md)"
                ),
            )?;
        }
        crate::device::lookup(&self.device_profile).map_err(|e| format!("--device_profile: {e}"))?;
        one_of("--drive_model", &self.drive_model, &["none", "hdd", "smr"])?;
        one_of("--drive_placement", &self.drive_placement, &["auto", "fs", "band"])?;
        check(
            (1 << 20..=4 << 30).contains(&self.smr_band_size)
                && self.smr_band_size.is_multiple_of(crate::smr::model::BLOCK),
            "--smr_band_size must be 1 MiB to 4 GiB and a multiple of 4096",
        )?;
        check(!self.policy.is_empty(), "--policy: no policy given")?;
        for p in &self.policy {
            crate::engine::strata_style(p, self.garnering_c).map_err(|e| format!("--policy: {e}"))?;
            if let Some(drive) = crate::engine::split_drive(p).1 {
                match drive.split_once('@') {
                    Some(("smr", mib)) => {
                        parse_band_mib(mib).map_err(|e| format!("--policy {p}: {e}"))?;
                    }
                    _ => one_of(&format!("--policy {p}: drive"), drive, &["none", "hdd", "smr"])?,
                }
            }
            if let Some(pipeline) = crate::engine::split_pipeline(p).1 {
                let (pipeline, subtask) = crate::engine::split_subtask(pipeline);
                strata::CompactionPipeline::parse(pipeline, self.compaction_threads)
                    .map_err(|e| format!("--policy {p}: {e}"))?;
                if let Some(bytes) = subtask {
                    crate::engine::parse_subtask(pipeline, bytes)
                        .map_err(|e| format!("--policy {p}: {e}"))?;
                }
            }
        }
        if let Some(b) = &self.baseline {
            let rows = engine_rows(&kinds, &self.policy);
            check(
                resolve_baseline(&rows, b).is_some(),
                &format!("--baseline {b:?} is not one of the engine rows ({})", rows.join(", ")),
            )?;
        }
        if self.use_existing_db {
            check(self.db.is_some(), "--use_existing_db needs --db")?;
        }
        check((1..=64).contains(&self.compaction_threads), "--compaction_threads must be in 1..=64")?;
        self.pipeline()?;
        check(self.subcompactions >= 1, "--subcompactions must be >= 1")?;
        Ok(())
    }

    /// The simulated drive a `--policy` row runs on (`--drive_model`), if any.
    pub fn drive(&self, policy: &str) -> Option<crate::smr::DriveConfig> {
        use crate::smr::{DriveConfig, Placement, Shingled};
        let (policy, model) = crate::engine::split_drive(policy);
        let placement = match self.drive_placement.as_str() {
            "band" => Placement::BandPerFile,
            "fs" => Placement::FileSystem,
            _ => match crate::engine::split_pipeline(policy).0.split('@').next() {
                Some("lwc" | "smrdb") => Placement::BandPerFile,
                _ => Placement::FileSystem,
            },
        };
        let (model, band_size) = match model.unwrap_or(&self.drive_model).split_once('@') {
            Some((m, mib)) => (m, parse_band_mib(mib).unwrap_or(self.smr_band_size)),
            None => (model.unwrap_or(&self.drive_model), self.smr_band_size),
        };
        let data = self.num.saturating_mul((self.key_size + self.value_size()) as u64);
        let cache_size = match self.smr_cache_size {
            0 => (data / 5).max(band_size),
            n => n,
        };
        let page_cache = match self.drive_page_cache {
            0 => data / 10,
            n => n,
        };
        match model {
            "hdd" => Some(DriveConfig::desktop(None, placement, page_cache)),
            "smr" => {
                Some(DriveConfig::desktop(Some(Shingled { band_size, cache_size }), placement, page_cache))
            }
            _ => None,
        }
    }

    /// Strata's output pipeline from `--compaction_pipeline` and `--compaction_threads`.
    pub fn pipeline(&self) -> Result<strata::CompactionPipeline, String> {
        strata::CompactionPipeline::parse(&self.compaction_pipeline, self.compaction_threads)
            .map_err(|e| format!("--compaction_pipeline: {e}"))
    }
}

/// `smr@N`'s band size: N MiB (fractions allowed), at least 1 MiB, rounded
/// down to whole 4 KiB blocks.
fn parse_band_mib(mib: &str) -> Result<u64, String> {
    match mib.parse::<f64>() {
        Ok(m) if (1.0..=4096.0).contains(&m) => {
            let bytes = (m * (1u64 << 20) as f64) as u64;
            Ok(bytes - bytes % crate::smr::model::BLOCK)
        }
        _ => Err(format!("smr@{mib}: the band size must be 1 to 4096 MiB")),
    }
}

fn check(ok: bool, msg: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(msg.to_string())
    }
}

fn one_of(flag: &str, value: &str, allowed: &[&str]) -> Result<(), String> {
    check(
        allowed.contains(&value),
        &format!("{flag}: unknown value {value:?} (known: {})", allowed.join(", ")),
    )
}

/// Engines compiled into this binary (peers sit behind cargo features).
pub fn compiled_engines() -> Vec<&'static str> {
    let mut v = vec!["strata"];
    if cfg!(feature = "rocksdb") {
        v.push("rocksdb");
    }
    if cfg!(feature = "leveldb") {
        v.push("leveldb");
    }
    if cfg!(feature = "fjall") {
        v.push("fjall");
    }
    v
}

/// Report rows for the engines: `strata/<policy>` per policy, else the engine kind.
pub fn engine_rows(kinds: &[String], policies: &[String]) -> Vec<String> {
    let mut rows = Vec::new();
    for k in kinds {
        if k == "strata" {
            rows.extend(policies.iter().map(|p| format!("strata/{p}")));
        } else {
            rows.push(k.clone());
        }
    }
    rows
}

/// The row `--baseline` names: an exact row name, or an engine kind (first matching row).
pub fn resolve_baseline(rows: &[String], baseline: &str) -> Option<String> {
    rows.iter()
        .find(|r| *r == baseline)
        .or_else(|| rows.iter().find(|r| r.split('/').next() == Some(baseline)))
        .cloned()
}

/// Parses and validates a command line; errors are clap errors (exit code 2 via
/// [`clap::Error::exit`]; `--help`/`--version` come back as errors that exit 0).
pub fn parse_args<I, T>(args: I) -> Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = Args::try_parse_from(args)?;
    args.validate().map_err(|msg| Args::command().error(ErrorKind::ValueValidation, msg))?;
    Ok(args)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, clap::Error> {
        parse_args(std::iter::once("strata-bench").chain(line.split_whitespace()))
    }

    #[test]
    fn db_bench_spellings_parse() {
        let a = parse(
            "--benchmarks=fillseq,readrandom --num=1000 --key_size=16 --use_existing_db=0 --sync=1 --quiet",
        )
        .unwrap();
        assert_eq!(a.benchmarks, vec!["fillseq", "readrandom"]);
        assert_eq!(a.num, 1000);
        assert_eq!(a.reads(), 1000);
        assert!(a.sync && a.quiet && !a.use_existing_db);
        assert_eq!(a.cache_size, 8 << 20);
        assert_eq!(a.row_cache_size, 0);
        assert_eq!(parse("--row_cache_size=1048576").unwrap().row_cache_size, 1 << 20);
        assert!(!a.compaction_warmup);
        assert!(parse("--compaction_warmup").unwrap().compaction_warmup);
        assert_eq!((a.max_scan_distance, a.no_writer), (0, false));
        assert_eq!(parse("--max_scan_distance=100").unwrap().max_scan_distance, 100);
        assert!(parse("--no_writer").unwrap().no_writer);
        assert_eq!((a.prefix_size, a.keys_per_prefix), (0, 0));
        let p = parse("--prefix_size=8 --keys_per_prefix=10 --num=1000 --key_size=16").unwrap();
        assert_eq!(
            p.key_format().key(1234 % 1000),
            b"00000034".iter().chain(b"00000234").copied().collect::<Vec<_>>()
        );
        for bad in [
            "--benchmarks=prefixscanrandom",
            "--prefix_size=17",
            "--keys_per_prefix=10",
            "--prefix_size=2 --keys_per_prefix=1 --num=1000",
            "--prefix_size=10 --keys_per_prefix=10 --num=1000000",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(!parse("--compaction_warmup=0").unwrap().compaction_warmup);
        assert_eq!((a.seek_compaction, a.max_mem_compaction_level), (false, 0));
        let s = parse("--seek_compaction --max_mem_compaction_level=2").unwrap();
        assert_eq!((s.seek_compaction, s.max_mem_compaction_level), (true, 2));
        assert_eq!((a.max_bytes_for_level_multiplier, a.garnering_c), (10.0, 0.8));
        let g = parse("--policy=garnering --garnering_c=0.4 --max_bytes_for_level_multiplier=3").unwrap();
        assert_eq!((g.max_bytes_for_level_multiplier, g.garnering_c), (3.0, 0.4));
        let g = parse("--policy=garnering@0.8,garnering@0.4").unwrap();
        assert_eq!(g.policy, vec!["garnering@0.8", "garnering@0.4"]);
        let l = parse("--policy=lwc,lwc@16").unwrap();
        assert_eq!(l.policy, vec!["lwc", "lwc@16"]);
        // A pipeline and a drive on one row (the drive comes last), and a row's sub-task size.
        parse("--policy=leveled+pcp:hdd,lwc+c-ppcp/65536:smr@20,leveled+auto/4096").unwrap();
        for bad in [
            "--policy=leveled+pcp/65536",
            "--policy=leveled+c-ppcp/4095",
            "--policy=leveled+c-ppcp/x",
            "--policy=leveled+nope:hdd",
            "--policy=garnering@0",
            "--policy=garnering@x",
            "--policy=leveled@0.5",
            "--policy=lwc@0",
            "--policy=lwc@x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!((a.batch_size, a.pin_slice), (100, false));
        let m = parse("--benchmarks=multireadrandom --batch_size=7 --pin_slice").unwrap();
        assert_eq!((m.benchmarks[0].as_str(), m.batch_size, m.pin_slice), ("multireadrandom", 7, true));
        assert!(!parse("--pin_slice=0").unwrap().pin_slice);
        assert_eq!(a.bloom_allocation, strata::BloomAllocation::Uniform);
        assert_eq!(
            parse("--bloom_allocation=monkey").unwrap().bloom_allocation,
            strata::BloomAllocation::Monkey
        );
    }

    #[test]
    fn bad_values_are_rejected_with_exit_code_2() {
        for bad in [
            "--num=abc",
            "--benchmarks=fillrandom,nosuch",
            "--compression_type=snappy",
            "--read_dist=gauss",
            "--engines=mysql",
            "--policy=nosuch",
            "--threads=0",
            "--row_cache_size=-1",
            "--compaction_warmup --cache_size=0",
            "--compaction_warmup=maybe",
            "--seek_compaction=maybe",
            "--max_mem_compaction_level=-1",
            "--hot_prob=2",
            "--baseline=leveldb --engines=strata",
            "--no_such_flag=1",
            "--garnering_c=0",
            "--garnering_c=1.5",
            "--bloom_allocation=skewed",
            "--max_bytes_for_level_multiplier=0.5",
            "--batch_size=0",
            "--pin_slice=maybe",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn rows_and_baseline() {
        let rows = engine_rows(&["strata".into(), "rocksdb".into()], &["leveled".into(), "x".into()]);
        assert_eq!(rows, vec!["strata/leveled", "strata/x", "rocksdb"]);
        assert_eq!(resolve_baseline(&rows, "strata").as_deref(), Some("strata/leveled"));
        assert_eq!(resolve_baseline(&rows, "rocksdb").as_deref(), Some("rocksdb"));
        assert_eq!(resolve_baseline(&rows, "fjall"), None);
    }
}
