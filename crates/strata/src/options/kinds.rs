//! The value types of options (compression, WAL recovery, bloom
//! allocation, compaction pipeline) and their limits.

use crate::error::{Error, Result};

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
    /// When the tree's shape has moved a table's share by more than half a bit,
    /// its filter is rebuilt in the background without rewriting its data (a
    /// filter patch appended to the file; `Stats::filter_rebuilds` counts
    /// them), so the bits follow the tree as it grows.
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
    /// (the paper's PCP), with bounded queues between them. A full table is
    /// finished (last blocks, meta blocks, sync) on a thread of its own while
    /// the next one fills; with several data paths, one per other path at
    /// once (S-PPCP).
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
    /// Chooses one of the above for each flush or compaction: `Sequential`
    /// for background work nothing waits on (writes run free and L0 is short
    /// of the point where RocksDB speeds compaction up), since a pipeline's
    /// threads would only take the writers' CPU; for work a caller or the
    /// writers wait on, by the stage times of the recent tasks (no engine does
    /// this; see ARCHITECTURE.md):
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
