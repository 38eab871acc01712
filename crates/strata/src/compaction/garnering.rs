//! Garnering (the Autumn paper): leveling whose level ratios grow with the data. Only the ratio
//! between the last two levels in use is `T`; each ratio above is larger by `1/c`:
//!
//! ```text
//! C_i / C_{i-1} = T / c^(L-i)      C_i = B * T^(i-1) / c^((i-1)(2L-i-2)/2)
//! ```
//!
//! with `B` the capacity of level 1 and `L` the number of levels in use, so the tree needs
//! O(sqrt(log N)) levels instead of O(log N). `c = 1` is plain leveling.
//!
//! **Delayed last-level compaction.** When the most urgent level is the deepest in use, it is not
//! merged into a new level: `L` grows by one (a state-only task), every capacity grows, and the next
//! pick compacts whatever still scores >= 1 under the new shape.
//!
//! `L` is persistent policy state (MANIFEST), read back on open. It never comes down by itself: a
//! tree that shrinks through deletes keeps the shape it grew to, as a leveled tree keeps its
//! deepest level; deeper levels simply hold less. Picking, trivial moves, L0, tombstones and
//! manual compaction are leveling's ([`LeveledPolicy`]); only the scores differ.

use crate::compaction::leveled::{LeveledConfig, LeveledPolicy};
use crate::compaction::manual::ManualRange;
use crate::compaction::policy::{CompactionPolicy, CompactionTask, LsmView, PickResult};
use crate::error::{Error, Result};

/// Marks a Garnering state blob, so a state left by another policy is not misread.
const STATE_MAGIC: &[u8; 4] = b"GRN1";

/// The Garnering policy over leveling's shape options (`T` = `max_bytes_for_level_multiplier`).
#[derive(Clone, Debug)]
pub struct GarneringPolicy {
    leveled: LeveledPolicy,
    c: f64,
}

impl GarneringPolicy {
    /// Builds the policy; `c` must be in (0, 1].
    pub fn new(cfg: LeveledConfig, c: f64) -> Result<Self> {
        if !(c > 0.0 && c <= 1.0) {
            return Err(Error::invalid(format!("garnering: c {c} must be in (0, 1]")));
        }
        Ok(GarneringPolicy { leveled: LeveledPolicy::new(cfg)?, c })
    }

    /// The growth constant `c`.
    pub fn c(&self) -> f64 {
        self.c
    }

    fn cfg(&self) -> &LeveledConfig {
        self.leveled.config()
    }

    /// Capacity of `level` (>= 1) in bytes when `levels` levels are in use.
    pub fn capacity(&self, level: usize, levels: usize) -> f64 {
        let cfg = self.cfg();
        let i = level.max(1) as f64;
        let l = levels.max(1) as f64;
        let growth = (i - 1.0) * (2.0 * l - i - 2.0) / 2.0;
        cfg.max_bytes_for_level_base as f64 * cfg.multiplier.powf(i - 1.0) / self.c.powf(growth)
    }

    /// `L`: the recorded level count, never less than the deepest level holding data, at least 1
    /// and at most the last level.
    pub fn levels_in_use(&self, view: &LsmView) -> usize {
        let recorded = view.policy_state.as_deref().and_then(decode_state).unwrap_or(1);
        let deepest = (1..view.levels.len()).rev().find(|&l| view.level_bytes(l) > 0).unwrap_or(1);
        recorded.max(deepest).clamp(1, self.cfg().num_levels - 1)
    }

    fn scores_for(&self, view: &LsmView, levels: usize) -> Vec<f64> {
        let cfg = self.cfg();
        (0..cfg.num_levels)
            .map(|level| match level {
                _ if level + 1 >= cfg.num_levels => 0.0,
                0 => view.num_runs(0) as f64 / cfg.l0_trigger as f64,
                _ => view.level_bytes(level) as f64 / self.capacity(level, levels),
            })
            .collect()
    }
}

/// The state blob: magic, then `L` as u32 little-endian.
pub(crate) fn encode_state(levels: usize) -> Vec<u8> {
    let mut v = STATE_MAGIC.to_vec();
    v.extend_from_slice(&u32::try_from(levels).unwrap_or(u32::MAX).to_le_bytes());
    v
}

/// `L` from a state blob, or None if the blob is not Garnering's.
pub(crate) fn decode_state(blob: &[u8]) -> Option<usize> {
    let rest = blob.strip_prefix(STATE_MAGIC)?;
    let bytes: [u8; 4] = rest.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(bytes)).ok()
}

impl CompactionPolicy for GarneringPolicy {
    fn name(&self) -> &str {
        "garnering"
    }

