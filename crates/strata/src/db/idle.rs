//! Idle compaction (`Options::with_idle_compaction`; the dLSM paper's
//! *aggressive compaction*, §VI): once a tree has taken no write for the
//! configured time, compaction goes on after the policy has nothing to do,
//! one [`CompactionPolicy::idle_pick`] task at a time, until the policy finds
//! the tree settled (all data in its deepest level, buffers empty).
//!
//! The clock costs a write one relaxed store per tree it touches. Idleness is
//! checked again before every step, so a write stops the work after the task
//! that is running.
//!
//! [`CompactionPolicy::idle_pick`]: crate::compaction::CompactionPolicy::idle_pick

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::DbInner;
use crate::compaction::{CompactionTask, LsmView, PickResult};
use crate::error::Result;
use crate::stats::Counters;
use crate::version::Version;

/// When a tree last took a write, and the tree idle compaction last found settled.
pub(crate) struct IdleClock {
    origin: Instant,
    /// Nanoseconds after `origin` of the latest write (0: none since open).
    last_write: AtomicU64,
    /// The version in which `idle_pick` last found nothing to do: nothing is
    /// asked again until the tree changes. (A `Weak` keeps the allocation,
    /// so a new version can never compare equal to a freed one.)
    settled: Mutex<Weak<Version>>,
}

impl IdleClock {
    pub(crate) fn new() -> IdleClock {
        IdleClock { origin: Instant::now(), last_write: AtomicU64::new(0), settled: Mutex::new(Weak::new()) }
    }

    /// Notes a write (or an ingestion) now.
    #[inline]
    pub(crate) fn touch(&self) {
        let now = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1);
        self.last_write.store(now, Ordering::Relaxed);
    }

    /// Time since the last write (since the tree was opened if none).
    fn idle_for(&self) -> Duration {
        let last = Duration::from_nanos(self.last_write.load(Ordering::Relaxed));
        self.origin.elapsed().saturating_sub(last)
    }

    fn is_settled(&self, version: &Arc<Version>) -> bool {
        self.settled.lock().as_ptr() == Arc::as_ptr(version)
    }
}

impl DbInner {
    /// True if idle compaction is on and no write reached the tree for its threshold.
    pub(crate) fn idle_due(&self) -> bool {
        self.opts.idle_compaction.is_some_and(|after| self.idle.idle_for() >= after)
    }

    /// True if an idle step may be due now: the tree is idle and changed
    /// since idle compaction last found it settled (cheap: no view).
    pub(crate) fn idle_work_may_exist(&self) -> bool {
        self.idle_due() && !self.idle.is_settled(&self.versions.current())
    }

    /// The idle step for `view` of `version`, if one is due.
    pub(super) fn idle_pick(&self, version: &Arc<Version>, view: &LsmView) -> Option<PickResult> {
        if !self.idle_due() || self.idle.is_settled(version) {
            return None;
        }
        let pick = self.policy.idle_pick(view);
        if pick.is_none() {
            *self.idle.settled.lock() = Arc::downgrade(version);
        }
        pick
    }

    /// Runs one idle step. Returns whether a task ran. Callers hold
    /// `compaction_lock`, after the policy picked nothing and with no merge
    /// running.
    pub(super) fn idle_compaction(&self, version: Arc<Version>, view: &LsmView) -> Result<bool> {
        let Some(mut pick) = self.idle_pick(&version, view) else { return Ok(false) };
        match &mut pick.task {
            CompactionTask::Merge { reason, .. }
            | CompactionTask::Append { reason, .. }
            | CompactionTask::UpdateState { reason } => *reason = "idle",
            CompactionTask::Move { .. } | CompactionTask::Drop { .. } | CompactionTask::Refilter { .. } => {}
        }
        self.run_task(version, view, &pick, false)?;
        Counters::add(&self.counters.idle_compactions, 1);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_restarts_the_clock() {
        let c = IdleClock::new();
        std::thread::sleep(Duration::from_millis(5));
        assert!(c.idle_for() >= Duration::from_millis(5), "idle since open");
        let before = Instant::now();
        c.touch();
        assert!(c.idle_for() <= before.elapsed(), "idle since the write, not since open");
    }
}
