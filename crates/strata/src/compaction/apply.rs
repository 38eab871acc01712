//! One function from a picked task, and what running it produced, to the
//! version edit that installs it. The engine's executor and the metadata
//! simulator both call it, so a simulated tree changes exactly as the engine's
//! does — compaction-buffer ops included — and both then go through the same
//! `version::Builder` (mini-lsm's single "apply compaction result").

use std::sync::Arc;

use super::policy::{BufferAction, CompactionTask, FileRef, PickResult, RunTarget};
use crate::error::{Error, Result};
use crate::key::user_key;
use crate::version::{BufferOp, FileMeta, NewFile, Version, VersionEdit};

/// The edit that installs `pick`, run against `version`: `out_run` is the run
/// that receives a move's file or a merge's `outputs` (the task's
/// [`RunTarget`] resolved by [`resolve_run`]); drops and state updates take
/// neither. Fails, before anything is written to the MANIFEST, if the task
/// names a file `version` does not hold or the outcome does not fit the task.
pub(crate) fn task_edit(
    version: &Version,
    pick: &PickResult,
    out_run: Option<u64>,
    outputs: Vec<NewFile>,
) -> Result<VersionEdit> {
    let mut edit = VersionEdit::default();
    if let Some(p) = &pick.compact_pointer {
        edit.compact_pointers.push(p.clone());
    }
    edit.policy_state = pick.policy_state.clone();
    let out = || out_run.ok_or_else(|| Error::invalid("task edit: the output run was not resolved"));
    if !outputs.is_empty()
        && !matches!(
            pick.task,
            CompactionTask::Merge { .. } | CompactionTask::Append { .. } | CompactionTask::Refilter { .. }
        )
    {
        return Err(Error::invalid("task edit: only a merge, an append or a refilter writes tables"));
    }
    match &pick.task {
        CompactionTask::Move { file, to_level, .. } => {
            let meta = find_file(version, file)?;
            let run = out()?;
            edit.deleted_files.push((file.level, file.run, file.file));
            edit.new_files.push((*to_level, run, meta.to_new_file()));
            buffer_ops(version, pick, Some((*to_level, run)), &mut edit)?;
        }
        CompactionTask::UpdateState { .. } => buffer_ops(version, pick, None, &mut edit)?,
        CompactionTask::Drop { files } => {
            for f in files {
                find_file(version, f)?;
                edit.deleted_files.push((f.level, f.run, f.file));
            }
            buffer_ops(version, pick, None, &mut edit)?;
        }
        // `outputs` are the targets that received a segment, grown: each
        // replaces its old state in the run (same file, more segments).
        CompactionTask::Append { inputs, targets, output_level, .. } => {
            for r in inputs {
                find_file(version, r)?;
                edit.deleted_files.push((r.level, r.run, r.file));
            }
            for nf in outputs {
                let t = targets.iter().find(|t| t.file == nf.id).ok_or_else(|| {
                    Error::invalid(format!("task edit: append grew file {}, not a target", nf.id))
                })?;
                find_file(version, t)?;
                edit.deleted_files.push((t.level, t.run, t.file));
                edit.new_files.push((*output_level, t.run, nf));
            }
            buffer_ops(version, pick, None, &mut edit)?;
        }
        // The file's new state (longer by its filter patch) replaces the old
        // in its run, as an appended DTable's does.
        CompactionTask::Refilter { file, .. } => {
            let [nf] = <[NewFile; 1]>::try_from(outputs)
                .map_err(|_| Error::invalid("task edit: a refilter gives exactly one file"))?;
            let old = find_file(version, file)?;
            if nf.id != old.id || nf.size <= old.size || nf.segments != old.segments {
                return Err(Error::invalid(format!(
                    "task edit: refilter of {} gave another file",
                    file.file
                )));
            }
            edit.deleted_files.push((file.level, file.run, file.file));
            edit.new_files.push((file.level, file.run, nf));
            buffer_ops(version, pick, None, &mut edit)?;
        }
        CompactionTask::Merge { inputs, output_level, .. } => {
            let run = out()?;
            for r in inputs {
                find_file(version, r)?;
                edit.deleted_files.push((r.level, r.run, r.file));
            }
            edit.new_files.extend(outputs.into_iter().map(|o| (*output_level, run, o)));
            buffer_ops(version, pick, Some((*output_level, run)), &mut edit)?;
        }
    }
    Ok(edit)
}

