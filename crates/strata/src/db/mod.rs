//! The database: its handle (handle.rs) and keyspace handles (keyspace.rs),
//! and here one keyspace's tree, which the write path, read path and
//! background threads work on.

mod background;
mod bounds;
mod cf;
mod checkpoint;
mod commit;
pub(crate) mod conflict;
mod ddl;
mod file_get;
mod handle;
mod idle;
mod ingest;
mod iter;
mod iter_view;
mod keyspace;
mod ks_dirs;
mod ks_recovery;
mod multi_get;
mod policy_change;
mod pool;
mod properties;
mod range_read;
mod raw_iter;
mod read;
mod read_memo;
mod read_only;
pub(crate) mod read_options;
mod recovery;
mod repair;
mod seek;
mod shared;
mod snapshot;
mod tree_open;
mod write;
mod write_controller;
pub(crate) mod write_options;
mod writer_queue;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};

pub use bounds::prefix_successor;
pub use handle::Db;
pub use iter::DbIterator;
pub use keyspace::Keyspace;
pub use raw_iter::DbRawIterator;
pub use repair::{destroy, repair, RepairReport};
pub use snapshot::Snapshot;

use crate::cache::{BlockCache, RowCache, TableCache};
use crate::compaction::view::build_view;
use crate::compaction::CompactionPolicy;
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::pinned::PinnedValue;
use crate::sink::Env;
use crate::stats::{Counters, LevelStats, Stats};
use crate::version::{Level, Version, VersionSet};
use crate::vfs::Vfs;
use shared::Shared;

/// What readers see: the memtables and the tree, swapped atomically together.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
    /// The tables of `version` that hold range tombstones.
    pub range_del_files: Vec<Arc<crate::version::FileMeta>>,
}

/// A sealed memtable waiting for its flush.
#[derive(Clone)]
pub(crate) struct Immutable {
    pub mem: Arc<MemTable>,
    /// The WAL its writes went to.
    pub wal: u64,
    /// Why it was sealed.
    pub reason: crate::events::FlushReason,
    /// Every write in it has a greater sequence than this (`DbState::mem_floor`).
    pub floor: crate::key::SeqNum,
}

/// Write-side state, under `DbInner::state`.
pub(crate) struct DbState {
    pub mem: Arc<MemTable>,
    pub mem_wal: u64,
    /// The database's last sequence when `mem` became the active memtable:
    /// every write to this tree after it is in `mem`, `imms` or newer.
    pub mem_floor: crate::key::SeqNum,
    /// Immutable memtables waiting for flush, oldest first.
    pub imms: VecDeque<Immutable>,
    /// Flushed memtables kept so transactions can see what changed since
    /// they read (`max_write_buffer_size_to_maintain`), oldest first; never
    /// read by gets or iterators. INVARIANT: with `imms` and `mem` they cover
    /// one unbroken stretch of sequences.
    pub history: VecDeque<Immutable>,
    /// Set by a failed WAL write/sync, flush or compaction: the DB goes read-only.
    pub bg_error: Option<String>,
    pub shutting_down: bool,
}

/// One keyspace's LSM tree (the default keyspace's is the root directory's).
pub(crate) struct DbInner {
    /// The keyspace id: 0 for the default keyspace.
    pub id: u32,
    /// The keyspace name ("default" for id 0).
    pub name: String,
    /// Set once the keyspace is dropped: its handles refuse every operation.
    pub dropped: AtomicBool,
    pub dir: PathBuf,
    pub opts: Options,
    pub vfs: Arc<dyn Vfs>,
    pub versions: Arc<VersionSet>,
    pub tables: Arc<TableCache>,
    /// This tree's handle on the database's block cache (its own namespace).
    pub block_cache: Option<Arc<BlockCache>>,
    /// This tree's handle on the database's row cache of point-lookup results
    /// by (file, user key); `None` when `row_cache_capacity` is 0.
    pub row_cache: Option<Arc<RowCache>>,
    pub policy: Arc<dyn CompactionPolicy>,
    pub sv: ArcSwap<SuperVersion>,
    pub state: Mutex<DbState>,
    /// Wakes the database's background pool for this tree (a sealed
    /// memtable, queued events, possible compaction work).
    pub bg_cv: pool::Waker,
    /// Signalled when a flush or compaction finishes (stalled writers, `flush()`).
    pub done_cv: Condvar,
    pub counters: Counters,
    /// Picking and installing tasks, background or manual, one at a time
    /// (flushes placed below L0 take it too, so no compaction lands under them
    /// meanwhile). A merge runs under it too unless several may run at once
    /// (`max_background_compactions`); then it runs outside, listed in `running`.
    pub compaction_lock: Mutex<()>,
    /// Paces writes while L0 is past the slowdown trigger.
    pub write_controller: write_controller::WriteController,
    /// True while a task executes under `compaction_lock` (not while the
    /// lock is held only to pick): a flush placement waits for a pick, not
    /// for a task.
    pub task_running: AtomicBool,
    /// Input files of the merges running outside `compaction_lock`, one entry per merge.
    pub running: Mutex<Vec<Vec<u64>>>,
    /// Ids of tables that used up their allowed seeks, oldest first.
    pub seek_candidates: Mutex<Vec<u64>>,
    /// Held while obsolete tables are deleted, so a caller that finds nothing
    /// left to take (another thread took it) returns only once those files
    /// are gone: after `compact_range` its inputs are never still on disk.
    pub purging: Mutex<()>,
    /// What all keyspaces of the database share (WAL, sequences, snapshots, lock).
    pub shared: Arc<Shared>,
    /// Events waiting for the listeners, and the last stall condition.
    pub events: crate::events::EventHub,
    /// When the tree last took a write, for idle compaction.
    pub idle: idle::IdleClock,
}

