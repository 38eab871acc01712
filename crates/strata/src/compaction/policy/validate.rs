//! The checks the engine runs on every pick before executing it, so a policy
//! bug surfaces as an error instead of a corrupted tree.

use std::collections::HashSet;

use super::task::{BufferAction, CompactionTask, PickResult, RunTarget};
use super::view::{key_range, FileRef, FileView, LsmView, RunView};
use crate::error::{Error, Result};

/// Checks a pick's buffer actions against the view and its task: appended files
/// are inputs of the task and go to the task's output; removed files and dropped
/// tables exist; and appends keep the buffer from serving stale data (see
/// `check_append_order`).
pub fn validate_buffer_actions(view: &LsmView, pick: &PickResult) -> Result<()> {
    check_append_order(view, pick)?;
    let (sources, out_level, out_run): (Vec<&FileRef>, Option<usize>, Option<RunTarget>) = match &pick.task {
        CompactionTask::Merge { inputs, output_level, output_run, .. } => {
            (inputs.iter().collect(), Some(*output_level), Some(*output_run))
        }
        CompactionTask::Move { file, to_level, to_run } => (vec![file], Some(*to_level), Some(*to_run)),
        _ => (Vec::new(), None, None),
    };
    let table = |level: usize, run: u64, table: u64| {
        view.level(level)
            .and_then(|l| l.buffer_of(run))
            .and_then(|b| b.tables.iter().find(|t| t.id == table))
            .ok_or_else(|| Error::invalid(format!("no buffer table {table} on level {level} run {run}")))
    };
    for a in &pick.buffer {
        match a {
            BufferAction::Append { file, level, run, .. } => {
                if !sources.contains(&file) {
                    return Err(Error::invalid(format!(
                        "buffer append of file {} that is no task input",
                        file.file
                    )));
                }
                if Some(*level) != out_level || Some(*run) != out_run {
                    return Err(Error::invalid(format!(
                        "buffer append of file {} outside the task's output run",
                        file.file
                    )));
                }
            }
            BufferAction::RemoveFile { level, run, table: t, file } => {
                if !table(*level, *run, *t)?.entries.iter().any(|e| e.file == Some(*file)) {
                    return Err(Error::invalid(format!("buffer table {t} does not hold file {file}")));
                }
            }
            BufferAction::DropTable { level, run, table: t } => {
                table(*level, *run, *t)?;
            }
        }
    }
    Ok(())
}

/// A read asks a run's buffer before the run, so what a pick appends must hold
/// the newest version of every key it brings: if it appends anything, it
/// appends every task input from the levels above the output level and
/// nothing from the output level itself, and a table created later in the list
/// (it becomes the newer table) never holds older runs than one created
/// earlier. (An append that left a newer input out would let the buffer
/// answer with an older version, and the engine marks arrivals only when
/// nothing is appended.)
fn check_append_order(view: &LsmView, pick: &PickResult) -> Result<()> {
    let appends: Vec<(&FileRef, u64)> = (pick.buffer.iter())
        .filter_map(|a| match a {
            BufferAction::Append { file, table, .. } => Some((file, *table)),
            _ => None,
        })
        .collect();
    let (inputs, out_level, out_run): (Vec<&FileRef>, usize, RunTarget) = match &pick.task {
        CompactionTask::Merge { inputs, output_level, output_run, .. } => {
            (inputs.iter().collect(), *output_level, *output_run)
        }
        CompactionTask::Move { file, to_level, to_run } => (vec![file], *to_level, *to_run),
        _ => return Ok(()),
    };
    if appends.is_empty() {
        return Ok(());
    }
    if let Some((f, _)) = appends.iter().find(|(f, _)| f.level >= out_level) {
        return Err(Error::invalid(format!(
            "buffer append of file {} from the output level or below: older than what arrives",
            f.file
        )));
    }
    if let Some(f) = inputs.iter().find(|r| r.level < out_level && !appends.iter().any(|(a, _)| a == *r)) {
        return Err(Error::invalid(format!(
            "buffer append leaves out input {} from above: the buffer would serve older data",
            f.file
        )));
    }
    // Newest first: a shallower level, then an earlier run in the level's list.
    let recency = |r: &FileRef| {
        let pos = view.level(r.level).and_then(|l| l.runs.iter().position(|run| run.id == r.run));
        (r.level, pos.unwrap_or(usize::MAX))
    };
    // Tables the output run's buffer has already: appends there do not make a newer table.
    let mut seen: Vec<u64> = match out_run {
        RunTarget::Existing(id) => (view.level(out_level).and_then(|l| l.buffer_of(id)))
            .map(|b| b.tables.iter().map(|t| t.id).collect())
            .unwrap_or_default(),
        RunTarget::New => Vec::new(),
    };
    for pair in appends.windows(2) {
        if let [(a, ta), (b, tb)] = pair {
            let created = !seen.contains(tb);
            seen.push(*ta);
            if ta != tb && created && recency(b) > recency(a) {
                return Err(Error::invalid(format!(
                    "buffer append of file {} into table {tb} after newer file {} into table {ta}: \
                     the later table is read first",
                    b.file, a.file
                )));
            }
        }
    }
    Ok(())
}

