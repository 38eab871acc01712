//! Background work of one tree, as jobs the database's pool (`pool.rs`)
//! runs: flushing immutable memtables and running the compaction policy.
//! Both publish results through the MANIFEST and then a new super version,
//! and delete files nothing references any more.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{DbInner, DbState, Immutable};
use crate::compaction::executor::execute;
use crate::compaction::manual::{self, ManualRange};
use crate::compaction::monkey;
use crate::compaction::view::{build_view, build_view_with};
use crate::compaction::{
    validate_buffer_actions, validate_flush_level, validate_task, BufferAction, CompactionTask, LsmView,
    PickResult, RunTarget,
};
use crate::error::{Error, Result};
use crate::events::{BackgroundErrorReason, CompactionInfo, Event, FlushInfo, StallCause, StallCondition};
use crate::key::user_key;
use crate::sink::write_memtable;
use crate::stats::{CompactionRecord, Counters};
use crate::version::{NewFile, Version, VersionEdit};

impl DbInner {
    /// Hands this tree's background work to the database's pool.
    pub(crate) fn spawn_background(self: &Arc<Self>) -> Result<()> {
        self.shared.pool.add(self.clone());
        Ok(())
    }

    /// Merges that may run at once: the option, if the policy allows more than one.
    pub(super) fn compaction_threads(&self) -> usize {
        if self.policy.allows_concurrent_compactions() {
            self.opts.max_background_compactions
        } else {
            1
        }
    }

    /// Input files of the merges running outside the lock.
    pub(crate) fn busy_files(&self) -> HashSet<u64> {
        self.running.lock().iter().flatten().copied().collect()
    }

    /// The pool's flush job: `job` is this tree's oldest sealed memtable.
    pub(super) fn flush_job(&self, job: &Immutable) {
        if let Err(e) = self.flush_memtable(job) {
            self.set_bg_error_for(&e, BackgroundErrorReason::Flush);
        }
    }

    /// What `make_room_for_write` does to a write now, and why.
    pub(crate) fn stall_condition(&self, st: &DbState, l0: usize) -> (StallCondition, Option<StallCause>) {
        let l0_stalls = !self.opts.disable_auto_compactions;
        let mem_full = st.mem.approximate_memory_usage() >= self.opts.write_buffer_size;
        if l0_stalls && l0 >= self.opts.level0_stop_writes_trigger {
            (StallCondition::Stopped, Some(StallCause::L0Files))
        } else if mem_full && st.imms.len() + 1 >= self.opts.max_write_buffer_number {
            (StallCondition::Stopped, Some(StallCause::Memtables))
        } else if l0_stalls && l0 >= self.opts.level0_slowdown_writes_trigger {
            (StallCondition::Delayed, Some(StallCause::L0Files))
        } else {
            (StallCondition::Normal, None)
        }
    }

    /// Logs and queues a change of the stall condition (`l0`: L0 files now).
    /// Callers hold `state`.
    pub(crate) fn note_stall(&self, st: &DbState, l0: usize) {
        if self.events.stall_seen(&self.name, self.stall_condition(st, l0), l0, st.imms.len()) {
            self.bg_cv.notify_all();
        }
    }

