//! bLSM's two-part levels (the bLSM paper; dLSM's two-phase compaction; the
//! structure LSbM builds on, and one of the LSbM paper's baselines).
//!
//! Every level `i >= 1` has up to two data runs: `C_i` receives merges from
//! above, `C'_i` (the previous, full `C_i`) drains into `C_{i+1}` one file at a
//! time, smallest keys first. Whenever the level is full (`|C_i| + |C'_i| >=
//! S_i`) one more unit of `C'_i` is pushed down — a drain step. When the level
//! is full and `C'_i` is empty, the round turns over: `C_i` becomes `C'_i` (a
//! metadata-only state change) and the next merge from above starts a new
//! `C_i`. Level 0 holds flushed runs and merges into `C_1` by file count.
//!
//! Scheduling is LevelDB's, as dLSM builds its two-phase levels on (its paper's
//! related work): the most overfull part goes first, and writes are slowed only by L0
//! files and memtables, so a level may grow past `S_i` under a burst and is
//! brought back when writes slow down. bLSM's own spring-and-gear scheduler,
//! which paces merges to hold every level at its capacity, is not built.
//!
//! Persistent state (in the MANIFEST): the run id of each level's `C'_i`.

use super::capacity;
use super::leveled::LeveledConfig;
use super::manual::{self, ManualRange};
use super::policy::{
    key_range, CompactionPolicy, CompactionTask, FileRef, FileView, LevelView, LsmView, PickResult,
    RunTarget, RunView,
};
use crate::error::Result;
use crate::util::coding::{put_varint64, Reader};

/// State format version, so a future layout can be told apart.
const STATE_VERSION: u8 = 1;

/// The bLSM policy. Shape parameters are leveling's (`LeveledConfig`).
#[derive(Debug, Clone)]
pub struct BlsmPolicy {
    pub(crate) cfg: LeveledConfig,
    /// Output files are cut at this size.
    file_size: u64,
    /// A drain step takes consecutive `C'_i` files up to this many bytes (a
    /// super-file when it is several files).
    drain_unit: u64,
}

/// Per level, the run id of `C'_i` (the draining part), if a round is under way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlsmState {
    /// Indexed by level; `None` when the level has no draining part.
    pub draining: Vec<Option<u64>>,
}

impl BlsmState {
    /// Encodes the state for the MANIFEST.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![STATE_VERSION];
        put_varint64(&mut out, self.draining.len() as u64);
        for d in &self.draining {
            put_varint64(&mut out, d.map_or(0, |id| id + 1));
        }
        out
    }

    /// Decodes a state blob; an unknown or damaged blob yields `None` (the
    /// policy then re-derives the roles from the tree, which is always safe).
    pub fn decode(data: &[u8]) -> Option<Self> {
        let mut r = Reader::new(data);
        if r.u8()? != STATE_VERSION {
            return None;
        }
        let n = usize::try_from(r.varint64()?).ok()?;
        let mut draining = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            draining.push(r.varint64()?.checked_sub(1));
        }
        r.is_empty().then_some(BlsmState { draining })
    }

    fn get(&self, level: usize) -> Option<u64> {
        self.draining.get(level).copied().flatten()
    }
}

impl BlsmPolicy {
    /// A bLSM policy with the given shape.
    pub fn new(cfg: LeveledConfig) -> Result<Self> {
        cfg.validate()?;
        let size = cfg.target_file_size;
        Ok(BlsmPolicy { cfg, file_size: size, drain_unit: size })
    }

    /// Super-files (LSbM paper §4.3): output files of `target_file_size /
    /// parts`, drained `parts` at a time as one unit, so compaction works in
    /// big units while the buffer's trim works on small files.
    pub fn with_super_files(mut self, parts: u64) -> Self {
        let parts = parts.max(1);
        self.file_size = (self.cfg.target_file_size / parts).max(1);
        self.drain_unit = self.cfg.target_file_size;
        self
    }

    /// Capacity `S_i` of level `i >= 1`.
    pub(crate) fn capacity(&self, level: usize) -> u64 {
        capacity::target_bytes(self.cfg.max_bytes_for_level_base, self.cfg.multiplier, level)
    }

    pub(crate) fn state(view: &LsmView) -> BlsmState {
        view.policy_state.as_deref().and_then(BlsmState::decode).unwrap_or_default()
    }