/// Checks a task against the view before the engine executes it.
///
/// Rules: every referenced level exists; every input exists in its level/run, is named once and is
/// not being compacted; an `Existing` output run exists; output never goes to a shallower level than
/// an input (newer data must stay above older data); a Move's target run holds no file overlapping
/// the moved file; a Merge's existing output run keeps no non-input file overlapping the merged
/// range. Violations give [`Error::InvalidArgument`].
pub fn validate_task(view: &LsmView, task: &CompactionTask) -> Result<()> {
    match task {
        CompactionTask::Merge { inputs, output_level, output_run, target_file_size, reason } => {
            if inputs.is_empty() {
                return Err(Error::invalid(format!("merge ({reason}) has no inputs")));
            }
            if *target_file_size == 0 {
                return Err(Error::invalid(format!("merge ({reason}) has target_file_size 0")));
            }
            let files = check_inputs(view, inputs)?;
            check_output(view, inputs, *output_level, *output_run)?;
            if let (RunTarget::Existing(run_id), Some((lo, hi))) = (output_run, key_range(files)) {
                let run = existing_run(view, *output_level, *run_id)?;
                for f in run.overlapping(lo, hi) {
                    let r = FileRef { level: *output_level, run: *run_id, file: f.id };
                    if !inputs.contains(&r) {
                        return Err(Error::invalid(format!(
                            "merge ({reason}) output run {run_id} of level {output_level} keeps file {} \
                             overlapping the merged range but not among the inputs",
                            f.id
                        )));
                    }
                }
            }
            Ok(())
        }
        CompactionTask::Move { file, to_level, to_run } => {
            let moved = check_inputs(view, std::slice::from_ref(file))?;
            check_output(view, std::slice::from_ref(file), *to_level, *to_run)?;
            if let RunTarget::Existing(run_id) = to_run {
                if *to_level == file.level && *run_id == file.run {
                    return Err(Error::invalid(format!("move of file {} into its own run", file.file)));
                }
                let run = existing_run(view, *to_level, *run_id)?;
                if let Some(m) = moved.first() {
                    if let Some(o) = run.overlapping(&m.smallest, &m.largest).first() {
                        return Err(Error::invalid(format!(
                            "move of file {} into run {run_id} of level {to_level} overlaps file {}",
                            m.id, o.id
                        )));
                    }
                }
            }
            Ok(())
        }
        CompactionTask::Drop { files } => {
            if files.is_empty() {
                return Err(Error::invalid("drop has no files"));
            }
            check_inputs(view, files).map(|_| ())
        }
        CompactionTask::UpdateState { .. } => Ok(()),
        CompactionTask::Append { inputs, targets, bounds, output_level, reason } => {
            validate_append(view, inputs, targets, bounds, *output_level, reason)
        }
        CompactionTask::Refilter { file, bits_per_key } => validate_refilter(view, file, *bits_per_key),
    }
}

/// The rules of [`CompactionTask::Refilter`]: a free file of one segment
/// that has a filter, not held by a compaction buffer (a buffer lists the
/// file as it was), and a positive, finite number of bits.
fn validate_refilter(view: &LsmView, file: &FileRef, bits: f64) -> Result<()> {
    let bad = |what: String| Err(Error::invalid(format!("refilter of file {}: {what}", file.file)));
    if !(bits > 0.0 && bits.is_finite()) {
        return bad(format!("{bits} bits per key"));
    }
    let f = check_inputs(view, std::slice::from_ref(file))?;
    let Some(f) = f.first() else { return bad("no such file".into()) };
    if f.segments != 1 {
        return bad(format!("{} segments", f.segments));
    }
    if !f.bloom_bits_per_key.is_some_and(|b| b > 0.0) {
        return bad("the table has no filter (or did not record its bits)".into());
    }
    let lvl = view.level(file.level).map(|l| l.buffers.as_slice()).unwrap_or_default();
    if lvl.iter().flat_map(|b| &b.tables).flat_map(|t| &t.entries).any(|e| e.file == Some(file.file)) {
        return bad("held by a compaction buffer".into());
    }
    Ok(())
}

