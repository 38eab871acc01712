//! LevelDB-style leveled compaction: L0 holds flushed runs that overlap each other, every deeper
//! level is one sorted run `r` times larger than the one above it.
//!
//! Scores: L0 = runs / `l0_trigger`; level i >= 1 = bytes / (base * multiplier^(i-1)); the last
//! level never scores. The highest score >= 1 whose inputs are free wins:
//! - L0: merge every L0 run plus the overlapping L1 files into L1. If the oldest L0 run is a single
//!   file that overlaps nothing in L1, it is moved instead (no rewrite): it is older than every
//!   other L0 run and nothing of its range lives in L1, so no newer data ends up below older data.
//! - Level i >= 1: round-robin from the compact pointer, pick one file plus the overlapping files of
//!   level i+1 and merge them into level i+1; with no overlap, move the file down.
//!
//! Levels >= 1 are expected to hold one run; if a view holds more, sources come from the oldest
//! run of level i and outputs go to the newest run of level i+1, merging overlaps from all its runs.

use crate::compaction::capacity;
use crate::compaction::manual::{self, ManualRange};
use crate::compaction::policy::{
    key_range, CompactionPolicy, CompactionTask, FileRef, FileView, LevelView, LsmView, PickResult, RunTarget,
};
use crate::error::{Error, Result};

/// Tuning of [`LeveledPolicy`].
#[derive(Clone, Debug, PartialEq)]
pub struct LeveledConfig {
    /// Number of levels, L0 included (at least 2).
    pub num_levels: usize,
    /// L0 run count that triggers an L0 -> L1 compaction (at least 1).
    pub l0_trigger: usize,
    /// Target size of L1 in bytes (at least 1).
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels (at least 1.0).
    pub multiplier: f64,
    /// Output files are cut at this many bytes (at least 1).
    pub target_file_size: u64,
}

impl Default for LeveledConfig {
    fn default() -> Self {
        LeveledConfig {
            num_levels: 7,
            l0_trigger: 4,
            max_bytes_for_level_base: 256 << 20,
            multiplier: 10.0,
            target_file_size: 64 << 20,
        }
    }
}

impl LeveledConfig {
    /// Rejects settings that would make scores meaningless (zero divisors, shrinking levels).
    pub fn validate(&self) -> Result<()> {
        if self.num_levels < 2 {
            return Err(Error::invalid(format!("leveled: num_levels {} < 2", self.num_levels)));
        }
        if self.l0_trigger == 0 || self.max_bytes_for_level_base == 0 || self.target_file_size == 0 {
            return Err(Error::invalid("leveled: l0_trigger, level base and target file size must be > 0"));
        }
        if !(self.multiplier >= 1.0 && self.multiplier.is_finite()) {
            return Err(Error::invalid(format!(
                "leveled: multiplier {} must be finite and >= 1",
                self.multiplier
            )));
        }
        Ok(())
    }
}

/// The LevelDB-style leveled policy (the baseline every paper compares against).
#[derive(Clone, Debug)]
pub struct LeveledPolicy {
    cfg: LeveledConfig,
    most_segments_first: bool,
}

impl LeveledPolicy {
    /// Builds the policy after validating `cfg`.
    pub fn new(cfg: LeveledConfig) -> Result<Self> {
        cfg.validate()?;
        Ok(LeveledPolicy { cfg, most_segments_first: false })
    }

    /// Sources of a level ≥ 1 are taken most segments first, then largest
    /// (the `lwc` policy: a table that appends made large is moved down before
    /// it needs a rewrite), instead of round robin from the compact pointer.
    pub(crate) fn with_most_segments_first(mut self) -> Self {
        self.most_segments_first = true;
        self
    }

    /// The configuration in use.
    pub fn config(&self) -> &LeveledConfig {
        &self.cfg
    }

    fn target_bytes_f64(&self, level: usize) -> f64 {
        capacity::target_f64(self.cfg.max_bytes_for_level_base, self.cfg.multiplier, level)
    }

    fn score(&self, view: &LsmView, level: usize) -> f64 {
        if level + 1 >= self.cfg.num_levels {
            return 0.0;
        }
        if level == 0 {
            return view.num_runs(0) as f64 / self.cfg.l0_trigger as f64;
        }
        view.level_bytes(level) as f64 / self.target_bytes_f64(level)
    }

