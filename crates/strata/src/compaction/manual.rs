//! Manual compaction picks (RocksDB's `CompactionPicker::CompactRange`): the
//! policy decides where the files of a level that overlap a user-key range go
//! in the next level, so a manual compaction respects the policy's structure
//! (bLSM never writes into its draining run, super-file policies cut parts) and
//! its picks go through the same validation as every other task.

use std::collections::HashSet;

pub use super::policy::ManualRange;
use super::policy::{CompactionTask, FileRef, LsmView, PickResult, RunTarget};

/// The deepest level with a file overlapping the range (at least 1): manual
/// compaction moves data down to it.
pub fn deepest_overlapping_level(view: &LsmView, range: &ManualRange<'_>) -> usize {
    (0..view.levels.len())
        .rev()
        .find(|&l| {
            view.levels[l].runs.iter().flat_map(|r| &r.files).any(|f| range.overlaps(&f.smallest, &f.largest))
        })
        .unwrap_or(0)
        .max(1)
}

/// Every file of `level` overlapping the range, widened until no other file of
/// the level overlaps the picked key range (runs of one level may overlap, and
/// leaving an overlapping newer version behind would bury it under older data).
/// Returns the files and their key range; `None` when nothing overlaps.
pub fn level_inputs(
    view: &LsmView,
    level: usize,
    range: &ManualRange<'_>,
) -> Option<(Vec<FileRef>, Vec<u8>, Vec<u8>)> {
    let l = view.level(level)?;
    let mut picked = Vec::new();
    let mut seen = HashSet::new();
    let mut bounds: Option<(Vec<u8>, Vec<u8>)> = None;
    loop {
        let mut grew = false;
        for run in &l.runs {
            for f in &run.files {
                let hit = range.overlaps(&f.smallest, &f.largest)
                    || bounds.as_ref().is_some_and(|(lo, hi)| f.overlaps(lo, hi));
                if hit && seen.insert((run.id, f.id)) {
                    picked.push(FileRef { level, run: run.id, file: f.id });
                    bounds = Some(match bounds {
                        None => (f.smallest.clone(), f.largest.clone()),
                        Some((lo, hi)) => (lo.min(f.smallest.clone()), hi.max(f.largest.clone())),
                    });
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    let (lo, hi) = bounds?;
    Some((picked, lo, hi))
}

/// A merge of the level's overlapping files into `output` of the next level,
/// together with the files of `output` (when it exists) that overlap them:
/// the output run stays sorted and disjoint. Other runs of the next level are
/// left alone (they are older than `output`, so the merged data stays above
/// them). `None` when nothing of `level` overlaps the range.
pub fn merge_into(
    view: &LsmView,
    level: usize,
    range: &ManualRange<'_>,
    output: RunTarget,
    target_file_size: u64,
    reason: &'static str,
) -> Option<PickResult> {
    let (mut inputs, lo, hi) = level_inputs(view, level, range)?;
    if let RunTarget::Existing(id) = output {
        let run = view.level(level + 1)?.run(id)?;
        inputs.extend(run.overlapping(&lo, &hi).iter().map(|f| FileRef {
            level: level + 1,
            run: id,
            file: f.id,
        }));
    }
    let task = CompactionTask::Merge {
        inputs,
        output_level: level + 1,
        output_run: output,
        target_file_size,
        reason,
    };
    Some(PickResult::task(task, 0.0))
}

/// Leveling's manual pick: into the next level's only run (its newest, if a
/// view written by another policy left several), else a new run.
pub fn leveled_pick(
    view: &LsmView,
    level: usize,
    range: &ManualRange<'_>,
    target_file_size: u64,
) -> Option<PickResult> {
    let output = view.level(level + 1)?.runs.first().map_or(RunTarget::New, |r| RunTarget::Existing(r.id));
    merge_into(view, level, range, output, target_file_size, "manual compaction")
}

/// The reason of the tasks [`bottommost_rewrite`] picks, as
/// `CompactionRecord::reason` shows it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::compaction::manual::BOTTOMMOST_REWRITE;
/// use strata::{Db, Decision, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"k", b"v")?;
/// db.compact_range(None, None)?; // into L1, where nothing is above it
/// db.close()?;
/// let keep = |_: usize, _: &[u8], _: &[u8]| Decision::Keep;
/// let db = Db::open(dir.path(), Options::default().with_compaction_filter(Arc::new(keep)))?;
/// db.compact_range(None, None)?;
/// assert_eq!(db.stats().recent_compactions.last().map(|r| r.reason), Some(BOTTOMMOST_REWRITE));
/// # Ok::<(), strata::Error>(())
/// ```
pub const BOTTOMMOST_REWRITE: &str = "manual compaction: bottommost rewrite";

/// A one-file merge into its own run of a file of `level` that overlaps the
/// range and is still `untouched` (ids): what `Db::compact_range` gives the
/// deepest level's files it did not rewrite when a compaction filter is set,
/// so the filter sees every entry in range (RocksDB's default
/// `BottommostLevelCompaction::kIfHaveCompactionFilter`, without rewriting the
/// files the same call just wrote, as its `kForceOptimized` does). A file
/// listed in two runs of the level is left alone: rewriting one listing would
/// leave two different entries at one sequence number. `None` when no such file is left.
///
/// # Examples
///
/// ```
/// use std::collections::HashSet;
/// use strata::compaction::manual::{bottommost_rewrite, ManualRange};
/// use strata::compaction::{CompactionTask, FileView, LsmView, RunView};
///
/// let file = FileView {
///     id: 7,
///     size: 100,
///     smallest: b"a".to_vec(),
///     largest: b"m".to_vec(),
///     num_entries: 10,
///     num_deletions: 0,
///     being_compacted: false,
///     bloom_bits_per_key: None,
///     segments: 1,
///     num_range_dels: 0,
/// };
/// let mut view = LsmView::new(3);
/// view.levels[2].runs = vec![RunView { id: 1, files: vec![file] }];
/// let untouched: HashSet<u64> = [7].into();
/// let pick = bottommost_rewrite(&view, 2, &ManualRange::default(), &untouched, 1 << 20).expect("file 7");
/// assert!(matches!(pick.task, CompactionTask::Merge { output_level: 2, .. }));
/// assert!(bottommost_rewrite(&view, 2, &ManualRange::default(), &HashSet::new(), 1 << 20).is_none());
/// ```
pub fn bottommost_rewrite(
    view: &LsmView,
    level: usize,
    range: &ManualRange<'_>,
    untouched: &HashSet<u64>,
    target_file_size: u64,
) -> Option<PickResult> {
    let l = view.level(level)?;
    let listings = |id: u64| l.runs.iter().flat_map(|r| &r.files).filter(|f| f.id == id).count();
    l.runs.iter().find_map(|run| {
        let f = run.files.iter().find(|f| {
            untouched.contains(&f.id) && range.overlaps(&f.smallest, &f.largest) && listings(f.id) == 1
        })?;
        let task = CompactionTask::Merge {
            inputs: vec![FileRef { level, run: run.id, file: f.id }],
            output_level: level,
            output_run: RunTarget::Existing(run.id),
            target_file_size,
            reason: BOTTOMMOST_REWRITE,
        };
        Some(PickResult::task(task, 0.0))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::policy::tests::fv;
    use crate::compaction::policy::{validate_task, RunView};

    fn k(x: u64) -> Vec<u8> {
        x.to_be_bytes().to_vec()
    }

    fn view() -> LsmView {
        let mut v = LsmView::new(3);
        // Two L1 runs that overlap each other: picking [12, 12] must widen to 10..=40.
        v.levels[1].runs = vec![
            RunView { id: 20, files: vec![fv(1, 10, 20, 10), fv(2, 50, 60, 10)] },
            RunView { id: 21, files: vec![fv(3, 15, 40, 10)] },
        ];
        v.levels[2].runs = vec![
            RunView { id: 30, files: vec![fv(4, 0, 12, 10), fv(5, 35, 45, 10), fv(6, 70, 80, 10)] },
            RunView { id: 31, files: vec![fv(7, 0, 100, 10)] },
        ];
        v
    }

    #[test]
    fn inputs_widen_across_runs_and_output_takes_its_overlaps() {
        let v = view();
        let (lo, hi) = (k(12), k(12));
        let range = ManualRange { start: Some(&lo), end: Some(&hi) };
        let (files, a, b) = level_inputs(&v, 1, &range).unwrap();
        let ids: Vec<u64> = files.iter().map(|f| f.file).collect();
        assert_eq!((ids, a, b), (vec![1, 3], k(10), k(40)));
        let pick = leveled_pick(&v, 1, &range, 100).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let CompactionTask::Merge { inputs, output_run, .. } = pick.task else { panic!("{pick:?}") };
        let ids: Vec<u64> = inputs.iter().map(|f| f.file).collect();
        // Run 31 (older) is left alone: the merged data lands above it.
        assert_eq!((ids, output_run), (vec![1, 3, 4, 5], RunTarget::Existing(30)));
        assert_eq!(deepest_overlapping_level(&v, &range), 2);
        let (hi_lo, hi_hi) = (k(200), k(300));
        let nothing = ManualRange { start: Some(&hi_lo), end: Some(&hi_hi) };
        assert!(level_inputs(&v, 1, &nothing).is_none());
        assert_eq!(deepest_overlapping_level(&v, &nothing), 1);
        assert!(leveled_pick(&v, 2, &ManualRange::default(), 100).is_none(), "no level below the last");
    }

    #[test]
    fn bottommost_rewrites_take_untouched_files_in_range_one_at_a_time() {
        let v = view();
        let (lo, hi) = (k(40), k(75));
        let range = ManualRange { start: Some(&lo), end: Some(&hi) };
        let untouched: HashSet<u64> = [4, 5, 6].into();
        let pick = bottommost_rewrite(&v, 2, &range, &untouched, 100).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let CompactionTask::Merge { inputs, output_level, output_run, .. } = pick.task else {
            panic!("{pick:?}")
        };
        assert_eq!(
            (inputs[0].file, output_level, output_run),
            (5, 2, RunTarget::Existing(30)),
            "4 is out of range"
        );
        assert_eq!(inputs.len(), 1);
        let next = bottommost_rewrite(&v, 2, &range, &[6, 7].into(), 100).unwrap();
        let CompactionTask::Merge { inputs, .. } = next.task else { panic!("{next:?}") };
        assert_eq!(inputs.iter().map(|f| f.file).collect::<Vec<_>>(), vec![6], "run 30 first, one file");
        assert!(bottommost_rewrite(&v, 2, &range, &[4].into(), 100).is_none(), "the rest were written since");
    }
}