/// The rules of [`CompactionTask::Append`]: free, distinct victims above the
/// targets' level; targets exactly the files of one run overlapping the
/// victims' range, in order, none held by a compaction buffer (a buffer lists
/// a file as it was; appending would change it under the buffer's read rule);
/// each bound inside the gap between the targets it separates, so the run
/// stays sorted and disjoint whatever the stream holds.
fn validate_append(
    view: &LsmView,
    inputs: &[FileRef],
    targets: &[FileRef],
    bounds: &[Vec<u8>],
    level: usize,
    reason: &str,
) -> Result<()> {
    let bad = |what: String| Err(Error::invalid(format!("append ({reason}): {what}")));
    if inputs.is_empty() || targets.is_empty() {
        return bad("no inputs or no targets".into());
    }
    let all: Vec<FileRef> = inputs.iter().chain(targets).cloned().collect();
    let files = check_inputs(view, &all)?;
    let (victims, dest) = files.split_at(inputs.len());
    if let Some(r) = inputs.iter().find(|r| r.level >= level) {
        return bad(format!("victim {} of level {} is not above level {level}", r.file, r.level));
    }
    let run_id = targets[0].run;
    if let Some(t) = targets.iter().find(|t| t.level != level || t.run != run_id) {
        return bad(format!("target {} is not in level {level} run {run_id}", t.file));
    }
    let run = existing_run(view, level, run_id)?;
    let Some((lo, hi)) = key_range(victims.iter().copied()) else { return bad("empty victims".into()) };
    let want: Vec<u64> = run.overlapping(lo, hi).iter().map(|f| f.id).collect();
    if want != dest.iter().map(|f| f.id).collect::<Vec<_>>() {
        return bad(format!("targets are not the files of run {run_id} overlapping the victims, in order"));
    }
    if bounds.len() + 1 != targets.len() {
        return bad(format!("{} bounds for {} targets", bounds.len(), targets.len()));
    }
    for (j, b) in bounds.iter().enumerate() {
        let (left, right) = (dest[j], dest[j + 1]);
        if !(left.largest.as_slice() < b.as_slice() && b.as_slice() <= right.smallest.as_slice()) {
            return bad(format!("bound {j} is not between files {} and {}", left.id, right.id));
        }
    }
    let lvl = view.level(level).map(|l| l.buffers.as_slice()).unwrap_or_default();
    let buffered =
        |id: u64| lvl.iter().flat_map(|b| &b.tables).flat_map(|t| &t.entries).any(|e| e.file == Some(id));
    if let Some(t) = targets.iter().find(|t| buffered(t.file)) {
        return bad(format!("target {} is held by a compaction buffer", t.file));
    }
    Ok(())
}

/// Checks a flush placement before the engine installs it: the level exists,
/// no file of it or of any level above overlaps `[smallest, largest]` (the
/// flushed data is newer than everything there, so nothing may sit above it
/// and its run must stay disjoint), and a level below L0 keeps no compaction
/// buffer (its arrivals would have to mark the buffer).
pub fn validate_flush_level(view: &LsmView, level: usize, smallest: &[u8], largest: &[u8]) -> Result<()> {
    if level == 0 {
        return Ok(());
    }
    let target = view.level(level).ok_or_else(|| {
        Error::invalid(format!("flush to level {level} but the tree has {} levels", view.levels.len()))
    })?;
    if !target.buffers.is_empty() {
        return Err(Error::invalid(format!("flush to level {level}, which has a compaction buffer")));
    }
    for (l, lvl) in view.levels.iter().enumerate().take(level + 1) {
        if let Some(f) = lvl.overlapping(l, smallest, largest).first() {
            return Err(Error::invalid(format!(
                "flush to level {level} overlaps file {} of level {l}",
                f.file
            )));
        }
    }
    Ok(())
}

