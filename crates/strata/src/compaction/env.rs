//! What every way of running a compaction task shares: its record and the
//! per-run input cursors (the engine parts a task needs, `Env`, are the
//! table writers' and live in `sink`).

use std::sync::Arc;
use std::time::Instant;

use super::policy::FileRef;
use crate::iter::{InternalIterator, RunIterator};
use crate::key::compare_internal;
use crate::options::kinds::CompactionPipeline;
use crate::sink::Env;
use crate::stats::{CompactionRecord, StageTimes};
use crate::table::BlockReadOptions;
use crate::version::FileMeta;

#[allow(clippy::too_many_arguments)]
pub(crate) fn record(
    kind: &'static str,
    reason: &'static str,
    output_level: usize,
    input_files: usize,
    output_files: usize,
    bytes_read: u64,
    bytes_written: u64,
    start: Instant,
) -> CompactionRecord {
    CompactionRecord {
        kind,
        reason,
        output_level,
        input_files,
        output_files,
        bytes_read,
        bytes_written,
        bytes_moved_down: 0,
        warmup_blocks_inserted: 0,
        filter_removed: 0,
        filter_changed: 0,
        duration: start.elapsed(),
        stages: StageTimes::default(),
        pipeline: CompactionPipeline::Sequential,
        range_dels_written: 0,
        range_dels_dropped: 0,
    }
}

/// Smallest readahead window read ahead on a read thread.
const MIN_PREFETCH_WINDOW: usize = 256 << 10;

/// Most bytes one compaction's readahead windows hold together, so a merge of
/// many L0 runs stays inside the memory budget (each run gets a share).
const READAHEAD_BUDGET: usize = 16 << 20;

/// A merge's input files grouped by run, each run's files in key order.
pub(crate) fn group_runs(inputs: &[FileRef], metas: &[Arc<FileMeta>]) -> Vec<Vec<Arc<FileMeta>>> {
    let mut runs = std::collections::BTreeMap::<_, Vec<Arc<FileMeta>>>::new();
    for (r, m) in inputs.iter().zip(metas) {
        runs.entry((r.level, r.run)).or_default().push(Arc::clone(m));
    }
    runs.into_values()
        .map(|mut files| {
            files.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
            files
        })
        .collect()
}

/// One cursor per input run: a run's files are disjoint, so they are read one
/// after another (one open table and one readahead window per run, and a merge
/// heap as wide as the number of runs, not files).
pub(crate) fn run_iterators(
    env: &Env<'_>,
    runs: Vec<Vec<Arc<FileMeta>>>,
    mut opts: BlockReadOptions,
) -> Vec<Box<dyn InternalIterator>> {
    // A prefetching run holds two windows (the one merged, the one being read).
    let windows = runs.len().max(1) * if opts.prefetch { 2 } else { 1 };
    opts.readahead = opts.readahead.min(READAHEAD_BUDGET / windows);
    // Not for windows so small that a thread per read costs more than it hides.
    opts.prefetch &= opts.readahead >= MIN_PREFETCH_WINDOW;
    runs.into_iter()
        .map(|files| {
            Box::new(RunIterator::new(files, Arc::clone(env.tables), opts)) as Box<dyn InternalIterator>
        })
        .collect()
}
