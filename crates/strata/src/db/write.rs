//! A tree's side of the write path: making room for a write (write stalls,
//! memtable switches) and flushes. The group commit that calls it is the
//! database's (commit.rs).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::{DbInner, DbState, Immutable};
use crate::error::{Error, Result};
use crate::events::FlushReason;
use crate::filename::wal_path;
use crate::memtable::MemTable;
use crate::stats::Counters;
use crate::wal::LogWriter;

impl DbInner {
    /// Waits out stalls and switches a full memtable; returns the memtable to
    /// write into. `bytes` is the size of the write group, which a delayed
    /// write is paced by. The caller holds the WAL lock (it is the only writer).
    pub(crate) fn make_room_for_write(
        &self,
        wal: &mut Option<LogWriter>,
        bytes: usize,
    ) -> Result<Arc<MemTable>> {
        self.idle.touch();
        let mut allow_delay = true;
        let mut st = self.state.lock();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::ReadOnly(e.clone()));
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            let l0 = self.versions.current().level_files(0);
            self.note_stall(&st, l0);
            let l0_stalls = !self.opts.disable_auto_compactions;
            let slowdown = self.opts.level0_slowdown_writes_trigger;
            if !(l0_stalls && l0 >= slowdown) {
                self.write_controller.clear();
            } else if allow_delay {
                // Paced rather than stopped later for seconds (write_controller.rs).
                allow_delay = false;
                let delay = self.write_controller.delay(bytes, l0 - slowdown, Instant::now());
                Counters::add(&self.counters.slowdowns, 1);
                if !delay.is_zero() {
                    drop(st);
                    std::thread::sleep(delay);
                    Counters::add(&self.counters.stall_micros, delay.as_micros() as u64);
                    st = self.state.lock();
                    continue;
                }
            }
            if st.mem.approximate_memory_usage() < self.opts.write_buffer_size {
                return Ok(st.mem.clone());
            }
            if st.imms.len() + 1 >= self.opts.max_write_buffer_number
                || (l0_stalls && l0 >= self.opts.level0_stop_writes_trigger)
            {
                let start = Instant::now();
                Counters::add(&self.counters.stops, 1);
                self.bg_cv.notify_all();
                self.done_cv.wait_for(&mut st, Duration::from_millis(100));
                Counters::add(&self.counters.stall_micros, start.elapsed().as_micros() as u64);
                continue;
            }
            self.switch_memtable(wal, &mut st, FlushReason::MemtableFull)?;
        }
    }

    /// Seals the active memtable and starts a new one with a new WAL. The
    /// caller holds the WAL lock (so it is the only one switching); the state
    /// lock is released during the file I/O so background threads go on.
    pub(crate) fn switch_memtable(
        &self,
        wal: &mut Option<LogWriter>,
        st: &mut MutexGuard<'_, DbState>,
        reason: FlushReason,
    ) -> Result<()> {
        let shared = &self.shared;
        let number = shared.root_versions.new_file_number();
        let r = MutexGuard::unlocked(st, || -> Result<LogWriter> {
            let file = self.vfs.create(&wal_path(&shared.dir, number))?;
            self.vfs.sync_dir(&shared.dir)?;
            // The old log must be complete on disk before newer writes depend on it.
            if let Some(old) = wal.as_mut() {
                old.sync()?;
            }
            Ok(LogWriter::new(file))
        });
        let writer = match r {
            Ok(w) => w,
            Err(e) => {
                // Other trees' state locks are taken one at a time, ours released.
                MutexGuard::unlocked(st, || {
                    self.set_bg_error_for(&e, crate::events::BackgroundErrorReason::Wal)
                });
                return Err(e);
            }
        };
        if let Some(old) = wal.replace(writer) {
            let old_number = shared.wal_number.swap(number, Ordering::SeqCst);
            shared.old_wals.lock().insert(old_number, old.len());
        }
        shared.note_wal_created(number);
        let old = std::mem::replace(&mut st.mem, Arc::new(MemTable::new()));
        let old_wal = std::mem::replace(&mut st.mem_wal, number);
        // Under the WAL lock no write is between sequencing and applying.
        let floor = std::mem::replace(&mut st.mem_floor, shared.root_versions.last_sequence());
        st.imms.push_back(Immutable { mem: old, wal: old_wal, reason, floor });
        self.install_super_version(st);
        self.bg_cv.notify_all();
        // A keyspace with nothing unflushed needs no older WAL. (Its
        // MANIFEST's log number stays older: replaying those WALs finds
        // nothing of it.) Switches are serialised by the WAL lock.
        for t in shared.all_trees() {
            if t.id != self.id {
                let mut other = t.state.lock();
                if other.mem.is_empty() && other.imms.is_empty() {
                    other.mem_wal = number;
                }
            }
        }
        Ok(())
    }

    /// Flushes the active memtable (if not empty) and waits for every
    /// immutable memtable to reach L0.
    pub(crate) fn flush(&self) -> Result<()> {
        self.flush_for(FlushReason::Manual)
    }

    /// Seals the active memtable (if it holds anything) for `reason` and
    /// waits until every sealed memtable is flushed.
    pub(crate) fn flush_for(&self, reason: FlushReason) -> Result<()> {
        self.check_writable()?;
        {
            let mut wal = self.shared.wal.lock();
            let mut st = self.state.lock();
            if let Some(e) = &st.bg_error {
                return Err(Error::ReadOnly(e.clone()));
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            if !st.mem.is_empty() {
                self.switch_memtable(&mut wal, &mut st, reason)?;
            }
        }
        self.wait_for_flushes()?;
        // The flush thread deletes freed WALs only after it has popped the
        // memtable the wait above watches; delete them here too, so a flush
        // returns with the WALs it freed gone.
        self.shared.delete_obsolete_wals();
        Ok(())
    }

    pub(crate) fn wait_for_flushes(&self) -> Result<()> {
        let mut st = self.state.lock();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::ReadOnly(e.clone()));
            }
            if st.imms.is_empty() {
                return Ok(());
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            self.done_cv.wait_for(&mut st, Duration::from_millis(100));
        }
    }
}
