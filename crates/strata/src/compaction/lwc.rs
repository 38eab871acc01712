//! The LWC-tree's light-weight compaction as a policy: leveling's shape and
//! choice of victims, but a victim that overlaps tables of the next level is
//! not merged with them. Its entries are appended, divided by the targets'
//! key ranges, as a new sorted segment of each target ([`CompactionTask::Append`]):
//! a compaction reads and writes about one table instead of about `1 + ratio`.
//!
//! - **Balance (range adjustment, no data moves)**: a victim's keys that fall
//!   in the gap between two targets go to the smaller of the two, whose range
//!   grows over the gap. Ranges never overlap inside a level, so a point read
//!   still probes one table per level.
//! - **Full rewrite ("equal division")**: a table of more than `max_segments`
//!   segments, or larger than `max_table_factor` target files, is merged in
//!   place into new one-segment tables of equal size (at most the target
//!   size). That bounds the segments a read probes and the space dead
//!   versions hold; it is also where tombstones go (appends keep them). A
//!   table chosen as a victim is read whole, its segments merged, anyway.
//! - **Metadata aggregation**: the slides keep, in each table, a copy of the
//!   next level's metadata so a compaction needs no random reads to find its
//!   targets. Strata's Version already holds every table's range in memory and
//!   a table's segment indexes are loaded when it is opened, so nothing more is
//!   aggregated.

use super::leveled::{LeveledConfig, LeveledPolicy};
use super::manual::ManualRange;
use super::policy::{
    key_range, CompactionPolicy, CompactionTask, FileRef, FileView, LsmView, PickResult, RunTarget,
};
use crate::error::{Error, Result};

/// Tuning of [`LwcPolicy`].
#[derive(Clone, Debug, PartialEq)]
pub struct LwcConfig {
    /// Shape and victim choice (leveling's).
    pub shape: LeveledConfig,
    /// A table with more segments than this is rewritten (at least 1).
    pub max_segments: usize,
    /// A table larger than this many target files is rewritten (at least 1).
    pub max_table_factor: u64,
}

impl LwcConfig {
    /// Defaults for a shape: 8 segments, 4 target files.
    pub fn new(shape: LeveledConfig) -> Self {
        LwcConfig { shape, max_segments: 8, max_table_factor: 4 }
    }
}

/// Light-weight compaction over a leveled shape.
#[derive(Clone, Debug)]
pub struct LwcPolicy {
    leveled: LeveledPolicy,
    cfg: LwcConfig,
}

impl LwcPolicy {
    /// Builds the policy after validating `cfg`.
    pub fn new(cfg: LwcConfig) -> Result<Self> {
        if cfg.max_segments == 0 || cfg.max_table_factor == 0 {
            return Err(Error::invalid("lwc: max_segments and max_table_factor must be at least 1"));
        }
        Ok(LwcPolicy { leveled: LeveledPolicy::new(cfg.shape.clone())?, cfg })
    }

    /// The free table most in need of a rewrite (most segments, then largest).
    fn pick_rewrite(&self, view: &LsmView) -> Option<PickResult> {
        let target = self.cfg.shape.target_file_size;
        let limit = target.saturating_mul(self.cfg.max_table_factor);
        let mut best: Option<(usize, u64, &FileView, usize)> = None;
        for (level, lvl) in view.levels.iter().enumerate().skip(1) {
            for run in &lvl.runs {
                for f in run.files.iter().filter(|f| !f.being_compacted) {
                    if f.segments <= self.cfg.max_segments && f.size <= limit {
                        continue;
                    }
                    if best.is_none_or(|(_, _, b, _)| (f.segments, f.size) > (b.segments, b.size)) {
                        best = Some((level, run.id, f, f.segments));
                    }
                }
            }
        }
        let (level, run, f, _) = best?;
        let parts = f.size.div_ceil(target).max(1);
        let task = CompactionTask::Merge {
            inputs: vec![FileRef { level, run, file: f.id }],
            output_level: level,
            output_run: RunTarget::Existing(run),
            target_file_size: f.size.div_ceil(parts).max(1),
            reason: crate::stats::TABLE_REWRITE,
        };
        Some(PickResult::task(task, 1.0))
    }

    /// Turns leveling's merge of victims with the next level's tables into an
    /// append to those tables, where the rules allow.
    fn lighten(view: &LsmView, pick: PickResult) -> PickResult {
        let CompactionTask::Merge { inputs, output_level, output_run: RunTarget::Existing(run), .. } =
            &pick.task
        else {
            return pick;
        };
        let (victims, targets): (Vec<FileRef>, Vec<FileRef>) =
            inputs.iter().cloned().partition(|r| r.level < *output_level);
        if victims.is_empty() || targets.is_empty() || targets.iter().any(|t| t.run != *run) {
            return pick;
        }
        let Some(lvl) = view.level(*output_level) else { return pick };
        let Some(r) = lvl.run(*run) else { return pick };
        let victim_views: Vec<&FileView> = victims.iter().filter_map(|v| view.file(v)).collect();
        let Some((lo, hi)) = key_range(victim_views) else { return pick };
        let files = r.overlapping(lo, hi);
        let mut sorted = targets.clone();
        sorted.sort_by_key(|t| files.iter().position(|f| f.id == t.file));
        if files.len() != targets.len() || files.iter().zip(&sorted).any(|(f, t)| f.id != t.file) {
            return pick;
        }
        // A buffer lists a table as it was; appends would change it underneath.
        let buffered = |id: u64| {
            lvl.buffers.iter().flat_map(|b| &b.tables).flat_map(|t| &t.entries).any(|e| e.file == Some(id))
        };
        if files.iter().any(|f| buffered(f.id)) {
            return pick;
        }
        let bounds = files.windows(2).map(|w| gap_bound(&w[0], &w[1])).collect();
        let task = CompactionTask::Append {
            inputs: victims,
            targets: sorted,
            bounds,
            output_level: *output_level,
            reason: if pick.compact_pointer.is_none() { "L0 append" } else { "level size append" },
        };
        PickResult { task, ..pick }
    }
}

/// The first key routed to `right`: the gap between the two tables goes to
/// the smaller one (the slides' range adjustment, with no data moved).
fn gap_bound(left: &FileView, right: &FileView) -> Vec<u8> {
    if left.size <= right.size {
        right.smallest.clone()
    } else {
        // The smallest key after `left.largest`.
        let mut k = left.largest.clone();
        k.push(0);
        k
    }
}

impl CompactionPolicy for LwcPolicy {
    fn name(&self) -> &str {
        "lwc"
    }

    fn allows_concurrent_compactions(&self) -> bool {
        true
    }

    fn num_levels(&self) -> usize {
        self.leveled.num_levels()
    }

    fn pick(&self, view: &LsmView) -> Option<PickResult> {
        if let Some(p) = self.pick_rewrite(view) {
            return Some(p);
        }
        self.leveled.pick(view).map(|p| Self::lighten(view, p))
    }

    fn scores(&self, view: &LsmView) -> Vec<f64> {
        self.leveled.scores(view)
    }

    fn level_target_bytes(&self, view: &LsmView, level: usize) -> Option<u64> {
        self.leveled.level_target_bytes(view, level)
    }

    /// A manual compaction rewrites (RocksDB users expect `compact_range` to
    /// leave one merged copy of the range).
    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult> {
        self.leveled.compact_range(view, level, range)
    }

    fn flush_level(
        &self,
        view: &LsmView,
        smallest: &[u8],
        largest: &[u8],
        bytes: u64,
        max_level: usize,
    ) -> usize {
        self.leveled.flush_level(view, smallest, largest, bytes, max_level)
    }
}