/// Resolves every input, rejecting missing, duplicate and busy files.
fn check_inputs<'a>(view: &'a LsmView, inputs: &[FileRef]) -> Result<Vec<&'a FileView>> {
    let mut seen = HashSet::with_capacity(inputs.len());
    let mut files = Vec::with_capacity(inputs.len());
    for r in inputs {
        if r.level >= view.levels.len() {
            return Err(Error::invalid(format!(
                "file {} names level {} but the tree has {} levels",
                r.file,
                r.level,
                view.levels.len()
            )));
        }
        if !seen.insert(r) {
            return Err(Error::invalid(format!(
                "file {} of level {} run {} named twice",
                r.file, r.level, r.run
            )));
        }
        let f = view.file(r).ok_or_else(|| {
            Error::invalid(format!("file {} not found in level {} run {}", r.file, r.level, r.run))
        })?;
        if f.being_compacted {
            return Err(Error::invalid(format!("file {} is already being compacted", r.file)));
        }
        files.push(f);
    }
    Ok(files)
}

/// Checks the output level/run exists and is not above any input.
fn check_output(view: &LsmView, inputs: &[FileRef], level: usize, run: RunTarget) -> Result<()> {
    if level >= view.levels.len() {
        return Err(Error::invalid(format!(
            "output level {level} out of range (tree has {} levels)",
            view.levels.len()
        )));
    }
    if let Some(deepest) = inputs.iter().map(|r| r.level).max().filter(|&d| d > level) {
        return Err(Error::invalid(format!("output level {level} is above input level {deepest}")));
    }
    if let RunTarget::Existing(id) = run {
        existing_run(view, level, id)?;
    }
    Ok(())
}