    fn merge(
        &self,
        inputs: Vec<FileRef>,
        output_level: usize,
        output_run: RunTarget,
        reason: &'static str,
    ) -> CompactionTask {
        CompactionTask::Merge {
            inputs,
            output_level,
            output_run,
            target_file_size: self.cfg.target_file_size,
            reason,
        }
    }

    /// L0 -> L1. Every L0 run must be free: merging only the newer runs would put them below
    /// older ones that stay in L0.
    fn pick_l0(&self, view: &LsmView) -> Option<CompactionTask> {
        let l0 = view.level(0)?;
        let l1 = view.level(1)?;
        if l0.runs.is_empty() || l0.any_busy() {
            return None;
        }
        let out = output_run(l1);
        if let Some(oldest) = l0.runs.last().filter(|r| r.files.len() == 1) {
            if let Some(f) = oldest.files.first() {
                if l1.overlapping(1, &f.smallest, &f.largest).is_empty() {
                    let file = FileRef { level: 0, run: oldest.id, file: f.id };
                    return Some(CompactionTask::Move { file, to_level: 1, to_run: out });
                }
            }
        }
        let (lo, hi) = key_range(l0.runs.iter().flat_map(|r| r.files.iter()))?;
        let below = free_overlaps(view, 1, lo, hi)?;
        let mut inputs: Vec<FileRef> = l0
            .runs
            .iter()
            .flat_map(|r| r.files.iter().map(move |f| FileRef { level: 0, run: r.id, file: f.id }))
            .collect();
        inputs.extend(below);
        Some(self.merge(inputs, 1, out, "L0 -> L1"))
    }

    /// Level i >= 1 -> i+1, round-robin from the compact pointer (or most
    /// segments first); busy candidates are skipped.
    pub(crate) fn pick_level(&self, view: &LsmView, level: usize) -> Option<(CompactionTask, Vec<u8>)> {
        let src = view.level(level)?.runs.last()?;
        let next = view.level(level + 1)?;
        let start = match view.compact_pointer(level) {
            Some(p) => src.files.partition_point(|f| f.smallest.as_slice() <= p),
            None => 0,
        };
        let n = src.files.len();
        let mut candidates: Vec<&FileView> = (0..n).filter_map(|i| src.files.get((start + i) % n)).collect();
        if self.most_segments_first {
            // Stable: ties keep the round-robin order.
            candidates.sort_by_key(|f| std::cmp::Reverse((f.segments, f.size)));
        }
        for f in candidates.into_iter().filter(|f| !f.being_compacted) {
            let Some(below) = free_overlaps(view, level + 1, &f.smallest, &f.largest) else { continue };
            let file = FileRef { level, run: src.id, file: f.id };
            let out = output_run(next);
            let task = if below.is_empty() {
                CompactionTask::Move { file, to_level: level + 1, to_run: out }
            } else {
                let mut inputs = vec![file];
                inputs.extend(below);
                self.merge(inputs, level + 1, out, "level size")
            };
            return Some((task, f.largest.clone()));
        }
        None
    }
}

/// Leveled output: the level's newest run, or a new run if the level is empty.
fn output_run(level: &LevelView) -> RunTarget {
    level.runs.first().map_or(RunTarget::New, |r| RunTarget::Existing(r.id))
}

/// Files of `level` overlapping `[lo, hi]`, or None if any of them is busy. With several runs in
/// the level the range grows until no run has a file straddling its edge, so the merge output
/// never lands beside a non-input file of the same keys.
fn free_overlaps<'a>(view: &'a LsmView, level: usize, lo: &'a [u8], hi: &'a [u8]) -> Option<Vec<FileRef>> {
    let lvl = view.level(level)?;
    let mut range = (lo, hi);
    loop {
        let refs = lvl.overlapping(level, range.0, range.1);
        let files: Vec<&FileView> = refs.iter().filter_map(|r| view.file(r)).collect();
        let grown = key_range(files.iter().copied()).map_or(range, |(a, b)| (a.min(range.0), b.max(range.1)));
        if grown == range {
            return if files.iter().any(|f| f.being_compacted) { None } else { Some(refs) };
        }
        range = grown;
    }
}

impl CompactionPolicy for LeveledPolicy {
    fn name(&self) -> &str {
        "leveled"
    }

    /// Picks skip busy files and any merge that would need one.
    fn allows_concurrent_compactions(&self) -> bool {
        true
    }

    fn num_levels(&self) -> usize {
        self.cfg.num_levels
    }

