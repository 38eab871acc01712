//! [`LogStore`]: the Raft log in the `raft_log` keyspace, the vote, the
//! committed id and the last purged id in `raft_meta`.

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogReader, Vote};
use serde::de::DeserializeOwned;
use strata::{Db, Keyspace, ReadOptions, WriteBatch, WriteOptions};

use crate::codec::{
    self, any, err, from_json, index_key, key_index, to_json, StorageResult, PAST_LAST_INDEX,
};
use crate::hook::{self, Moment, Step, StepHook};
use crate::snapshot_gate::SnapshotGate;
use crate::{NodeId, TypeConfig};

const VOTE: &str = "vote";
const COMMITTED: &str = "committed";
const LAST_PURGED: &str = "last_purged";

/// The log store of one node (cheap to clone: handles to one database).
#[derive(Clone)]
pub struct LogStore {
    db: Arc<Db>,
    log: Keyspace,
    meta: Keyspace,
    /// Orders a purge after the install of the snapshot it relies on.
    gate: SnapshotGate,
    hook: Option<StepHook>,
}

/// Runs `f` on a thread for blocking work: a sync waits for the device, and
/// openraft's tasks must not.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> strata::Result<T> + Send + 'static,
) -> strata::Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| strata::Error::Io(io::Error::other(e)))?
}

/// Writes `batch` to `db` synced, off openraft's tasks; calls `hook` before
/// and once it is durable.
pub(crate) async fn write_synced(
    db: &Arc<Db>,
    hook: &Option<StepHook>,
    step: Step,
    batch: WriteBatch,
) -> strata::Result<()> {
    hook::call(hook, step, Moment::Before);
    let db = db.clone();
    blocking(move || db.write_opt(batch, &WriteOptions::default().with_sync(true))).await?;
    hook::call(hook, step, Moment::Durable);
    Ok(())
}

impl LogStore {
    pub(crate) fn new(db: Arc<Db>, log: Keyspace, meta: Keyspace, gate: SnapshotGate) -> LogStore {
        LogStore { db, log, meta, gate, hook: None }
    }

    /// This store (and its clones) calls `hook` at each durable step.
    pub fn with_hook(self, hook: StepHook) -> LogStore {
        LogStore { hook: Some(hook), ..self }
    }

    fn get_meta<T: DeserializeOwned>(
        &self,
        key: &str,
        subject: ErrorSubject<NodeId>,
    ) -> StorageResult<Option<T>> {
        let read = |e| err(subject.clone(), ErrorVerb::Read, e);
        match self.meta.get(key).map_err(|e| read(any(e)))? {
            Some(v) => Ok(Some(from_json(&v).map_err(read)?)),
            None => Ok(None),
        }
    }

    /// The entries with indexes in `range`, in order.
    fn entries(&self, range: impl RangeBounds<u64>) -> StorageResult<Vec<Entry<TypeConfig>>> {
        let start = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => match i.checked_add(1) {
                Some(i) => i,
                None => return Ok(Vec::new()),
            },
            Bound::Unbounded => 0,
        };
        let mut ro = ReadOptions::default().with_iterate_lower_bound(index_key(start));
        match range.end_bound() {
            Bound::Included(&i) => {
                if let Some(end) = i.checked_add(1) {
                    ro = ro.with_iterate_upper_bound(index_key(end));
                }
            }
            Bound::Excluded(&i) => ro = ro.with_iterate_upper_bound(index_key(i)),
            Bound::Unbounded => {}
        }
        let mut out = Vec::new();
        for kv in self.log.iter_opt(&ro) {
            let (k, v) = kv.map_err(|e| codec::read_logs(any(e)))?;
            let entry: Entry<TypeConfig> = from_json(&v).map_err(codec::read_logs)?;
            if key_index(&k) != Some(entry.log_id.index) {
                let why = format!("log key {k:?} holds entry {}", entry.log_id);
                return Err(codec::read_logs(any(strata::Error::Corruption(why))));
            }
            out.push(entry);
        }
        Ok(out)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        self.entries(range)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let mut it = self.log.raw_iterator();
        it.seek_to_last();
        it.status().map_err(|e| codec::read_logs(any(e)))?;
        let last = match it.value() {
            Some(v) => Some(from_json::<Entry<TypeConfig>>(v).map_err(codec::read_logs)?.log_id),
            None => None,
        };
        let last_purged: Option<LogId<NodeId>> = self.get_meta(LAST_PURGED, ErrorSubject::Store)?;
        Ok(LogState { last_purged_log_id: last_purged, last_log_id: last.or(last_purged) })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StorageResult<()> {
        let mut batch = WriteBatch::new();
        batch.put_cf(&self.meta, VOTE, to_json(vote).map_err(codec::write_vote)?);
        write_synced(&self.db, &self.hook, Step::Vote, batch).await.map_err(|e| codec::write_vote(any(e)))
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        self.get_meta(VOTE, ErrorSubject::Vote)
    }

    /// Not synced: openraft may lose it in a crash (it then commits again).
    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> StorageResult<()> {
        let write = |e| err(ErrorSubject::Store, ErrorVerb::Write, e);
        let v = to_json(&committed).map_err(write)?;
        self.meta.put(COMMITTED, v).map_err(|e| write(any(e)))
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId<NodeId>>> {
        Ok(self.get_meta::<Option<LogId<NodeId>>>(COMMITTED, ErrorSubject::Store)?.flatten())
    }

    /// One batch for all `entries`, one sync; openraft hears of it after.
    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::new();
        for entry in entries {
            let v = to_json(&entry).map_err(codec::write_logs)?;
            batch.put_cf(&self.log, index_key(entry.log_id.index), v);
        }
        match write_synced(&self.db, &self.hook, Step::Append, batch).await {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(io::Error::other(e.to_string())));
                Err(codec::write_logs(any(e)))
            }
        }
    }

    /// Deletes the entries from `log_id` on, as one synced range delete.
    async fn truncate(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        let mut batch = WriteBatch::new();
        batch.delete_range_cf(&self.log, index_key(log_id.index), PAST_LAST_INDEX);
        write_synced(&self.db, &self.hook, Step::Truncate, batch).await.map_err(|e| codec::write_logs(any(e)))
    }

    /// Deletes the entries up to `log_id` and records it as the last purged,
    /// in one synced batch: never one without the other. Waits first for an
    /// install in flight that covers them (see `snapshot_gate.rs`).
    async fn purge(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        self.gate.covering(&log_id).await;
        let mut batch = WriteBatch::new();
        batch.put_cf(&self.meta, LAST_PURGED, to_json(&log_id).map_err(codec::write_logs)?);
        match log_id.index.checked_add(1) {
            Some(end) => batch.delete_range_cf(&self.log, index_key(0), index_key(end)),
            None => batch.delete_range_cf(&self.log, index_key(0), PAST_LAST_INDEX),
        }
        write_synced(&self.db, &self.hook, Step::Purge, batch).await.map_err(|e| codec::write_logs(any(e)))
    }
}
