//! LSbM (the LSbM paper's compaction buffer) and dLSM: bLSM's two-part levels plus
//! the compaction buffer.
//!
//! bLSM decides every merge; this policy adds the buffer actions:
//! - **buffered merge** (Algorithm 1): a drain step's source files — the same
//!   physical files, no I/O — are appended to table `B_{i+1}^0` of the
//!   receiving run (the table id is the draining run's id, so each round of
//!   level `i` starts a new table); L0 merges append each flushed run as a
//!   table of `B_1`;
//! - **round start**: `C_i` becomes `C'_i`, and its buffer `B_i` becomes `B'_i`
//!   simply by staying attached to the same run; `S'_i = |B'_i|` is recorded;
//! - **gradual removal**: after each drain, while `|B'_i| / S'_i > |C'_i| / S_i`,
//!   the `B'_i` file with the smallest largest key is removed;
//! - **freeze**: when a level ends a round smaller than the bytes merged into
//!   it during the round (repeated data), appends to its buffer stop until the
//!   level itself turns over; the executor marks the buffer instead;
//! - **caps**: at most 20 tables per buffer (3 at the configured last
//!   level), oldest dropped first;
//! - **trim** (Algorithm 2, LSbM only): every buffer file — except those the
//!   head table received since the previous trim, still warming up — with a
//!   cached-block fraction under the threshold is removed.
//!
//! - **idle** (the dLSM paper's aggressive compaction, with
//!   `Options::with_idle_compaction`): bLSM's drain step of the shallowest
//!   level holding data, whatever its fill, with the buffer actions of any
//!   drain step; once one level holds everything, the buffers' tables are
//!   dropped, oldest first, one per step.
//!
//! dLSM is the same without the trim and with no buffer at the last level
//! (the deepest holding data; its paper buffers levels `1..k-1`), with
//! bigger bloom filters on every level that feeds a buffer, paid for by the
//! levels that feed none (the tree keeps `bloom_bits_per_key` on average).
//!
//! Persistent state (in the MANIFEST): bLSM's draining runs, plus per level the
//! frozen flag, the bytes merged in this round, `S'_i`, and how many entries of
//! the head table the last trim saw.

use super::blsm::{BlsmPolicy, BlsmState};
use super::manual::ManualRange;
use super::policy::{
    BufferAction, BufferPolicy, BufferTableView, BufferView, CompactionPolicy, CompactionTask, FileRef,
    LsmView, PickResult, RunTarget,
};
use crate::util::coding::{put_length_prefixed, put_varint64, Reader};

/// State format tag; distinct from bLSM's (1), so a database switched between
/// the two policies starts from an empty state instead of misreading the blob.
const STATE_VERSION: u8 = b'L';
/// Tables per buffer above the last level (the paper's prototype).
const MAX_TABLES: usize = 20;
/// Tables per buffer at the last level.
const MAX_TABLES_LAST: usize = 3;

/// Which variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferVariant {
    /// LSbM: buffer plus trim.
    Lsbm,
    /// dLSM: buffer, no trim, bigger bloom filters.
    Dlsm,
}

/// The LSbM / dLSM policy.
#[derive(Debug, Clone)]
pub struct LsbmPolicy {
    blsm: BlsmPolicy,
    variant: BufferVariant,
    trim_threshold: f64,
    /// dLSM buffers its last level too (LSbM always does).
    last_level_buffer: bool,
}

/// Per-level buffer bookkeeping.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelState {
    /// Appends to this level's buffer are suspended (repeated data).
    pub frozen: bool,
    /// Bytes merged into the level since its last freeze check.
    pub round_in: u64,
    /// `S'_i`: bytes of `B'_i` when the level's round started.
    pub old_buffer_size: u64,
    /// `(run, table, entries)` of the head table at the last trim.
    pub trim_seen: Option<(u64, u64, u64)>,
}

/// The persistent state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LsbmState {
    /// bLSM's part.
    pub blsm: BlsmState,
    /// Indexed by level.
    pub levels: Vec<LevelState>,
}

