//! Strata as the storage of a Raft cluster built on [openraft] (0.9, its v2
//! storage API): [`LogStore`] implements `RaftLogStorage`, [`StateMachine`]
//! implements `RaftStateMachine` for a key-value service ([`Request`],
//! [`Response`]), both on one Strata database ([`open`]).
//!
//! Layout (one database, four keyspaces; see `docs/RAFT.md`):
//! - `raft_log`: entry `i` under the 8-byte big-endian `i` (so the keys sort
//!   as the log), its value the entry as JSON;
//! - `raft_meta`: `vote`, `committed`, `last_purged`;
//! - `sm_data`: the service's keys, each prefixed with `d`;
//! - `sm_meta`: `applied` (the last applied log id), `membership`, `snapshot`
//!   (the current snapshot's meta; its data is a file in `snapshots/`).
//!
//! Durability: the keyspaces share one write-ahead log, and a sync makes every
//! earlier write durable with it. Votes, appends, truncations and purges are
//! synced before openraft is told they are done; an apply is one unsynced
//! batch (state-machine writes, `applied` and `membership` together), made
//! durable by the next sync — and a crash that loses it loses only entries
//! still in the log, which openraft applies again.

// openraft's `StorageError` is large, and its traits return it: the helpers
// that build it return it too.
#![allow(clippy::result_large_err)]

mod codec;
pub mod hook;
mod log_store;
mod snapshot_file;
mod snapshot_gate;
mod state_machine;

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use strata::{Db, KeyspaceOptions, Options};

pub use log_store::LogStore;
pub use state_machine::StateMachine;

/// A node's id.
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The type configuration of a cluster whose state machine is a Strata key-value store.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A write to the key-value service.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Sets `key` to `value`.
    Set { key: Vec<u8>, value: Vec<u8> },
    /// Deletes `key`.
    Delete { key: Vec<u8> },
}

/// What applying a [`Request`] returned.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    /// The key's value before the write.
    pub previous: Option<Vec<u8>>,
}

/// The keyspaces of a node's database.
pub(crate) mod ks {
    pub const LOG: &str = "raft_log";
    pub const META: &str = "raft_meta";
    pub const DATA: &str = "sm_data";
    pub const SM_META: &str = "sm_meta";
}

/// Opens (creating if missing) the node storage in `dir`: the log store and
/// the state machine over one database.
pub fn open(dir: impl AsRef<Path>) -> strata::Result<(LogStore, StateMachine)> {
    open_with(dir, Options::default())
}

/// [`open`] with database options (caches, memtable sizes ...).
pub fn open_with(dir: impl AsRef<Path>, opts: Options) -> strata::Result<(LogStore, StateMachine)> {
    let dir = dir.as_ref();
    let db = Arc::new(Db::open(dir, opts)?);
    let keyspace = |name: &str, opts: KeyspaceOptions| match db.keyspace(name) {
        Err(strata::Error::KeyspaceNotFound(_)) => db.create_keyspace(name, opts),
        r => r,
    };
    let default = KeyspaceOptions::default;
    // The log is read by index ranges only, never probed for one key: no
    // bloom filters (measured in docs/RAFT.md, "The log keyspace").
    let log = keyspace(ks::LOG, default().with_bloom_bits_per_key(0.0))?;
    let (data, sm_meta) = (keyspace(ks::DATA, default())?, keyspace(ks::SM_META, default())?);
    let sm = StateMachine::open(db.clone(), data, sm_meta, dir.join("snapshots"))?;
    let log = LogStore::new(db.clone(), log, keyspace(ks::META, default())?, sm.gate());
    Ok((log, sm))
}