/// The id of the run a task writes to: an existing run's, or a fresh number.
pub(crate) fn resolve_run(target: RunTarget, fresh: impl FnOnce() -> u64) -> u64 {
    match target {
        RunTarget::Existing(id) => id,
        RunTarget::New => fresh(),
    }
}

/// The metadata of a file a task names.
pub(crate) fn find_file(version: &Version, r: &FileRef) -> Result<Arc<FileMeta>> {
    version
        .levels
        .get(r.level)
        .and_then(|l| l.runs.iter().find(|run| run.id == r.run))
        .and_then(|run| run.files.iter().find(|f| f.id == r.file))
        .cloned()
        .ok_or_else(|| {
            Error::invalid(format!("task names missing file {} in L{} run {}", r.file, r.level, r.run))
        })
}

/// Turns a pick's buffer actions into edit ops, once the task's output run
/// (`out`: level, run id) is known and its new files are in `edit`. Data that
/// arrives in a run with a buffer without being appended to it leaves removed
/// marks in the buffer's newest table, so reads never take an older buffered
/// version for the newest (the invariant in `version/buffer.rs`).
fn buffer_ops(
    version: &Version,
    pick: &PickResult,
    out: Option<(usize, u64)>,
    edit: &mut VersionEdit,
) -> Result<()> {
    let arrivals: Vec<(Vec<u8>, Vec<u8>)> = edit
        .new_files
        .iter()
        .filter(|(l, r, _)| Some((*l, *r)) == out)
        .map(|(_, _, f)| (user_key(&f.smallest).to_vec(), user_key(&f.largest).to_vec()))
        .collect();
    // The output run's buffer before this edit, and its newest table that
    // this pick does not drop (marks in a dropped table would recreate it).
    let out_buffer = out.and_then(|(l, r)| version.levels.get(l)?.buffer_of(r));
    let dropped = |id: u64| {
        pick.buffer.iter().any(|a| {
            matches!(a, BufferAction::DropTable { level, run, table }
                if Some((*level, *run)) == out && *table == id)
        })
    };
    let head = out_buffer.and_then(|b| b.tables.iter().find(|t| !dropped(t.id)));
    let mut appends = Vec::new();
    let mut skipped = false;
    for a in &pick.buffer {
        match a {
            BufferAction::Append { file, table, .. } => {
                let Some((level, run)) = out.filter(|_| !arrivals.is_empty()) else { continue };
                // Only the newest table may grow: a file appended under a newer
                // table would be shadowed by that table's older copies.
                let known = out_buffer.and_then(|b| b.table(*table));
                if known.is_some() && head.map(|h| h.id) != Some(*table) {
                    skipped = true;
                    continue;
                }
                let meta = find_file(version, file)?;
                // A mark left in the table by an earlier non-appending merge may
                // cover part of this file's range: entries stay disjoint, so the
                // arrival is marked instead.
                let (lo, hi) = (meta.smallest_user_key(), meta.largest_user_key());
                if known.is_some_and(|t| t.entries().iter().any(|e| e.range().0 <= hi && e.range().1 >= lo)) {
                    skipped = true;
                    continue;
                }
                appends.push(BufferOp::Append { level, run, table: *table, file: meta.to_new_file() });
            }
            BufferAction::RemoveFile { level, run, table, file } => {
                let f = (version.levels.get(*level))
                    .and_then(|l| l.buffer_of(*run))
                    .and_then(|b| b.table(*table))
                    .and_then(|t| t.present().find(|f| f.id == *file))
                    .ok_or_else(|| {
                        Error::invalid(format!("buffer table {table} does not hold file {file}"))
                    })?;
                let (lo, hi) = (f.smallest_user_key().to_vec(), f.largest_user_key().to_vec());
                edit.buffer_ops.push(BufferOp::Remove { level: *level, run: *run, table: *table, lo, hi });
            }
            BufferAction::DropTable { level, run, table } => {
                edit.buffer_ops.push(BufferOp::DropTable { level: *level, run: *run, table: *table });
            }
        }
    }
    let appended = !skipped && !appends.is_empty();
    if appended {
        edit.buffer_ops.extend(appends);
    }
    if let (Some((level, run)), Some(head), false) = (out, head, appended) {
        for (lo, hi) in arrivals {
            edit.buffer_ops.push(BufferOp::Remove { level, run, table: head.id, lo, hi });
        }
    }
    Ok(())
}
