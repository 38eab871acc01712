//! Keys and values: log indexes as big-endian bytes (they sort as numbers),
//! openraft's types as JSON, and the errors openraft wants.

use openraft::storage::SnapshotSignature;
use openraft::{AnyError, ErrorSubject, ErrorVerb, LogId, StorageError, StorageIOError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::NodeId;

pub type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// The key of log entry `index`.
pub fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// Above every log key (keys are 8 bytes, this is 9).
pub const PAST_LAST_INDEX: [u8; 9] = [0xff; 9];

/// The index a log key holds.
pub fn key_index(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

pub fn to_json<T: Serialize>(v: &T) -> Result<Vec<u8>, AnyError> {
    serde_json::to_vec(v).map_err(|e| AnyError::new(&e))
}

pub fn from_json<T: DeserializeOwned>(b: &[u8]) -> Result<T, AnyError> {
    serde_json::from_slice(b).map_err(|e| AnyError::new(&e))
}

/// A storage error about `subject`.
pub fn err(subject: ErrorSubject<NodeId>, verb: ErrorVerb, e: impl Into<AnyError>) -> StorageError<NodeId> {
    StorageIOError::new(subject, verb, e).into()
}

pub fn read_logs(e: impl Into<AnyError>) -> StorageError<NodeId> {
    StorageIOError::read_logs(e).into()
}

pub fn write_logs(e: impl Into<AnyError>) -> StorageError<NodeId> {
    StorageIOError::write_logs(e).into()
}

pub fn write_vote(e: impl Into<AnyError>) -> StorageError<NodeId> {
    StorageIOError::write_vote(e).into()
}

pub fn apply(id: LogId<NodeId>, e: impl Into<AnyError>) -> StorageError<NodeId> {
    StorageIOError::apply(id, e).into()
}

pub fn read_state_machine(e: impl Into<AnyError>) -> StorageError<NodeId> {
    StorageIOError::read_state_machine(e).into()
}

pub fn write_state_machine(e: impl Into<AnyError>) -> StorageError<NodeId> {
    StorageIOError::write_state_machine(e).into()
}

pub fn write_snapshot(
    sig: Option<SnapshotSignature<NodeId>>,
    e: impl Into<AnyError>,
) -> StorageError<NodeId> {
    StorageIOError::write_snapshot(sig, e).into()
}

pub fn read_snapshot(sig: Option<SnapshotSignature<NodeId>>, e: impl Into<AnyError>) -> StorageError<NodeId> {
    StorageIOError::read_snapshot(sig, e).into()
}

/// An engine error as an [`AnyError`].
pub fn any(e: strata::Error) -> AnyError {
    AnyError::new(&e)
}
