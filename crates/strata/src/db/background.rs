//! Background work: one thread flushes immutable memtables, one runs the
//! compaction policy. Both publish results through the MANIFEST and then a new
//! super version, and delete files nothing references any more.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::DbInner;
use crate::compaction::executor::execute;
use crate::compaction::manual::{self, ManualRange};
use crate::compaction::monkey::{self, WriteTarget};
use crate::compaction::output::OutputWriter;
use crate::compaction::view::{build_view, build_view_with};
use crate::compaction::{
    validate_buffer_actions, validate_flush_level, validate_task, BufferAction, LsmView, PickResult,
    RunTarget,
};
use crate::error::{Error, Result};
use crate::filename::wal_path;
use crate::iter::InternalIterator;
use crate::key::{parse_internal_key, user_key};
use crate::memtable::MemTable;
use crate::stats::{CompactionRecord, Counters};
use crate::version::{NewFile, Version, VersionEdit};

impl DbInner {
    pub(crate) fn spawn_background(self: &Arc<Self>) -> Result<()> {
        let mut threads = self.threads.lock();
        let db = self.clone();
        threads.push(std::thread::Builder::new().name("strata-flush".into()).spawn(move || db.flush_loop())?);
        let db = self.clone();
        threads.push(
            std::thread::Builder::new().name("strata-compact".into()).spawn(move || db.compaction_loop())?,
        );
        Ok(())
    }

    fn flush_loop(&self) {
        loop {
            let job = {
                let mut st = self.state.lock();
                loop {
                    if st.shutting_down {
                        return;
                    }
                    if st.bg_error.is_none() {
                        if let Some(front) = st.imms.front() {
                            break front.clone();
                        }
                    }
                    self.bg_cv.wait(&mut st);
                }
            };
            if let Err(e) = self.flush_memtable(&job.0, job.1) {
                self.set_bg_error(&e);
            }
        }
    }