impl LsbmState {
    /// Encodes the state for the MANIFEST.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![STATE_VERSION];
        put_length_prefixed(&mut out, &self.blsm.encode());
        put_varint64(&mut out, self.levels.len() as u64);
        for l in &self.levels {
            out.push(u8::from(l.frozen));
            put_varint64(&mut out, l.round_in);
            put_varint64(&mut out, l.old_buffer_size);
            match l.trim_seen {
                None => out.push(0),
                Some((run, table, n)) => {
                    out.push(1);
                    for v in [run, table, n] {
                        put_varint64(&mut out, v);
                    }
                }
            }
        }
        out
    }

    /// Decodes a state blob; damage yields `None` (the policy then starts from
    /// an empty state, which is always safe: the buffer is only an accelerator).
    pub fn decode(data: &[u8]) -> Option<Self> {
        let mut r = Reader::new(data);
        if r.u8()? != STATE_VERSION {
            return None;
        }
        let blsm = BlsmState::decode(r.length_prefixed()?)?;
        let n = usize::try_from(r.varint64()?).ok()?;
        let mut levels = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            let frozen = match r.u8()? {
                0 => false,
                1 => true,
                _ => return None,
            };
            let (round_in, old_buffer_size) = (r.varint64()?, r.varint64()?);
            let trim_seen = match r.u8()? {
                0 => None,
                1 => Some((r.varint64()?, r.varint64()?, r.varint64()?)),
                _ => return None,
            };
            levels.push(LevelState { frozen, round_in, old_buffer_size, trim_seen });
        }
        r.is_empty().then_some(LsbmState { blsm, levels })
    }

    fn level(&mut self, i: usize) -> &mut LevelState {
        if self.levels.len() <= i {
            self.levels.resize(i + 1, LevelState::default());
        }
        &mut self.levels[i]
    }
}

impl LsbmPolicy {
    /// A policy over bLSM `blsm` (use [`BlsmPolicy::with_super_files`] for
    /// small files drained in big units). `trim_threshold` is the cached
    /// fraction under which the trim removes a buffer file.
    pub fn new(blsm: BlsmPolicy, variant: BufferVariant, trim_threshold: f64) -> Self {
        LsbmPolicy { blsm, variant, trim_threshold, last_level_buffer: false }
    }

    /// dLSM: buffer the last level too (`Options::with_buffer_last_level`).
    pub fn with_last_level_buffer(mut self, on: bool) -> Self {
        self.last_level_buffer = on;
        self
    }

    fn state(view: &LsmView) -> LsbmState {
        view.policy_state.as_deref().and_then(LsbmState::decode).unwrap_or_default()
    }

    fn max_tables(&self, level: usize) -> usize {
        if level + 1 >= self.blsm.cfg.num_levels {
            MAX_TABLES_LAST
        } else {
            MAX_TABLES
        }
    }

    /// Whether merges into `level` feed its buffer. dLSM keeps none at the
    /// last level unless asked to (its paper, §IV: that level is updated least
    /// and holds most of the data, so a buffer there would about double the
    /// tree); the last level is the deepest holding data, so it moves down as
    /// the tree grows.
    fn buffers_level(&self, view: &LsmView, level: usize) -> bool {
        self.variant == BufferVariant::Lsbm
            || self.last_level_buffer
            || view.deepest_level().is_some_and(|d| level < d)
    }

    /// Appends `files` (oldest table first) to the buffer of the output run and
    /// drops the oldest tables beyond the cap.
    fn append(
        &self,
        view: &LsmView,
        files: Vec<(FileRef, u64)>,
        level: usize,
        run: RunTarget,
        actions: &mut Vec<BufferAction>,
    ) {
        let existing: Vec<u64> = match run {
            RunTarget::Existing(id) => view
                .level(level)
                .and_then(|l| l.buffer_of(id))
                .map(|b| b.tables.iter().map(|t| t.id).collect())
                .unwrap_or_default(),
            RunTarget::New => Vec::new(),
        };
        let mut tables = existing.clone();
        for (file, table) in files {
            if !tables.contains(&table) {
                tables.insert(0, table);
            }
            actions.push(BufferAction::Append { file, level, run, table });
        }
        if let RunTarget::Existing(id) = run {
            let cap = self.max_tables(level);
            // The oldest tables go first; only pre-existing ones can be named.
            for t in tables.iter().skip(cap).rev() {
                if existing.contains(t) {
                    actions.push(BufferAction::DropTable { level, run: id, table: *t });
                }
            }
        }
    }

    /// Gradual removal of `B'_i` after `drained` bytes left `C'_i`.
    fn remove_in_step(
        &self,
        view: &LsmView,
        st: &LsbmState,
        i: usize,
        drained: u64,
        actions: &mut Vec<BufferAction>,
    ) {
        let Some(level) = view.level(i) else { return };
        let Some(id) = st.blsm.draining.get(i).copied().flatten() else { return };
        let (Some(run), Some(buf)) = (level.run(id), level.buffer_of(id)) else { return };
        let s_old = st.levels.get(i).map_or(0, |l| l.old_buffer_size);
        if s_old == 0 {
            return;
        }
        let left = run.bytes().saturating_sub(drained) as f64 / self.blsm.capacity(i).max(1) as f64;
        let mut files: Vec<(&[u8], u64, u64, u64)> = buf
            .tables
            .iter()
            .flat_map(|t| {
                t.entries.iter().filter_map(move |e| Some((e.largest.as_slice(), t.id, e.file?, e.size)))
            })
            .collect();
        files.sort();
        let mut size = buf.bytes();
        for (_, table, file, bytes) in files {
            if size as f64 / s_old as f64 <= left {
                break;
            }
            actions.push(BufferAction::RemoveFile { level: i, run: id, table, file });
            size = size.saturating_sub(bytes);
        }
    }

