//! Group commit, run by the database's shared state for every keyspace: the
//! writer at the front of the queue commits the batches queued behind it
//! with one WAL write and at most one sync. Trees only make room for the
//! write (write.rs).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::conflict::TrackedKey;
use super::shared::{CommitScratch, Shared};
use super::writer_queue::WriteSlot;
use super::DbInner;
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::events::FlushReason;
use crate::key::ValueKind;
use crate::memtable::MemTable;
use crate::options::WriteOptions;
use crate::stats::Counters;
use crate::wal::LogWriter;

/// Upper bound on the bytes one group commit gathers.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// Refuses an entry no table could hold: once in the WAL it would fail every
/// flush and every later open. Only batches big enough to hold one are scanned.
fn check_entry_sizes(batch: &WriteBatch) -> Result<()> {
    if batch.size_in_bytes() <= crate::MAX_ENTRY_BYTES {
        return Ok(());
    }
    for op in batch {
        let op = op?;
        let len = op.key.len().saturating_add(op.value.len());
        if len > crate::MAX_ENTRY_BYTES {
            return Err(Error::invalid(format!(
                "entry of {len} bytes (key + value) exceeds the {} byte limit",
                crate::MAX_ENTRY_BYTES
            )));
        }
    }
    Ok(())
}

/// Adds to `trees` the trees `batch` writes to that it lacks. Refuses an op
/// of a keyspace that is not open (dropped) and a merge into a keyspace
/// without a merge operator: every later read of that key would fail
/// (RocksDB refuses it too). A refused batch adds nothing.
fn resolve_batch(shared: &Shared, batch: &WriteBatch, trees: &mut Vec<(u32, Arc<DbInner>)>) -> Result<()> {
    let known = trees.len();
    let r = (|| {
        for op in batch.iter() {
            let op = op?;
            let i = match trees.iter().position(|(id, _)| *id == op.keyspace) {
                Some(i) => i,
                None => {
                    trees.push((op.keyspace, shared.tree(op.keyspace)?));
                    trees.len() - 1
                }
            };
            let tree = &trees[i].1;
            if op.kind == ValueKind::Merge && tree.opts.merge_operator.is_none() {
                return Err(Error::invalid(format!(
                    "Merge operator not set: keyspace {:?} has no merge operator (Options::with_merge_operator, KeyspaceOptions::with_merge_operator)",
                    tree.name
                )));
            }
        }
        Ok(())
    })();
    if r.is_err() {
        trees.truncate(known);
    }
    r
}

impl Shared {
    /// Commits `batch` in a group with the writers queued with it. `via` is
    /// the tree of the handle the write came through: its counters count the
    /// groups this write leads, and it reports a failed WAL write.
    pub(crate) fn write(&self, via: &DbInner, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        self.write_checked(via, batch, wo, Vec::new())
    }

    /// [`Self::write`] that commits only if none of `check` changed after its
    /// sequence (an optimistic transaction's commit; then even an empty batch
    /// is checked). Fails with `Busy` or `TryAgain` otherwise, writing nothing.
    pub(crate) fn write_checked(
        &self,
        via: &DbInner,
        batch: WriteBatch,
        wo: &WriteOptions,
        check: Vec<TrackedKey>,
    ) -> Result<()> {
        if self.read_only {
            return Err(Error::opened_read_only());
        }
        if wo.sync && wo.disable_wal {
            // RocksDB refuses this too: there is no log to sync.
            return Err(Error::invalid(
                "a sync write needs the WAL: WriteOptions::with_sync(true) cannot be combined with with_disable_wal(true)",
            ));
        }
        batch.check_owner(self.instance)?;
        if batch.is_empty() && check.is_empty() {
            return Ok(());
        }
        check_entry_sizes(&batch)?;
        let slot = Arc::new(WriteSlot::new(batch, wo.sync, wo.disable_wal, check));
        let mut q = self.writers.lock();
        q.queue.push_back(slot.clone());
        loop {
            if let Some(r) = slot.result.lock().take() {
                return r;
            }
            if q.queue.front().is_some_and(|f| Arc::ptr_eq(f, &slot)) {
                break;
            }
            if self.closed.load(Ordering::Acquire) {
                q.queue.retain(|s| !Arc::ptr_eq(s, &slot));
                return Err(Error::Closed);
            }
            self.writers_cv.wait(&mut q);
        }
        // Leader: take a group from the front of the queue.
        let mut group = std::mem::take(&mut q.group);
        let mut bytes = 0;
        for s in q.queue.iter() {
            // A checked batch commits alone: its check must see every write
            // sequenced before it applied (RocksDB's optimistic commit too).
            let joins = s.check.is_empty() && group.first().is_none_or(|f| f.check.is_empty());
            if !group.is_empty() && (bytes + s.size > MAX_GROUP_BYTES || !joins) {
                break;
            }
            bytes += s.size;
            group.push(s.clone());
        }
        drop(q);
        let result = self.commit_group(via, &group);
        let mut q = self.writers.lock();
        for s in &group {
            q.queue.pop_front();
            if !Arc::ptr_eq(s, &slot) {
                *s.result.lock() = Some(match (s.refused.lock().take(), &result) {
                    (Some(e), _) => Err(e),
                    (None, Ok(())) => Ok(()),
                    (None, Err(e)) => Err(e.duplicate()),
                });
            }
        }
        group.clear();
        q.group = group;
        drop(q);
        self.writers_cv.notify_all();
        let refused = slot.refused.lock().take();
        match refused {
            Some(e) => Err(e),
            None => result,
        }
    }

