//! The compaction-policy seam: a pure metadata view of the tree (view.rs),
//! the tasks a policy may ask for (task.rs), the [`CompactionPolicy`] trait,
//! and the checks the engine runs on every pick (validate.rs).
//!
//! Choosing is separate from doing: a policy only reads an [`LsmView`] (built by the engine from its
//! current Version) and returns a [`CompactionTask`]; the executor does the I/O.

mod buffers;
mod task;
mod validate;
mod view;

pub use buffers::BufferPolicy;
pub use task::{BufferAction, CompactionTask, PickResult, RunTarget};
pub use validate::{validate_buffer_actions, validate_flush_level, validate_task};
pub use view::{
    key_range, BufferEntryView, BufferTableView, BufferView, FileRef, FileView, LevelView, LsmView,
    ManualRange, RunView,
};

/// A compaction policy: a pure function from a metadata view to a task.
///
/// The core is six methods; the others have defaults. A policy built over
/// another (Garnering and LWC over leveling, LSbM over bLSM) names it in
/// [`Self::inner`], and the defaults of flush placement, bloom bits, runs per
/// level and concurrency then answer as the inner policy does, so a wrapper
/// overrides only what it changes. Compaction buffers are a
/// separate trait, [`BufferPolicy`], reached through [`Self::buffers`].
pub trait CompactionPolicy: Send + Sync + std::fmt::Debug {
    /// Policy name for logs, stats and properties.
    fn name(&self) -> &str;
    /// Number of levels the policy uses (L0 included).
    fn num_levels(&self) -> usize;
    /// Pure: no I/O, no interior mutation. None = nothing to do.
    fn pick(&self, view: &LsmView) -> Option<PickResult>;
    /// Per-level scores, indexed by level; score >= 1 means compaction wanted.
    fn scores(&self, view: &LsmView) -> Vec<f64>;
    /// Target capacity of a level in bytes (None for L0), for stats. `view` is
    /// the current tree, so capacities may depend on how many levels are in use.
    fn level_target_bytes(&self, view: &LsmView, level: usize) -> Option<u64>;
    /// Manual compaction (`Db::compact_range`, RocksDB's
    /// `CompactionPicker::CompactRange`): the task that moves the files of
    /// `level` overlapping `range` into `level + 1`, or `None` when none do.
    /// Pure like [`Self::pick`]; the engine validates it like every pick.
    /// [`super::manual`] has the building blocks. Seek-triggered compaction
    /// (`Options::with_seek_compaction`) asks for it too, with the range of the
    /// one table that used up its seeks, so each policy moves such a table down
    /// by its own rules.
    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult>;
    /// The policy this one is built over, whose answers the defaults below
    /// give. Default: none.
    fn inner(&self) -> Option<&dyn CompactionPolicy> {
        None
    }
    /// Seek-triggered compaction (`Options::with_seek_compaction`): the task
    /// for `file` of `level`, a table reads kept paying extra for, or `None`.
    /// Pure like [`Self::pick`]. Default: LevelDB's answer, the manual
    /// compaction (this policy's) of the table's range into the next level.
    fn seek_triggered(&self, view: &LsmView, level: usize, file: &FileView) -> Option<PickResult> {
        let range = ManualRange { start: Some(&file.smallest), end: Some(&file.largest) };
        let mut pick = self.compact_range(view, level, &range)?;
        if let CompactionTask::Merge { reason, .. } = &mut pick.task {
            *reason = "seek-triggered";
        }
        Some(pick)
    }
    /// Idle compaction (`Options::with_idle_compaction`, the dLSM paper's
    /// aggressive compaction): the next task toward a settled tree — every
    /// file in one level below L0 ([`LsmView::idle_levels`]), and no
    /// compaction buffer — or `None` when it is settled. The engine asks only
    /// when the tree is idle,
    /// [`Self::pick`] has nothing and no task runs; it validates the answer
    /// like every pick and asks again after each task, so every answer must
    /// bring the tree closer to settled. Pure like [`Self::pick`]. Default:
    /// this policy's [`Self::compact_range`] of one table into the next
    /// level — the first in key order of the oldest run of the shallowest
    /// level above the deepest — or, if it has no task for that range, of the
    /// whole level: small steps, so a write arriving meanwhile waits for one
    /// table, each moving data by the policy's own rules.
    fn idle_pick(&self, view: &LsmView) -> Option<PickResult> {
        let (from, deepest) = view.idle_levels()?;
        (from..deepest).find_map(|level| {
            let f = view.levels[level].runs.iter().rev().find_map(|r| r.files.first())?;
            let one = ManualRange { start: Some(&f.smallest), end: Some(&f.largest) };
            let all = ManualRange { start: None, end: None };
            self.compact_range(view, level, &one).or_else(|| self.compact_range(view, level, &all))
        })
    }
    /// The level a flushed memtable's table `[smallest, largest]` (user keys,
    /// `bytes` long) goes to, at most `max_level` (at least 1 when the engine
    /// asks: `Options::with_max_mem_compaction_level`). The table joins the level's newest run (a new
    /// run if the level is empty); the engine checks the choice with
    /// [`validate_flush_level`]. Pure like [`Self::pick`]. Default: the inner
    /// policy's, else L0, which suits policies whose deeper levels are not
    /// plain sorted runs (tiers, bLSM's two-part levels, compaction buffers).
    fn flush_level(
        &self,
        view: &LsmView,
        smallest: &[u8],
        largest: &[u8],
        bytes: u64,
        max_level: usize,
    ) -> usize {
        self.inner().map_or(0, |p| p.flush_level(view, smallest, largest, bytes, max_level))
    }
    /// Sorted runs a full level below L0 holds at rest: 1 for leveling (the
    /// default without an inner policy), `r - 1` for tiering. Monkey sizes
    /// filters for the full tree.
    fn runs_per_full_level(&self) -> usize {
        self.inner().map_or(1, |p| p.runs_per_full_level())
    }
    /// Size ratio between a full `level` and the level above it in the tree
    /// Monkey sizes filters for, when it is not the options' multiplier
    /// (Garnering: `T / c^(L−level)`). Default: the inner policy's, else
    /// `None`.
    fn full_level_ratio(&self, view: &LsmView, level: usize) -> Option<f64> {
        self.inner().and_then(|p| p.full_level_ratio(view, level))
    }
    /// Bloom bits/key for a table written to `level` of the tree `view`.
    /// `default_bits` is what the options' [`crate::BloomAllocation`] chose
    /// (the configured bits under `Uniform`); the default keeps it (or asks
    /// the inner policy).
    fn bloom_bits_for_level(&self, view: &LsmView, level: usize, default_bits: f64) -> f64 {
        self.inner().map_or(default_bits, |p| p.bloom_bits_for_level(view, level, default_bits))
    }
    /// True if several merges may run at once under this policy: its picks
    /// skip busy files (and whatever a busy file would force into a pick), and
    /// its state stays right when tasks finish out of pick order. The engine
    /// still never runs two tasks into one new run. Default: the inner
    /// policy's, else false.
    fn allows_concurrent_compactions(&self) -> bool {
        self.inner().is_some_and(|p| p.allows_concurrent_compactions())
    }
    /// The policy's compaction buffers (LSbM, dLSM), or `None` (the default:
    /// not the inner policy's, since a wrapper's picks decide every buffer
    /// action). When a tree is reopened under a policy that keeps none, the
    /// buffers the previous policy left are dropped at open (they only hold
    /// copies of data their runs have).
    fn buffers(&self) -> Option<&dyn BufferPolicy> {
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A test file with big-endian u64 bounds.
    pub(crate) fn fv(id: u64, lo: u64, hi: u64, size: u64) -> FileView {
        FileView {
            id,
            size,
            smallest: lo.to_be_bytes().to_vec(),
            largest: hi.to_be_bytes().to_vec(),
            num_entries: 1,
            num_deletions: 0,
            being_compacted: false,
            bloom_bits_per_key: None,
            segments: 1,
            num_range_dels: 0,
        }
    }

    pub(crate) fn view() -> LsmView {
        let mut v = LsmView::new(3);
        v.levels[0].runs = vec![RunView { id: 10, files: vec![fv(1, 5, 50, 100)] }];
        v.levels[1].runs =
            vec![RunView { id: 11, files: vec![fv(2, 0, 9, 100), fv(3, 10, 19, 100), fv(4, 30, 39, 100)] }];
        v.levels[2].runs = vec![RunView { id: 12, files: vec![fv(5, 0, 100, 100)] }];
        v
    }

    pub(crate) fn r(level: usize, run: u64, file: u64) -> FileRef {
        FileRef { level, run, file }
    }

    pub(crate) fn k(x: u64) -> [u8; 8] {
        x.to_be_bytes()
    }

    #[test]
    fn helpers() {
        let v = view();
        assert_eq!(v.level_bytes(1), 300);
        assert_eq!(v.num_files(1), 3);
        assert_eq!(v.num_runs(0), 1);
        assert_eq!(v.level_bytes(9), 0);
        let run = &v.levels[1].runs[0];
        let ids = |fs: &[FileView]| fs.iter().map(|f| f.id).collect::<Vec<_>>();
        assert_eq!(ids(run.overlapping(&k(9), &k(30))), vec![2, 3, 4]);
        assert_eq!(ids(run.overlapping(&k(20), &k(29))), Vec::<u64>::new());
        assert_eq!(ids(run.overlapping(&k(19), &k(19))), vec![3]);
        assert_eq!(ids(run.overlapping(&k(40), &k(90))), Vec::<u64>::new());
        assert_eq!(v.levels[1].overlapping(1, &k(15), &k(35)), vec![r(1, 11, 3), r(1, 11, 4)]);
        let (lo, hi) = key_range(&run.files).unwrap();
        assert_eq!((lo, hi), (&k(0)[..], &k(39)[..]));
        assert!(key_range(std::iter::empty()).is_none());
        assert_eq!(v.file(&r(2, 12, 5)).map(|f| f.id), Some(5));
        assert!(v.file(&r(2, 11, 5)).is_none());
    }
}