    /// bLSM's `pick` with this policy's buffer actions and state: appends of
    /// a drain step's sources, round starts, gradual removal, freezing.
    fn with_buffer_actions(&self, view: &LsmView, old: &LsbmState, mut pick: PickResult) -> PickResult {
        let mut st = old.clone();
        if let Some(b) = pick.policy_state.as_deref().and_then(BlsmState::decode) {
            st.blsm = b;
        }
        let mut actions = Vec::new();
        let draining = |st: &LsbmState, i: usize| st.blsm.draining.get(i).copied().flatten();
        // What the task merges into the receiving run of a level, and from where.
        let (sources, level, run): (Vec<&FileRef>, usize, RunTarget) = match &pick.task {
            CompactionTask::Merge { inputs, output_level, output_run, .. } => {
                let from = output_level.saturating_sub(1);
                (
                    inputs.iter().filter(|r| r.level == from && r.level + 1 == *output_level).collect(),
                    *output_level,
                    *output_run,
                )
            }
            CompactionTask::Move { file, to_level, to_run } => (vec![file], *to_level, *to_run),
            _ => (Vec::new(), 0, RunTarget::New),
        };
        if let CompactionTask::UpdateState { .. } = pick.task {
            // Round start at the level whose draining run changed: `B_i` is now
            // `B'_i` (it stays with the run); record `S'_i`; a new `C_i` starts
            // unfrozen.
            let n = st.blsm.draining.len().max(old.blsm.draining.len());
            let started: Vec<(usize, u64)> = (0..n)
                .filter(|&i| draining(&st, i) != draining(old, i))
                .filter_map(|i| Some((i, draining(&st, i)?)))
                .collect();
            for (i, run) in started {
                let b_old = view.level(i).and_then(|l| l.buffer_of(run)).map_or(0, BufferView::bytes);
                *st.level(i) = LevelState { old_buffer_size: b_old, ..LevelState::default() };
            }
        } else if let (Some(first), Some(from)) = (sources.first(), level.checked_sub(1)) {
            // A drain step of `C'_{level-1}`, or (into level 1) an L0 merge.
            let is_drain = from == 0 || draining(&st, from) == Some(first.run);
            if is_drain {
                let bytes: u64 = sources.iter().filter_map(|r| view.file(r)).map(|f| f.size).sum();
                let receiving =
                    view.level(level).and_then(|l| BlsmPolicy::receiving_run(l, &old.blsm, level));
                let grown = receiving.map_or(0, |r| r.bytes()) + bytes;
                let cap = self.blsm.capacity(level);
                let next = st.level(level);
                next.round_in += bytes;
                if !self.buffers_level(view, level) {
                    // Left over from a shallower tree or another policy.
                    let id = match run {
                        RunTarget::Existing(id) => Some(id),
                        RunTarget::New => None,
                    };
                    if let Some(b) = id.and_then(|id| view.level(level)?.buffer_of(id)) {
                        let drop =
                            |t: &BufferTableView| BufferAction::DropTable { level, run: b.run, table: t.id };
                        actions.extend(b.tables.iter().map(drop));
                    }
                } else if !next.frozen {
                    // Each flushed run is a table of `B_1`, oldest first; a drain
                    // step goes to the table of the current round of `from`.
                    let mut files: Vec<(FileRef, u64)> = sources
                        .iter()
                        .map(|r| ((*r).clone(), if from == 0 { r.run } else { first.run }))
                        .collect();
                    files.sort_by_key(|(_, t)| *t);
                    self.append(view, files, level, run, &mut actions);
                }
                // Repeated data: most of what came in overwrote what was there.
                let next = st.level(level);
                if next.round_in >= cap / 4 && grown < next.round_in / 2 {
                    next.frozen = true;
                }
                if from > 0 {
                    self.remove_in_step(view, &st, from, bytes, &mut actions);
                }
            }
        }
        pick.buffer = actions;
        if st != *old {
            pick.policy_state = Some(st.encode());
        }
        pick
    }

    /// One step of emptying the buffers once the tree is settled: the oldest
    /// table of the first buffer still holding one.
    fn drop_oldest_buffer_table(view: &LsmView) -> Option<PickResult> {
        let (level, b, t) = view
            .levels
            .iter()
            .enumerate()
            .find_map(|(i, l)| l.buffers.iter().find_map(|b| Some((i, b.run, b.tables.last()?.id))))?;
        let mut pick =
            PickResult::task(CompactionTask::UpdateState { reason: "lsbm: idle, buffer emptied" }, 0.0);
        pick.buffer = vec![BufferAction::DropTable { level, run: b, table: t }];
        Some(pick)
    }