fn existing_run(view: &LsmView, level: usize, id: u64) -> Result<&RunView> {
    view.level(level)
        .and_then(|l| l.run(id))
        .ok_or_else(|| Error::invalid(format!("run {id} does not exist in level {level}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::policy::tests::{fv, k, r, view};
    use crate::compaction::policy::{
        BufferEntryView, BufferTableView, BufferView, CompactionPolicy, ManualRange,
    };

    #[test]
    fn accepts_good_tasks() {
        let v = view();
        let merge = CompactionTask::Merge {
            inputs: vec![r(0, 10, 1), r(1, 11, 2), r(1, 11, 3), r(1, 11, 4)],
            output_level: 1,
            output_run: RunTarget::Existing(11),
            target_file_size: 10,
            reason: "t",
        };
        validate_task(&v, &merge).unwrap();
        let mv = CompactionTask::Move { file: r(1, 11, 3), to_level: 2, to_run: RunTarget::New };
        validate_task(&v, &mv).unwrap();
        validate_task(&v, &CompactionTask::Drop { files: vec![r(2, 12, 5)] }).unwrap();
    }

    fn rejects(v: &LsmView, t: CompactionTask, needle: &str) {
        match validate_task(v, &t) {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains(needle), "{msg:?} lacks {needle:?}"),
            other => panic!("expected InvalidArgument for {t:?}, got {other:?}"),
        }
    }

    #[test]
    fn rejects_bad_tasks() {
        let mut v = view();
        let merge = |inputs: Vec<FileRef>, level, run| CompactionTask::Merge {
            inputs,
            output_level: level,
            output_run: run,
            target_file_size: 10,
            reason: "t",
        };
        rejects(&v, merge(vec![r(1, 11, 99)], 2, RunTarget::New), "not found");
        rejects(&v, merge(vec![r(1, 12, 2)], 2, RunTarget::New), "not found");
        rejects(&v, merge(vec![r(7, 11, 2)], 2, RunTarget::New), "levels");
        rejects(&v, merge(vec![], 2, RunTarget::New), "no inputs");
        rejects(&v, merge(vec![r(1, 11, 2), r(1, 11, 2)], 2, RunTarget::New), "twice");
        rejects(&v, merge(vec![r(1, 11, 2)], 3, RunTarget::New), "out of range");
        rejects(&v, merge(vec![r(2, 12, 5)], 1, RunTarget::New), "above input level");
        rejects(&v, merge(vec![r(1, 11, 2)], 2, RunTarget::Existing(77)), "does not exist");
        // L0 file spans 5..50: L1 files 2, 3, 4 must all be inputs.
        rejects(&v, merge(vec![r(0, 10, 1), r(1, 11, 2)], 1, RunTarget::Existing(11)), "keeps file 3");
        rejects(
            &v,
            CompactionTask::Merge {
                inputs: vec![r(1, 11, 2)],
                output_level: 2,
                output_run: RunTarget::New,
                target_file_size: 0,
                reason: "t",
            },
            "target_file_size",
        );
        let mv = |file, to_level, to_run| CompactionTask::Move { file, to_level, to_run };
        rejects(&v, mv(r(1, 11, 3), 2, RunTarget::Existing(12)), "overlaps file 5");
        rejects(&v, mv(r(0, 10, 1), 1, RunTarget::Existing(11)), "overlaps file 2");
        rejects(&v, mv(r(1, 11, 3), 1, RunTarget::Existing(11)), "own run");
        rejects(&v, mv(r(1, 11, 9), 2, RunTarget::New), "not found");
        rejects(&v, CompactionTask::Drop { files: vec![] }, "no files");
        v.levels[1].runs[0].files[1].being_compacted = true;
        rejects(&v, mv(r(1, 11, 3), 2, RunTarget::New), "being compacted");
        rejects(&v, CompactionTask::Drop { files: vec![r(1, 11, 3)] }, "being compacted");
    }

    #[test]
    fn refilter_rules() {
        let mut v = view();
        let refilter = |file, bits_per_key| CompactionTask::Refilter { file, bits_per_key };
        // File 3 of L1 run 11: no recorded bits yet.
        rejects(&v, refilter(r(1, 11, 3), 5.0), "no filter");
        v.levels[1].runs[0].files[1].bloom_bits_per_key = Some(10.0);
        validate_task(&v, &refilter(r(1, 11, 3), 5.0)).unwrap();
        rejects(&v, refilter(r(1, 11, 3), 0.0), "bits per key");
        rejects(&v, refilter(r(1, 11, 3), f64::NAN), "bits per key");
        rejects(&v, refilter(r(1, 11, 9), 5.0), "not found");
        v.levels[1].runs[0].files[1].segments = 2;
        rejects(&v, refilter(r(1, 11, 3), 5.0), "segments");
        v.levels[1].runs[0].files[1].segments = 1;
        v.levels[1].runs[0].files[1].bloom_bits_per_key = Some(0.0);
        rejects(&v, refilter(r(1, 11, 3), 5.0), "no filter");
        v.levels[1].runs[0].files[1].bloom_bits_per_key = Some(10.0);
        v.levels[1].runs[0].files[1].being_compacted = true;
        rejects(&v, refilter(r(1, 11, 3), 5.0), "being compacted");
    }

    fn append(
        inputs: Vec<FileRef>,
        targets: Vec<FileRef>,
        bounds: Vec<Vec<u8>>,
        level: usize,
    ) -> CompactionTask {
        CompactionTask::Append { inputs, targets, bounds, output_level: level, reason: "t" }
    }

    /// `k(x)` followed by a zero byte: the first key after `k(x)`.
    fn after(x: u64) -> Vec<u8> {
        let mut b = k(x).to_vec();
        b.push(0);
        b
    }

    /// The L0 file [5,50] appended to L1's [0,9] [10,19] [30,39].
    fn l0_append(bounds: Vec<Vec<u8>>) -> CompactionTask {
        append(vec![r(0, 10, 1)], vec![r(1, 11, 2), r(1, 11, 3), r(1, 11, 4)], bounds, 1)
    }

    #[test]
    fn accepts_good_appends() {
        let v = view();
        // Each bound anywhere in its gap: just after the left file, or at the
        // right file's smallest key.
        for b0 in [after(9), k(10).to_vec()] {
            for b1 in [after(19), k(25).to_vec(), k(30).to_vec()] {
                validate_task(&v, &l0_append(vec![b0.clone(), b1])).unwrap();
            }
        }
        // One target, no bounds; a victim from two levels up.
        validate_task(&v, &append(vec![r(1, 11, 3)], vec![r(2, 12, 5)], vec![], 2)).unwrap();
        validate_task(&v, &append(vec![r(1, 11, 2), r(1, 11, 3)], vec![r(2, 12, 5)], vec![], 2)).unwrap();
        validate_task(&v, &append(vec![r(0, 10, 1)], vec![r(2, 12, 5)], vec![], 2)).unwrap();
        assert_eq!(l0_append(vec![]).kind(), "append");
    }

    #[test]
    fn rejects_bad_appends() {
        let mut v = view();
        let good = vec![k(10).to_vec(), k(20).to_vec()];
        rejects(&v, append(vec![], vec![r(1, 11, 2)], vec![], 1), "no inputs or no targets");
        rejects(&v, append(vec![r(0, 10, 1)], vec![], vec![], 1), "no inputs or no targets");
        // Targets not exactly the overlapping files of the run, in key order.
        let targets = "targets are not the files";
        rejects(
            &v,
            append(vec![r(0, 10, 1)], vec![r(1, 11, 2), r(1, 11, 3)], vec![k(10).to_vec()], 1),
            targets,
        );
        rejects(
            &v,
            append(vec![r(0, 10, 1)], vec![r(1, 11, 3), r(1, 11, 4)], vec![k(20).to_vec()], 1),
            targets,
        );
        rejects(
            &v,
            append(vec![r(0, 10, 1)], vec![r(1, 11, 3), r(1, 11, 2), r(1, 11, 4)], good.clone(), 1),
            targets,
        );
        // A victim [12,15] overlaps [10,19] alone; one in the gap [20,29]
        // overlaps nothing, so no target list is right.
        v.levels[0].runs[0].files[0] = fv(1, 12, 15, 100);
        rejects(&v, l0_append(good.clone()), targets);
        rejects(
            &v,
            append(vec![r(0, 10, 1)], vec![r(1, 11, 3), r(1, 11, 4)], vec![k(20).to_vec()], 1),
            targets,
        );
        validate_task(&v, &append(vec![r(0, 10, 1)], vec![r(1, 11, 3)], vec![], 1)).unwrap();
        v.levels[0].runs[0].files[0] = fv(1, 20, 29, 100);
        rejects(&v, append(vec![r(0, 10, 1)], vec![r(1, 11, 3)], vec![], 1), targets);
        let mut v = view();
        // Wrong number of bounds.
        rejects(&v, l0_append(vec![]), "0 bounds for 3 targets");
        rejects(&v, l0_append(vec![k(10).to_vec()]), "1 bounds for 3 targets");
        rejects(
            &v,
            l0_append(vec![k(10).to_vec(), k(20).to_vec(), k(40).to_vec()]),
            "3 bounds for 3 targets",
        );
        rejects(
            &v,
            append(vec![r(1, 11, 3)], vec![r(2, 12, 5)], vec![k(50).to_vec()], 2),
            "1 bounds for 1 targets",
        );
        // Bounds outside the gaps: at or before the left file's largest key,
        // inside a file, past the right file's smallest, out of order.
        for (b0, b1, bad) in [
            (k(9).to_vec(), k(20).to_vec(), 0),
            (k(5).to_vec(), k(20).to_vec(), 0),
            (after(10), k(20).to_vec(), 0),
            (k(11).to_vec(), k(20).to_vec(), 0),
            (k(10).to_vec(), k(19).to_vec(), 1),
            (k(10).to_vec(), k(15).to_vec(), 1),
            (k(10).to_vec(), after(30), 1),
            (k(10).to_vec(), k(35).to_vec(), 1),
            (k(20).to_vec(), k(10).to_vec(), 0),
            (vec![], k(20).to_vec(), 0),
        ] {
            rejects(&v, l0_append(vec![b0, b1]), &format!("bound {bad} is not between"));
        }
        // A victim at or below the targets' level.
        rejects(&v, append(vec![r(1, 11, 3)], vec![r(1, 11, 2)], vec![], 1), "not above level 1");
        rejects(
            &v,
            append(vec![r(2, 12, 5)], vec![r(1, 11, 2), r(1, 11, 3), r(1, 11, 4)], good.clone(), 1),
            "not above",
        );
        rejects(
            &v,
            append(
                vec![r(0, 10, 1), r(2, 12, 5)],
                vec![r(1, 11, 2), r(1, 11, 3), r(1, 11, 4)],
                good.clone(),
                1,
            ),
            "victim 5",
        );
        // Targets of another level or run than the output's.
        rejects(&v, append(vec![r(0, 10, 1)], vec![r(2, 12, 5)], vec![], 1), "not in level 1");
        rejects(&v, append(vec![r(1, 11, 3)], vec![r(2, 12, 5)], vec![], 3), "not in level 3");
        rejects(&v, append(vec![r(0, 10, 1)], vec![r(1, 12, 2)], vec![], 1), "not found");
        rejects(&v, append(vec![r(0, 10, 1)], vec![r(7, 11, 2)], vec![], 7), "levels");
        // Duplicates: a victim twice, a target twice, a victim also a target.
        rejects(
            &v,
            append(
                vec![r(0, 10, 1), r(0, 10, 1)],
                vec![r(1, 11, 2), r(1, 11, 3), r(1, 11, 4)],
                good.clone(),
                1,
            ),
            "twice",
        );
        rejects(
            &v,
            append(
                vec![r(0, 10, 1)],
                vec![r(1, 11, 2), r(1, 11, 2), r(1, 11, 3), r(1, 11, 4)],
                good.clone(),
                1,
            ),
            "twice",
        );
        rejects(&v, append(vec![r(1, 11, 3)], vec![r(1, 11, 3)], vec![], 2), "twice");
        // Missing files.
        rejects(&v, append(vec![r(0, 10, 9)], vec![r(1, 11, 2)], vec![], 1), "not found");
        // Busy victims and targets.
        v.levels[1].runs[0].files[1].being_compacted = true;
        rejects(&v, l0_append(good.clone()), "file 3 is already being compacted");
        v.levels[1].runs[0].files[1].being_compacted = false;
        v.levels[0].runs[0].files[0].being_compacted = true;
        rejects(&v, l0_append(good.clone()), "file 1 is already being compacted");
        v.levels[0].runs[0].files[0].being_compacted = false;
        validate_task(&v, &l0_append(good.clone())).unwrap();
        // A target a compaction buffer holds (a removed entry holds nothing).
        let entry = |file: Option<u64>| BufferEntryView {
            file,
            size: 100,
            smallest: k(10).to_vec(),
            largest: k(19).to_vec(),
            cached_fraction: None,
        };
        let buffer = |file| BufferView {
            run: 11,
            tables: vec![BufferTableView { id: 50, entries: vec![entry(file)] }],
        };
        v.levels[1].buffers = vec![buffer(None)];
        validate_task(&v, &l0_append(good.clone())).unwrap();
        v.levels[1].buffers = vec![buffer(Some(3))];
        rejects(&v, l0_append(good.clone()), "target 3 is held by a compaction buffer");
        // A buffer of another level listing the same id is not the targets'.
        v.levels[1].buffers.clear();
        v.levels[2].buffers = vec![BufferView { run: 12, ..buffer(Some(3)) }];
        validate_task(&v, &l0_append(good)).unwrap();
    }

    #[test]
    fn flush_placement_checks() {
        let mut v = view();
        // L0 spans 5..50, L1 holds 0..9, 10..19, 30..39, L2 0..100.
        validate_flush_level(&v, 0, &k(0), &k(200)).unwrap();
        let msg = validate_flush_level(&v, 1, &k(0), &k(4)).unwrap_err().to_string();
        assert!(msg.contains("file 2 of level 1"), "{msg}");
        validate_flush_level(&v, 1, &k(60), &k(70)).unwrap();
        let msg = validate_flush_level(&v, 2, &k(60), &k(70)).unwrap_err().to_string();
        assert!(msg.contains("file 5 of level 2"), "{msg}");
        assert!(validate_flush_level(&v, 1, &k(40), &k(45)).unwrap_err().to_string().contains("level 0"));
        assert!(validate_flush_level(&v, 3, &k(200), &k(300)).unwrap_err().to_string().contains("3 levels"));
        v.levels[1].buffers = vec![BufferView { run: 11, tables: vec![] }];
        let msg = validate_flush_level(&v, 1, &k(60), &k(70)).unwrap_err().to_string();
        assert!(msg.contains("buffer"), "{msg}");
        // The default policy rule: L0.
        #[derive(Debug)]
        struct Nothing;
        impl CompactionPolicy for Nothing {
            fn name(&self) -> &str {
                "nothing"
            }
            fn num_levels(&self) -> usize {
                3
            }
            fn pick(&self, _: &LsmView) -> Option<PickResult> {
                None
            }
            fn scores(&self, _: &LsmView) -> Vec<f64> {
                vec![0.0; 3]
            }
            fn level_target_bytes(&self, _: &LsmView, _: usize) -> Option<u64> {
                None
            }
            fn compact_range(&self, _: &LsmView, _: usize, _: &ManualRange<'_>) -> Option<PickResult> {
                None
            }
        }
        assert_eq!(Nothing.flush_level(&LsmView::new(3), &k(1), &k(2), 10, 2), 0);
    }
}