    fn pick(&self, view: &LsmView) -> Option<PickResult> {
        self.pick_by_scores(view, self.scores(view))
    }

    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult> {
        manual::leveled_pick(view, level, range, self.cfg.target_file_size)
    }

    /// LevelDB's `PickLevelForMemTableOutput`: past L0 only if nothing in L0
    /// overlaps; one level deeper at a time while the next level holds nothing of
    /// the range and the level below that no more than 10 target files of it
    /// (LevelDB's grandparent limit: a deep table overlapping much more would
    /// make its later compaction expensive).
    fn flush_level(
        &self,
        view: &LsmView,
        smallest: &[u8],
        largest: &[u8],
        _bytes: u64,
        max_level: usize,
    ) -> usize {
        let overlapping = |level: usize| {
            view.level(level).map_or_else(Vec::new, |l| l.overlapping(level, smallest, largest))
        };
        if !overlapping(0).is_empty() {
            return 0;
        }
        let last = view.levels.len().min(self.cfg.num_levels).saturating_sub(1);
        let limit = self.cfg.target_file_size.saturating_mul(10);
        let mut level = 0;
        while level < max_level.min(last) {
            if !overlapping(level + 1).is_empty() {
                break;
            }
            if level + 2 <= last {
                let below: u64 =
                    overlapping(level + 2).iter().filter_map(|r| view.file(r)).map(|f| f.size).sum();
                if below > limit {
                    break;
                }
            }
            level += 1;
        }
        level
    }

    fn scores(&self, view: &LsmView) -> Vec<f64> {
        (0..self.cfg.num_levels).map(|level| self.score(view, level)).collect()
    }

    fn level_target_bytes(&self, _view: &LsmView, level: usize) -> Option<u64> {
        if level == 0 || level >= self.cfg.num_levels {
            return None;
        }
        Some(capacity::target_bytes(self.cfg.max_bytes_for_level_base, self.cfg.multiplier, level))
    }
}