    /// The trim's decisions for one buffer.
    fn trim_buffer(
        &self,
        level: usize,
        b: &BufferView,
        filling: bool,
        seen: Option<(u64, u64, u64)>,
        out: &mut Vec<BufferAction>,
    ) {
        for (j, t) in b.tables.iter().enumerate() {
            // The head table being filled is warming up; what it already held
            // at the last trim has had a full interval to get its blocks cached.
            let warm = match seen {
                _ if j > 0 || !filling => usize::MAX,
                Some((run, table, n)) if run == b.run && table == t.id => usize::try_from(n).unwrap_or(0),
                _ => 0,
            };
            for (k, e) in t.entries.iter().enumerate() {
                let (Some(file), Some(frac)) = (e.file, e.cached_fraction) else { continue };
                if k < warm && frac < self.trim_threshold {
                    out.push(BufferAction::RemoveFile { level, run: b.run, table: t.id, file });
                }
            }
        }
    }
}

impl CompactionPolicy for LsbmPolicy {
    fn name(&self) -> &str {
        match self.variant {
            BufferVariant::Lsbm => "lsbm",
            BufferVariant::Dlsm => "dlsm",
        }
    }

    fn num_levels(&self) -> usize {
        self.blsm.cfg.num_levels
    }

    fn pick(&self, view: &LsmView) -> Option<PickResult> {
        let old = Self::state(view);
        let pick = self.blsm.pick_with(view, &old.blsm)?;
        Some(self.with_buffer_actions(view, &old, pick))
    }

    fn idle_pick(&self, view: &LsmView) -> Option<PickResult> {
        // Buffered drain steps while data is above the deepest level, so reads
        // keep finding hot keys in the buffers; then the buffers go.
        let old = Self::state(view);
        match self.blsm.idle_pick_with(view, &old.blsm) {
            Some(pick) => Some(self.with_buffer_actions(view, &old, pick)),
            None => Self::drop_oldest_buffer_table(view),
        }
    }

    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult> {
        // bLSM's pick, with no buffer action: the executor leaves removed marks
        // over the merged range in the output run's buffer, so reads stay correct.
        self.blsm.compact_range_with(view, &Self::state(view).blsm, level, range)
    }

    fn scores(&self, view: &LsmView) -> Vec<f64> {
        self.blsm.scores(view)
    }

    fn level_target_bytes(&self, view: &LsmView, level: usize) -> Option<u64> {
        self.blsm.level_target_bytes(view, level)
    }

    /// dLSM: a lookup probes about `ratio` buffer tables per level, so each
    /// filter's false-positive rate is divided by the ratio:
    /// log2(r/f)/ln 2 = bits + log2(r)/ln 2 (14.8 for 10 bits and r = 10).
    /// Only tables a buffer may receive get them: those of levels whose
    /// merges go into a buffered level. The levels that feed no buffer (the
    /// last, most of the data) pay for them, so the tree keeps
    /// `bloom_bits_per_key` on average and every policy is compared at the
    /// same filter memory (`buffer_bits`).
    fn bloom_bits_for_level(&self, view: &LsmView, level: usize, default_bits: f64) -> f64 {
        if self.variant != BufferVariant::Dlsm || default_bits <= 0.0 {
            return default_bits;
        }
        let delta = self.blsm.cfg.multiplier.log2() / std::f64::consts::LN_2;
        let entries = |feeding: bool| -> u64 {
            (view.levels.iter().enumerate())
                .filter(|&(l, _)| self.buffers_level(view, l + 1) == feeding)
                .flat_map(|(_, lv)| lv.runs.iter().flat_map(|r| r.files.iter().map(|f| f.num_entries)))
                .sum()
        };
        let (plus, minus) = buffer_bits(delta, default_bits, entries(true), entries(false));
        if self.buffers_level(view, level + 1) {
            default_bits + plus
        } else {
            default_bits - minus
        }
    }

    fn inner(&self) -> Option<&dyn CompactionPolicy> {
        Some(&self.blsm)
    }

    fn buffers(&self) -> Option<&dyn BufferPolicy> {
        Some(self)
    }
}