    /// `C'_i`: the recorded draining run if it still exists; otherwise, when a
    /// level holds several runs (e.g. written by another policy), its oldest.
    pub(crate) fn draining_run<'a>(level: &'a LevelView, state: &BlsmState, i: usize) -> Option<&'a RunView> {
        if let Some(id) = state.get(i) {
            if let Some(r) = level.runs.iter().find(|r| r.id == id && !r.files.is_empty()) {
                return Some(r);
            }
        }
        (level.runs.len() > 1).then(|| level.runs.last()).flatten()
    }

    /// `C_i`: the newest run that is not draining.
    pub(crate) fn receiving_run<'a>(
        level: &'a LevelView,
        state: &BlsmState,
        i: usize,
    ) -> Option<&'a RunView> {
        let draining = Self::draining_run(level, state, i).map(|r| r.id);
        level.runs.iter().find(|r| Some(r.id) != draining)
    }

    fn target_of(level: &LevelView, state: &BlsmState, i: usize) -> RunTarget {
        Self::receiving_run(level, state, i).map_or(RunTarget::New, |r| RunTarget::Existing(r.id))
    }

    /// L0 -> `C_1`: every flushed run plus the overlapping files of `C_1`.
    fn pick_l0(&self, view: &LsmView, state: &BlsmState) -> Option<CompactionTask> {
        let l0 = view.levels.first()?;
        let l1 = view.levels.get(1)?;
        if l0.any_busy() {
            return None;
        }
        let mut inputs: Vec<FileRef> = Vec::new();
        let (mut lo, mut hi): (Option<&[u8]>, Option<&[u8]>) = (None, None);
        for run in &l0.runs {
            for f in &run.files {
                inputs.push(FileRef { level: 0, run: run.id, file: f.id });
                lo = Some(lo.map_or(f.smallest.as_slice(), |l| l.min(f.smallest.as_slice())));
                hi = Some(hi.map_or(f.largest.as_slice(), |h| h.max(f.largest.as_slice())));
            }
        }
        let (lo, hi) = (lo?, hi?);
        let target = Self::target_of(l1, state, 1);
        if let RunTarget::Existing(id) = target {
            let run = l1.run(id)?;
            let overlap = run.overlapping(lo, hi);
            if overlap.iter().any(|f| f.being_compacted) {
                return None;
            }
            inputs.extend(overlap.iter().map(|f| FileRef { level: 1, run: id, file: f.id }));
        }
        Some(CompactionTask::Merge {
            inputs,
            output_level: 1,
            output_run: target,
            target_file_size: self.file_size,
            reason: "blsm: L0 into C1",
        })
    }

    /// One drain step of a full level `i`: turn the round over, or push the
    /// smallest unit of `C'_i` into `C_{i+1}`.
    fn pick_level(&self, view: &LsmView, state: &BlsmState, i: usize) -> Option<PickResult> {
        let level = view.levels.get(i)?;
        let next = view.levels.get(i + 1)?;
        let score = level.bytes() as f64 / self.capacity(i).max(1) as f64;
        let Some(draining) = Self::draining_run(level, state, i) else {
            let receiving = level.runs.first()?;
            let mut new_state = state.clone();
            new_state.draining.resize(view.levels.len().max(new_state.draining.len()), None);
            new_state.draining[i] = Some(receiving.id);
            return Some(PickResult {
                task: CompactionTask::UpdateState { reason: "blsm: round turnover" },
                compact_pointer: None,
                score,
                policy_state: Some(new_state.encode()),
                buffer: Vec::new(),
            });
        };
        // The drain unit: consecutive smallest files up to `drain_unit` bytes.
        let mut unit: Vec<&FileView> = Vec::new();
        let mut bytes = 0;
        for f in &draining.files {
            if f.being_compacted || (!unit.is_empty() && bytes + f.size > self.drain_unit) {
                break;
            }
            bytes += f.size;
            unit.push(f);
        }
        let fa = *unit.first()?;
        let sources = |unit: &[&FileView]| -> Vec<FileRef> {
            unit.iter().map(|f| FileRef { level: i, run: draining.id, file: f.id }).collect()
        };
        let task = match Self::target_of(next, state, i + 1) {
            RunTarget::Existing(id) => {
                let run = next.run(id)?;
                if run.overlapping(&fa.smallest, &fa.largest).is_empty() {
                    let source = FileRef { level: i, run: draining.id, file: fa.id };
                    CompactionTask::Move { file: source, to_level: i + 1, to_run: RunTarget::Existing(id) }
                } else {
                    let (lo, hi) = key_range(unit.iter().copied())?;
                    let overlap = run.overlapping(lo, hi);
                    if overlap.iter().any(|f| f.being_compacted) {
                        return None;
                    }
                    let mut inputs = sources(&unit);
                    inputs.extend(overlap.iter().map(|f| FileRef { level: i + 1, run: id, file: f.id }));
                    CompactionTask::Merge {
                        inputs,
                        output_level: i + 1,
                        output_run: RunTarget::Existing(id),
                        target_file_size: self.file_size,
                        reason: "blsm: C' into next C",
                    }
                }
            }
            RunTarget::New => CompactionTask::Move {
                file: FileRef { level: i, run: draining.id, file: fa.id },
                to_level: i + 1,
                to_run: RunTarget::New,
            },
        };
        Some(PickResult { task, compact_pointer: None, score, policy_state: None, buffer: Vec::new() })
    }
}

