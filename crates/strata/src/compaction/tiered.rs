//! Stepped-merge (SM-tree) tiering, one of the LSbM paper's baselines: every
//! level holds up to `r` sorted runs whose key ranges overlap; when a level
//! has `r` runs they are merged together into one new run of the next level
//! (the newest run there), so each entry is rewritten once per level. Writes
//! are cheap; point reads probe up to `r` runs per level and range reads merge
//! them all; obsolete versions linger until their level fills.
//!
//! `r` is the level size ratio (`max_bytes_for_level_multiplier`, rounded,
//! at least 2): a level's runs are each about `r` times larger than the
//! runs of the level above, so levels grow by `r` as in leveling. L0 holds
//! flushed runs and merges at `l0_trigger` runs. At the last level, `r` runs
//! are merged into one run of the same level (the only place tombstones can
//! go). Levels are bounded by run count, not bytes: no level has a byte target.

use super::leveled::LeveledConfig;
use super::manual::{self, ManualRange};
use super::policy::{CompactionPolicy, CompactionTask, FileRef, LsmView, PickResult, RunTarget};
use crate::error::Result;

/// The tiered (stepped-merge) policy.
#[derive(Debug, Clone)]
pub struct TieredPolicy {
    cfg: LeveledConfig,
    runs_per_level: usize,
}

impl TieredPolicy {
    /// A tiered policy with leveling's shape parameters (`multiplier` gives `r`).
    pub fn new(cfg: LeveledConfig) -> Result<Self> {
        cfg.validate()?;
        // Saturating float-to-int cast is the intent for absurd ratios.
        let runs_per_level = (cfg.multiplier.round() as usize).max(2);
        Ok(TieredPolicy { cfg, runs_per_level })
    }

    /// `r`: runs a level (below L0) holds before they are merged down.
    pub fn runs_per_level(&self) -> usize {
        self.runs_per_level
    }

    fn trigger(&self, level: usize) -> usize {
        if level == 0 {
            self.cfg.l0_trigger
        } else {
            self.runs_per_level
        }
    }

    fn score(&self, view: &LsmView, level: usize) -> f64 {
        if level >= self.cfg.num_levels {
            return 0.0;
        }
        view.num_runs(level) as f64 / self.trigger(level) as f64
    }

    fn last(&self) -> usize {
        self.cfg.num_levels - 1
    }
}

/// Every file of every run of `level`.
fn all_files(view: &LsmView, level: usize) -> Vec<FileRef> {
    view.level(level)
        .map(|l| {
            l.runs
                .iter()
                .flat_map(|r| r.files.iter().map(move |f| FileRef { level, run: r.id, file: f.id }))
                .collect()
        })
        .unwrap_or_default()
}

impl CompactionPolicy for TieredPolicy {
    fn name(&self) -> &str {
        "tiered"
    }

    fn num_levels(&self) -> usize {
        self.cfg.num_levels
    }