impl BufferPolicy for LsbmPolicy {
    fn trim(&self, view: &LsmView) -> Option<PickResult> {
        if self.variant != BufferVariant::Lsbm {
            return None;
        }
        let old = Self::state(view);
        let mut st = old.clone();
        let mut actions = Vec::new();
        for (i, level) in view.levels.iter().enumerate() {
            let seen = old.levels.get(i).and_then(|l| l.trim_seen);
            let receiving = BlsmPolicy::receiving_run(level, &old.blsm, i).map(|r| r.id);
            for b in &level.buffers {
                self.trim_buffer(i, b, Some(b.run) == receiving, seen, &mut actions);
            }
            // Remember the head of the receiving run's buffer for the next trim.
            let head =
                receiving.and_then(|r| level.buffer_of(r)).and_then(|b| Some((b.run, b.tables.first()?)));
            let seen_now = head.map(|(run, t)| (run, t.id, t.entries.len() as u64));
            if seen_now != st.levels.get(i).and_then(|l| l.trim_seen) {
                st.level(i).trim_seen = seen_now;
            }
        }
        if actions.is_empty() && st == old {
            return None;
        }
        let mut pick = PickResult::task(CompactionTask::UpdateState { reason: "lsbm: trim" }, 0.0);
        pick.buffer = actions;
        pick.policy_state = (st != old).then(|| st.encode());
        Some(pick)
    }

    fn wants_trim(&self) -> bool {
        self.variant == BufferVariant::Lsbm
    }

    fn serves_ranges(&self) -> bool {
        // The trim keeps only hot buffer files, so a range over them reads
        // cached blocks; dLSM keeps everything and scans its runs.
        self.variant == BufferVariant::Lsbm
    }

    fn reads_cached_only(&self) -> bool {
        // dLSM has no notion of hot data: its reads probe buffer files like any
        // table, which is why it sizes their bloom filters up.
        self.variant == BufferVariant::Lsbm
    }
}

