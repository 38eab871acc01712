//! [`StateMachine`]: the key-value service's data in `sm_data`, what was
//! applied and the membership in `sm_meta`, snapshots built from a Strata
//! snapshot and installed in one batch.

use std::collections::HashMap;
use std::io::{self, Cursor};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    BasicNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftSnapshotBuilder,
    StoredMembership,
};
use serde::de::DeserializeOwned;
use strata::{Db, Keyspace, ReadOptions, WriteBatch};

use crate::codec::{self, any, err, from_json, to_json, StorageResult};
use crate::hook::{Step, StepHook};
use crate::log_store::{blocking, write_synced};
use crate::snapshot_file::{decode_pairs, encode_pair, SnapshotDir};
use crate::snapshot_gate::SnapshotGate;
use crate::{NodeId, Request, Response, TypeConfig};

const APPLIED: &str = "applied";
const MEMBERSHIP: &str = "membership";
const SNAPSHOT: &str = "snapshot";

/// Every service key is stored under this prefix, so one range delete
/// (`DATA_PREFIX..DATA_END`) empties the data when a snapshot is installed.
const DATA_PREFIX: u8 = b'd';
const DATA_END: [u8; 1] = [DATA_PREFIX + 1];

fn data_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(DATA_PREFIX);
    k.extend_from_slice(key);
    k
}

type Membership = StoredMembership<NodeId, BasicNode>;

/// The state machine of one node (cheap to clone: handles to one database).
#[derive(Clone)]
pub struct StateMachine {
    db: Arc<Db>,
    data: Keyspace,
    meta: Keyspace,
    snapshots: SnapshotDir,
    /// Makes snapshot ids unique within this process.
    builds: Arc<AtomicU64>,
    /// Told of every durable snapshot and snapshot receive.
    gate: SnapshotGate,
    /// Held while a snapshot's file is written, named and the others pruned,
    /// and while the named file is read: openraft builds snapshots on a task
    /// of their own, so a build and an install can overlap, and one's prune
    /// must not delete the other's file.
    files: Arc<tokio::sync::Mutex<()>>,
    hook: Option<StepHook>,
}

impl StateMachine {
    pub(crate) fn open(
        db: Arc<Db>,
        data: Keyspace,
        meta: Keyspace,
        dir: PathBuf,
    ) -> strata::Result<StateMachine> {
        let mut sm = StateMachine {
            db,
            data,
            meta,
            snapshots: SnapshotDir::open(dir)?,
            builds: Arc::default(),
            gate: SnapshotGate::new(None),
            files: Arc::default(),
            hook: None,
        };
        // A snapshot written but never named (a crash in between) is dropped.
        let current: Option<SnapshotMeta<NodeId, BasicNode>> = sm
            .get_meta(SNAPSHOT, &ReadOptions::default())
            .map_err(|e| strata::Error::Io(io::Error::other(e)))?;
        sm.snapshots.remove_others(current.as_ref().map(|m| m.snapshot_id.as_str()))?;
        sm.gate = SnapshotGate::new(current.as_ref().and_then(|m| m.last_log_id.as_ref()));
        Ok(sm)
    }

    pub(crate) fn gate(&self) -> SnapshotGate {
        self.gate.clone()
    }

    /// This state machine (and its clones) calls `hook` at each durable step.
    pub fn with_hook(self, hook: StepHook) -> StateMachine {
        StateMachine { hook: Some(hook), ..self }
    }

    /// The value of `key` in the service, as this node has applied it.
    pub fn get(&self, key: &[u8]) -> strata::Result<Option<Vec<u8>>> {
        self.data.get(data_key(key))
    }