    /// Leveling's: picks skip busy files and any merge that would need one.
    fn inner(&self) -> Option<&dyn CompactionPolicy> {
        Some(&self.leveled)
    }

    fn num_levels(&self) -> usize {
        self.cfg().num_levels
    }

    fn pick(&self, view: &LsmView) -> Option<PickResult> {
        let levels = self.levels_in_use(view);
        let scores = self.scores_for(view, levels);
        // The most urgent level; ties go to the shallower one, as in leveling's order.
        let top =
            scores.iter().enumerate().filter(|&(_, &s)| s >= 1.0).fold(None, |best, (l, &s)| match best {
                Some((_, bs)) if bs >= s => best,
                _ => Some((l, s)),
            });
        if let Some((level, score)) = top {
            if level >= 1 && level == levels && levels + 1 < self.cfg().num_levels {
                return Some(PickResult {
                    task: CompactionTask::UpdateState { reason: "garnering: one more level in use" },
                    compact_pointer: None,
                    score,
                    policy_state: Some(encode_state(levels + 1)),
                    buffer: Vec::new(),
                });
            }
        }
        // Record `L` with the first task of a tree that has none yet (or another policy's), so a
        // reopen never derives a smaller shape from a tree that has drained downwards.
        let mut res = self.leveled.pick_by_scores(view, scores)?;
        if view.policy_state.as_deref().and_then(decode_state) != Some(levels) {
            res.policy_state = Some(encode_state(levels));
        }
        Some(res)
    }

    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult> {
        self.leveled.compact_range(view, level, range)
    }

    /// Leveling's rule, never deeper than `L`: a flush does not open a level
    /// (the level count grows only by the delayed last-level compaction).
    fn flush_level(
        &self,
        view: &LsmView,
        smallest: &[u8],
        largest: &[u8],
        bytes: u64,
        max_level: usize,
    ) -> usize {
        let max_level = max_level.min(self.levels_in_use(view));
        self.leveled.flush_level(view, smallest, largest, bytes, max_level)
    }

    fn scores(&self, view: &LsmView) -> Vec<f64> {
        self.scores_for(view, self.levels_in_use(view))
    }

    /// `C_level / C_(level-1) = T / c^(L-level)` for the levels in use (so
    /// Monkey sizes the full tree by Garnering's capacities, as Autumn does);
    /// `T` below them.
    fn full_level_ratio(&self, view: &LsmView, level: usize) -> Option<f64> {
        let levels = self.levels_in_use(view);
        let t = self.cfg().multiplier;
        match level {
            0 => None,
            l if l > levels => Some(t),
            l => Some(t / self.c.powi(i32::try_from(levels - l).unwrap_or(i32::MAX))),
        }
    }