    fn pick(&self, view: &LsmView) -> Option<PickResult> {
        // The fullest level first; deeper on ties, so a merge makes room below
        // before the level above pushes another run into it.
        let (level, score) = (0..self.cfg.num_levels)
            .map(|l| (l, self.score(view, l)))
            .filter(|&(l, s)| s >= 1.0 && !view.level(l).is_some_and(|lv| lv.any_busy()))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))?;
        // At the last level a single run has nothing to merge with.
        if level == self.last() && view.num_runs(level) < 2 {
            return None;
        }
        let inputs = all_files(view, level);
        if inputs.is_empty() {
            return None;
        }
        let output_level = (level + 1).min(self.last());
        let reason = if level == self.last() { "tiered: last level full" } else { "tiered: level full" };
        let task = CompactionTask::Merge {
            inputs,
            output_level,
            // The merged runs are newer than everything below: a new, newest run.
            output_run: RunTarget::New,
            target_file_size: self.cfg.target_file_size,
            reason,
        };
        Some(PickResult::task(task, score))
    }

    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult> {
        view.level(level + 1)?;
        let (mut inputs, lo, hi) = manual::level_inputs(view, level, range)?;
        // The next level's overlapping files from all its runs join, widened
        // so no run keeps a version of a merged key: the output is the newest
        // run there, and one run per range is what a manual compaction is for.
        let below = ManualRange { start: Some(&lo), end: Some(&hi) };
        if let Some((more, _, _)) = manual::level_inputs(view, level + 1, &below) {
            inputs.extend(more);
        }
        let task = CompactionTask::Merge {
            inputs,
            output_level: level + 1,
            output_run: RunTarget::New,
            target_file_size: self.cfg.target_file_size,
            reason: "manual compaction",
        };
        Some(PickResult::task(task, 0.0))
    }

    fn scores(&self, view: &LsmView) -> Vec<f64> {
        (0..self.cfg.num_levels).map(|l| self.score(view, l)).collect()
    }

    fn runs_per_full_level(&self) -> usize {
        self.runs_per_level - 1
    }

    fn level_target_bytes(&self, _view: &LsmView, _level: usize) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::leveled::LeveledPolicy;
    use crate::compaction::policy::tests::fv;
    use crate::compaction::policy::{validate_task, RunView};
    use crate::compaction::sim::{simulate, SimConfig};

    fn policy() -> TieredPolicy {
        TieredPolicy::new(LeveledConfig {
            num_levels: 3,
            l0_trigger: 2,
            max_bytes_for_level_base: 100,
            multiplier: 3.0,
            target_file_size: 50,
        })
        .unwrap()
    }

    fn run(id: u64, files: Vec<crate::compaction::policy::FileView>) -> RunView {
        RunView { id, files }
    }

    fn merge_of(p: &PickResult) -> (Vec<u64>, usize, RunTarget) {
        match &p.task {
            CompactionTask::Merge { inputs, output_level, output_run, .. } => {
                (inputs.iter().map(|f| f.file).collect(), *output_level, *output_run)
            }
            other => panic!("expected a merge, got {other:?}"),
        }
    }

    #[test]
    fn ratio_comes_from_the_multiplier() {
        assert_eq!(policy().runs_per_level(), 3);
        let one = LeveledConfig { multiplier: 1.0, ..LeveledConfig::default() };
        assert_eq!(TieredPolicy::new(one).unwrap().runs_per_level(), 2);
        assert!(TieredPolicy::new(LeveledConfig { num_levels: 1, ..LeveledConfig::default() }).is_err());
    }

    #[test]
    fn full_levels_merge_all_their_runs_into_a_new_run_below() {
        let p = policy();
        let mut v = LsmView::new(3);
        v.levels[0].runs = vec![run(10, vec![fv(1, 0, 50, 10)])];
        v.levels[1].runs = vec![run(20, vec![fv(2, 0, 9, 10)]), run(21, vec![fv(3, 5, 20, 10)])];
        assert!(p.pick(&v).is_none(), "below every trigger");
        v.levels[0].runs.insert(0, run(11, vec![fv(4, 10, 60, 10)]));
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        assert_eq!(merge_of(&pick), (vec![4, 1], 1, RunTarget::New));
        // A third L1 run fills L1 (score 1 against L0's 1): the deeper level goes first.
        v.levels[1].runs.insert(0, run(22, vec![fv(5, 0, 100, 10), fv(6, 101, 200, 10)]));
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        assert_eq!(merge_of(&pick), (vec![5, 6, 2, 3], 2, RunTarget::New));
    }

    #[test]
    fn the_last_level_merges_in_place() {
        let p = policy();
        let mut v = LsmView::new(3);
        v.levels[2].runs = vec![run(30, vec![fv(1, 0, 9, 10)]), run(31, vec![fv(2, 0, 9, 10)])];
        assert!(p.pick(&v).is_none());
        v.levels[2].runs.push(run(32, vec![fv(3, 5, 50, 10)]));
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        assert_eq!(merge_of(&pick), (vec![1, 2, 3], 2, RunTarget::New));
        assert_eq!(p.scores(&v), vec![0.0, 0.0, 1.0]);
        assert_eq!(p.level_target_bytes(&v, 1), None);
    }

    #[test]
    fn compact_range_takes_every_overlapping_run_below() {
        let p = policy();
        let mut v = LsmView::new(3);
        v.levels[1].runs = vec![run(20, vec![fv(1, 10, 20, 10), fv(2, 50, 60, 10)])];
        // Run 31 is newer than run 30 and both overlap the moved file.
        v.levels[2].runs = vec![
            run(31, vec![fv(3, 15, 30, 10)]),
            run(30, vec![fv(4, 0, 12, 10), fv(5, 25, 40, 10), fv(6, 70, 80, 10)]),
        ];
        let (lo, hi) = (12u64.to_be_bytes(), 12u64.to_be_bytes());
        let range = ManualRange { start: Some(&lo), end: Some(&hi) };
        let pick = p.compact_range(&v, 1, &range).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let (mut ids, level, out) = merge_of(&pick);
        ids.sort_unstable();
        // File 5 joins through file 3's range: no older version stays beside the new run.
        assert_eq!((ids, level, out), (vec![1, 3, 4, 5], 2, RunTarget::New));
        assert!(p.compact_range(&v, 2, &ManualRange::default()).is_none(), "no level below the last");
        let (a, b) = (200u64.to_be_bytes(), 300u64.to_be_bytes());
        assert!(p.compact_range(&v, 1, &ManualRange { start: Some(&a), end: Some(&b) }).is_none());
    }

    #[test]
    fn a_busy_level_waits_and_the_next_fullest_goes() {
        let p = policy();
        let mut v = LsmView::new(3);
        // L0 at 1.5x its trigger, L1 exactly full.
        v.levels[0].runs = (0..3).map(|i| run(10 + i, vec![fv(i + 1, 0, 9, 10)])).collect();
        v.levels[1].runs = (0..3).map(|i| run(20 + i, vec![fv(i + 11, 0, 9, 10)])).collect();
        assert_eq!(merge_of(&p.pick(&v).unwrap()).1, 1, "L0 is the fullest");
        v.levels[0].runs[2].files[0].being_compacted = true;
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        assert_eq!(merge_of(&pick), (vec![11, 12, 13], 2, RunTarget::New));
        v.levels[1].runs[0].files[0].being_compacted = true;
        assert!(p.pick(&v).is_none(), "both full levels are busy");
    }

    /// Random multi-run views with busy files: every pick and manual pick
    /// validates, and no key's older version lands above a newer one.
    #[test]
    fn random_views_give_valid_ordered_picks() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let p = policy();
        let mut rng = SmallRng::seed_from_u64(7);
        let (mut picks, mut manual) = (0, 0);
        for _ in 0..500 {
            let mut v = LsmView::new(3);
            let mut id = 0;
            for level in 0..3 {
                for r in 0..rng.gen_range(0..5u64) {
                    let mut files = Vec::new();
                    let mut at = rng.gen_range(0..100);
                    while at < 1000 && files.len() < 6 {
                        let hi = at + rng.gen_range(0..150);
                        id += 1;
                        let mut f = fv(id, at, hi, 10);
                        f.being_compacted = rng.gen_bool(0.05);
                        files.push(f);
                        at = hi + 1 + rng.gen_range(0..200);
                    }
                    v.levels[level].runs.push(run(100 * level as u64 + r, files));
                }
            }
            if let Some(pick) = p.pick(&v) {
                picks += 1;
                validate_task(&v, &pick.task).unwrap_or_else(|e| panic!("{e}: {pick:?}\n{v:?}"));
                let CompactionTask::Merge { inputs, output_level, .. } = &pick.task else { panic!() };
                // One whole level, into the next one (or itself at the bottom).
                let from = inputs[0].level;
                assert_eq!(inputs, &all_files(&v, from));
                assert_eq!(*output_level, (from + 1).min(2));
            }
            // Manual compaction holds the compaction lock: nothing is busy.
            v.levels.iter_mut().flat_map(|l| &mut l.runs).flat_map(|r| &mut r.files).for_each(|f| {
                f.being_compacted = false;
            });
            let (a, b) = (rng.gen_range(0u64..1000), rng.gen_range(0u64..1000));
            let (lo, hi) = (a.min(b).to_be_bytes(), a.max(b).to_be_bytes());
            let level = rng.gen_range(0..2);
            let range = ManualRange { start: Some(&lo), end: Some(&hi) };
            if let Some(pick) = p.compact_range(&v, level, &range) {
                manual += 1;
                validate_task(&v, &pick.task).unwrap_or_else(|e| panic!("{e}: {pick:?}\n{v:?}"));
                assert_ordered(&v, &pick.task);
            }
        }
        assert!(picks > 50 && manual > 100, "{picks} picks, {manual} manual picks");
    }

    /// The new run is the newest of its level: no file left behind in the
    /// source levels may hold a key of an input (it would sit above or below
    /// the moved version in the wrong order).
    fn assert_ordered(v: &LsmView, task: &CompactionTask) {
        let CompactionTask::Merge { inputs, output_level, .. } = task else { panic!("{task:?}") };
        for level in [output_level - 1, *output_level] {
            let moved: Vec<_> =
                inputs.iter().filter(|r| r.level == level).filter_map(|r| v.file(r)).collect();
            for run in &v.levels[level].runs {
                for f in &run.files {
                    if inputs.contains(&FileRef { level, run: run.id, file: f.id }) {
                        continue;
                    }
                    let hit = moved.iter().find(|m| m.overlaps(&f.smallest, &f.largest));
                    assert!(hit.is_none(), "L{level} file {} left beside moved {hit:?}: {task:?}", f.id);
                }
            }
        }
    }

    #[test]
    fn simulated_tiering_keeps_data_and_writes_less_than_leveling() {
        let shape = LeveledConfig {
            num_levels: 4,
            l0_trigger: 4,
            max_bytes_for_level_base: 1 << 20,
            multiplier: 4.0,
            target_file_size: 200 << 10,
        };
        let cfg = SimConfig {
            num_ops: 400_000,
            key_space: 200_000,
            entry_size: 100,
            memtable_entries: 1000,
            seed: 7,
            sequential: false,
            idle_every: 0,
        };
        let tiered = simulate(&TieredPolicy::new(shape.clone()).unwrap(), &cfg).unwrap();
        let leveled = simulate(&LeveledPolicy::new(shape).unwrap(), &cfg).unwrap();
        println!("{tiered}\n{leveled}");
        assert!(tiered.write_amplification < leveled.write_amplification * 0.75, "{tiered}\n{leveled}");
        assert!(tiered.levels[3].runs > 0, "the tree reached the last level: {tiered}");
        assert!(tiered.levels[0].runs < 4, "{tiered}");
        assert!(tiered.levels[1..].iter().all(|l| l.runs < 4), "{tiered}");
    }

    /// Small shapes and workloads, sequential and random: the simulator reads
    /// every key back at its newest version.
    #[test]
    fn varied_shapes_keep_data_in_the_simulator() {
        for seed in 0..12u64 {
            let p = TieredPolicy::new(LeveledConfig {
                num_levels: 2 + (seed % 4) as usize,
                l0_trigger: 1 + (seed % 3) as usize,
                max_bytes_for_level_base: 1000,
                multiplier: 2.0 + (seed % 5) as f64,
                target_file_size: 150 + seed * 90,
            })
            .unwrap();
            let c = SimConfig {
                num_ops: 3_000,
                key_space: 200 + seed * 150,
                entry_size: 10,
                memtable_entries: 50 + seed * 10,
                seed,
                sequential: seed % 3 == 0,
                idle_every: 0,
            };
            simulate(&p, &c).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
    }
}