    /// Every key and value of the service, in key order.
    pub fn items(&self) -> strata::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let ro = ReadOptions::default();
        self.data
            .prefix_iterator_opt([DATA_PREFIX], &ro)
            .map(|kv| kv.map(|(k, v)| (k[1..].to_vec(), v)))
            .collect()
    }

    /// Writes snapshot file `id` off openraft's tasks (it syncs); returns `data`.
    async fn write_file(&self, id: &str, data: Vec<u8>) -> strata::Result<Vec<u8>> {
        let (dir, id) = (self.snapshots.clone(), id.to_string());
        blocking(move || Ok(dir.write(&id, &data).map(|()| data)?)).await
    }

    /// Removes every snapshot file but `keep`'s, off openraft's tasks.
    async fn remove_other_files(&self, keep: &str) -> strata::Result<()> {
        let (dir, keep) = (self.snapshots.clone(), keep.to_string());
        blocking(move || Ok(dir.remove_others(Some(&keep))?)).await
    }

    fn get_meta<T: DeserializeOwned>(&self, key: &str, ro: &ReadOptions) -> StorageResult<Option<T>> {
        let read = |e| err(ErrorSubject::StateMachine, ErrorVerb::Read, e);
        match self.meta.get_opt(key, ro).map_err(|e| read(any(e)))? {
            Some(v) => Ok(Some(from_json(&v).map_err(read)?)),
            None => Ok(None),
        }
    }

    fn applied(&self, ro: &ReadOptions) -> StorageResult<(Option<LogId<NodeId>>, Membership)> {
        let applied = self.get_meta::<Option<LogId<NodeId>>>(APPLIED, ro)?.flatten();
        let membership = self.get_meta(MEMBERSHIP, ro)?.unwrap_or_default();
        Ok((applied, membership))
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    /// Reads the data, the applied id and the membership at one Strata
    /// snapshot (so they agree), writes the file, then names it.
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let snap = self.db.snapshot();
        let ro = ReadOptions::default().with_snapshot(&snap);
        let (applied, membership) = self.applied(&ro)?;
        let mut data = Vec::new();
        for kv in self.data.prefix_iterator_opt([DATA_PREFIX], &ro) {
            let (k, v) = kv.map_err(|e| codec::read_state_machine(any(e)))?;
            encode_pair(&mut data, &k[1..], &v);
        }
        drop(snap);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let n = self.builds.fetch_add(1, Ordering::Relaxed);
        let snapshot_id = match &applied {
            Some(id) => format!("{}-{}-{nanos}-{n}", id.leader_id.term, id.index),
            None => format!("none-{nanos}-{n}"),
        };
        let meta = SnapshotMeta { last_log_id: applied, last_membership: membership, snapshot_id };
        let write = |e| codec::write_snapshot(Some(meta.signature()), e);
        let _files = self.files.lock().await;
        let current: Option<SnapshotMeta<NodeId, BasicNode>> =
            self.get_meta(SNAPSHOT, &ReadOptions::default())?;
        if current.is_some_and(|c| c.last_log_id > meta.last_log_id) {
            // A newer snapshot was installed while this one was read: the
            // current snapshot never goes back. openraft keeps the newest.
            return Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) });
        }
        let data = self.write_file(&meta.snapshot_id, data).await.map_err(|e| write(any(e)))?;
        let mut batch = WriteBatch::new();
        batch.put_cf(&self.meta, SNAPSHOT, to_json(&meta).map_err(write)?);
        write_synced(&self.db, &self.hook, Step::BuildSnapshot, batch).await.map_err(|e| write(any(e)))?;
        self.gate.durable(meta.last_log_id.as_ref(), false);
        self.remove_other_files(&meta.snapshot_id).await.map_err(|e| write(any(e)))?;
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> StorageResult<(Option<LogId<NodeId>>, Membership)> {
        self.applied(&ReadOptions::default())
    }

    /// One batch for all `entries`: their writes, the last applied id and
    /// the membership together. Not synced (see the crate docs).
    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Response>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::new();
        // The batch's own writes, which a read of the database would not see yet.
        let mut pending: HashMap<Vec<u8>, Option<Vec<u8>>> = HashMap::new();
        let mut responses = Vec::new();
        let mut last = None;
        let mut membership = None;
        for entry in entries {
            let id = entry.log_id;
            let apply_err = |e| codec::apply(id, e);
            let previous = |key: &[u8]| match pending.get(key) {
                Some(v) => Ok(v.clone()),
                None => self.get(key).map_err(|e| apply_err(any(e))),
            };
            let response = match entry.payload {
                EntryPayload::Blank => Response::default(),
                EntryPayload::Normal(Request::Set { key, value }) => {
                    let prev = previous(&key)?;
                    batch.put_cf(&self.data, data_key(&key), &value);
                    pending.insert(key, Some(value));
                    Response { previous: prev }
                }
                EntryPayload::Normal(Request::Delete { key }) => {
                    let prev = previous(&key)?;
                    batch.delete_cf(&self.data, data_key(&key));
                    pending.insert(key, None);
                    Response { previous: prev }
                }
                EntryPayload::Membership(m) => {
                    membership = Some(StoredMembership::new(Some(id), m));
                    Response::default()
                }
            };
            responses.push(response);
            last = Some(id);
        }
        let write = |e| codec::write_state_machine(e);
        if let Some(last) = last {
            batch.put_cf(&self.meta, APPLIED, to_json(&Some(last)).map_err(write)?);
        }
        if let Some(m) = &membership {
            batch.put_cf(&self.meta, MEMBERSHIP, to_json(m).map_err(write)?);
        }
        if !batch.is_empty() {
            self.db.write(batch).map_err(|e| write(any(e)))?;
        }
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> StateMachine {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<Cursor<Vec<u8>>>> {
        self.gate.receiving();
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    /// Writes the file, then replaces the data, the applied id, the
    /// membership and the current snapshot's name in one synced batch.
    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> StorageResult<()> {
        let data = snapshot.into_inner();
        let failed = |e| codec::write_snapshot(Some(meta.signature()), e);
        let io_err = |e: io::Error| failed(openraft::AnyError::new(&e));
        let mut batch = WriteBatch::new();
        batch.delete_range_cf(&self.data, [DATA_PREFIX], DATA_END);
        for (k, v) in decode_pairs(&data).map_err(io_err)? {
            batch.put_cf(&self.data, data_key(k), v);
        }
        // The file before the batch that names it.
        let _files = self.files.lock().await;
        self.write_file(&meta.snapshot_id, data).await.map_err(|e| failed(any(e)))?;
        batch.put_cf(&self.meta, APPLIED, to_json(&meta.last_log_id).map_err(failed)?);
        batch.put_cf(&self.meta, MEMBERSHIP, to_json(&meta.last_membership).map_err(failed)?);
        batch.put_cf(&self.meta, SNAPSHOT, to_json(meta).map_err(failed)?);
        write_synced(&self.db, &self.hook, Step::InstallSnapshot, batch).await.map_err(|e| failed(any(e)))?;
        self.gate.durable(meta.last_log_id.as_ref(), true);
        self.remove_other_files(&meta.snapshot_id).await.map_err(|e| failed(any(e)))
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let _files = self.files.lock().await;
        let Some(meta) =
            self.get_meta::<SnapshotMeta<NodeId, BasicNode>>(SNAPSHOT, &ReadOptions::default())?
        else {
            return Ok(None);
        };
        let data = self
            .snapshots
            .read(&meta.snapshot_id)
            .map_err(|e| codec::read_snapshot(Some(meta.signature()), openraft::AnyError::new(&e)))?;
        Ok(Some(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) }))
    }
}
