//! Runs compaction tasks: reads a merge's inputs (one cursor per run), merges
//! them by the rules in `merge.rs` into the output writer (`sink::OutputWriter`),
//! and returns the edit `apply.rs` makes from the result for the caller to
//! install.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use super::apply::{find_file, resolve_run, task_edit};
use super::env::{group_runs, record, run_iterators};
use super::filter::FilterRun;
use super::merge::{input_range_dels, merge_into, older_runs, output_range_dels};
use super::outcome::TaskOutcome;
use super::policy::{BufferAction, CompactionTask, LsmView, PickResult};
use super::snapshots::SnapshotBounds;
use super::subtasks::{merge_subtasks, SubtaskInputs, Subtasks};
use super::warmup::Warmup;
use crate::error::Result;
use crate::iter::MergingIterator;
use crate::options::kinds::CompactionPipeline;
use crate::range_del::RangeDelSkip;
use crate::sink::{rebuild_filter, Env, OutputWriter, TableSink, WriteTarget};
use crate::table::BlockReadOptions;
use crate::version::Version;

/// Runs a task picked from `version` and returns its outcome, which the
/// caller installs ([`TaskOutcome::install`]).
pub(crate) fn execute(
    env: &Env<'_>,
    version: &Version,
    view: &LsmView,
    pick: &PickResult,
    snapshots: SnapshotBounds,
) -> Result<TaskOutcome> {
    let start = Instant::now();
    let smallest_snapshot = snapshots.oldest;
    let fresh = || env.versions.new_file_number();
    let outcome = match &pick.task {
        CompactionTask::Move { file, to_level, to_run } => {
            let meta = find_file(version, file)?;
            let out = resolve_run(*to_run, fresh);
            let edit = task_edit(version, pick, Some(out), Vec::new())?;
            let mut outcome =
                TaskOutcome::new(edit, record("move", "trivial move", *to_level, 1, 0, 0, 0, start), start);
            outcome.moved = (*to_level != file.level).then_some(meta);
            outcome
        }
        CompactionTask::UpdateState { reason } => {
            let edit = task_edit(version, pick, None, Vec::new())?;
            TaskOutcome::new(edit, record("state", reason, 0, 0, 0, 0, 0, start), start)
        }
        CompactionTask::Drop { files } => {
            let edit = task_edit(version, pick, None, Vec::new())?;
            TaskOutcome::new(edit, record("drop", "obsolete files", 0, files.len(), 0, 0, 0, start), start)
        }
        CompactionTask::Append { .. } => {
            return super::append::execute_append(env, version, view, pick, snapshots)
        }
        CompactionTask::Refilter { file, bits_per_key } => {
            let meta = find_file(version, file)?;
            let grown = rebuild_filter(env, &meta, *bits_per_key)?;
            let written = grown.size - meta.size;
            let edit =
                task_edit(version, pick, None, vec![grown]).inspect_err(|_| env.tables.evict(meta.id))?;
            let rec = record("refilter", "monkey", file.level, 1, 1, meta.size, written, start);
            let mut outcome = TaskOutcome::new(edit, rec, start);
            outcome.grown = Some((Arc::clone(env.tables), vec![meta.id]));
            outcome
        }
        CompactionTask::Merge { inputs, output_level, output_run, target_file_size, reason } => {
            let metas = inputs.iter().map(|r| find_file(version, r)).collect::<Result<Vec<_>>>()?;
            let out_run = resolve_run(*output_run, fresh);
            let input_ids: HashSet<u64> = metas.iter().map(|m| m.id).collect();
            let older = older_runs(version, *output_level, out_run, &input_ids);
            let read_opts = BlockReadOptions {
                readahead: env.opts.compaction_readahead_size,
                // The read stage of a pipelined compaction: the next window of
                // each input is read on its own thread while this one is merged.
                prefetch: env.pipeline != CompactionPipeline::Sequential,
                ..BlockReadOptions::verified()
            };
            let runs = group_runs(inputs, &metas);
            let warmup = Warmup::for_merge(env, &metas)?;
            let entries = metas.iter().map(|m| m.num_entries).sum();
            let target = WriteTarget { level: *output_level, run: *output_run, inputs, entries };
            let range_dels = Arc::new(input_range_dels(env.tables, &metas)?);
            let (kept_range_dels, range_dels_dropped) =
                output_range_dels(&range_dels, smallest_snapshot, &older);
            let mut out = OutputWriter::new(env, view, &target, *target_file_size)
                .with_warmup(warmup.clone())
                .with_range_dels(kept_range_dels);
            let is_base = |uk: &[u8]| !older.iter().any(|r| r.find_file(uk).is_some());
            let filter =
                FilterRun::new(env.opts.compaction_filter.as_deref(), *output_level, snapshots.newest);
            let plan = match env.pipeline {
                CompactionPipeline::Parallel { compute_threads } if env.split_merges => {
                    let plan = Subtasks::plan(&runs, env.tables, env.opts.compaction_subtask_bytes)?;
                    (plan.len() > 1).then_some((plan, compute_threads))
                }
                _ => None,
            };
            let read_before = crate::table::reader::read_time();
            let cpu_before = crate::util::cpu_time::thread_cpu_ns();
            match plan {
                Some((plan, threads)) => {
                    let inputs = SubtaskInputs {
                        runs: &runs,
                        tables: env.tables,
                        read: read_opts,
                        smallest_snapshot,
                        filter: filter.as_ref(),
                        merge_operator: env.opts.merge_operator.as_ref(),
                        range_dels: &range_dels,
                    };
                    merge_subtasks(&plan, &inputs, threads, &mut out, &is_base)?;
                }
                None => {
                    let mut input = RangeDelSkip::new(
                        MergingIterator::new(run_iterators(env, runs, read_opts)),
                        Arc::clone(&range_dels),
                        smallest_snapshot,
                    );
                    merge_into(
                        &mut input,
                        &mut out,
                        smallest_snapshot,
                        is_base,
                        filter.as_ref(),
                        env.opts.merge_operator.as_ref(),
                    )?;
                }
            }
            // The task thread's reads (all of them without sub-tasks; with
            // them, the sub-task threads count their own).
            out.progress().add_read_since(read_before);
            let stages = out.progress();
            let outputs = out.finish()?;
            stages.add_cpu_since(cpu_before);
            let written: u64 = outputs.iter().map(|o| o.size).sum();
            let range_dels_written = outputs.iter().map(|o| o.num_range_dels).sum();
            let n_out = outputs.len();
            let filtered = filter.as_ref().map_or((0, 0), FilterRun::counts);
            // Range tombstones too: covered entries were dropped, and a buffer must
            // not keep copies of what a tombstone here deletes.
            let unbuffered =
                (filtered != (0, 0) || !range_dels.is_empty()).then(|| without_buffer_appends(pick));
            let edit = task_edit(version, unbuffered.as_ref().unwrap_or(pick), Some(out_run), outputs)?;
            let read: u64 = metas.iter().map(|m| m.size).sum();
            let mut r = record("merge", reason, *output_level, metas.len(), n_out, read, written, start);
            r.bytes_moved_down =
                inputs.iter().zip(&metas).filter(|(i, _)| i.level < *output_level).map(|(_, m)| m.size).sum();
            r.pipeline = env.pipeline;
            r.warmup_blocks_inserted = warmup.map_or(0, |w| w.inserted());
            r.stages = stages.times();
            (r.filter_removed, r.filter_changed) = filtered;
            (r.range_dels_written, r.range_dels_dropped) = (range_dels_written, range_dels_dropped);
            TaskOutcome::new(edit, r, start)
        }
    };
    Ok(outcome)
}

/// `pick` without its compaction-buffer appends. A buffer holds copies of
/// what arrived in its run; once the filter removed or changed entries on the
/// way, the merge's inputs are no such copies, so the arrivals leave removed
/// marks in the buffer instead (`apply::buffer_ops`) and reads go to the run.
fn without_buffer_appends(pick: &PickResult) -> PickResult {
    let mut p = pick.clone();
    p.buffer.retain(|a| !matches!(a, BufferAction::Append { .. }));
    p
}
