//! Runs a light-weight compaction ([`CompactionTask::Append`], the `lwc`
//! policy): the victims are merged by the usual drop rules (tombstones kept)
//! and the stream is cut by the task's bounds into one new segment per
//! target, appended at the end of the target's file (`sink::Appender`, which
//! also says how an append stays durable). Only the victims are read and only
//! their entries are written; the targets' existing blocks are never touched,
//! so their block-cache entries stay valid.

use std::sync::Arc;
use std::time::Instant;

use super::apply::{find_file, task_edit};
use super::env::{group_runs, record, run_iterators};
use super::filter::FilterRun;
use super::merge::merge_into;
use super::monkey::table_bits;
use super::outcome::TaskOutcome;
use super::policy::{CompactionTask, LsmView, PickResult, RunTarget};
use super::snapshots::SnapshotBounds;
use crate::error::{Error, Result};
use crate::iter::MergingIterator;
use crate::options::kinds::CompactionPipeline;
use crate::sink::{Appender, Env, TableSink, WriteTarget};
use crate::table::BlockReadOptions;
use crate::version::Version;

/// Runs `pick`, an [`CompactionTask::Append`] picked from `version`.
pub(crate) fn execute_append(
    env: &Env<'_>,
    version: &Version,
    view: &LsmView,
    pick: &PickResult,
    snapshots: SnapshotBounds,
) -> Result<TaskOutcome> {
    let start = Instant::now();
    let CompactionTask::Append { inputs, targets, bounds, output_level, reason } = &pick.task else {
        return Err(Error::invalid("not an append task"));
    };
    let victims = inputs.iter().map(|r| find_file(version, r)).collect::<Result<Vec<_>>>()?;
    let dests = targets.iter().map(|r| find_file(version, r)).collect::<Result<Vec<_>>>()?;
    let read_opts = BlockReadOptions {
        readahead: env.opts.compaction_readahead_size,
        prefetch: env.pipeline != CompactionPipeline::Sequential,
        ..BlockReadOptions::verified()
    };
    let runs = group_runs(inputs, &victims);
    let mut input = MergingIterator::new(run_iterators(env, runs, read_opts));
    let entries = victims.iter().map(|m| m.num_entries).sum();
    let run = targets.first().ok_or_else(|| Error::invalid("append without targets"))?.run;
    let target = WriteTarget { level: *output_level, run: RunTarget::Existing(run), inputs, entries };
    let level_bits = table_bits(env.opts, env.policy, view, &target);
    let mut appender = Appender::new(env, &dests, bounds, level_bits);
    let filter = FilterRun::new(env.opts.compaction_filter.as_deref(), *output_level, snapshots.newest);
    // An older segment of the target, or a deeper level, may hold what a
    // tombstone deletes (one the filter wrote too), or what operands need.
    let is_base = |_: &[u8]| false;
    let merge_operator = env.opts.merge_operator.as_ref();
    merge_into(&mut input, &mut appender, snapshots.oldest, is_base, filter.as_ref(), merge_operator)?;
    let grown = appender.finish()?;
    let grown_ids: Vec<u64> = grown.iter().map(|nf| nf.id).collect();
    let old_size = |id: u64| dests.iter().find(|m| m.id == id).map_or(0, |m| m.size);
    let written: u64 = grown.iter().map(|nf| nf.size - old_size(nf.id)).sum();
    let n = grown.len();
    let edit = match task_edit(version, pick, None, grown) {
        Ok(edit) => edit,
        Err(e) => {
            // Handles opened on the new lengths describe segments no Version lists.
            for id in grown_ids {
                env.tables.evict(id);
            }
            return Err(e);
        }
    };
    let read: u64 = victims.iter().map(|m| m.size).sum();
    let mut rec = record("append", reason, *output_level, victims.len(), n, read, written, start);
    rec.pipeline = env.pipeline;
    rec.bytes_moved_down = read;
    (rec.filter_removed, rec.filter_changed) = filter.map_or((0, 0), |f| f.counts());
    let mut outcome = TaskOutcome::new(edit, rec, start);
    outcome.grown = Some((Arc::clone(env.tables), grown_ids));
    Ok(outcome)
}