impl BlsmPolicy {
    /// One bLSM decision with the given state (LSbM runs bLSM with its own).
    pub(crate) fn pick_with(&self, view: &LsmView, state: &BlsmState) -> Option<PickResult> {
        // The most overfull part goes first, as in leveling: a level that is
        // always "L0 first" would let a busy L0 starve `C'_1` and grow L1
        // without bound (seen on a slow CI machine).
        let scores = self.scores(view);
        let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] >= 1.0).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        order.into_iter().find_map(|i| {
            let level = view.levels.get(i)?;
            if i == 0 {
                let task = self.pick_l0(view, state)?;
                return Some(PickResult {
                    task,
                    compact_pointer: None,
                    score: scores[0],
                    policy_state: None,
                    buffer: Vec::new(),
                });
            }
            if level.any_busy() {
                return None;
            }
            self.pick_level(view, state, i)
        })
    }
}

impl BlsmPolicy {
    /// Idle compaction under `state` (LSbM passes the bLSM part of its own):
    /// the drain step of the shallowest level above the deepest holding data,
    /// whatever its fill — L0 into `C_1`, a round turnover, or a drain step of
    /// `C'_i` — so idle work moves data as a full level would.
    pub(crate) fn idle_pick_with(&self, view: &LsmView, state: &BlsmState) -> Option<PickResult> {
        let (from, _) = view.idle_levels()?;
        if from == 0 {
            return Some(PickResult::task(self.pick_l0(view, state)?, 0.0));
        }
        self.pick_level(view, state, from)
    }

    /// Manual compaction under `state` (LSbM passes the bLSM part of its own
    /// state): into `C_{i+1}`, never the draining `C'_{i+1}` (whose files the
    /// drain steps are pushing down), cut in super-file parts like every bLSM merge.
    pub(crate) fn compact_range_with(
        &self,
        view: &LsmView,
        state: &BlsmState,
        level: usize,
        range: &ManualRange<'_>,
    ) -> Option<PickResult> {
        let next = view.level(level + 1)?;
        let output = Self::target_of(next, state, level + 1);
        manual::merge_into(view, level, range, output, self.file_size, "blsm: manual compaction")
    }
}

impl CompactionPolicy for BlsmPolicy {
    fn name(&self) -> &str {
        "blsm"
    }

    fn num_levels(&self) -> usize {
        self.cfg.num_levels
    }

    fn pick(&self, view: &LsmView) -> Option<PickResult> {
        self.pick_with(view, &Self::state(view))
    }

    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult> {
        self.compact_range_with(view, &Self::state(view), level, range)
    }

    fn idle_pick(&self, view: &LsmView) -> Option<PickResult> {
        self.idle_pick_with(view, &Self::state(view))
    }

    fn scores(&self, view: &LsmView) -> Vec<f64> {
        let last = self.cfg.num_levels.saturating_sub(1);
        (0..self.cfg.num_levels)
            .map(|i| match view.levels.get(i) {
                None => 0.0,
                Some(l) if i == 0 => l.runs.len() as f64 / self.cfg.l0_trigger as f64,
                Some(_) if i == last => 0.0,
                Some(l) => l.bytes() as f64 / self.capacity(i).max(1) as f64,
            })
            .collect()
    }