    fn commit_group(&self, via: &DbInner, group: &[Arc<WriteSlot>]) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        // Under the WAL lock no keyspace is dropped until the group is applied.
        let mut wal_guard = self.wal.lock();
        let mut scratch = self.commit_scratch.lock();
        let CommitScratch { trees, mems } = &mut *scratch;
        let r = self.commit_locked(via, group, &mut wal_guard, trees, mems);
        trees.clear();
        mems.clear();
        r
    }

    /// [`Self::commit_group`] under the WAL lock, with emptied buffers.
    fn commit_locked(
        &self,
        via: &DbInner,
        group: &[Arc<WriteSlot>],
        wal_guard: &mut Option<LogWriter>,
        trees: &mut Vec<(u32, Arc<DbInner>)>,
        mems: &mut Vec<Arc<MemTable>>,
    ) -> Result<()> {
        // Each batch is checked on its own: one that names a dropped keyspace
        // or merges without an operator fails its writer only.
        let mut batch: Option<WriteBatch> = None;
        let (mut committed, mut sync, mut logged) = (0u64, false, false);
        for s in group {
            let Some(b) = s.batch.lock().take() else { continue };
            if let Err(e) = self.check_unchanged(&s.check).and_then(|()| resolve_batch(self, &b, trees)) {
                *s.refused.lock() = Some(e);
                continue;
            }
            if b.is_empty() {
                continue; // a transaction that only read: checked, nothing to write
            }
            match &mut batch {
                None => batch = Some(b),
                Some(all) => all.append(&b),
            }
            committed += 1;
            sync |= s.sync;
            logged |= !s.disable_wal;
        }
        let Some(mut batch) = batch else { return Ok(()) };
        self.flush_oldest_if_wal_full(wal_guard)?;
        // Trees make room in keyspace order, as they always have.
        trees.sort_unstable_by_key(|(id, _)| *id);
        for (_, t) in trees.iter() {
            mems.push(t.make_room_for_write(wal_guard, batch.size_in_bytes())?);
        }
        let wal = wal_guard.as_mut().ok_or(Error::Closed)?;
        let first_seq = self.root_versions.last_sequence() + 1;
        batch.set_sequence(first_seq);
        if logged {
            let before = wal.len();
            let r = wal.add_record(batch.data()).and_then(|_| if sync { wal.sync() } else { wal.flush() });
            if let Err(e) = r {
                // The WAL may now hold a partial record: no later write may follow it.
                via.set_bg_error_for(&e, crate::events::BackgroundErrorReason::Wal);
                return Err(e);
            }
            Counters::add(&via.counters.wal_bytes, wal.len() - before);
            if sync {
                Counters::add(&via.counters.wal_syncs, 1);
            }
        } else {
            // Only a flush can persist these; `close` does one (see `shutdown`).
            self.unlogged_writes.store(true, Ordering::Release);
        }
        Counters::add(&via.counters.write_groups, 1);
        Counters::add(&via.counters.writes, committed);
        let mut seq = first_seq;
        let mut user_bytes = 0u64;
        for op in batch.iter() {
            let op = op?;
            let i = trees
                .iter()
                .position(|(id, _)| *id == op.keyspace)
                .ok_or_else(|| Error::corruption("batch changed while committed"))?;
            mems[i].add_op(seq, &op);
            user_bytes += (op.key.len() + op.value.len()) as u64;
            seq += 1;
        }
        Counters::add(&via.counters.user_bytes, user_bytes);
        self.root_versions.set_last_sequence(seq - 1);
        for (_, t) in trees.iter() {
            t.versions.set_last_sequence(seq - 1);
        }
        self.visible_seq.store(seq - 1, Ordering::Release);
        Ok(())
    }

    /// Fails if a key of `check` changed after its sequence (see
    /// [`DbInner::check_unchanged`]); a dropped keyspace fails it too.
    fn check_unchanged(&self, check: &[TrackedKey]) -> Result<()> {
        let mut keys: Vec<&TrackedKey> = check.iter().collect();
        keys.sort_unstable_by_key(|k| k.keyspace);
        for chunk in keys.chunk_by(|a, b| a.keyspace == b.keyspace) {
            self.tree(chunk[0].keyspace)?.check_unchanged(chunk)?;
        }
        Ok(())
    }

    /// `max_total_wal_size`: when the live WALs outgrow it, switches the
    /// memtable of every keyspace whose unflushed writes hold the oldest WAL,
    /// so its flush frees that WAL (a cold keyspace cannot pin the log forever).
    fn flush_oldest_if_wal_full(&self, wal: &mut Option<LogWriter>) -> Result<()> {
        let Some(active) = wal.as_ref().map(|w| w.len()) else { return Ok(()) };
        if self.old_wals.lock().is_empty() || self.total_wal_bytes(active) <= self.wal_limit() {
            return Ok(());
        }
        let oldest = self.oldest_needed_wal();
        for t in self.all_trees() {
            let mut st = t.state.lock();
            let holds_oldest = st.imms.is_empty() && !st.mem.is_empty() && st.mem_wal <= oldest;
            if holds_oldest && st.bg_error.is_none() && !st.shutting_down {
                t.switch_memtable(wal, &mut st, FlushReason::WalSize)?;
                Counters::add(&t.counters.wal_size_flushes, 1);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::thread;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::{Db, KeyspaceOptions, MemVfs, Options};

    /// Waits until `n` writers are queued (the front one has taken its group).
    fn wait_for_writers(db: &Db, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while db.inner().shared.writers.lock().queue.len() < n {
            assert!(Instant::now() < deadline, "{n} writers never queued");
            thread::yield_now();
        }
    }

    #[test]
    fn a_batch_for_a_dropped_keyspace_fails_only_its_own_writer() {
        let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new()))).unwrap();
        let gone = db.create_keyspace("gone", KeyspaceOptions::default()).unwrap();
        let live = db.create_keyspace("live", KeyspaceOptions::default()).unwrap();
        db.drop_keyspace("gone").unwrap();
        let mut to_gone = WriteBatch::new();
        to_gone.put_cf(&gone, "g", "1");
        let mut no_operator = WriteBatch::new();
        no_operator.put("m0", "v");
        no_operator.merge("m", "x");
        let mut good = WriteBatch::new();
        good.put_cf(&live, "k", "v");
        good.put("d", "v");

        // Holding the WAL lock keeps the first leader from committing, so the
        // next three writers queue behind it and form one group.
        let wal = db.inner().shared.wal.lock();
        let (first, gone_r, merge_r, good_r) = thread::scope(|s| {
            let first = s.spawn(|| db.put("first", "1"));
            wait_for_writers(&db, 1);
            let gone_r = s.spawn(|| db.write(to_gone));
            wait_for_writers(&db, 2);
            let merge_r = s.spawn(|| db.write(no_operator));
            wait_for_writers(&db, 3);
            let good_r = s.spawn(|| db.write(good));
            wait_for_writers(&db, 4);
            drop(wal);
            (first.join().unwrap(), gone_r.join().unwrap(), merge_r.join().unwrap(), good_r.join().unwrap())
        });
        first.unwrap();
        assert!(matches!(gone_r, Err(Error::KeyspaceNotFound(_))), "{gone_r:?}");
        assert!(
            matches!(&merge_r, Err(Error::InvalidArgument(m)) if m.contains("Merge operator not set")),
            "{merge_r:?}"
        );
        good_r.unwrap();
        assert_eq!(live.get("k").unwrap(), Some(b"v".to_vec()));
        assert_eq!(db.get("d").unwrap(), Some(b"v".to_vec()));
        assert_eq!(db.get("m0").unwrap(), None, "a refused batch is refused whole");
        assert_eq!(db.stats().write_groups, 2, "the last three writers formed one group");
        db.close().unwrap();
    }

    #[test]
    fn a_checked_commit_sees_the_writes_queued_ahead_of_it_in_the_same_round() {
        let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new()))).unwrap();
        let read_at = db.inner().shared.visible_seq.load(Ordering::Acquire);
        let tracked = vec![TrackedKey { keyspace: 0, key: b"k".to_vec(), seq: read_at }];
        let mut txn = WriteBatch::new();
        txn.put("t", "1");
        let shared = &db.inner().shared;
        let wal = shared.wal.lock();
        let (first, plain, checked) = thread::scope(|s| {
            let first = s.spawn(|| db.put("first", "1"));
            wait_for_writers(&db, 1);
            let plain = s.spawn(|| db.put("k", "changed"));
            wait_for_writers(&db, 2);
            let checked =
                s.spawn(|| shared.write_checked(db.inner(), txn, &WriteOptions::default(), tracked));
            wait_for_writers(&db, 3);
            drop(wal);
            (first.join().unwrap(), plain.join().unwrap(), checked.join().unwrap())
        });
        first.unwrap();
        plain.unwrap();
        assert!(matches!(checked, Err(Error::Busy(_))), "{checked:?}");
        assert_eq!(db.get("t").unwrap(), None);
        assert_eq!(db.stats().write_groups, 2, "first, then plain; the refused batch wrote nothing");
        db.close().unwrap();
    }
}