    /// Writes the oldest immutable memtable to an L0 table, records it and
    /// deletes the WALs no keyspace needs any more.
    fn flush_memtable(&self, job: &Immutable) -> Result<()> {
        self.shared.record_wals()?;
        let mem = &job.mem;
        let start = Instant::now();
        // `flush()` and `close` wait for it; a full memtable's flush, only
        // the writers if the tree is behind.
        let by_caller =
            matches!(job.reason, crate::events::FlushReason::Manual | crate::events::FlushReason::Shutdown);
        let env = self.env(by_caller);
        let entries = mem.len() as u64;
        let (outputs, stages) = write_memtable(&env, mem)?;
        let pipeline = env.pipeline;
        let mut edit = VersionEdit::default();
        // WALs older than the next unflushed memtable's are no longer needed.
        let next_log = {
            let st = self.state.lock();
            st.imms.get(1).map(|i| i.wal).unwrap_or(st.mem_wal)
        };
        edit.log_number = Some(next_log);
        // WAL numbers come from the root MANIFEST: a keyspace's own counter
        // must not hand the number out as a table.
        self.versions.mark_file_number_used(next_log);
        let written: u64 = outputs.iter().map(|f| f.size).sum();
        let range_dels_written = outputs.iter().map(|f| f.num_range_dels).sum();
        let n = outputs.len();
        let file_numbers: Vec<u64> = outputs.iter().map(|f| f.id).collect();
        // A placement below L0 is decided and installed with no compaction
        // running, so none can put older data above the table meanwhile; if
        // a task runs, the table goes to L0 rather than wait. A lock held only
        // to pick (brief; the pool picks beside flushes all the time) is
        // waited for, so placement does not depend on that schedule.
        let placing = (self.opts.max_mem_compaction_level > 0 && !outputs.is_empty())
            .then(|| loop {
                if let Some(g) = self.compaction_lock.try_lock_for(Duration::from_millis(1)) {
                    break Some(g);
                }
                if self.task_running.load(Ordering::Acquire) {
                    break None;
                }
            })
            .flatten();
        let (level, run) = match &placing {
            Some(_) => self.flush_placement(&outputs, self.opts.max_mem_compaction_level)?,
            None => (0, None),
        };
        if !outputs.is_empty() {
            let run = run.unwrap_or_else(|| self.versions.new_file_number());
            for f in outputs {
                edit.new_files.push((level, run, f));
            }
        }
        self.versions.log_and_apply(edit)?;
        drop(placing);
        if level > 0 {
            Counters::add(&self.counters.flushes_below_l0, 1);
        }
        // Counted and reported before the memtable leaves `imms`: `flush()`
        // returns once it has, and its caller must see this flush in
        // `stats()` and among the queued events.
        let duration = start.elapsed();
        log::info!(
            target: "strata::flush",
            "[{}] flush: {entries} entries, {written} B in {n} files {file_numbers:?} to L{level}, {} ms",
            self.name,
            duration.as_millis()
        );
        self.events.push(Event::Flush(FlushInfo {
            keyspace: self.name.clone(),
            output_level: level,
            file_numbers,
            entries,
            bytes_written: written,
            duration,
            reason: job.reason,
        }));
        self.counters.record(CompactionRecord {
            kind: "flush",
            reason: job.reason.as_str(),
            output_level: level,
            input_files: 0,
            output_files: n,
            bytes_read: 0,
            bytes_written: written,
            bytes_moved_down: 0,
            warmup_blocks_inserted: 0,
            filter_removed: 0,
            filter_changed: 0,
            duration,
            stages,
            pipeline,
            range_dels_written,
            range_dels_dropped: 0,
        });
        {
            let mut st = self.state.lock();
            if let Some(flushed) = st.imms.pop_front() {
                self.keep_in_history(&mut st, flushed);
            }
            self.install_super_version(&st);
            self.note_stall(&st, self.versions.current().level_files(0));
        }
        self.shared.delete_obsolete_wals();
        self.purge_obsolete_files();
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Where a flushed (or ingested) table goes: the policy's level, at most
    /// `max_level` (validated), and the run there to join (`None`: a new
    /// one). Callers hold `compaction_lock`.
    pub(super) fn flush_placement(
        &self,
        outputs: &[NewFile],
        max_level: usize,
    ) -> Result<(usize, Option<u64>)> {
        let smallest = outputs.iter().map(|f| user_key(&f.smallest)).min().unwrap_or_default();
        let largest = outputs.iter().map(|f| user_key(&f.largest)).max().unwrap_or_default();
        let bytes = outputs.iter().map(|f| f.size).sum();
        let version = self.versions.current();
        let view = build_view(&version, &self.versions, &HashSet::new());
        let max_level = max_level.min(view.levels.len().saturating_sub(1));
        let level = self.policy.flush_level(&view, smallest, largest, bytes, max_level).min(max_level);
        if level == 0 {
            return Ok((0, None));
        }
        validate_flush_level(&view, level, smallest, largest)?;
        Ok((level, version.levels.get(level).and_then(|l| l.runs.first()).map(|r| r.id)))
    }

    /// The pool's compaction job: the buffer trim if `trim` (it is due),
    /// then one policy step. Returns whether the step found work.
    pub(super) fn compaction_job(&self, trim: bool) -> bool {
        if trim {
            if let Err(e) = self.trim_buffers() {
                self.set_bg_error_for(&e, BackgroundErrorReason::Compaction);
                return false;
            }
        }
        match self.compact_step() {
            Ok(true) => true,
            Ok(false) => {
                // Files whose last reader (an iterator, a snapshot's read)
                // went away while nothing else ran are deleted here.
                self.purge_obsolete_files();
                // Idle now, with the compaction lock released: a waiter that
                // found it held when the last task finished looks again
                // instead of sleeping out its poll.
                let _st = self.state.lock();
                self.done_cv.notify_all();
                false
            }
            Err(e) => {
                self.set_bg_error_for(&e, BackgroundErrorReason::Compaction);
                false
            }
        }
    }

    /// One compaction-buffer trim (LSbM Algorithm 2): the policy sees every
    /// buffer file's cached-block fraction, from the block cache's exact
    /// per-file counts, and names the files to remove. Returns how many.
    pub(crate) fn trim_buffers(&self) -> Result<usize> {
        let _g = self.compaction_lock.lock();
        // Reading every buffer file's cache residency is part of the task: a
        // flush placement does not wait for it.
        self.task_running.store(true, Ordering::Release);
        let _running = ClearOnDrop(&self.task_running);
        self.check_bg_error()?;
        let version = self.versions.current();
        if version.levels.iter().all(|l| l.buffers.is_empty()) && !self.policy.wants_trim() {
            return Ok(0);
        }
        let cached = |f: &crate::version::FileMeta| -> Option<f64> {
            let blocks = f.table(&self.tables).ok()?.num_data_blocks();
            let resident = self.block_cache.as_ref().map_or(0, |c| c.resident_blocks(f.id));
            Some(if blocks == 0 { 1.0 } else { resident as f64 / blocks as f64 })
        };
        let view = build_view_with(&version, &self.versions, &HashSet::new(), &cached);
        let Some(pick) = self.policy.trim(&view) else { return Ok(0) };
        let removed = pick.buffer.iter().filter(|a| matches!(a, BufferAction::RemoveFile { .. })).count();
        self.run_task(version, &view, &pick, false)?;
        Counters::add(&self.counters.buffer_trims, 1);
        Counters::add(&self.counters.buffer_files_trimmed, removed as u64);
        log::info!(target: "strata::compaction", "[{}] buffer trim: {removed} buffer files removed", self.name);
        Ok(removed)
    }

    /// Asks the policy for one task and runs it: under `compaction_lock`, or,
    /// when several merges may run at once, a merge outside it with its
    /// inputs listed as busy so that the other threads pick around them.
    fn compact_step(&self) -> Result<bool> {
        let guard = self.compaction_lock.lock();
        let version = self.versions.current();
        let busy = self.busy_files();
        let view = build_view(&version, &self.versions, &busy);
        let Some(pick) = self.policy.pick(&view) else {
            if !busy.is_empty() {
                return Ok(false);
            }
            // Nothing the policy wants: seek-triggered work, filters that
            // drifted from Monkey's shares, then idle work.
            if let Some(pick) = self.seek_pick(&view) {
                self.run_task(version, &view, &pick, false)?;
                Counters::add(&self.counters.seek_compactions, 1);
                return Ok(true);
            }
            if let Some(pick) = monkey::refilter_pick(&self.opts, self.policy.as_ref(), &view) {
                self.run_task(version, &view, &pick, false)?;
                return Ok(true);
            }
            return self.idle_compaction(version, &view);
        };
        let concurrent = self.compaction_threads() > 1;
        if concurrent && !busy.is_empty() && opens_new_run(&pick.task) {
            // Two tasks must never open a level's new run side by side (that
            // would make two runs where the policy keeps one): wait.
            return Ok(false);
        }
        // Merges and appends run outside the lock, their files listed as busy.
        let ids: Vec<u64> = match &pick.task {
            CompactionTask::Merge { inputs, .. } => inputs.iter().map(|f| f.file).collect(),
            CompactionTask::Append { inputs, targets, .. } => {
                inputs.iter().chain(targets).map(|f| f.file).collect()
            }
            _ => Vec::new(),
        };
        if !concurrent || ids.is_empty() {
            self.run_task(version, &view, &pick, false)?;
            return Ok(true);
        }
        validate_task(&view, &pick.task)?;
        validate_buffer_actions(&view, &pick)?;
        {
            let mut running = self.running.lock();
            running.push(ids.clone());
            self.counters.running_peak.fetch_max(running.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        let snapshots = self.shared.snapshots.bounds(&self.shared.visible_seq);
        drop(guard);
        // Installed under the lock, so picks and flush placements see a
        // MANIFEST edit whole; the inputs stay busy until it is applied.
        let mut touched = Touched::default();
        let r = execute(&self.env(false), &version, &view, &pick, snapshots).and_then(|outcome| {
            let _g = self.compaction_lock.lock();
            touched.note(outcome.edit());
            outcome.install(|edit| self.versions.log_and_apply(edit).map(drop))
        });
        {
            let mut running = self.running.lock();
            if let Some(i) = running.iter().position(|r| *r == ids) {
                running.swap_remove(i);
            }
        }
        self.finish_task(version, r?, touched);
        // Threads that waited for this merge (a new run, nothing to pick) look again.
        self.bg_cv.notify_all();
        Ok(true)
    }

    /// After a task's edit is applied: counts it, publishes the new tree to
    /// readers and deletes the inputs nothing else holds. Takes the version
    /// the task was picked from by value, dropping it before the purge.
    fn finish_task(&self, version: Arc<Version>, record: CompactionRecord, touched: Touched) {
        drop(version);
        self.report_compaction(&record, touched);
        self.counters.record(record);
        {
            let st = self.state.lock();
            self.install_super_version(&st);
            self.note_stall(&st, self.versions.current().level_files(0));
        }
        self.purge_obsolete_files();
        self.done_cv.notify_all();
    }

    /// Validates and runs a task picked from `version`, publishes the result
    /// and deletes the inputs nothing else holds. Takes the version by value:
    /// while any `Arc` of it lives, its files cannot be deleted, so it is
    /// dropped before the purge (callers must not keep another copy).
    /// `by_caller`: a caller waits for it (a manual compaction).
    pub(super) fn run_task(
        &self,
        version: Arc<Version>,
        view: &LsmView,
        pick: &PickResult,
        by_caller: bool,
    ) -> Result<()> {
        let refiltered = monkey::refilter_move(&self.opts, self.policy.as_ref(), view, pick);
        let pick = refiltered.as_ref().unwrap_or(pick);
        validate_task(view, &pick.task)?;
        validate_buffer_actions(view, pick)?;
        let snapshots = self.shared.snapshots.bounds(&self.shared.visible_seq);
        if matches!(pick.task, CompactionTask::Merge { .. }) {
            self.counters.running_peak.fetch_max(1, std::sync::atomic::Ordering::Relaxed);
        }
        // The executor returns the task's one edit; it is installed here.
        self.task_running.store(true, Ordering::Release);
        let done = execute(&self.env(by_caller), &version, view, pick, snapshots).and_then(|outcome| {
            let mut touched = Touched::default();
            touched.note(outcome.edit());
            let record = outcome.install(|edit| self.versions.log_and_apply(edit).map(drop))?;
            Ok((record, touched))
        });
        self.task_running.store(false, Ordering::Release);
        let (record, touched) = done?;
        self.finish_task(version, record, touched);
        Ok(())
    }

    /// Blocks until no immutable memtable waits for a flush and the policy has
    /// nothing to pick (RocksDB `WaitForCompact`). With auto compactions off it
    /// only waits for flushes.
    pub(crate) fn wait_for_compactions(&self) -> Result<()> {
        if self.shared.read_only {
            return Ok(());
        }
        loop {
            self.check_bg_error()?;
            {
                let mut st = self.state.lock();
                if st.shutting_down {
                    return Err(Error::InvalidArgument("the database is closing".into()));
                }
                if !st.imms.is_empty() {
                    self.done_cv.wait_for(&mut st, Duration::from_millis(50));
                    continue;
                }
            }
            if self.opts.disable_auto_compactions {
                return Ok(());
            }
            // Holding the compaction lock with no merge running outside it
            // means no task is half done.
            if let Some(_g) = self.compaction_lock.try_lock().filter(|_| self.running.lock().is_empty()) {
                let version = self.versions.current();
                let view = build_view(&version, &self.versions, &HashSet::new());
                let idle = || self.idle_pick(&version, &view).is_some();
                let refilter = || monkey::refilter_pick(&self.opts, self.policy.as_ref(), &view).is_some();
                if self.policy.pick(&view).is_none() && !self.has_seek_candidates() && !refilter() && !idle()
                {
                    return Ok(());
                }
            }
            self.bg_cv.notify_all();
            let mut st = self.state.lock();
            self.done_cv.wait_for(&mut st, Duration::from_millis(50));
        }
    }

    /// Manual compaction: level by level, the policy's task moving every file
    /// overlapping the range into the next level, down to the deepest level
    /// holding such files. Each pick is validated like a background pick.
    pub(crate) fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush()?;
        let _g = self.lock_with_nothing_running();
        self.check_bg_error()?;
        let range = ManualRange { start, end };
        let (deepest, mut untouched) = {
            let version = self.versions.current();
            let view = build_view(&version, &self.versions, &HashSet::new());
            let deepest = manual::deepest_overlapping_level(&view, &range);
            // Without a filter only files with range tombstones: rewritten
            // alone at the bottom, they drop what nothing below needs.
            let filter = self.opts.compaction_filter.is_some();
            let ids: HashSet<u64> = view
                .level(deepest)
                .map(|l| {
                    let files = l.runs.iter().flat_map(|r| &r.files);
                    files.filter(|f| filter || f.num_range_dels > 0).map(|f| f.id).collect()
                })
                .unwrap_or_default();
            (deepest, ids)
        };
        for level in 0..deepest {
            let version = self.versions.current();
            let view = build_view(&version, &self.versions, &HashSet::new());
            let Some(pick) = self.policy.compact_range(&view, level, &range) else { continue };
            self.run_manual_task(version, &view, &pick)?;
        }
        // With a filter, the deepest level's files no merge above reached are
        // rewritten too, so the filter sees every entry in range; so are
        // those with range tombstones, which can go at the bottom.
        let target = self.opts.target_file_size_base;
        while !untouched.is_empty() {
            let version = self.versions.current();
            let view = build_view(&version, &self.versions, &HashSet::new());
            let Some(pick) = manual::bottommost_rewrite(&view, deepest, &range, &untouched, target) else {
                break;
            };
            if let CompactionTask::Merge { inputs, .. } = &pick.task {
                for f in inputs {
                    untouched.remove(&f.file);
                }
            }
            self.run_manual_task(version, &view, &pick)?;
        }
        self.purge_obsolete_files();
        Ok(())
    }
}

impl DbInner {
    /// Runs one task of a manual compaction; a failure other than a refused
    /// pick sets the background error, as in background work.
    fn run_manual_task(&self, version: Arc<Version>, view: &LsmView, pick: &PickResult) -> Result<()> {
        let r = self.run_task(version, view, pick, true);
        if let Err(e) = &r {
            if !matches!(e, Error::InvalidArgument(_)) {
                self.set_bg_error_for(e, BackgroundErrorReason::Compaction);
            }
        }
        r
    }

    /// `compaction_lock`, taken once no merge runs outside it (manual
    /// compaction picks every file in its range, busy or not).
    fn lock_with_nothing_running(&self) -> parking_lot::MutexGuard<'_, ()> {
        loop {
            let g = self.compaction_lock.lock();
            if self.running.lock().is_empty() {
                return g;
            }
            drop(g);
            let mut st = self.state.lock();
            self.done_cv.wait_for(&mut st, Duration::from_millis(10));
        }
    }
}

/// The files a task's MANIFEST edits took out of and put into the tree.
#[derive(Default)]
struct Touched {
    /// `(level, file number)`.
    inputs: Vec<(usize, u64)>,
    outputs: Vec<u64>,
}

impl Touched {
    fn note(&mut self, edit: &VersionEdit) {
        self.inputs.extend(edit.deleted_files.iter().map(|(level, _, id)| (*level, *id)));
        self.outputs.extend(edit.new_files.iter().map(|(_, _, f)| f.id));
    }
}

impl DbInner {
    /// Logs a finished task (a trivial move at debug level) and queues its event.
    fn report_compaction(&self, r: &CompactionRecord, touched: Touched) {
        let mut input_levels: Vec<usize> = touched.inputs.iter().map(|(l, _)| *l).collect();
        input_levels.sort_unstable();
        input_levels.dedup();
        let input_files: Vec<u64> = touched.inputs.iter().map(|(_, id)| *id).collect();
        let level = if r.kind == "move" { log::Level::Debug } else { log::Level::Info };
        log::log!(
            target: "strata::compaction",
            level,
            "[{}] {} {} ({}): levels {input_levels:?} files {input_files:?} -> L{} {:?}, read {} B, wrote {} B, {} ms",
            self.name,
            self.policy.name(),
            r.kind,
            r.reason,
            r.output_level,
            touched.outputs,
            r.bytes_read,
            r.bytes_written,
            r.duration.as_millis()
        );
        self.events.push(Event::Compaction(CompactionInfo {
            keyspace: self.name.clone(),
            policy: self.policy.name().to_string(),
            kind: r.kind,
            reason: r.reason,
            input_levels,
            output_level: r.output_level,
            input_files,
            output_files: touched.outputs,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            duration: r.duration,
        }));
        // The compaction thread delivers it; a manual compaction's runs on a user thread.
        self.bg_cv.notify_all();
    }
}

/// True if `task` puts its output into a new run of its level.
fn opens_new_run(task: &CompactionTask) -> bool {
    matches!(
        task,
        CompactionTask::Merge { output_run: RunTarget::New, .. }
            | CompactionTask::Move { to_run: RunTarget::New, .. }
    )
}

/// Clears a flag when dropped (on every return path).
struct ClearOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
