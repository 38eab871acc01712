//! The metamorphic model harness: one random operation log, replayed under any
//! number of configurations (policies, option sets, file systems), with every
//! read checked against a `BTreeMap` model. A mismatch names the seed, the
//! configuration and the operation index, so it can be replayed alone.
#![allow(dead_code)]

pub mod cursor;
pub mod custom_policy;
pub mod filters;
pub mod hook_vfs;
pub mod keyspaces;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;

use cursor::{ModelCursor, RawMove};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{
    associative_merge_operator, CompactionPipeline, CompactionStyle, CompressionType, Db, DbIterator,
    FixedPrefix, IngestExternalFileOptions, MemVfs, MergeOperator, OptimisticTransactionDb, Options,
    PinnedValue, ReadOptions, RealVfs, Snapshot, SstFileWriter, Vfs, WriteBatch, WriteOptions,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One step of an operation log.
#[derive(Debug, Clone)]
pub enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// `Db::delete_range` of `[start, end)` (empty when `start >= end`).
    DeleteRange(Vec<u8>, Vec<u8>),
    /// `Db::merge` of an operand, folded by [`model_merge`].
    Merge(Vec<u8>, Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// An optimistic transaction that reads each key for update, then puts
    /// (or deletes) it and commits; alone, it never conflicts.
    Txn(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// An `SstFileWriter` table of these entries (sorted, one per key; None:
    /// a delete) ingested with `ingest_external_file`.
    Ingest(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Get(Vec<u8>),
    /// Read `keys` in one batch (`multi_get`, or `multi_get_pinned` if
    /// `pinned`), through snapshot `idx % live` when `snapshot` is given.
    MultiGet {
        keys: Vec<Vec<u8>>,
        snapshot: Option<usize>,
        pinned: bool,
    },
    /// Read a key with `get_pinned` and keep the value (the last few): kept
    /// values are checked again by later `GetPinned`s and at the end, after
    /// flushes, compactions and reopens have come and gone.
    GetPinned(Vec<u8>),
    /// Scan `[lo, hi)` (None = open), forward or reverse, at most `limit` items.
    Scan {
        lo: Option<Vec<u8>>,
        hi: Option<Vec<u8>>,
        reverse: bool,
        limit: usize,
    },
    /// A raw iterator within iterate bounds `[lo, hi)` (None = open), at
    /// snapshot `idx % live` when given and one is live: a seek, then a few
    /// moves both ways, each compared with the model.
    RawIter {
        lo: Option<Vec<u8>>,
        hi: Option<Vec<u8>>,
        snapshot: Option<usize>,
        moves: Vec<RawMove>,
    },
    /// The keys starting with `prefix`, at snapshot `idx % live` when given
    /// and one is live, forward or reverse, at most `limit` items.
    PrefixScan {
        prefix: Vec<u8>,
        snapshot: Option<usize>,
        reverse: bool,
        limit: usize,
    },
    TakeSnapshot,
    /// Read key through snapshot `idx % live`.
    SnapshotGet(usize, Vec<u8>),
    SnapshotScan(usize),
    ReleaseSnapshot(usize),
    /// Open a long-lived iterator over `[lo, ∞)`.
    OpenIter(Option<Vec<u8>>),
    /// Advance iterator `idx % live` by `n`, from the back if `back`.
    AdvanceIter {
        idx: usize,
        n: usize,
        back: bool,
    },
    Flush,
    CompactRange(Option<Vec<u8>>, Option<Vec<u8>>),
    Reopen,
    /// Runs the compaction-buffer trim now (a no-op without a buffer).
    Trim,
    /// Changes only the model (never generated): lets a test prove the
    /// checker fails when the database and the model disagree.
    ModelOnlyPut(Vec<u8>, Vec<u8>),
}

fn key(rng: &mut StdRng, space: u32) -> Vec<u8> {
    // Skewed so that some keys are overwritten often.
    let k = if rng.gen_bool(0.3) { rng.gen_range(0..space / 10 + 1) } else { rng.gen_range(0..space) };
    format!("key{k:06}").into_bytes()
}

fn value(rng: &mut StdRng, seq: usize) -> Vec<u8> {
    let len = match rng.gen_range(0..100) {
        0..=9 => 0,
        10..=89 => rng.gen_range(1..64),
        90..=97 => rng.gen_range(64..1024),
        _ => rng.gen_range(1024..6000),
    };
    // Random letters: compressible about as much as real text, so tables
    // have realistic sizes under every compression setting.
    let mut v = format!("v{seq}-").into_bytes();
    while v.len() < len {
        v.push(b'a' + rng.gen_range(0..26u8));
    }
    v
}

/// A random operation log of `n` steps over a key space of `space` keys.
pub fn gen_ops(seed: u64, n: usize, space: u32) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ops = Vec::with_capacity(n);
    for i in 0..n {
        let op = match rng.gen_range(0..1000) {
            0..=339 => Op::Put(key(&mut rng, space), value(&mut rng, i)),
            340..=399 => Op::Merge(key(&mut rng, space), format!("+{i}").into_bytes()),
            400..=464 => Op::Delete(key(&mut rng, space)),
            465..=479 => {
                // Short ranges mostly, a few wide or empty ones.
                let start = key(&mut rng, space);
                let n: u32 = std::str::from_utf8(&start[3..]).expect("ascii").parse().expect("number");
                let len = match rng.gen_range(0..10) {
                    0 => 0,
                    1 => space / 4,
                    _ => rng.gen_range(1..space / 50 + 3),
                };
                let mut end = format!("key{:06}", n + len).into_bytes();
                if rng.gen_bool(0.2) {
                    // An end between stored keys.
                    end.truncate(rng.gen_range(4..end.len()));
                }
                Op::DeleteRange(start, end)
            }
            480..=539 => Op::Batch(
                (0..rng.gen_range(1..8))
                    .map(|_| {
                        let k = key(&mut rng, space);
                        let v = rng.gen_bool(0.8).then(|| value(&mut rng, i));
                        (k, v)
                    })
                    .collect(),
            ),
            540..=551 => Op::Txn(
                (0..rng.gen_range(1..5))
                    .map(|_| {
                        let k = key(&mut rng, space);
                        let v = rng.gen_bool(0.8).then(|| value(&mut rng, i));
                        (k, v)
                    })
                    .collect(),
            ),
            552..=559 => {
                let mut entries: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
                for _ in 0..rng.gen_range(1..40) {
                    let k = key(&mut rng, space);
                    let v = rng.gen_bool(0.85).then(|| value(&mut rng, i));
                    entries.insert(k, v);
                }
                Op::Ingest(entries.into_iter().collect())
            }
            560..=659 => Op::Get(key(&mut rng, space)),
            660..=689 => Op::MultiGet {
                keys: (0..rng.gen_range(1..16)).map(|_| key(&mut rng, space)).collect(),
                snapshot: rng.gen_bool(0.3).then(|| rng.gen()),
                pinned: rng.gen_bool(0.5),
            },
            690..=719 => Op::GetPinned(key(&mut rng, space)),
            720..=744 => {
                let lo = rng.gen_bool(0.3).then(|| key(&mut rng, space));
                let hi = rng.gen_bool(0.3).then(|| key(&mut rng, space));
                let snapshot = rng.gen_bool(0.3).then(|| rng.gen());
                let steps = rng.gen_range(2..8);
                // Seek targets between stored keys too: a cut key sorts before its extensions.
                let moves = cursor::gen_moves(&mut rng, steps, |r| {
                    let mut k = key(r, space);
                    if r.gen_bool(0.2) {
                        k.truncate(r.gen_range(3..k.len()));
                    }
                    k
                });
                Op::RawIter { lo, hi, snapshot, moves }
            }
            745..=759 => {
                let mut prefix = key(&mut rng, space);
                prefix.truncate(rng.gen_range(5..=9));
                let snapshot = rng.gen_bool(0.3).then(|| rng.gen());
                Op::PrefixScan { prefix, snapshot, reverse: rng.gen_bool(0.4), limit: rng.gen_range(1..60) }
            }
            760..=819 => {
                let lo = rng.gen_bool(0.7).then(|| key(&mut rng, space));
                let hi = rng.gen_bool(0.5).then(|| key(&mut rng, space));
                Op::Scan { lo, hi, reverse: rng.gen_bool(0.4), limit: rng.gen_range(1..60) }
            }
            820..=839 => Op::TakeSnapshot,
            840..=869 => Op::SnapshotGet(rng.gen(), key(&mut rng, space)),
            870..=879 => Op::SnapshotScan(rng.gen()),
            880..=889 => Op::ReleaseSnapshot(rng.gen()),
            890..=904 => Op::OpenIter(rng.gen_bool(0.5).then(|| key(&mut rng, space))),
            905..=944 => Op::AdvanceIter { idx: rng.gen(), n: rng.gen_range(1..20), back: rng.gen_bool(0.3) },
            945..=959 => Op::Flush,
            960..=969 => Op::Trim,
            970..=989 => {
                let a = rng.gen_bool(0.6).then(|| key(&mut rng, space));
                let b = rng.gen_bool(0.6).then(|| key(&mut rng, space));
                Op::CompactRange(a, b)
            }
            _ => Op::Reopen,
        };
        ops.push(op);
    }
    ops
}

/// Bytes of a merged value the model operator keeps (the newest ones).
const MERGE_TAIL: usize = 48;

/// The model's merge: `existing` with `operand` appended, cut to its last
/// `MERGE_TAIL` bytes. Associative, so it partially merges too.
pub fn model_merge(existing: Option<&[u8]>, operand: &[u8]) -> Vec<u8> {
    let mut v = [existing.unwrap_or_default(), operand].concat();
    v.drain(..v.len().saturating_sub(MERGE_TAIL));
    v
}

/// [`model_merge`] as the operator every configuration opens with.
pub fn model_merge_operator() -> Arc<dyn MergeOperator> {
    associative_merge_operator("model-tail-append", |_key, existing, operand| {
        Some(model_merge(existing, operand))
    })
}

/// Which file system a configuration runs on.
#[derive(Clone, Copy, Debug)]
pub enum Fs {
    Mem,
    Real,
}

/// A named option set to run op logs under.
#[derive(Clone)]
pub struct Config {
    pub name: &'static str,
    pub fs: Fs,
    pub options: fn() -> Options,
}

/// Data paths of the in-memory configurations that spread their tables
/// (each run has its own `MemVfs`, so fixed paths do not collide).
const MEM_DATA_PATHS: [&str; 2] = ["/data-a", "/data-b"];

/// Small sizes so that flushes, compactions and multi-level trees happen
/// within a few thousand operations.
pub fn small_options() -> Options {
    Options::default()
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_level0_file_num_compaction_trigger(2)
        .with_level0_slowdown_writes_trigger(8)
        .with_level0_stop_writes_trigger(12)
        .with_block_size(512)
        .with_block_cache_capacity(64 << 10)
        .with_max_open_files(16)
        // dLSM cuts its 8 KiB files in four parts too, as its default cuts 4 MiB files.
        .with_buffer_min_part_size(Some(2 << 10))
}

/// Every built-in policy.
pub fn builtin_policies() -> Vec<CompactionStyle> {
    CompactionStyle::builtin_names().iter().map(|n| CompactionStyle::from_name(n).expect("builtin")).collect()
}

/// `small_options` under `style` on `vfs`.
pub fn policy_options(style: &CompactionStyle, vfs: Arc<dyn Vfs>) -> Options {
    small_options().with_compaction_style(style.clone()).with_vfs(vfs)
}

/// `small_options` with a deep, narrow tree (8 KiB L1, ratio 3, 5 levels), so
/// rounds turn over and data crosses several levels within a short op log.
fn deep_options(style: CompactionStyle) -> Options {
    small_options()
        .with_compaction_style(style)
        .with_max_bytes_for_level_base(8 << 10)
        .with_max_bytes_for_level_multiplier(3.0)
        .with_num_levels(5)
}

/// `deep_options` under `lwc` with tables of 2 KiB flushed from 4 KiB
/// memtables, so appends are frequent and tables gain segments quickly.
fn lwc_options(max_segments: usize) -> Options {
    deep_options(CompactionStyle::Lwc { max_segments })
        .with_write_buffer_size(4 << 10)
        .with_target_file_size_base(2 << 10)
}

/// The option sets every policy is checked under (later policies add theirs).
pub fn configs() -> Vec<Config> {
    vec![
        Config { name: "leveled-mem", fs: Fs::Mem, options: small_options },
        // Output tables written by the pipelined modes (compute and write
        // stages on their own threads); every mode writes the same entries.
        Config {
            name: "leveled-real-pcp",
            fs: Fs::Real,
            options: || small_options().with_compaction_pipeline(CompactionPipeline::Pipelined),
        },
        Config {
            name: "leveled-zstd-nobloom-nocache-ppcp3",
            fs: Fs::Mem,
            options: || {
                small_options()
                    .with_compaction_pipeline(CompactionPipeline::Parallel { compute_threads: 3 })
                    // Merges cut into sub-tasks of a few blocks each.
                    .with_compaction_subtask_bytes(1 << 10)
                    // Tables alternate between two data paths (S-PPCP).
                    .with_db_paths(MEM_DATA_PATHS)
                    .with_compression(CompressionType::Zstd(3))
                    .with_bloom_bits_per_key(0.0)
                    .with_block_cache_capacity(0)
                    .with_block_restart_interval(1)
            },
        },
        Config {
            name: "leveled-uncompressed-deep",
            fs: Fs::Mem,
            options: || {
                deep_options(CompactionStyle::Leveled)
                    .with_compression(CompressionType::None)
                    .with_bloom_bits_per_key(3.5)
            },
        },
        // Monkey: per-run filter sizes chosen as tables are written, read back
        // from the MANIFEST by the op log's reopens.
        Config {
            name: "leveled-monkey-real-deep",
            fs: Fs::Real,
            options: || {
                deep_options(CompactionStyle::Leveled).with_bloom_allocation(strata::BloomAllocation::Monkey)
            },
        },
        Config {
            name: "blsm-mem",
            fs: Fs::Mem,
            options: || small_options().with_compaction_style(CompactionStyle::Blsm),
        },
        Config { name: "blsm-real-deep", fs: Fs::Real, options: || deep_options(CompactionStyle::Blsm) },
        // An LSbM buffer serves only cached blocks: its configurations get a
        // cache that holds their data, so buffer hits are less rare.
        Config {
            name: "lsbm-mem-deep-ppcp2",
            fs: Fs::Mem,
            options: || {
                deep_options(CompactionStyle::Lsbm)
                    .with_compaction_pipeline(CompactionPipeline::Parallel { compute_threads: 2 })
                    .with_compaction_subtask_bytes(2 << 10)
                    .with_db_paths(["/db", MEM_DATA_PATHS[1]])
                    .with_buffer_trim_interval(std::time::Duration::from_millis(5))
                    .with_block_cache_capacity(1 << 20)
            },
        },
        Config {
            name: "lsbm-real-keep-pcp",
            fs: Fs::Real,
            options: || {
                deep_options(CompactionStyle::Lsbm)
                    .with_compaction_pipeline(CompactionPipeline::Pipelined)
                    .with_buffer_trim_threshold(0.0)
                    .with_block_cache_capacity(1 << 20)
            },
        },
        Config { name: "dlsm-mem-deep", fs: Fs::Mem, options: || deep_options(CompactionStyle::Dlsm) },
        Config { name: "dlsm-real-deep", fs: Fs::Real, options: || deep_options(CompactionStyle::Dlsm) },
        // Idle compaction whenever the policy has nothing to do: the tree is
        // drained through the buffers into one level, then the buffers go.
        Config {
            name: "dlsm-mem-deep-idle",
            fs: Fs::Mem,
            options: || {
                deep_options(CompactionStyle::Dlsm).with_idle_compaction(Some(std::time::Duration::ZERO))
            },
        },
        Config {
            name: "leveled-real-deep-idle",
            fs: Fs::Real,
            options: || {
                deep_options(CompactionStyle::Leveled).with_idle_compaction(Some(std::time::Duration::ZERO))
            },
        },
        // Stepped merge: several overlapping runs per level, merged a level at a time.
        // Prefix filters (keys are `key` + 6 digits: 8 bytes make prefixes of
        // 10 keys, which most small tables lack): prefix scans of 8 or 9 bytes
        // skip tables, the others read them all. Overlapping runs make the
        // skips many.
        Config {
            name: "tiered-mem-prefix8",
            fs: Fs::Mem,
            options: || {
                small_options()
                    .with_compaction_style(CompactionStyle::Tiered)
                    .with_prefix_extractor(Arc::new(FixedPrefix::new(8)))
            },
        },
        Config { name: "tiered-real-deep", fs: Fs::Real, options: || deep_options(CompactionStyle::Tiered) },
        // Garnering on a tree deep enough that the level count grows during the op log (and is
        // read back by the op log's reopens).
        Config {
            name: "garnering-0.8-real-deep",
            fs: Fs::Real,
            options: || deep_options(CompactionStyle::Garnering { c: 0.8 }),
        },
        Config {
            name: "garnering-0.4-mem-deep-auto",
            fs: Fs::Mem,
            options: || {
                deep_options(CompactionStyle::Garnering { c: 0.4 })
                    .with_compaction_pipeline(CompactionPipeline::Auto { max_compute_threads: 2 })
            },
        },
        // Light-weight compaction: victims appended as segments to tables of
        // the next level; a low segment limit makes rewrites frequent. The
        // row cache must not answer for a table a segment was appended to.
        Config {
            // One segment allowed: every append to a bottom table is followed by
            // its rewrite, and a middle table with two goes down as a victim.
            name: "lwc-mem-deep-seg1-rowcache",
            fs: Fs::Mem,
            options: || lwc_options(1).with_row_cache(4 << 10),
        },
        Config {
            // Seek compaction: scans rewrite the DTables they keep seeking
            // into, point reads move tables down as appends.
            name: "lwc-real-deep-concurrent-ppcp2-paranoid-seek",
            fs: Fs::Real,
            options: || {
                lwc_options(4)
                    .with_seek_compaction(true)
                    .with_max_background_compactions(2)
                    .with_compaction_pipeline(CompactionPipeline::Parallel { compute_threads: 2 })
                    .with_compaction_subtask_bytes(2 << 10)
                    .with_paranoid_file_checks(true)
            },
        },
        // DTable segments skipped one by one; filters without whole keys, so
        // point reads ask none.
        Config {
            name: "lwc-mem-deep-seg3-prefix8-nowholekey",
            fs: Fs::Mem,
            options: || {
                lwc_options(3)
                    .with_prefix_extractor(Arc::new(FixedPrefix::new(8)))
                    .with_whole_key_filtering(false)
            },
        },
        // Several merges at once: picks skip the running merges' inputs.
        Config {
            name: "leveled-concurrent-real-deep",
            fs: Fs::Real,
            options: || deep_options(CompactionStyle::Leveled).with_max_background_compactions(3),
        },
        Config {
            name: "garnering-0.8-concurrent-mem-deep-ppcp2",
            fs: Fs::Mem,
            options: || {
                deep_options(CompactionStyle::Garnering { c: 0.8 })
                    .with_max_background_compactions(2)
                    .with_compaction_pipeline(CompactionPipeline::Parallel { compute_threads: 2 })
                    .with_compaction_subtask_bytes(4 << 10)
            },
        },
        Config {
            name: "leveled-manual-only",
            fs: Fs::Mem,
            options: || small_options().with_disable_auto_compactions(true),
        },
        // A row cache of a few rows: evictions, oversized values left out,
        // rows dropped with their files, snapshot gets bypassing it.
        Config {
            name: "leveled-rowcache-tiny",
            fs: Fs::Mem,
            options: || small_options().with_row_cache(4 << 10),
        },
        // Compactions warm the block cache with new blocks; the paranoid
        // read-back of each new table must still read the file.
        Config {
            name: "leveled-warmup-paranoid-ppcp2",
            fs: Fs::Mem,
            options: || {
                small_options()
                    .with_compaction_warmup(true)
                    .with_paranoid_file_checks(true)
                    .with_compaction_pipeline(CompactionPipeline::Parallel { compute_threads: 2 })
            },
        },
        // Reads trigger compactions (every policy's manual pick, here leveling's
        // and LSbM's with its buffer) and flushes of new key ranges skip L0.
        Config {
            name: "leveled-seek-flushdeep",
            fs: Fs::Mem,
            options: || small_options().with_seek_compaction(true).with_max_mem_compaction_level(2),
        },
        Config {
            name: "lsbm-seek-deep",
            fs: Fs::Mem,
            options: || {
                deep_options(CompactionStyle::Lsbm)
                    .with_buffer_trim_interval(std::time::Duration::from_millis(5))
                    .with_block_cache_capacity(1 << 20)
                    .with_seek_compaction(true)
                    .with_max_mem_compaction_level(2)
            },
        },
        // Rows read through the compaction buffer's files too.
        Config {
            name: "lsbm-mem-rowcache",
            fs: Fs::Mem,
            options: || {
                deep_options(CompactionStyle::Lsbm)
                    .with_buffer_trim_interval(std::time::Duration::from_millis(5))
                    .with_row_cache(16 << 10)
            },
        },
    ]
}

struct OpenIter {
    it: DbIterator,
    expected: Vec<(Vec<u8>, Vec<u8>)>,
    front: usize,
    back: usize,
}

struct Runner {
    cfg: Config,
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    db: Option<OptimisticTransactionDb>,
    model: Model,
    snapshots: Vec<(Snapshot, Model)>,
    iters: Vec<OpenIter>,
    /// Values read with `get_pinned` and what they must hold; kept across
    /// reopens (a pinned value outlives its database).
    pinned: Vec<(PinnedValue, Vec<u8>)>,
    /// Seek-triggered compactions and flushes below L0 of handles closed by
    /// `Reopen` (counters restart at open; most deep flushes come early).
    closed_seek_counts: (u64, u64),
    /// Prefix filter checks and skips of handles closed by `Reopen`.
    closed_prefix_counts: (u64, u64),
    /// Idle compactions of handles closed by `Reopen`.
    closed_idle_compactions: u64,
    closed_filter_rebuilds: u64,
}

fn range_of(model: &Model, lo: &Option<Vec<u8>>, hi: &Option<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let lo_b = lo.as_ref().map_or(Bound::Unbounded, |k| Bound::Included(k.clone()));
    let hi_b = hi.as_ref().map_or(Bound::Unbounded, |k| Bound::Excluded(k.clone()));
    if let (Bound::Included(a), Bound::Excluded(b)) = (&lo_b, &hi_b) {
        if a >= b {
            return Vec::new();
        }
    }
    model.range((lo_b, hi_b)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

impl Runner {
    fn new(cfg: Config) -> Self {
        let (vfs, tmp, path): (Arc<dyn Vfs>, _, PathBuf) = match cfg.fs {
            Fs::Mem => (Arc::new(MemVfs::new()), None, PathBuf::from("/db")),
            Fs::Real => {
                let t = tempfile::tempdir().expect("tempdir");
                let p = t.path().join("db");
                (Arc::new(RealVfs::new()), Some(t), p)
            }
        };
        let mut r = Runner {
            cfg,
            vfs,
            path,
            _tmp: tmp,
            db: None,
            model: Model::new(),
            snapshots: vec![],
            iters: vec![],
            pinned: vec![],
            closed_seek_counts: (0, 0),
            closed_prefix_counts: (0, 0),
            closed_idle_compactions: 0,
            closed_filter_rebuilds: 0,
        };
        r.open();
        r
    }

    fn open(&mut self) {
        let opts =
            (self.cfg.options)().with_vfs(self.vfs.clone()).with_merge_operator(model_merge_operator());
        self.db = Some(OptimisticTransactionDb::open(&self.path, opts).expect("open"));
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("db open").db()
    }

    fn scan(&self, it: DbIterator, reverse: bool, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let r: Result<Vec<_>, _> =
            if reverse { it.rev().take(limit).collect() } else { it.take(limit).collect() };
        r.expect("scan")
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        let wo = WriteOptions::default();
        match op {
            Op::Put(k, v) => {
                self.db().put_opt(k, v, &wo).map_err(|e| e.to_string())?;
                self.model.insert(k.clone(), v.clone());
            }
            Op::Delete(k) => {
                self.db().delete(k).map_err(|e| e.to_string())?;
                self.model.remove(k);
            }
            Op::DeleteRange(a, b) => {
                self.db().delete_range(a, b).map_err(|e| e.to_string())?;
                if a < b {
                    let doomed: Vec<Vec<u8>> =
                        self.model.range(a.clone()..b.clone()).map(|(k, _)| k.clone()).collect();
                    for k in doomed {
                        self.model.remove(&k);
                    }
                }
            }
            Op::Merge(k, operand) => {
                self.db().merge(k, operand).map_err(|e| e.to_string())?;
                let merged = model_merge(self.model.get(k).map(Vec::as_slice), operand);
                self.model.insert(k.clone(), merged);
            }
            Op::Batch(ops) => {
                let mut b = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some(v) => {
                            b.put(k, v);
                            self.model.insert(k.clone(), v.clone());
                        }
                        None => {
                            b.delete(k);
                            self.model.remove(k);
                        }
                    }
                }
                self.db().write(b).map_err(|e| e.to_string())?;
            }
            Op::Txn(ops) => {
                let mut t = self.db.as_ref().expect("db open").begin();
                for (k, v) in ops {
                    let seen = t.get_for_update(k).map_err(|e| e.to_string())?;
                    if seen.as_ref() != self.model.get(k) {
                        return Err(format!(
                            "txn get_for_update {:?}: got {:?}",
                            s(k),
                            seen.map(|v| v.len())
                        ));
                    }
                    match v {
                        Some(v) => t.put(k, v),
                        None => t.delete(k),
                    }
                    .map_err(|e| e.to_string())?;
                    match v {
                        Some(v) => self.model.insert(k.clone(), v.clone()),
                        None => self.model.remove(k),
                    };
                }
                t.commit().map_err(|e| format!("txn commit: {e}"))?;
            }
            Op::Ingest(entries) => {
                let file = self.path.with_extension("ingest.sst");
                let opts = (self.cfg.options)().with_vfs(self.vfs.clone());
                let mut w = SstFileWriter::create(&file, &opts).map_err(|e| e.to_string())?;
                for (k, v) in entries {
                    match v {
                        Some(v) => w.put(k, v),
                        None => w.delete(k),
                    }
                    .map_err(|e| e.to_string())?;
                }
                w.finish().map_err(|e| e.to_string())?;
                let io = IngestExternalFileOptions::default().with_move_files(true);
                self.db().ingest_external_file(&[&file], &io).map_err(|e| format!("ingest: {e}"))?;
                for (k, v) in entries {
                    match v {
                        Some(v) => self.model.insert(k.clone(), v.clone()),
                        None => self.model.remove(k),
                    };
                }
            }
            Op::Get(k) => {
                let got = self.db().get(k).map_err(|e| e.to_string())?;
                // Differential: the compaction buffer never changes an answer,
                // read through it (Algorithm 3), without it, or dispatched to a
                // complete buffer alone (the dLSM paper's reads).
                let others = [
                    ("without the buffer", ReadOptions::default().with_use_compaction_buffer(false)),
                    ("dispatched", ReadOptions::default().with_buffer_dispatch(true)),
                ];
                for (how, ro) in &others {
                    let other = self.db().get_opt(k, ro).map_err(|e| e.to_string())?;
                    if other != got {
                        return Err(format!("get {:?}: through the buffer {got:?}, {how} {other:?}", s(k)));
                    }
                }
                if got.as_ref() != self.model.get(k) {
                    return Err(format!(
                        "get {:?}: got {:?}, want {:?}",
                        s(k),
                        got.map(|v| v.len()),
                        self.model.get(k).map(|v| v.len())
                    ));
                }
            }
            Op::MultiGet { keys, snapshot, pinned } => {
                let (got, model) = match snapshot {
                    Some(_) if self.snapshots.is_empty() => return Ok(()),
                    Some(i) => {
                        let (snap, m) = &self.snapshots[i % self.snapshots.len()];
                        let got = if *pinned {
                            pinned_to_vecs(snap.multi_get_pinned(keys))
                        } else {
                            snap.multi_get(keys)
                        };
                        (got, m)
                    }
                    None => {
                        let db = self.db();
                        let got = if *pinned {
                            pinned_to_vecs(db.multi_get_pinned(keys))
                        } else {
                            db.multi_get(keys)
                        };
                        (got, &self.model)
                    }
                };
                if got.len() != keys.len() {
                    return Err(format!("multi_get of {} keys: {} answers", keys.len(), got.len()));
                }
                for (k, got) in keys.iter().zip(got) {
                    let got = got.map_err(|e| e.to_string())?;
                    if got.as_ref() != model.get(k) {
                        return Err(format!(
                            "multi_get (snapshot {snapshot:?}, pinned {pinned}) {:?}: got {:?}, want {:?}",
                            s(k),
                            got.map(|v| v.len()),
                            model.get(k).map(|v| v.len())
                        ));
                    }
                }
            }
            Op::GetPinned(k) => {
                let got = self.db().get_pinned(k).map_err(|e| e.to_string())?;
                if got.as_deref() != self.model.get(k).map(Vec::as_slice) {
                    return Err(format!(
                        "get_pinned {:?}: got {:?}, want {:?}",
                        s(k),
                        got,
                        self.model.get(k)
                    ));
                }
                if let Some(v) = got {
                    let want = v.to_vec();
                    self.pinned.push((v, want));
                    if self.pinned.len() > 4 {
                        self.pinned.remove(0);
                    }
                }
                self.check_pinned()?;
            }
            Op::Scan { lo, hi, reverse, limit } => {
                let it = match (lo, hi) {
                    (Some(a), Some(b)) => self.db().range(a.as_slice()..b.as_slice()),
                    (Some(a), None) => self.db().range(a.as_slice()..),
                    (None, Some(b)) => self.db().range(..b.as_slice()),
                    (None, None) => self.db().iter(),
                };
                let got = self.scan(it, *reverse, *limit);
                let mut want = range_of(&self.model, lo, hi);
                if *reverse {
                    want.reverse();
                }
                want.truncate(*limit);
                if got != want {
                    return Err(format!(
                        "scan {lo:?}..{hi:?} rev={reverse}: got {} items, want {}; first diff {:?}",
                        got.len(),
                        want.len(),
                        first_diff(&got, &want)
                    ));
                }
            }
            Op::RawIter { lo, hi, snapshot, moves } => {
                let mut ro = ReadOptions::default();
                if let Some(l) = lo {
                    ro = ro.with_iterate_lower_bound(l);
                }
                if let Some(h) = hi {
                    ro = ro.with_iterate_upper_bound(h);
                }
                let (mut it, model) = match snapshot.filter(|_| !self.snapshots.is_empty()) {
                    Some(i) => {
                        let (snap, m) = &self.snapshots[i % self.snapshots.len()];
                        let it = if lo.is_none() && hi.is_none() {
                            snap.raw_iterator()
                        } else {
                            self.db().raw_iterator_opt(&ro.with_snapshot(snap))
                        };
                        (it, m)
                    }
                    None => (self.db().raw_iterator_opt(&ro), &self.model),
                };
                let mut cur = ModelCursor::new(model, lo.clone(), hi.clone());
                for (j, mv) in moves.iter().enumerate() {
                    cursor::check_move(&mut it, &mut cur, mv).map_err(|e| {
                        format!(
                            "raw iterator {:?}..{:?}, move {j}: {e}",
                            lo.as_deref().map(s),
                            hi.as_deref().map(s)
                        )
                    })?;
                }
            }
            Op::PrefixScan { prefix, snapshot, reverse, limit } => {
                let (it, model) = match snapshot.filter(|_| !self.snapshots.is_empty()) {
                    Some(i) => {
                        let (snap, m) = &self.snapshots[i % self.snapshots.len()];
                        (snap.prefix_iterator(prefix), m)
                    }
                    None => (self.db().prefix_iterator(prefix), &self.model),
                };
                let got = self.scan(it, *reverse, *limit);
                let matching = model.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(prefix));
                let mut want: Vec<_> = matching.map(|(k, v)| (k.clone(), v.clone())).collect();
                if *reverse {
                    want.reverse();
                }
                want.truncate(*limit);
                if got != want {
                    return Err(format!(
                        "prefix scan {:?} rev={reverse}: got {} items, want {}; first diff {:?}",
                        s(prefix),
                        got.len(),
                        want.len(),
                        first_diff(&got, &want)
                    ));
                }
            }
            Op::TakeSnapshot => {
                self.snapshots.push((self.db().snapshot(), self.model.clone()));
            }
            Op::SnapshotGet(i, k) => {
                if self.snapshots.is_empty() {
                    return Ok(());
                }
                let (snap, m) = &self.snapshots[i % self.snapshots.len()];
                let got = snap.get(k).map_err(|e| e.to_string())?;
                let via_opts = self
                    .db()
                    .get_opt(k, &ReadOptions::default().with_snapshot(snap))
                    .map_err(|e| e.to_string())?;
                if got.as_ref() != m.get(k) || via_opts != got {
                    return Err(format!("snapshot get {:?}: got {:?}, want {:?}", s(k), got, m.get(k)));
                }
            }
            Op::SnapshotScan(i) => {
                if self.snapshots.is_empty() {
                    return Ok(());
                }
                let (snap, m) = &self.snapshots[i % self.snapshots.len()];
                let got: Vec<_> = snap.iter().collect::<Result<_, _>>().map_err(|e| e.to_string())?;
                let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                if got != want {
                    return Err(format!(
                        "snapshot scan: got {} items, want {}; first diff {:?}",
                        got.len(),
                        want.len(),
                        first_diff(&got, &want)
                    ));
                }
            }
            Op::ReleaseSnapshot(i) => {
                if !self.snapshots.is_empty() {
                    let n = self.snapshots.len();
                    self.snapshots.remove(i % n);
                }
            }
            Op::OpenIter(lo) => {
                let it = match lo {
                    Some(a) => self.db().range(a.as_slice()..),
                    None => self.db().iter(),
                };
                let expected = range_of(&self.model, lo, &None);
                let back = expected.len();
                self.iters.push(OpenIter { it, expected, front: 0, back });
                if self.iters.len() > 4 {
                    self.iters.remove(0);
                }
            }
            Op::AdvanceIter { idx, n, back } => {
                if self.iters.is_empty() {
                    return Ok(());
                }
                let len = self.iters.len();
                let oi = &mut self.iters[idx % len];
                for _ in 0..*n {
                    let got = if *back { oi.it.next_back() } else { oi.it.next() };
                    let got = got.transpose().map_err(|e| e.to_string())?;
                    let want = if oi.front < oi.back {
                        if *back {
                            oi.back -= 1;
                            Some(oi.expected[oi.back].clone())
                        } else {
                            oi.front += 1;
                            Some(oi.expected[oi.front - 1].clone())
                        }
                    } else {
                        None
                    };
                    if got != want {
                        return Err(format!(
                            "long-lived iterator (back={back}): got {:?}, want {:?}",
                            got.map(|kv| s(&kv.0)),
                            want.map(|kv| s(&kv.0))
                        ));
                    }
                }
            }
            Op::Flush => self.db().flush().map_err(|e| e.to_string())?,
            Op::Trim => {
                self.db().trim_compaction_buffer().map_err(|e| e.to_string())?;
            }
            Op::CompactRange(a, b) => {
                self.db().compact_range(a.as_deref(), b.as_deref()).map_err(|e| e.to_string())?
            }
            Op::ModelOnlyPut(k, v) => {
                self.model.insert(k.clone(), v.clone());
            }
            Op::Reopen => {
                self.snapshots.clear();
                self.iters.clear();
                let st = self.db().stats();
                self.closed_seek_counts.0 += st.seek_compactions;
                self.closed_seek_counts.1 += st.flushes_below_l0;
                self.closed_prefix_counts.0 += st.prefix_filter_checks;
                self.closed_prefix_counts.1 += st.prefix_filter_skips;
                self.closed_idle_compactions += st.idle_compactions;
                self.closed_filter_rebuilds += st.filter_rebuilds;
                self.db.take().expect("db").close().map_err(|e| e.to_string())?;
                self.open();
            }
        }
        Ok(())
    }

    /// Values kept from `get_pinned` still hold what they held when read.
    fn check_pinned(&self) -> Result<(), String> {
        for (i, (v, want)) in self.pinned.iter().enumerate() {
            if v != want {
                return Err(format!("pinned value #{i} changed: {} bytes, want {}", v.len(), want.len()));
            }
        }
        Ok(())
    }

    /// Full scan both ways plus a get of every model key.
    fn verify_all(&self) -> Result<(), String> {
        self.check_pinned()?;
        let got: Vec<_> = self.db().iter().collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        let want: Vec<_> = self.model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if got != want {
            return Err(format!(
                "final scan: got {} items, want {}; first diff {:?}",
                got.len(),
                want.len(),
                first_diff(&got, &want)
            ));
        }
        let mut rev: Vec<_> = self.db().iter().rev().collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        rev.reverse();
        if rev != want {
            return Err("final reverse scan differs".into());
        }
        for (k, v) in &self.model {
            if self.db().get(k).map_err(|e| e.to_string())?.as_ref() != Some(v) {
                return Err(format!("final get {:?} differs", s(k)));
            }
        }
        // Every key in one batch, backwards.
        let got = self.db().multi_get(self.model.keys().rev());
        for ((k, v), got) in self.model.iter().rev().zip(got) {
            if got.map_err(|e| e.to_string())?.as_ref() != Some(v) {
                return Err(format!("final multi_get {:?} differs", s(k)));
            }
        }
        Ok(())
    }
}

fn pinned_to_vecs(got: Vec<strata::Result<Option<PinnedValue>>>) -> Vec<strata::Result<Option<Vec<u8>>>> {
    got.into_iter().map(|r| r.map(|v| v.map(PinnedValue::into_vec))).collect()
}

fn s(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

fn first_diff(
    a: &[(Vec<u8>, Vec<u8>)],
    b: &[(Vec<u8>, Vec<u8>)],
) -> Option<(usize, Option<String>, Option<String>)> {
    let n = a.len().max(b.len());
    (0..n).find(|&i| a.get(i) != b.get(i)).map(|i| (i, a.get(i).map(|x| s(&x.0)), b.get(i).map(|x| s(&x.0))))
}

/// Runs `ops` under `cfg`, checking every read; returns the database's final
/// stats on success (seek-triggered compactions and flushes below L0 summed
/// over the log's reopens).
pub fn run_log(seed: u64, ops: &[Op], cfg: &Config) -> strata::Stats {
    let mut r = Runner::new(cfg.clone());
    for (i, op) in ops.iter().enumerate() {
        if let Err(e) = r.step(op) {
            panic!("model mismatch: seed {seed}, config {}, op #{i} {:?}: {e}", cfg.name, short(op));
        }
    }
    if let Err(e) = r.verify_all() {
        panic!("model mismatch at the end: seed {seed}, config {}: {e}", cfg.name);
    }
    // File lifetime: once nothing pins old versions, the tables on disk are
    // exactly the tables in the tree (nothing leaked, nothing deleted early).
    r.snapshots.clear();
    r.iters.clear();
    // Let background work finish (seek-triggered compactions run only when
    // the policy has nothing else to do, which a loaded machine may never
    // reach during the log), then check the answers again.
    r.db().wait_for_compactions().expect("wait for compactions");
    if let Err(e) = r.verify_all() {
        panic!("model mismatch after compactions settled: seed {seed}, config {}: {e}", cfg.name);
    }
    let mut stats = r.db().stats();
    stats.seek_compactions += r.closed_seek_counts.0;
    stats.flushes_below_l0 += r.closed_seek_counts.1;
    stats.prefix_filter_checks += r.closed_prefix_counts.0;
    stats.prefix_filter_skips += r.closed_prefix_counts.1;
    stats.idle_compactions += r.closed_idle_compactions;
    stats.filter_rebuilds += r.closed_filter_rebuilds;
    r.db.take().expect("db").close().expect("close");
    // The database directory and the data paths the in-memory configs use.
    let dirs = std::iter::once(r.path.clone()).chain(MEM_DATA_PATHS.iter().map(PathBuf::from));
    let on_disk: std::collections::BTreeSet<u64> = dirs
        .filter(|d| r.vfs.exists(d))
        .flat_map(|d| r.vfs.list_dir(&d).expect("list"))
        .filter_map(|n| n.strip_suffix(".sst").and_then(|id| id.parse().ok()))
        .collect();
    assert_eq!(
        on_disk,
        live_tables(&r.vfs, &r.path),
        "seed {seed}, config {}: tables on disk vs in the tree",
        cfg.name
    );
    stats
}

/// The tables the closed database's MANIFEST names.
fn live_tables(vfs: &Arc<dyn Vfs>, dir: &std::path::Path) -> std::collections::BTreeSet<u64> {
    // Replays the MANIFEST with the engine's own recovery (runs and compaction
    // buffers), capturing the files it lists; the check closure's error stops
    // recovery before it writes anything.
    let mut live = std::collections::BTreeSet::new();
    let r = strata::version::VersionSet::recover_checked(vfs.clone(), dir, 20, |v, _| {
        live = v.all_file_ids().into_iter().collect();
        Err(strata::Error::InvalidArgument("captured".into()))
    });
    assert!(r.is_err());
    live
}

fn short(op: &Op) -> String {
    let t = format!("{op:?}");
    t.chars().take(200).collect()
}