impl DbInner {
    /// The environment of a flush or compaction; `by_caller` when a caller
    /// waits for it (its `Auto` pipeline then follows the stage model, as it
    /// does when writes wait on the tree's backlog; otherwise sequential).
    pub(crate) fn env(&self, by_caller: bool) -> Env<'_> {
        use crate::compaction::auto::{self, Waited};
        let waited = if by_caller {
            Waited::ByCaller
        } else if self.writes_wait() {
            Waited::ByWriters
        } else {
            Waited::No
        };
        Env {
            vfs: self.vfs.as_ref(),
            versions: &self.versions,
            tables: &self.tables,
            opts: &self.opts,
            policy: self.policy.as_ref(),
            pipeline: auto::resolve(self.opts.compaction_pipeline, &self.counters, waited),
            split_merges: Env::splits(self.opts.compaction_pipeline),
        }
    }

    /// True when writes are held back (delayed or stopped), or L0 is close
    /// enough to its slowdown trigger that they soon will be.
    fn writes_wait(&self) -> bool {
        let l0 = self.versions.current().level_files(0);
        let o = &self.opts;
        self.events.writes_held_back()
            || (!o.disable_auto_compactions
                && crate::compaction::auto::l0_behind(
                    l0,
                    o.level0_file_num_compaction_trigger,
                    o.level0_slowdown_writes_trigger,
                ))
    }

    /// Publishes the current memtables and version to readers. Callers hold `state`.
    pub(crate) fn install_super_version(&self, st: &DbState) {
        self.sv.store(Arc::new(SuperVersion::new(
            st.mem.clone(),
            st.imms.iter().rev().map(|i| i.mem.clone()).collect(),
            self.versions.current(),
        )));
    }

    /// Puts the database in read-only mode after a failure.
    pub(crate) fn set_bg_error(&self, e: &Error) {
        self.set_bg_error_for(e, crate::events::BackgroundErrorReason::Other);
    }

    /// [`Self::set_bg_error`], saying what failed (logged and sent to the
    /// listeners the first time). Every keyspace stops taking writes, not
    /// only this one: the failed file may be the shared WAL or the root
    /// MANIFEST's device, and a database is read-only as a whole.
    pub(crate) fn set_bg_error_for(&self, e: &Error, reason: crate::events::BackgroundErrorReason) {
        let what = match reason {
            crate::events::BackgroundErrorReason::Wal => "writing the WAL".to_string(),
            r => format!("{r} in keyspace {:?}", self.name),
        };
        let msg = format!(
            "{e} ({what}); reopen the database to go on (after freeing space if the disk is full), \
             or read the data with Db::open_read_only"
        );
        // The other keyspaces first: a caller woken by this tree's error (a
        // flush waiting here) must find the whole database read-only. A
        // dropped keyspace's failure is none of the live keyspaces' business.
        if !self.dropped.load(Ordering::Acquire) {
            for t in self.shared.all_trees() {
                if t.id != self.id {
                    t.set_bg_error_msg(&msg);
                }
            }
        }
        if self.set_bg_error_msg(&msg) {
            self.events.background_error(&self.name, reason, &msg);
            self.bg_cv.notify_all(); // deliver it
        }
    }

    /// A failed root-MANIFEST edit outside flushes and compactions (a
    /// keyspace created or dropped): the database goes read-only as well.
    pub(crate) fn manifest_failed(&self, e: &Error) {
        if !matches!(e, Error::InvalidArgument(_)) {
            self.set_bg_error(e);
        }
    }

    /// Sets this tree's background error unless one is set; true if it was
    /// not. Takes only this tree's state lock.
    fn set_bg_error_msg(&self, msg: &str) -> bool {
        let mut st = self.state.lock();
        let first = st.bg_error.is_none();
        if first {
            st.bg_error = Some(msg.to_string());
        }
        drop(st);
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
        first
    }

    /// Refuses a change on a read-only handle.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.shared.read_only {
            return Err(Error::opened_read_only());
        }
        Ok(())
    }

    pub(crate) fn check_bg_error(&self) -> Result<()> {
        self.check_writable()?;
        match &self.state.lock().bg_error {
            Some(e) => Err(Error::ReadOnly(e.clone())),
            None => Ok(()),
        }
    }

    /// Deletes table files no version references any more, and drops their
    /// cached blocks, cached rows and open handles.
    pub(crate) fn purge_obsolete_files(&self) {
        let _g = self.purging.lock();
        for id in self.versions.obsolete_files().take() {
            self.tables.evict(id);
            if let Some(c) = &self.block_cache {
                c.invalidate_file(id);
            }
            if let Some(c) = &self.row_cache {
                c.invalidate_file(id);
            }
            let removed = self.vfs.remove_file(&self.tables.paths().table(id)).is_ok();
            self.tables.paths().forget(id);
            if removed {
                Counters::add(&self.counters.files_deleted, 1);
            }
        }
    }

    /// Entry-weighted bloom bits per key over a level's run files. Files a
    /// MANIFEST recorded without bits (older versions) are read from their
    /// table properties.
    fn level_bloom_bits(&self, level: &Level) -> f64 {
        let (mut bits, mut entries) = (0.0, 0.0);
        for f in level.runs.iter().flat_map(|r| &r.files) {
            let b = f
                .bloom_bits_per_key
                .or_else(|| f.table(&self.tables).ok().map(|t| t.properties().bloom_bits_per_key));
            if let Some(b) = b {
                bits += b * f.num_entries as f64;
                entries += f.num_entries as f64;
            }
        }
        if entries == 0.0 {
            0.0
        } else {
            bits / entries
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut s = Stats::default();
        self.counters.fill(&mut s);
        let version = self.versions.current();
        let view = build_view(&version, &self.versions, &Default::default());
        let scores = self.policy.scores(&view);
        let in_no_run = version.buffer_bytes_in_no_run();
        s.levels = (0..version.num_levels())
            .map(|l| {
                let mut ls = LevelStats {
                    level: l,
                    files: version.level_files(l),
                    bytes: version.level_bytes(l),
                    runs: version.levels[l].runs.len(),
                    score: scores.get(l).copied().unwrap_or(0.0),
                    target_bytes: self.policy.level_target_bytes(&view, l),
                    buffer_tables: version.levels[l].buffers.iter().map(|b| b.tables.len()).sum(),
                    buffer_files: version.levels[l].buffers.iter().map(|b| b.num_files()).sum(),
                    buffer_bytes: version.levels[l].buffer_bytes(),
                    buffer_bytes_in_no_run: in_no_run[l],
                    segments: version.levels[l]
                        .runs
                        .iter()
                        .flat_map(|r| &r.files)
                        .map(|f| f.num_segments())
                        .sum(),
                    bloom_bits_per_key: self.level_bloom_bits(&version.levels[l]),
                    ..LevelStats::default()
                };
                self.counters.fill_level(&mut ls);
                ls
            })
            .collect();
        s.total_table_bytes = version.live_bytes();
        if let Some(c) = &self.block_cache {
            s.cache = c.stats();
        }
        if let Some(c) = &self.row_cache {
            s.row_cache = c.stats();
        }
        let sv = self.sv.load();
        s.memtable_bytes = (sv.mem.approximate_memory_usage()
            + sv.imms.iter().map(|m| m.approximate_memory_usage()).sum::<usize>())
            as u64;
        s.open_tables = self.tables.len();
        s.table_memory_bytes = self.tables.memory_usage() as u64;
        s.background_error = self.state.lock().bg_error.clone();
        s
    }

    /// `Db::property` / `Keyspace::property` for this tree.
    /// The oldest WAL this tree's unflushed writes need.
    pub(crate) fn oldest_needed_wal(&self) -> u64 {
        let st = self.state.lock();
        st.imms.front().map_or(st.mem_wal, |i| i.wal)
    }

    /// Refuses operations on a dropped keyspace or a closed database.
    pub(crate) fn check_live(&self) -> Result<()> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::KeyspaceNotFound(format!("{:?} was dropped", self.name)));
        }
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Stops this tree's background work: waits for its running jobs, after
    /// which the pool runs none, and delivers the events left.
    pub(crate) fn stop_background(&self) {
        self.state.lock().shutting_down = true;
        self.done_cv.notify_all();
        self.shared.pool.remove(self.id);
        self.events.deliver();
    }

    /// Flushes memtables holding writes that skipped the WAL (unless
    /// `avoid_flush_during_shutdown`), stops every keyspace's background
    /// work, syncs the WAL unless it failed, and releases the directory lock.
    /// Returns the first error: a flush that could not run means those
    /// writes are lost. Called on the default keyspace's tree.
    fn shutdown(&self) -> Result<()> {
        let shared = &self.shared;
        if shared.read_only {
            // Nothing to flush, sync, delete or unlock.
            shared.closed.store(true, Ordering::SeqCst);
            shared.trees.write().clear();
            return Ok(());
        }
        if shared.closed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let trees = shared.all_trees();
        let mut result = Ok(());
        if shared.unlogged_writes.load(Ordering::Acquire) && !self.opts.avoid_flush_during_shutdown {
            for t in &trees {
                let r = t.flush_for(crate::events::FlushReason::Shutdown).map_err(|e| {
                    Error::ReadOnly(format!(
                        "close could not flush writes made without the WAL, so they are lost: {e}"
                    ))
                });
                result = result.and(r);
            }
        }
        if shared.closed.swap(true, Ordering::SeqCst) {
            return result;
        }
        for t in &trees {
            t.stop_background();
        }
        shared.pool.shutdown();
        shared.writers_cv.notify_all();
        if let Some(w) = shared.wal.lock().as_mut() {
            // A WAL that failed is never written again; its writer saw the error.
            if !w.failed() {
                result = result.and(w.sync());
            }
        }
        for t in &trees {
            t.purge_obsolete_files();
        }
        shared.trees.write().clear();
        if let Some(l) = &shared.info_log {
            match &result {
                Ok(()) => l.line("close", format_args!("closed")),
                Err(e) => l.line("close", format_args!("closed with an error: {e}")),
            }
        }
        shared.lock_file.lock().take();
        result
    }
}