    /// Writes the oldest immutable memtable to an L0 table, records it and
    /// retires its WAL.
    fn flush_memtable(&self, mem: &Arc<MemTable>, wal: u64) -> Result<()> {
        let start = Instant::now();
        let env = self.env();
        let view = build_view(&self.versions.current(), &self.versions, &HashSet::new());
        let target = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries: mem.len() as u64 };
        let mut out = OutputWriter::new(&env, &view, &target, u64::MAX);
        let mut it = mem.iter();
        it.seek_to_first()?;
        while it.valid() {
            let seq = parse_internal_key(it.key())?.seq;
            out.add(it.key(), it.value(), seq)?;
            it.next()?;
        }
        let progress = out.progress();
        let outputs = out.finish()?;
        let stages = progress.times();
        let pipeline = env.pipeline;
        let mut edit = VersionEdit::default();
        // WALs older than the next unflushed memtable's are no longer needed.
        let next_log = {
            let st = self.state.lock();
            st.imms.get(1).map(|(_, w)| *w).unwrap_or(st.mem_wal)
        };
        edit.log_number = Some(next_log);
        let written: u64 = outputs.iter().map(|f| f.size).sum();
        let n = outputs.len();
        // A placement below L0 is decided and installed with no compaction
        // running, so none can put older data above the table meanwhile; if
        // one runs, the table goes to L0 rather than wait.
        let placing = (self.opts.max_mem_compaction_level > 0 && !outputs.is_empty())
            .then(|| self.compaction_lock.try_lock())
            .flatten();
        let (level, run) = match &placing {
            Some(_) => self.flush_placement(&outputs)?,
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
        {
            let mut st = self.state.lock();
            st.imms.pop_front();
            self.install_super_version(&st);
        }
        let _ = self.vfs.remove_file(&wal_path(&self.dir, wal));
        self.counters.record(CompactionRecord {
            kind: "flush",
            reason: "memtable full",
            output_level: level,
            input_files: 0,
            output_files: n,
            bytes_read: 0,
            bytes_written: written,
            warmup_blocks_inserted: 0,
            duration: start.elapsed(),
            stages,
            pipeline,
        });
        self.purge_obsolete_files();
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Where a flushed table goes: the policy's level (validated), and the run
    /// there to join (`None`: a new one). Callers hold `compaction_lock`.
    fn flush_placement(&self, outputs: &[NewFile]) -> Result<(usize, Option<u64>)> {
        let smallest = outputs.iter().map(|f| user_key(&f.smallest)).min().unwrap_or_default();
        let largest = outputs.iter().map(|f| user_key(&f.largest)).max().unwrap_or_default();
        let bytes = outputs.iter().map(|f| f.size).sum();
        let version = self.versions.current();
        let view = build_view(&version, &self.versions, &HashSet::new());
        let max_level = self.opts.max_mem_compaction_level.min(view.levels.len().saturating_sub(1));
        let level = self.policy.flush_level(&view, smallest, largest, bytes, max_level).min(max_level);
        if level == 0 {
            return Ok((0, None));
        }
        validate_flush_level(&view, level, smallest, largest)?;
        Ok((level, version.levels.get(level).and_then(|l| l.runs.first()).map(|r| r.id)))
    }

    fn compaction_loop(&self) {
        let mut last_trim = Instant::now();
        let interval = self.opts.buffer_trim_interval;
        loop {
            {
                let st = self.state.lock();
                if st.shutting_down {
                    return;
                }
            }
            let paused = self.opts.disable_auto_compactions || self.check_bg_error().is_err();
            if !paused && self.policy.wants_trim() && last_trim.elapsed() >= interval {
                last_trim = Instant::now();
                if let Err(e) = self.trim_buffers() {
                    self.set_bg_error(&e);
                    continue;
                }
            }
            let did = if paused {
                Ok(false)
            } else {
                let _g = self.compaction_lock.lock();
                self.compact_once()
            };
            match did {
                Ok(true) => continue,
                Ok(false) => {
                    // Files whose last reader (an iterator, a snapshot's read)
                    // went away while nothing else ran are deleted here.
                    self.purge_obsolete_files();
                    let mut st = self.state.lock();
                    if !st.shutting_down {
                        self.bg_cv.wait_for(&mut st, interval.min(Duration::from_millis(500)));
                    }
                }
                Err(e) => self.set_bg_error(&e),
            }
        }
    }

    /// One compaction-buffer trim (LSbM Algorithm 2): the policy sees every
    /// buffer file's cached-block fraction, from the block cache's exact
    /// per-file counts, and names the files to remove. Returns how many.
    pub(crate) fn trim_buffers(&self) -> Result<usize> {
        let _g = self.compaction_lock.lock();
        self.check_bg_error()?;
        let version = self.versions.current();
        if version.levels.iter().all(|l| l.buffers.is_empty()) && !self.policy.wants_trim() {
            return Ok(0);
        }
        let cached = |f: &crate::version::FileMeta| -> Option<f64> {
            let blocks = self.tables.get(f.id, f.size).ok()?.num_data_blocks();
            let resident = self.block_cache.as_ref().map_or(0, |c| c.resident_blocks(f.id));
            Some(if blocks == 0 { 1.0 } else { resident as f64 / blocks as f64 })
        };
        let view = build_view_with(&version, &self.versions, &HashSet::new(), &cached);
        let Some(pick) = self.policy.trim(&view) else { return Ok(0) };
        let removed = pick.buffer.iter().filter(|a| matches!(a, BufferAction::RemoveFile { .. })).count();
        self.run_task(version, &view, &pick)?;
        Counters::add(&self.counters.buffer_trims, 1);
        Counters::add(&self.counters.buffer_files_trimmed, removed as u64);
        Ok(removed)
    }

    /// Asks the policy for one task and runs it. Callers hold `compaction_lock`.
    fn compact_once(&self) -> Result<bool> {
        let version = self.versions.current();
        let view = build_view(&version, &self.versions, &HashSet::new());
        let Some(pick) = self.policy.pick(&view) else {
            return self.seek_compaction(version, &view);
        };
        self.run_task(version, &view, &pick)?;
        Ok(true)
    }

    /// Validates and runs a task picked from `version`, publishes the result
    /// and deletes the inputs nothing else holds. Takes the version by value:
    /// while any `Arc` of it lives, its files cannot be deleted, so it is
    /// dropped before the purge (callers must not keep another copy).
    pub(super) fn run_task(&self, version: Arc<Version>, view: &LsmView, pick: &PickResult) -> Result<()> {
        let refiltered = monkey::refilter_move(&self.opts, self.policy.as_ref(), view, pick);
        let pick = refiltered.as_ref().unwrap_or(pick);
        validate_task(view, &pick.task)?;
        validate_buffer_actions(view, pick)?;
        let smallest_snapshot = self.snapshots.oldest(&self.visible_seq);
        let record = execute(&self.env(), &version, view, pick, smallest_snapshot)?;
        drop(version);
        self.counters.record(record);
        {
            let st = self.state.lock();
            self.install_super_version(&st);
        }
        self.purge_obsolete_files();
        self.done_cv.notify_all();
        Ok(())
    }

    /// Blocks until no immutable memtable waits for a flush and the policy has
    /// nothing to pick (RocksDB `WaitForCompact`). With auto compactions off it
    /// only waits for flushes.
    pub(crate) fn wait_for_compactions(&self) -> Result<()> {
        if self.read_only {
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
            // Holding the compaction lock means no task is half done.
            if let Some(_g) = self.compaction_lock.try_lock() {
                let version = self.versions.current();
                let view = build_view(&version, &self.versions, &HashSet::new());
                if self.policy.pick(&view).is_none() && !self.has_seek_candidates() {
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
        let _g = self.compaction_lock.lock();
        self.check_bg_error()?;
        let range = ManualRange { start, end };
        let deepest = {
            let version = self.versions.current();
            manual::deepest_overlapping_level(&build_view(&version, &self.versions, &HashSet::new()), &range)
        };
        for level in 0..deepest {
            let version = self.versions.current();
            let view = build_view(&version, &self.versions, &HashSet::new());
            let Some(pick) = self.policy.compact_range(&view, level, &range) else { continue };
            if let Err(e) = self.run_task(version, &view, &pick) {
                if !matches!(e, Error::InvalidArgument(_)) {
                    self.set_bg_error(&e);
                }
                return Err(e);
            }
        }
        self.purge_obsolete_files();
        Ok(())
    }
}
