//! Leveling wrapped as a custom policy (`CompactionStyle::Custom`): under a
//! name of its own, and optionally never starting a compaction itself (so L0
//! only grows).

use strata::compaction::{LeveledConfig, LeveledPolicy, LsmView, ManualRange, PickResult};
use strata::CompactionPolicy;

#[derive(Debug)]
pub struct WrappedLeveled {
    name: &'static str,
    /// False: `pick` never finds work (manual compactions still run).
    picks: bool,
    inner: LeveledPolicy,
}

impl WrappedLeveled {
    pub fn new(name: &'static str, picks: bool) -> Self {
        WrappedLeveled { name, picks, inner: LeveledPolicy::new(LeveledConfig::default()).expect("defaults") }
    }
}

impl CompactionPolicy for WrappedLeveled {
    fn name(&self) -> &str {
        self.name
    }
    fn num_levels(&self) -> usize {
        self.inner.num_levels()
    }
    fn pick(&self, view: &LsmView) -> Option<PickResult> {
        self.picks.then(|| self.inner.pick(view)).flatten()
    }
    fn scores(&self, view: &LsmView) -> Vec<f64> {
        self.inner.scores(view)
    }
    fn level_target_bytes(&self, view: &LsmView, level: usize) -> Option<u64> {
        self.inner.level_target_bytes(view, level)
    }
    fn compact_range(&self, view: &LsmView, level: usize, range: &ManualRange<'_>) -> Option<PickResult> {
        self.inner.compact_range(view, level, range)
    }
}