/// `multi_get`'s answers with their values copied out.
pub(crate) fn into_vecs(answers: Vec<Result<Option<PinnedValue>>>) -> Vec<Result<Option<Vec<u8>>>> {
    answers.into_iter().map(|a| a.map(|v| v.map(PinnedValue::into_vec))).collect()
}

/// `strata.compaction-pipeline`: the mode, and where all merges' time went.
fn pipeline_report(s: &Stats, mode: crate::options::CompactionPipeline) -> String {
    let secs = s.compaction_time.as_secs_f64();
    let mb = |b: u64| b as f64 / 1e6;
    let bw = if secs > 0.0 { mb(s.compaction_bytes_read) / secs } else { 0.0 };
    let st = s.compaction_stages;
    format!(
        "mode {}\ncompactions {}\ninput {:.1} MB, output {:.1} MB, wall {:.3} s, bandwidth {:.1} MB/s\n\
         compute (compress+checksum) {:.3} s, write {:.3} s, merge waiting on output {:.3} s\n\
         sub-tasks {}, merging them {:.3} s, waiting for them {:.3} s\n\
         read {:.3} s, merge waiting on reads {:.3} s\n\
         tables finished apart {}, merge waiting on them {:.3} s\n\
         cpu (every thread) {:.3} s",
        mode.name(),
        s.compactions,
        mb(s.compaction_bytes_read),
        mb(s.compaction_bytes_written),
        secs,
        bw,
        st.compute.as_secs_f64(),
        st.write.as_secs_f64(),
        st.merge_waiting.as_secs_f64(),
        st.subtasks,
        st.subtask_merge.as_secs_f64(),
        st.subtask_waiting.as_secs_f64(),
        st.read.as_secs_f64(),
        st.read_waiting.as_secs_f64(),
        st.finished_apart,
        st.finish_waiting.as_secs_f64(),
        st.cpu.as_secs_f64(),
    )
}