    fn level_target_bytes(&self, view: &LsmView, level: usize) -> Option<u64> {
        if level == 0 || level >= self.cfg().num_levels {
            return None;
        }
        // A level below the last in use is empty; show what it will hold once it is the last
        // (the formula under the current `L` shrinks past it). `as` saturates beyond u64.
        let levels = self.levels_in_use(view).max(level);
        Some(self.capacity(level, levels) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::policy::tests::fv;
    use crate::compaction::policy::{validate_task, RunView};
    use crate::compaction::sim::{simulate, SimConfig};

    const MIB: f64 = (1u64 << 20) as f64;

    fn shape(levels: usize, base: u64, t: f64) -> LeveledConfig {
        LeveledConfig {
            num_levels: levels,
            l0_trigger: 4,
            max_bytes_for_level_base: base,
            multiplier: t,
            target_file_size: 100,
        }
    }

    #[test]
    fn capacities_match_the_worked_example() {
        // T = 3, c = 0.8, B = 10 MiB, L = 5: 10, 58.6, 274.7, 1030, 3090 MiB.
        let p = GarneringPolicy::new(shape(7, 10 << 20, 3.0), 0.8).unwrap();
        let got: Vec<f64> = (1..=5).map(|i| p.capacity(i, 5) / MIB).collect();
        for (g, want) in got.iter().zip([10.0, 58.6, 274.7, 1030.0, 3090.0]) {
            assert!((g - want).abs() / want < 0.001, "{got:?}");
        }
        // Only the last ratio is T; each one above is 1/c larger.
        for i in 2..=5 {
            let ratio = p.capacity(i, 5) / p.capacity(i - 1, 5);
            assert!((ratio - 3.0 / 0.8f64.powi(5 - i as i32)).abs() < 1e-9);
        }
    }

    #[test]
    fn c_of_one_is_leveling() {
        let p = GarneringPolicy::new(shape(7, 1000, 10.0), 1.0).unwrap();
        let leveled = LeveledPolicy::new(shape(7, 1000, 10.0)).unwrap();
        let v = LsmView::new(7);
        for levels in 1..6 {
            for i in 1..6 {
                assert_eq!(p.capacity(i, levels), 1000.0 * 10f64.powi(i as i32 - 1));
                let want = leveled.level_target_bytes(&v, i);
                assert_eq!(GarneringPolicy::level_target_bytes(&p, &v, i), want);
            }
        }
    }

    #[test]
    fn levels_below_the_last_in_use_report_their_capacity_as_the_last() {
        // T = 3, c = 0.5, B = 1000, L = 2. Under L = 2 the formula would give C_4 = 3375,
        // less than C_3 = 4500; reported is each level's capacity once it is the last in use.
        let p = GarneringPolicy::new(shape(6, 1000, 3.0), 0.5).unwrap();
        let mut v = LsmView::new(6);
        v.policy_state = Some(encode_state(2));
        assert_eq!(p.level_target_bytes(&v, 2), Some(3000));
        let t3 = p.level_target_bytes(&v, 3).unwrap();
        let t4 = p.level_target_bytes(&v, 4).unwrap();
        assert_eq!(t4, p.capacity(4, 4) as u64);
        assert_eq!(t3, p.capacity(3, 3) as u64);
        assert!(t4 > t3 && t3 > 3000, "targets grow downwards: {t3} {t4}");
    }

    #[test]
    fn flushes_never_open_a_level() {
        let p = GarneringPolicy::new(shape(6, 1000, 3.0), 0.8).unwrap();
        let mut v = LsmView::new(6);
        let (lo, hi) = (5u64.to_be_bytes(), 9u64.to_be_bytes());
        assert_eq!(p.flush_level(&v, &lo, &hi, 10, 2), 1, "L = 1: leveling would say 2");
        v.policy_state = Some(encode_state(3));
        assert_eq!(p.flush_level(&v, &lo, &hi, 10, 2), 2);
        v.levels[3].runs = vec![RunView { id: 1, files: vec![fv(1, 0, 100, 10)] }];
        assert_eq!(p.flush_level(&v, &lo, &hi, 10, 5), 2, "L3 holds the range");
        assert_eq!(p.flush_level(&v, &lo, &hi, 10, 0), 0);
    }

    #[test]
    fn monkey_sizes_the_full_tree_by_garnering_s_ratios() {
        // T = 3, c = 0.8, L = 5 (the worked example): C_i / C_(i-1) = 3 / 0.8^(5-i).
        let p = GarneringPolicy::new(shape(6, 10 << 20, 3.0), 0.8).unwrap();
        let mut v = LsmView::new(6);
        v.policy_state = Some(encode_state(5));
        assert_eq!(p.full_level_ratio(&v, 0), None);
        for i in 2..=5 {
            let want = p.capacity(i, 5) / p.capacity(i - 1, 5);
            let got = p.full_level_ratio(&v, i).unwrap();
            assert!((got - want).abs() < 1e-9 * want, "level {i}: {got} != {want}");
        }
        assert!((p.full_level_ratio(&v, 5).unwrap() - 3.0).abs() < 1e-12, "the last ratio is T");
        assert!((p.full_level_ratio(&v, 1).unwrap() - 3.0 / 0.8f64.powi(4)).abs() < 1e-9);
        // With c = 1 it is leveling's constant ratio.
        let one = GarneringPolicy::new(shape(6, 10 << 20, 3.0), 1.0).unwrap();
        assert!((1..6).all(|i| one.full_level_ratio(&v, i) == Some(3.0)));
    }

    #[test]
    fn bad_c_is_rejected() {
        for c in [0.0, -0.5, 1.01, f64::NAN, f64::INFINITY] {
            assert!(GarneringPolicy::new(shape(5, 1000, 3.0), c).is_err(), "{c}");
        }
        assert!(GarneringPolicy::new(shape(1, 1000, 3.0), 0.5).is_err(), "leveling's checks apply");
    }

    #[test]
    fn state_round_trips_and_ignores_foreign_blobs() {
        assert_eq!(decode_state(&encode_state(4)), Some(4));
        assert_eq!(decode_state(b"GRN1\x01\x00"), None, "truncated");
        assert_eq!(decode_state(&[0, 1, 2, 3, 4, 5, 6, 7]), None, "another policy's state");
        let p = GarneringPolicy::new(shape(6, 1000, 3.0), 0.5).unwrap();
        let mut v = LsmView::new(6);
        v.policy_state = Some(vec![9, 9, 9]);
        assert_eq!(p.levels_in_use(&v), 1);
        v.levels[3].runs = vec![RunView { id: 1, files: vec![fv(1, 0, 9, 10)] }];
        assert_eq!(p.levels_in_use(&v), 3, "never less than the deepest level with data");
        v.policy_state = Some(encode_state(4));
        assert_eq!(p.levels_in_use(&v), 4);
        v.policy_state = Some(encode_state(99));
        assert_eq!(p.levels_in_use(&v), 5, "capped at the last level");
    }

    #[test]
    fn the_deepest_level_grows_the_tree_instead_of_moving_down() {
        // T = 3, c = 0.5, B = 1000. With L = 2: C1 = 1000, C2 = 3000. With L = 3: C2 = 6000.
        let p = GarneringPolicy::new(shape(6, 1000, 3.0), 0.5).unwrap();
        let mut v = LsmView::new(6);
        v.levels[1].runs = vec![RunView { id: 1, files: vec![fv(1, 0, 9, 500)] }];
        v.levels[2].runs = vec![RunView { id: 2, files: vec![fv(2, 0, 4, 2500), fv(3, 5, 9, 2500)] }];
        v.policy_state = Some(encode_state(2));
        assert_eq!(p.scores(&v)[2], 5000.0 / 3000.0);
        let pick = p.pick(&v).unwrap();
        assert_eq!(pick.task, CompactionTask::UpdateState { reason: "garnering: one more level in use" });
        assert_eq!(pick.policy_state.as_deref().and_then(decode_state), Some(3));
        // Under L = 3 the level fits (5000 < 6000): nothing to do, the merge was delayed.
        v.policy_state = pick.policy_state;
        assert_eq!(p.capacity(2, 3), 6000.0);
        assert!(p.pick(&v).is_none(), "{:?}", p.scores(&v));
        // Past the new capacity it is no longer the deepest level in use: it moves down.
        v.levels[2].runs[0].files.push(fv(4, 10, 19, 1500));
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        assert!(matches!(pick.task, CompactionTask::Move { to_level: 3, .. }), "{:?}", pick.task);
        assert_eq!(pick.policy_state, None, "L is already recorded");
    }

    #[test]
    fn the_first_task_records_the_level_count() {
        let p = GarneringPolicy::new(shape(6, 1000, 3.0), 0.5).unwrap();
        let mut v = LsmView::new(6);
        v.levels[0].runs = (0..4).map(|i| RunView { id: 10 + i, files: vec![fv(i, 0, 9, 10)] }).collect();
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        assert_eq!(pick.policy_state.as_deref().and_then(decode_state), Some(1));
    }

    fn sim_config(num_ops: u64, key_space: u64) -> SimConfig {
        SimConfig {
            num_ops,
            key_space,
            entry_size: 100,
            memtable_entries: 2000,
            seed: 11,
            sequential: false,
            idle_every: 0,
        }
    }

    #[test]
    fn simulated_c_of_one_ends_in_leveling_shape() {
        let s = LeveledConfig { target_file_size: 64 << 10, ..shape(6, 1 << 20, 4.0) };
        let cfg = sim_config(300_000, 400_000);
        let g = simulate(&GarneringPolicy::new(s.clone(), 1.0).unwrap(), &cfg).unwrap();
        let l = simulate(&LeveledPolicy::new(s).unwrap(), &cfg).unwrap();
        assert_eq!(g.levels, l.levels, "{g}\n{l}");
        assert_eq!(g.compaction_write_bytes, l.compaction_write_bytes);
        assert!(g.tasks.state_updates > 0, "the level count was recorded as it grew: {g}");
    }

    #[test]
    fn simulated_garnering_uses_fewer_levels() {
        let s = LeveledConfig { target_file_size: 64 << 10, ..shape(7, 1 << 20, 3.0) };
        // ~52 MiB of live data: five levels of 1, 3, 9, 27 MiB... under leveling, four under
        // Garnering (c = 0.8 gives level 4 52.7 MiB once four levels are in use).
        let cfg = sim_config(1_200_000, 600_000);
        let in_use =
            |r: &crate::compaction::sim::SimReport| r.levels.iter().rposition(|l| l.bytes > 0).unwrap_or(0);
        let l = simulate(&LeveledPolicy::new(s.clone()).unwrap(), &cfg).unwrap();
        for c in [0.8, 0.4] {
            let g = simulate(&GarneringPolicy::new(s.clone(), c).unwrap(), &cfg).unwrap();
            println!("c = {c}:\n{g}");
            assert!(in_use(&g) < in_use(&l), "c = {c}:\n{g}\nleveled:\n{l}");
        }
        println!("leveled:\n{l}");
    }
}