    fn level_target_bytes(&self, _view: &LsmView, level: usize) -> Option<u64> {
        (level > 0).then(|| self.capacity(level))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::policy::tests::fv as file;
    use crate::compaction::policy::{validate_task, FileView};
    use crate::compaction::sim::{simulate, SimConfig};

    fn cfg() -> LeveledConfig {
        LeveledConfig {
            num_levels: 4,
            l0_trigger: 2,
            max_bytes_for_level_base: 100,
            multiplier: 10.0,
            target_file_size: 40,
        }
    }

    fn run(id: u64, files: Vec<FileView>) -> RunView {
        RunView { id, files }
    }

    fn view(levels: Vec<Vec<RunView>>, state: Option<BlsmState>) -> LsmView {
        let mut v = LsmView::new(4);
        for (i, runs) in levels.into_iter().enumerate() {
            v.levels[i].runs = runs;
        }
        v.policy_state = state.map(|s| s.encode());
        v
    }

    #[test]
    fn state_round_trips_and_garbage_is_ignored() {
        let s = BlsmState { draining: vec![None, Some(7), None, Some(0)] };
        assert_eq!(BlsmState::decode(&s.encode()), Some(s.clone()));
        assert_eq!(BlsmState::decode(&[]), None);
        assert_eq!(BlsmState::decode(&[9, 1, 0]), None);
        let mut bytes = s.encode();
        bytes.push(0);
        assert_eq!(BlsmState::decode(&bytes), None, "trailing bytes");
        for cut in 0..s.encode().len() {
            let _ = BlsmState::decode(&s.encode()[..cut]);
        }
    }

    #[test]
    fn l0_merges_into_the_receiving_run_not_the_draining_one() {
        let p = BlsmPolicy::new(cfg()).unwrap();
        let state = BlsmState { draining: vec![None, Some(5)] };
        let v = view(
            vec![
                vec![run(20, vec![file(1, 0, 50, 10)]), run(19, vec![file(2, 10, 60, 10)])],
                vec![run(6, vec![file(3, 0, 30, 20), file(4, 70, 90, 20)]), run(5, vec![file(8, 0, 99, 30)])],
            ],
            Some(state),
        );
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let CompactionTask::Merge { inputs, output_run, .. } = pick.task else { panic!("{pick:?}") };
        assert_eq!(output_run, RunTarget::Existing(6));
        let ids: Vec<u64> = inputs.iter().map(|r| r.file).collect();
        assert_eq!(ids, vec![1, 2, 3], "C'_1 (run 5) is never an input of an L0 merge");
    }

    /// Regression (manual compaction wrote into whatever run was newest, which
    /// can be the draining `C'`, and cut files at the full target size).
    #[test]
    fn manual_compaction_goes_into_the_receiving_run_in_parts() {
        let p = BlsmPolicy::new(cfg()).unwrap().with_super_files(4);
        let range = ManualRange::default();
        // Level 1 has only its draining run: the output is a new `C_1`.
        let v = view(
            vec![vec![run(20, vec![file(1, 0, 50, 10)])], vec![run(5, vec![file(8, 0, 99, 30)])]],
            Some(BlsmState { draining: vec![None, Some(5)] }),
        );
        let pick = p.compact_range(&v, 0, &range).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let CompactionTask::Merge { inputs, output_run, target_file_size, .. } = pick.task else { panic!() };
        assert_eq!((output_run, target_file_size), (RunTarget::New, 10));
        assert_eq!(inputs.iter().map(|r| r.file).collect::<Vec<_>>(), vec![1]);
        // With a receiving run, into it, with its overlaps; never C'_1's files.
        let v = view(
            vec![
                vec![run(20, vec![file(1, 0, 50, 10)])],
                vec![run(6, vec![file(3, 0, 30, 20), file(4, 70, 90, 20)]), run(5, vec![file(8, 0, 99, 30)])],
            ],
            Some(BlsmState { draining: vec![None, Some(5)] }),
        );
        let pick = p.compact_range(&v, 0, &range).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let CompactionTask::Merge { inputs, output_run, .. } = pick.task else { panic!() };
        assert_eq!(output_run, RunTarget::Existing(6));
        assert_eq!(inputs.iter().map(|r| r.file).collect::<Vec<_>>(), vec![1, 3]);
        // Level 1 -> 2 takes both parts of level 1.
        let pick = p.compact_range(&v, 1, &range).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let CompactionTask::Merge { inputs, output_level, .. } = pick.task else { panic!() };
        assert_eq!((output_level, inputs.len()), (2, 3));
    }

    #[test]
    fn full_level_turns_over_then_drains_smallest_first() {
        let p = BlsmPolicy::new(cfg()).unwrap();
        // Level 1 full (capacity 100) with a single run and no draining part.
        let l1 = vec![run(3, vec![file(1, 0, 9, 40), file(2, 10, 19, 40), file(3, 20, 29, 40)])];
        let v = view(vec![vec![], l1.clone(), vec![run(9, vec![file(7, 5, 15, 30)])]], None);
        let pick = p.pick(&v).unwrap();
        assert_eq!(pick.task, CompactionTask::UpdateState { reason: "blsm: round turnover" });
        let state = BlsmState::decode(pick.policy_state.as_deref().unwrap()).unwrap();
        assert_eq!(state.get(1), Some(3));
        // Now the same run is C'_1: its smallest file merges with what overlaps in C_2.
        let v = view(vec![vec![], l1, vec![run(9, vec![file(7, 5, 15, 30)])]], Some(state.clone()));
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let CompactionTask::Merge { inputs, output_level, output_run, .. } = pick.task else { panic!() };
        assert_eq!((output_level, output_run), (2, RunTarget::Existing(9)));
        assert_eq!(inputs.iter().map(|r| r.file).collect::<Vec<_>>(), vec![1, 7]);
        // No overlap below: a trivial move.
        let l1 = vec![run(3, vec![file(2, 10, 19, 40), file(3, 20, 29, 40), file(4, 30, 39, 40)])];
        let v = view(vec![vec![], l1, vec![run(9, vec![file(7, 50, 60, 30)])]], Some(state));
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        assert!(matches!(pick.task, CompactionTask::Move { file: FileRef { file: 2, .. }, to_level: 2, .. }));
    }

    #[test]
    fn merges_from_above_start_a_new_receiving_run_during_a_round() {
        let p = BlsmPolicy::new(cfg()).unwrap();
        let state = BlsmState { draining: vec![None, Some(3)] };
        let v = view(
            vec![
                vec![run(30, vec![file(1, 0, 9, 5)]), run(31, vec![file(2, 0, 9, 5)])],
                vec![run(3, vec![file(9, 0, 9, 50)])],
            ],
            Some(state),
        );
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        let CompactionTask::Merge { output_run, inputs, .. } = pick.task else { panic!() };
        assert_eq!(output_run, RunTarget::New, "C_1 does not exist yet: a new run, newer than C'_1");
        assert_eq!(inputs.len(), 2);
    }

    #[test]
    fn a_busy_l0_does_not_starve_an_overfull_level_1() {
        let p = BlsmPolicy::new(cfg()).unwrap();
        // L0 at 1.5x its trigger, L1 at 3x its capacity: L1 drains first.
        let l0 = vec![
            run(30, vec![file(1, 0, 9, 5)]),
            run(31, vec![file(2, 0, 9, 5)]),
            run(32, vec![file(3, 0, 9, 5)]),
        ];
        let l1 = vec![run(3, vec![file(9, 0, 9, 150), file(10, 10, 19, 150)])];
        let state = BlsmState { draining: vec![None, Some(3)] };
        let v = view(vec![l0.clone(), l1, vec![]], Some(state.clone()));
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        assert!(
            matches!(pick.task, CompactionTask::Move { file: FileRef { file: 9, .. }, to_level: 2, .. }),
            "{pick:?}"
        );
        // Once L1 is back under capacity, L0 goes again.
        let v = view(vec![l0, vec![run(3, vec![file(10, 10, 19, 50)])], vec![]], Some(state));
        assert!(matches!(p.pick(&v).unwrap().task, CompactionTask::Merge { output_level: 1, .. }));
    }

    #[test]
    fn not_full_levels_and_the_last_level_are_left_alone() {
        let p = BlsmPolicy::new(cfg()).unwrap();
        let v = view(
            vec![
                vec![],
                vec![run(3, vec![file(1, 0, 9, 99)])],
                vec![],
                vec![run(4, vec![file(2, 0, 9, 1 << 40)])],
            ],
            None,
        );
        assert_eq!(p.pick(&v), None);
        assert_eq!(p.scores(&v)[3], 0.0);
        assert!(p.scores(&v)[1] > 0.98);
    }

    #[test]
    fn drain_steps_keep_levels_near_capacity_and_data_intact_in_the_simulator() {
        let p = BlsmPolicy::new(LeveledConfig {
            num_levels: 5,
            l0_trigger: 4,
            max_bytes_for_level_base: 1 << 20,
            multiplier: 10.0,
            target_file_size: 200 << 10,
        })
        .unwrap();
        let report = simulate(
            &p,
            &SimConfig {
                num_ops: 400_000,
                key_space: 200_000,
                entry_size: 100,
                memtable_entries: 1000,
                seed: 7,
                sequential: false,
                idle_every: 0,
            },
        )
        .unwrap();
        println!("{report}");
        assert!(report.tasks.state_updates > 0, "rounds turned over: {report}");
        assert!(report.write_amplification > 2.0 && report.write_amplification < 30.0, "{report}");
        for (i, l) in report.levels.iter().enumerate().skip(1).take(2) {
            let cap = (1u64 << 20) as f64 * 10f64.powi(i as i32 - 1);
            assert!((l.bytes as f64) < cap * 1.5, "level {i} far over its capacity once settled: {report}");
        }
    }
}
