//! Strata: an embedded, durable, ordered key-value store (an LSM-tree) whose
//! compaction layer is a selectable policy.
//!
//! ```
//! use strata::{Db, Options, WriteBatch};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::default())?;
//! db.put(b"apple", b"red")?;
//! let mut batch = WriteBatch::new();
//! batch.put(b"banana", b"yellow");
//! batch.delete(b"apple");
//! db.write(batch)?;
//! assert_eq!(db.get(b"banana")?.as_deref(), Some(&b"yellow"[..]));
//! let keys: Vec<_> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
//! assert_eq!(keys, vec![b"banana".to_vec()]);
//! db.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The stable API is what this page re-exports. Of the modules, `options`,
//! `error`, `stats`, `ttl` and `vfs` hold more of it; `compaction` is the seam
//! for policies written outside the crate and `key` the internal-key encoding
//! they see, both **unstable**: they change with the engine. The engine's other
//! parts (tables, logs, MANIFEST, caches, memtables) are public only for the
//! workspace's tools, fuzzers and tests and are hidden from these docs.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![deny(missing_docs)]

mod backup;
mod batch;
mod batch_index;
#[doc(hidden)]
pub mod cache;
pub mod compaction;
mod db;
pub mod error;
mod events;
#[doc(hidden)]
pub mod filename;
mod info_log;
mod ingest;
#[doc(hidden)]
pub mod iter;
pub mod key;
mod keyspace_options;
#[doc(hidden)]
pub mod memtable;
mod merge_operator;
pub mod merge_operators;
pub mod options;
mod options_file;
pub(crate) mod paths;
mod pinned;
mod prefix;
pub(crate) mod range_del;
mod sink;
pub mod stats;
#[doc(hidden)]
pub mod table;
pub mod ttl;
mod txn;
#[doc(hidden)]
pub mod util;
#[doc(hidden)]
pub mod version;
pub mod vfs;
#[doc(hidden)]
pub mod wal;

pub use backup::{BackupEngine, BackupId, BackupInfo};
pub use batch::{BatchIter, BatchOp, WriteBatch};
pub use batch_index::{BatchLookup, BatchWithBaseIter, WriteBatchWithIndex};
pub use compaction::style::CompactionStyle;
pub use compaction::{CompactionFilter, CompactionPolicy, Decision};
pub use db::read_options::ReadOptions;
pub use db::write_options::WriteOptions;
pub use db::{
    destroy, prefix_successor, repair, Db, DbIterator, DbRawIterator, Keyspace, RepairReport, Snapshot,
};
pub use error::{Error, Result};
pub use events::{
    BackgroundErrorInfo, BackgroundErrorReason, CompactionInfo, EventListener, FlushInfo, FlushReason,
    PolicyChangeInfo, StallCause, StallCondition, StallInfo,
};
pub use ingest::{ExternalSstFileInfo, IngestExternalFileOptions, SstFileWriter};
pub use merge_operator::{associative_merge_operator, MergeOperator};
pub use options::kinds::{BloomAllocation, CompactionPipeline, CompressionType, WalRecoveryMode};
pub use options::KeyspaceOptions;
pub use options::Options;
pub use pinned::PinnedValue;
pub use prefix::{FixedPrefix, PrefixExtractor};
pub use stats::{CompactionRecord, LevelStats, StageTimes, Stats};
pub use ttl::TtlDb;
pub use txn::{OptimisticTransactionDb, Transaction, TransactionDb, TransactionOptions};
pub use vfs::{MemVfs, RealVfs, Vfs};

/// Largest `key.len() + value.len()` one put may carry (512 MiB minus the
/// 8-byte sequence/kind trailer). Larger writes fail with
/// [`Error::InvalidArgument`] before anything reaches the WAL.
pub const MAX_ENTRY_BYTES: usize = table::builder::MAX_ENTRY_LEN - key::TRAILER_LEN;

/// The README's usage example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctest;