/// dLSM's filter bits above and below a level's default: `(plus, minus)`
/// for tables of levels that feed a buffer (`feeding` entries) and of those
/// that feed none (`other`), with `plus × feeding = minus × other`, so the
/// tree's average stays the default. The levels that pay keep at least half
/// their bits; when that is not enough (upper levels as big as the last
/// one), the buffer levels get less than `delta`. With nothing to pay from
/// (a last-level buffer, or no data yet below the buffers), the buffer
/// levels get `delta` on top: the paper's sizing, and more memory.
fn buffer_bits(delta: f64, default_bits: f64, feeding: u64, other: u64) -> (f64, f64) {
    if feeding == 0 || other == 0 {
        return (delta, 0.0);
    }
    let paid = (delta * feeding as f64).min(other as f64 * default_bits / 2.0);
    (paid / feeding as f64, paid / other as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::leveled::LeveledConfig;
    use crate::compaction::policy::tests::fv as file;
    use crate::compaction::policy::{
        validate_buffer_actions, validate_task, BufferEntryView, BufferTableView, RunView,
    };

    fn policy(variant: BufferVariant) -> LsbmPolicy {
        let cfg = LeveledConfig {
            num_levels: 4,
            l0_trigger: 2,
            max_bytes_for_level_base: 100,
            multiplier: 10.0,
            target_file_size: 40,
        };
        LsbmPolicy::new(BlsmPolicy::new(cfg).unwrap(), variant, 0.8)
    }

    fn run(id: u64, files: Vec<crate::compaction::policy::FileView>) -> RunView {
        RunView { id, files }
    }

    fn entry(id: u64, lo: u64, hi: u64, cached: f64) -> BufferEntryView {
        BufferEntryView {
            file: Some(id),
            size: 10,
            smallest: lo.to_be_bytes().to_vec(),
            largest: hi.to_be_bytes().to_vec(),
            cached_fraction: Some(cached),
        }
    }

    fn table(id: u64, entries: Vec<BufferEntryView>) -> BufferTableView {
        BufferTableView { id, entries }
    }

    fn view(levels: Vec<(Vec<RunView>, Vec<BufferView>)>, st: &LsbmState) -> LsmView {
        let mut v = LsmView::new(4);
        for (i, (runs, buffers)) in levels.into_iter().enumerate() {
            v.levels[i].runs = runs;
            v.levels[i].buffers = buffers;
        }
        v.policy_state = Some(st.encode());
        v
    }

    fn draining(level: usize, run: u64) -> LsbmState {
        let mut d = vec![None; level + 1];
        d[level] = Some(run);
        LsbmState { blsm: BlsmState { draining: d }, levels: Vec::new() }
    }

    #[test]
    fn state_round_trips_and_garbage_is_ignored() {
        let mut s = draining(2, 9);
        *s.level(1) =
            LevelState { frozen: true, round_in: 77, old_buffer_size: 5, trim_seen: Some((3, 4, 5)) };
        assert_eq!(LsbmState::decode(&s.encode()), Some(s.clone()));
        let enc = s.encode();
        for cut in 0..enc.len() {
            assert_eq!(LsbmState::decode(&enc[..cut]), None);
        }
        assert_eq!(LsbmState::decode(&[2]), None);
        assert_eq!(LsbmState::decode(&s.blsm.encode()), None, "a bLSM blob is not an LSbM state");
        assert_eq!(BlsmState::decode(&s.encode()), None, "and the other way round");
    }

    #[test]
    fn drain_appends_the_same_file_and_removes_the_old_buffer_in_key_order() {
        let p = policy(BufferVariant::Lsbm);
        let mut st = draining(1, 5);
        st.level(1).old_buffer_size = 30;
        // C'_1 = run 5 (full level: 3 x 40 > 100), C_2 = run 8; B'_1 has three files.
        let l1 = vec![run(5, vec![file(1, 0, 9, 40), file(2, 10, 19, 40), file(3, 20, 29, 40)])];
        let b1 = vec![BufferView {
            run: 5,
            tables: vec![
                table(50, vec![entry(21, 0, 9, 1.0), entry(23, 20, 29, 1.0)]),
                table(40, vec![entry(22, 10, 19, 1.0)]),
            ],
        }];
        let l2 = vec![run(8, vec![file(7, 5, 15, 30)])];
        let v = view(vec![(vec![], vec![]), (l1, b1), (l2, vec![])], &st);
        let pick = p.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        validate_buffer_actions(&v, &pick).unwrap();
        let CompactionTask::Merge { ref inputs, .. } = pick.task else { panic!("{pick:?}") };
        assert_eq!(inputs[0], FileRef { level: 1, run: 5, file: 1 });
        // f_a goes to table 5 (this round of level 1) of C_2's buffer.
        assert!(pick.buffer.contains(&BufferAction::Append {
            file: FileRef { level: 1, run: 5, file: 1 },
            level: 2,
            run: RunTarget::Existing(8),
            table: 5
        }));
        // |C'_1| drops from 120 to 80 of S_1 = 100: B'_1 must fall to <= 0.8 * 30 = 24,
        // so exactly one file goes, the one with the smallest largest key.
        let removed: Vec<u64> = (pick.buffer.iter())
            .filter_map(|a| match a {
                BufferAction::RemoveFile { file, .. } => Some(*file),
                _ => None,
            })
            .collect();
        assert_eq!(removed, vec![21]);
        let after = LsbmState::decode(pick.policy_state.as_deref().unwrap()).unwrap();
        assert_eq!(after.levels[2].round_in, 40);
    }

    #[test]
    fn round_start_records_the_old_buffer_and_unfreezes() {
        let p = policy(BufferVariant::Lsbm);
        let mut st = LsbmState::default();
        st.level(1).frozen = true;
        let l1 = vec![run(6, vec![file(1, 0, 9, 60), file(2, 10, 19, 60)])];
        let b1 = vec![BufferView { run: 6, tables: vec![table(3, vec![entry(9, 0, 5, 0.0)])] }];
        let v = view(vec![(vec![], vec![]), (l1, b1), (vec![], vec![])], &st);
        let pick = p.pick(&v).unwrap();
        assert!(matches!(pick.task, CompactionTask::UpdateState { .. }));
        let after = LsbmState::decode(pick.policy_state.as_deref().unwrap()).unwrap();
        assert_eq!(after.blsm.draining.get(1).copied().flatten(), Some(6));
        assert_eq!(after.levels[1], LevelState { old_buffer_size: 10, ..LevelState::default() });
    }

    #[test]
    fn repeated_data_freezes_the_buffer() {
        let p = policy(BufferVariant::Lsbm);
        // L0 merges into a C_1 that stays small while much more came in.
        let mut st = LsbmState::default();
        st.level(1).round_in = 200;
        let l0 = vec![run(31, vec![file(1, 0, 9, 20)]), run(30, vec![file(2, 0, 9, 20)])];
        let l1 = vec![run(4, vec![file(3, 0, 9, 20)])];
        let v = view(vec![(l0, vec![]), (l1, vec![]), (vec![], vec![])], &st);
        let pick = p.pick(&v).unwrap();
        assert_eq!(pick.buffer.len(), 2, "not yet frozen: both flushed runs appended");
        let after = LsbmState::decode(pick.policy_state.as_deref().unwrap()).unwrap();
        assert!(after.levels[1].frozen);
        // Frozen: nothing is appended (the executor marks instead).
        let l0 = vec![run(33, vec![file(5, 0, 9, 20)]), run(32, vec![file(6, 0, 9, 20)])];
        let v = view(
            vec![(l0, vec![]), (vec![run(4, vec![file(3, 0, 9, 20)])], vec![]), (vec![], vec![])],
            &after,
        );
        assert!(p.pick(&v).unwrap().buffer.is_empty());
    }

    #[test]
    fn the_cap_drops_the_oldest_tables() {
        let p = policy(BufferVariant::Lsbm);
        let l0 = vec![run(91, vec![file(1, 0, 9, 20)]), run(90, vec![file(2, 0, 9, 20)])];
        let l1 = vec![run(4, vec![file(3, 0, 9, 20)])];
        let tables = (0..20).rev().map(|t| table(t + 10, vec![entry(100 + t, t * 2, t * 2, 0.0)])).collect();
        let v = view(
            vec![(l0, vec![]), (l1, vec![BufferView { run: 4, tables }]), (vec![], vec![])],
            &LsbmState::default(),
        );
        let pick = p.pick(&v).unwrap();
        validate_buffer_actions(&v, &pick).unwrap();
        let dropped: Vec<u64> = (pick.buffer.iter())
            .filter_map(|a| match a {
                BufferAction::DropTable { table, .. } => Some(*table),
                _ => None,
            })
            .collect();
        assert_eq!(dropped, vec![10, 11], "two new tables push the two oldest out");
    }

    #[test]
    fn trim_removes_uncached_files_but_lets_the_filling_head_warm_up() {
        let p = policy(BufferVariant::Lsbm);
        let st = LsbmState::default();
        let l1 = vec![run(4, vec![file(3, 0, 99, 50)])];
        let b = BufferView {
            run: 4,
            tables: vec![
                table(12, vec![entry(20, 0, 9, 0.1)]),
                table(11, vec![entry(21, 0, 9, 0.9), entry(22, 10, 19, 0.5)]),
            ],
        };
        let v = view(vec![(vec![], vec![]), (l1.clone(), vec![b.clone()]), (vec![], vec![])], &st);
        let pick = p.trim(&v).unwrap();
        validate_buffer_actions(&v, &pick).unwrap();
        assert_eq!(
            pick.buffer,
            vec![BufferAction::RemoveFile { level: 1, run: 4, table: 11, file: 22 }],
            "0.9 >= 0.8 stays; the head is new"
        );
        // At the next trim the head has had an interval: its cold file goes.
        let seen = LsbmState::decode(pick.policy_state.as_deref().unwrap()).unwrap();
        let v = view(vec![(vec![], vec![]), (l1, vec![b]), (vec![], vec![])], &seen);
        let pick = p.trim(&v).unwrap();
        assert!(pick.buffer.contains(&BufferAction::RemoveFile { level: 1, run: 4, table: 12, file: 20 }));
        // dLSM never trims.
        assert!(policy(BufferVariant::Dlsm).trim(&v).is_none());
    }

    #[test]
    fn dlsm_sizes_blooms_for_probing_ratio_tables() {
        let d = policy(BufferVariant::Dlsm);
        // Data down to level 3: levels 0 and 1 feed buffers of levels 1 and 2.
        let l3 = vec![run(9, vec![file(7, 0, 99, 500)])];
        let v = view(
            vec![(vec![], vec![]), (vec![], vec![]), (vec![], vec![]), (l3, vec![])],
            &LsbmState::default(),
        );
        let bits = d.bloom_bits_for_level(&v, 1, 10.0);
        assert!((bits - (10.0 + 10f64.log2() / std::f64::consts::LN_2)).abs() < 1e-9, "{bits}");
        assert!((14.0..15.0).contains(&bits));
        assert_eq!(d.bloom_bits_for_level(&v, 0, 10.0), bits, "flushed files feed B_1");
        assert_eq!(d.bloom_bits_for_level(&v, 2, 10.0), 10.0, "merges into the last level are not buffered");
        assert_eq!(d.bloom_bits_for_level(&v, 3, 10.0), 10.0);
        assert_eq!(d.bloom_bits_for_level(&v, 1, 0.0), 0.0);
        assert_eq!(d.bloom_bits_for_level(&LsmView::new(4), 0, 10.0), 10.0, "an empty tree has no buffer");
        assert_eq!(policy(BufferVariant::Lsbm).bloom_bits_for_level(&v, 1, 10.0), 10.0);
    }

    /// dLSM's bigger filters are paid by the levels that feed no buffer, so
    /// the tree's filters average the default (the same filter memory as every
    /// other policy); the payers keep at least half their bits.
    #[test]
    fn dlsm_buffer_bits_keep_the_trees_average() {
        let d = policy(BufferVariant::Dlsm);
        let with_entries =
            |id, n| crate::compaction::policy::FileView { num_entries: n, ..file(id, 0, 99, 500) };
        let tree = |l1: u64, l2: u64, l3: u64| {
            view(
                vec![
                    (vec![], vec![]),
                    (vec![run(1, vec![with_entries(1, l1)])], vec![]),
                    (vec![run(2, vec![with_entries(2, l2)])], vec![]),
                    (vec![run(3, vec![with_entries(3, l3)])], vec![]),
                ],
                &LsbmState::default(),
            )
        };
        let delta = 10f64.log2() / std::f64::consts::LN_2;
        let average = |v: &LsmView| {
            let n = |l: usize| v.levels[l].runs[0].files[0].num_entries as f64;
            let bits: f64 = (1..4).map(|l| n(l) * d.bloom_bits_for_level(v, l, 10.0)).sum();
            bits / (1..4).map(n).sum::<f64>()
        };
        // The paper's shape: L1 feeds B_2 and gets the full increment; L2 and
        // L3 (merges into the unbuffered last level, and the last) pay it.
        let v = tree(100, 1_000, 9_000);
        assert!((d.bloom_bits_for_level(&v, 1, 10.0) - (10.0 + delta)).abs() < 1e-9);
        assert!((d.bloom_bits_for_level(&v, 0, 10.0) - (10.0 + delta)).abs() < 1e-9, "flushes feed B_1");
        let paid = d.bloom_bits_for_level(&v, 3, 10.0);
        assert!((paid - (10.0 - delta * 100.0 / 10_000.0)).abs() < 1e-9, "{paid}");
        assert_eq!(d.bloom_bits_for_level(&v, 2, 10.0), paid);
        assert!((average(&v) - 10.0).abs() < 1e-9, "{}", average(&v));
        // Upper levels far bigger than the payers: those keep half their bits,
        // and the buffer levels get what that pays for.
        let v = tree(20_000, 50, 50);
        assert!((d.bloom_bits_for_level(&v, 3, 10.0) - 5.0).abs() < 1e-9);
        assert!((d.bloom_bits_for_level(&v, 1, 10.0) - (10.0 + 5.0 * 100.0 / 20_000.0)).abs() < 1e-9);
        assert!((average(&v) - 10.0).abs() < 1e-9, "{}", average(&v));
        // With the last level buffered too, nothing pays: the paper's sizing on top.
        let all = policy(BufferVariant::Dlsm).with_last_level_buffer(true);
        let v = tree(100, 1_000, 9_000);
        assert!((all.bloom_bits_for_level(&v, 3, 10.0) - (10.0 + delta)).abs() < 1e-9);
        // LSbM sizes no filter differently.
        assert_eq!(policy(BufferVariant::Lsbm).bloom_bits_for_level(&v, 3, 10.0), 10.0);
        assert_eq!(policy(BufferVariant::Lsbm).bloom_bits_for_level(&v, 1, 10.0), 10.0);
    }

    /// dLSM as its paper builds it: no buffer at the last level (the deepest
    /// holding data), which had held up to 20 rounds of the level above and
    /// made the tree about twice leveling's size.
    #[test]
    fn dlsm_keeps_no_buffer_at_the_last_level() {
        let d = policy(BufferVariant::Dlsm);
        // C'_1 = run 5 drains into C_2 = run 8, the last level; a leftover buffer there goes.
        let l1 = vec![run(5, vec![file(1, 0, 9, 40), file(2, 10, 19, 40), file(3, 20, 29, 40)])];
        let l2 = vec![run(8, vec![file(7, 5, 15, 30)])];
        let b2 = vec![BufferView { run: 8, tables: vec![table(4, vec![entry(21, 0, 9, 1.0)])] }];
        let v = view(vec![(vec![], vec![]), (l1.clone(), vec![]), (l2.clone(), b2.clone())], &draining(1, 5));
        let pick = d.pick(&v).unwrap();
        validate_task(&v, &pick.task).unwrap();
        validate_buffer_actions(&v, &pick).unwrap();
        assert!(matches!(pick.task, CompactionTask::Merge { output_level: 2, .. }), "{pick:?}");
        assert_eq!(pick.buffer, vec![BufferAction::DropTable { level: 2, run: 8, table: 4 }]);
        // With a level below, level 2 is an upper level and its buffer is fed.
        let l3 = vec![run(9, vec![file(8, 0, 99, 5000)])];
        let v = view(
            vec![(vec![], vec![]), (l1.clone(), vec![]), (l2.clone(), b2.clone()), (l3, vec![])],
            &draining(1, 5),
        );
        let pick = d.pick(&v).unwrap();
        validate_buffer_actions(&v, &pick).unwrap();
        assert!(
            pick.buffer.iter().any(|a| matches!(a, BufferAction::Append { level: 2, table: 5, .. })),
            "{pick:?}"
        );
        // LSbM keeps its last level's buffer (trimmed to hot files), and dLSM when asked to.
        let v = view(vec![(vec![], vec![]), (l1, vec![]), (l2, b2), (vec![], vec![])], &draining(1, 5));
        for p in [policy(BufferVariant::Lsbm), d.with_last_level_buffer(true)] {
            let pick = p.pick(&v).unwrap();
            validate_buffer_actions(&v, &pick).unwrap();
            assert!(
                pick.buffer.iter().any(|a| matches!(a, BufferAction::Append { level: 2, .. })),
                "{pick:?}"
            );
        }
    }
}