impl LeveledPolicy {
    /// Leveling's pick for given per-level `scores` (index = level): the highest score >= 1 whose
    /// inputs are free. Policies that only size levels differently (Garnering) reuse it.
    pub(crate) fn pick_by_scores(&self, view: &LsmView, scores: Vec<f64>) -> Option<PickResult> {
        let mut order: Vec<(usize, f64)> =
            scores.into_iter().enumerate().filter(|&(_, s)| s >= 1.0).collect();
        // Highest score first; the stable sort keeps shallower levels first on ties.
        order.sort_by(|a, b| b.1.total_cmp(&a.1));
        order.into_iter().find_map(|(level, score)| {
            if level == 0 {
                self.pick_l0(view).map(|task| PickResult {
                    task,
                    compact_pointer: None,
                    score,
                    policy_state: None,
                    buffer: Vec::new(),
                })
            } else {
                self.pick_level(view, level).map(|(task, key)| PickResult {
                    task,
                    compact_pointer: Some((level, key)),
                    score,
                    policy_state: None,
                    buffer: Vec::new(),
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::policy::tests::fv;
    use crate::compaction::policy::{validate_task, RunView};

    fn policy(levels: usize) -> LeveledPolicy {
        LeveledPolicy::new(LeveledConfig {
            num_levels: levels,
            l0_trigger: 4,
            max_bytes_for_level_base: 1000,
            multiplier: 10.0,
            target_file_size: 100,
        })
        .unwrap()
    }

    fn r(level: usize, run: u64, file: u64) -> FileRef {
        FileRef { level, run, file }
    }

    fn run(id: u64, files: Vec<FileView>) -> RunView {
        RunView { id, files }
    }

    /// Checks the pick is valid and returns it.
    fn pick(p: &LeveledPolicy, v: &LsmView) -> Option<PickResult> {
        let res = p.pick(v)?;
        validate_task(v, &res.task).unwrap();
        Some(res)
    }

    #[test]
    fn config_validation() {
        assert!(LeveledPolicy::new(LeveledConfig::default()).is_ok());
        for bad in [
            LeveledConfig { num_levels: 1, ..Default::default() },
            LeveledConfig { l0_trigger: 0, ..Default::default() },
            LeveledConfig { multiplier: 0.5, ..Default::default() },
            LeveledConfig { multiplier: f64::NAN, ..Default::default() },
            LeveledConfig { target_file_size: 0, ..Default::default() },
        ] {
            assert!(LeveledPolicy::new(bad).is_err());
        }
    }

    #[test]
    fn scores_and_targets() {
        let p = policy(4);
        let mut v = LsmView::new(4);
        v.levels[0].runs = (0..6).map(|i| run(100 + i, vec![fv(i, 0, 10, 10)])).collect();
        v.levels[1].runs = vec![run(1, vec![fv(10, 0, 5, 500), fv(11, 6, 9, 1000)])];
        v.levels[2].runs = vec![run(2, vec![fv(12, 0, 9, 5000)])];
        v.levels[3].runs = vec![run(3, vec![fv(13, 0, 9, 1 << 40)])];
        assert_eq!(p.scores(&v), vec![1.5, 1.5, 0.5, 0.0]);
        assert_eq!(p.level_target_bytes(&v, 0), None);
        assert_eq!(p.level_target_bytes(&v, 1), Some(1000));
        assert_eq!(p.level_target_bytes(&v, 3), Some(100_000));
        assert_eq!(p.level_target_bytes(&v, 4), None);
        assert_eq!(p.bloom_bits_for_level(&v, 2, 10.0), 10.0);
        assert!(pick(&p, &LsmView::new(4)).is_none());
        // Tie between L0 and L1: the shallower level goes first.
        let res = pick(&p, &v).unwrap();
        assert_eq!(res.score, 1.5);
        assert!(matches!(res.task, CompactionTask::Merge { output_level: 1, .. }));
    }

    #[test]
    fn l0_pick_includes_overlapping_l1() {
        let p = policy(3);
        let mut v = LsmView::new(3);
        v.levels[0].runs = vec![
            run(104, vec![fv(4, 50, 60, 10)]),
            run(103, vec![fv(3, 20, 30, 10)]),
            run(102, vec![fv(2, 25, 55, 10)]),
            run(101, vec![fv(1, 20, 40, 10)]),
        ];
        v.levels[1].runs =
            vec![run(7, vec![fv(10, 0, 10, 10), fv(11, 15, 21, 10), fv(12, 45, 52, 10), fv(13, 61, 70, 10)])];
        let res = pick(&p, &v).unwrap();
        assert_eq!(res.compact_pointer, None);
        let CompactionTask::Merge { inputs, output_level, output_run, target_file_size, .. } = res.task
        else {
            panic!("expected merge, got {:?}", res.task)
        };
        assert_eq!((output_level, output_run, target_file_size), (1, RunTarget::Existing(7), 100));
        assert_eq!(
            inputs,
            vec![r(0, 104, 4), r(0, 103, 3), r(0, 102, 2), r(0, 101, 1), r(1, 7, 11), r(1, 7, 12)]
        );
        // Below the trigger nothing happens.
        v.levels[0].runs.truncate(3);
        assert!(pick(&p, &v).is_none());
    }

    #[test]
    fn l0_trivial_move_only_for_oldest_run() {
        let p = LeveledPolicy::new(LeveledConfig { l0_trigger: 1, num_levels: 3, ..policy(3).cfg }).unwrap();
        let mut v = LsmView::new(3);
        // Single L0 run, empty L1: move into a new run.
        v.levels[0].runs = vec![run(101, vec![fv(1, 0, 9, 10)])];
        let res = pick(&p, &v).unwrap();
        assert_eq!(
            res.task,
            CompactionTask::Move { file: r(0, 101, 1), to_level: 1, to_run: RunTarget::New }
        );
        // The newest run is disjoint from L1 but the oldest overlaps it: merge everything, since
        // moving the newest run would put it below the older one.
        v.levels[0].runs = vec![run(102, vec![fv(2, 50, 59, 10)]), run(101, vec![fv(1, 0, 9, 10)])];
        v.levels[1].runs = vec![run(7, vec![fv(10, 5, 6, 10)])];
        let res = pick(&p, &v).unwrap();
        assert!(matches!(res.task, CompactionTask::Merge { ref inputs, .. } if inputs.len() == 3));
        // The oldest run is disjoint from L1: move it into L1's run.
        v.levels[1].runs = vec![run(7, vec![fv(10, 20, 30, 10)])];
        let res = pick(&p, &v).unwrap();
        assert_eq!(
            res.task,
            CompactionTask::Move { file: r(0, 101, 1), to_level: 1, to_run: RunTarget::Existing(7) }
        );
    }

    #[test]
    fn multi_run_level_expands_overlaps() {
        // A view left by another policy: L1 holds two runs. L0 [5,20] overlaps the older run's
        // [10,35], which straddles the newer run's [30,40]: all three must merge.
        let p = LeveledPolicy::new(LeveledConfig { l0_trigger: 1, ..policy(3).cfg }).unwrap();
        let mut v = LsmView::new(3);
        v.levels[0].runs = vec![run(100, vec![fv(1, 5, 20, 10)])];
        v.levels[1].runs = vec![run(8, vec![fv(2, 30, 40, 10)]), run(7, vec![fv(3, 10, 35, 10)])];
        let res = pick(&p, &v).unwrap();
        assert_eq!(
            res.task,
            CompactionTask::Merge {
                inputs: vec![r(0, 100, 1), r(1, 8, 2), r(1, 7, 3)],
                output_level: 1,
                output_run: RunTarget::Existing(8),
                target_file_size: 100,
                reason: "L0 -> L1",
            }
        );
    }

    /// Random leveled views with random busy files: any pick validates and names no busy file.
    #[test]
    fn random_views_give_valid_picks() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let p = policy(4);
        let mut rng = SmallRng::seed_from_u64(42);
        let mut picks = 0;
        for _ in 0..500 {
            let mut v = LsmView::new(4);
            let mut id = 0;
            let mut file = |lo: u64, hi: u64, rng: &mut SmallRng| {
                id += 1;
                let mut f = fv(id, lo, hi, rng.gen_range(1..400));
                f.being_compacted = rng.gen_bool(0.1);
                f
            };
            for i in 0..rng.gen_range(0..7u64) {
                let lo = rng.gen_range(0..1000);
                let f = file(lo, lo + rng.gen_range(0..300), &mut rng);
                v.levels[0].runs.push(run(100 + i, vec![f]));
            }
            for level in 1..4 {
                let mut files = Vec::new();
                let mut at = rng.gen_range(0..50);
                while at < 1000 && files.len() < 12 {
                    let hi = at + rng.gen_range(0..60);
                    files.push(file(at, hi, &mut rng));
                    at = hi + 1 + rng.gen_range(0..80);
                }
                if !files.is_empty() {
                    v.levels[level].runs.push(run(level as u64, files));
                }
                if rng.gen_bool(0.5) {
                    v.compact_pointers[level] = Some(rng.gen_range(0u64..1000).to_be_bytes().to_vec());
                }
            }
            if let Some(res) = p.pick(&v) {
                picks += 1;
                validate_task(&v, &res.task).unwrap_or_else(|e| panic!("{e}: {:?}\n{v:?}", res.task));
                assert!(res.score >= 1.0);
            }
        }
        assert!(picks > 100, "only {picks} picks");
    }

    /// L1 over capacity with files [0,9] [10,19] [20,29], L2 with one file [12,14].
    fn round_robin_view() -> LsmView {
        let mut v = LsmView::new(3);
        v.levels[1].runs = vec![run(1, vec![fv(1, 0, 9, 500), fv(2, 10, 19, 500), fv(3, 20, 29, 500)])];
        v.levels[2].runs = vec![run(2, vec![fv(9, 12, 14, 10)])];
        v
    }

    #[test]
    fn round_robin_pointer_advances_and_wraps() {
        let p = policy(3);
        let mut v = round_robin_view();
        let mut picked = Vec::new();
        for _ in 0..4 {
            let res = pick(&p, &v).unwrap();
            let (level, key) = res.compact_pointer.clone().unwrap();
            assert_eq!(level, 1);
            let file = match &res.task {
                CompactionTask::Move { file, .. } => file.file,
                CompactionTask::Merge { inputs, .. } => inputs[0].file,
                t => panic!("unexpected {t:?}"),
            };
            let f = v.file(&r(1, 1, file)).unwrap();
            assert_eq!(key, f.largest);
            picked.push(file);
            v.compact_pointers[1] = Some(key);
        }
        assert_eq!(picked, vec![1, 2, 3, 1]);
    }

    #[test]
    fn trivial_move_without_overlap_and_merge_with_overlap() {
        let p = policy(3);
        let mut v = round_robin_view();
        let res = pick(&p, &v).unwrap();
        assert_eq!(
            res.task,
            CompactionTask::Move { file: r(1, 1, 1), to_level: 2, to_run: RunTarget::Existing(2) }
        );
        v.compact_pointers[1] = Some(9u64.to_be_bytes().to_vec());
        let res = pick(&p, &v).unwrap();
        assert_eq!(
            res.task,
            CompactionTask::Merge {
                inputs: vec![r(1, 1, 2), r(2, 2, 9)],
                output_level: 2,
                output_run: RunTarget::Existing(2),
                target_file_size: 100,
                reason: "level size",
            }
        );
        // Empty L2: the move creates its run.
        v.levels[2].runs.clear();
        let res = pick(&p, &v).unwrap();
        assert_eq!(res.task, CompactionTask::Move { file: r(1, 1, 2), to_level: 2, to_run: RunTarget::New });
    }

    #[test]
    fn busy_files_are_skipped() {
        let p = policy(3);
        let mut v = round_robin_view();
        // Busy source file: the next one is taken.
        v.levels[1].runs[0].files[0].being_compacted = true;
        let res = pick(&p, &v).unwrap();
        assert!(matches!(res.task, CompactionTask::Merge { ref inputs, .. } if inputs[0].file == 2));
        // Busy overlap in L2 as well: file 3 remains.
        v.levels[2].runs[0].files[0].being_compacted = true;
        let res = pick(&p, &v).unwrap();
        assert!(matches!(res.task, CompactionTask::Move { ref file, .. } if file.file == 3));
        // Everything in L1 busy, L0 over trigger: L0 is tried next (higher score first, then L0).
        for f in &mut v.levels[1].runs[0].files {
            f.being_compacted = true;
        }
        v.levels[0].runs = (0..4).map(|i| run(100 + i, vec![fv(50 + i, 40, 49, 10)])).collect();
        let res = pick(&p, &v).unwrap();
        assert_eq!(
            res.task,
            CompactionTask::Move { file: r(0, 103, 53), to_level: 1, to_run: RunTarget::Existing(1) }
        );
        // A busy L0 file blocks L0, and L1 is all busy: nothing to do.
        v.levels[0].runs[2].files[0].being_compacted = true;
        assert!(pick(&p, &v).is_none());
        // An L0 merge needing a busy L1 file is skipped too.
        v.levels[0].runs[2].files[0].being_compacted = false;
        v.levels[0].runs[3].files[0].smallest = 5u64.to_be_bytes().to_vec();
        assert!(pick(&p, &v).is_none());
    }

    #[test]
    fn flushes_go_below_l0_only_past_free_levels() {
        // target_file_size 100: the grandparent limit is 1000 bytes.
        let p = policy(5);
        let mut v = LsmView::new(5);
        let level = |v: &LsmView, lo: u64, hi: u64, max: usize| {
            let l = p.flush_level(v, &lo.to_be_bytes(), &hi.to_be_bytes(), 10, max);
            crate::compaction::policy::validate_flush_level(v, l, &lo.to_be_bytes(), &hi.to_be_bytes())
                .unwrap();
            l
        };
        // Empty tree: as deep as allowed, never past the last level.
        assert_eq!(level(&v, 0, 9, 2), 2);
        assert_eq!(level(&v, 0, 9, 0), 0);
        assert_eq!(level(&v, 0, 9, 1), 1);
        assert_eq!(level(&v, 0, 9, 9), 4);
        v.levels[0].runs = vec![run(100, vec![fv(1, 50, 60, 10)])];
        v.levels[2].runs = vec![run(2, vec![fv(2, 20, 30, 10)])];
        v.levels[3].runs = vec![run(3, vec![fv(3, 0, 5, 600), fv(4, 6, 8, 600), fv(5, 40, 45, 10)])];
        assert_eq!(level(&v, 55, 70, 2), 0, "overlaps L0");
        assert_eq!(level(&v, 25, 26, 2), 1, "L2 holds the range");
        // L1 free, L2 free, but L3 holds 1200 bytes of the range: stop at L1.
        assert_eq!(level(&v, 0, 9, 2), 1);
        assert_eq!(level(&v, 0, 5, 2), 2, "600 bytes below are within the limit");
        assert_eq!(level(&v, 40, 45, 2), 2);
        assert_eq!(level(&v, 40, 45, 3), 2, "L3 holds the range");
        // Two levels only: L1 is the last and takes it.
        assert_eq!(policy(2).flush_level(&LsmView::new(2), &[1], &[2], 10, 2), 1);
    }

    #[test]
    fn bottom_level_never_a_source() {
        let p = policy(3);
        let mut v = LsmView::new(3);
        v.levels[2].runs = vec![run(1, vec![fv(1, 0, 9, 1 << 40)])];
        assert_eq!(p.scores(&v)[2], 0.0);
        assert!(pick(&p, &v).is_none());
    }
}
