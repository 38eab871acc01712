//! What every keyspace tree of one database shares: the WAL and the writer
//! queue, the sequence numbers and snapshots, the LOCK file, the block and
//! row caches, the registry of open trees, the background pool, and whether
//! the database is open at all.

use crate::info_log::InfoLog;
use crate::memtable::MemTable;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};

use super::pool::Pool;
use super::snapshot::SnapshotList;
use super::writer_queue::WriterQueue;
use super::DbInner;
use crate::cache::table_cache::OpenTables;
use crate::cache::{BlockCache, MapBudget, RowCache};
use crate::error::{Error, Result};
use crate::filename::wal_path;
use crate::options::Options;
use crate::version::{VersionEdit, VersionSet};
use crate::vfs::{FileLock, Vfs};
use crate::wal::LogWriter;

static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// Buffers a group commit (commit.rs) reuses, so a write allocates only what
/// it keeps. Here, beside the lock that holds it, so commit.rs depends on this
/// file and not the other way round.
/// INVARIANT: empty between groups (no tree or memtable kept alive by it).
#[derive(Default)]
pub(crate) struct CommitScratch {
    /// The trees the group writes to, by keyspace id.
    pub(super) trees: Vec<(u32, Arc<DbInner>)>,
    /// Each of those trees' memtable for this group, in the same order.
    pub(super) mems: Vec<Arc<MemTable>>,
}

/// The database's one block cache and one row cache (RocksDB's `Cache`
/// shared by column families, fjall's one cache). Each tree reads through a
/// handle of its own namespace ([`Caches::for_tree`]), since file ids are per
/// keyspace; these root handles own no entries and report the totals.
pub(crate) struct Caches {
    pub block: Option<Arc<BlockCache>>,
    pub row: Option<Arc<RowCache>>,
    /// The open tables of every tree, at most `Options::max_open_files`.
    pub tables: OpenTables,
    /// With `Options::mmap_reads`: how many tables of every tree may be mapped.
    pub maps: Option<Arc<MapBudget>>,
}

impl Caches {
    /// The caches `Options::with_block_cache_capacity` and `with_row_cache` ask for.
    pub(crate) fn new(opts: &Options) -> Caches {
        Caches {
            block: (opts.block_cache_capacity > 0)
                .then(|| Arc::new(BlockCache::new(opts.block_cache_capacity))),
            row: (opts.row_cache_capacity > 0).then(|| Arc::new(RowCache::new(opts.row_cache_capacity))),
            tables: OpenTables::new(opts.max_open_files),
            maps: opts.mmap_reads.then(|| MapBudget::new(opts.max_mapped_files)),
        }
    }

    /// New handles for one tree: the same memory, a namespace of its own.
    pub(crate) fn for_tree(&self) -> (Option<Arc<BlockCache>>, Option<Arc<RowCache>>) {
        (self.block.as_ref().map(|c| Arc::new(c.share())), self.row.as_ref().map(|c| Arc::new(c.share())))
    }
}

pub(crate) struct Shared {
    /// The database's root directory: the default keyspace, the WALs, LOCK.
    pub dir: PathBuf,
    pub vfs: Arc<dyn Vfs>,
    /// The default keyspace's versions, whose MANIFEST is the root one: it
    /// hands out WAL numbers, holds the keyspace registry and the sequence.
    pub root_versions: Arc<VersionSet>,
    /// The active WAL; only the write-group leader (or a memtable switch) holds it.
    pub wal: Mutex<Option<LogWriter>>,
    /// Number of the active WAL.
    pub wal_number: AtomicU64,
    /// Older WALs still on disk (number -> size); each is deleted once no
    /// keyspace's unflushed memtable needs it.
    pub old_wals: Mutex<BTreeMap<u64, u64>>,
    /// WALs created since the root MANIFEST last recorded them (databases
    /// with keyspaces); the next flush or WAL deletion records them.
    unrecorded_wals: Mutex<Vec<u64>>,
    /// Held while obsolete WALs are deleted, so a caller that finds nothing
    /// left to take waits until another caller's deletions are done.
    wal_deletion: Mutex<()>,
    /// Live [`WalDeletionPause`]s.
    wal_deletion_paused: AtomicUsize,
    /// `Options::max_total_wal_size`; 0: four times the keyspaces' write buffers.
    pub max_total_wal_size: u64,
    pub writers: Mutex<WriterQueue>,
    /// The group commit's reusable buffers; only the leader, holding `wal`, locks it.
    pub commit_scratch: Mutex<CommitScratch>,
    pub writers_cv: Condvar,
    /// Highest sequence number whose write is fully applied to the memtables.
    pub visible_seq: AtomicU64,
    pub snapshots: SnapshotList,
    pub lock_file: Mutex<Option<Box<dyn FileLock>>>,
    pub closed: AtomicBool,
    /// A write since open skipped the WAL: close must flush to keep it.
    pub unlogged_writes: AtomicBool,
    /// Opened with `Db::open_read_only`: nothing is ever written.
    pub read_only: bool,
    /// Open keyspace trees by id (0: the default keyspace). Cleared at close,
    /// which breaks the cycle tree -> shared -> tree.
    pub trees: RwLock<BTreeMap<u32, Arc<DbInner>>>,
    /// Serialises keyspace creation and drops.
    pub ddl: Mutex<()>,
    /// Unique among the databases opened by this process: tells a batch's
    /// keyspace handles of another database apart (their ids may match).
    pub instance: u64,
    /// The caches every tree reads through.
    pub caches: Caches,
    /// The `LOG` file (`None`: off, a read-only open, or it could not be made).
    pub info_log: Option<Arc<InfoLog>>,
    /// A secondary instance's own directory (`Db::open_as_secondary`): it
    /// reads the primary at `dir` and may catch up with it.
    pub secondary: Option<PathBuf>,
    /// The worker threads every keyspace's background work runs on (none
    /// in a read-only open).
    pub pool: Arc<Pool>,
}

pub(crate) struct SharedParts {
    pub dir: PathBuf,
    pub vfs: Arc<dyn Vfs>,
    pub root_versions: Arc<VersionSet>,
    pub wal: Option<LogWriter>,
    pub wal_number: u64,
    pub lock: Option<Box<dyn FileLock>>,
    pub last_seq: u64,
    pub max_total_wal_size: u64,
    pub caches: Caches,
    pub info_log: Option<Arc<InfoLog>>,
    /// WALs older than `wal` still needed (number -> size).
    pub old_wals: BTreeMap<u64, u64>,
    /// The secondary instance's own directory, if this is one.
    pub secondary: Option<PathBuf>,
}

impl Shared {
    pub(crate) fn new(p: SharedParts) -> Shared {
        Shared {
            dir: p.dir,
            vfs: p.vfs,
            root_versions: p.root_versions,
            read_only: p.wal.is_none(),
            wal: Mutex::new(p.wal),
            wal_number: AtomicU64::new(p.wal_number),
            old_wals: Mutex::new(p.old_wals),
            unrecorded_wals: Mutex::new(Vec::new()),
            max_total_wal_size: p.max_total_wal_size,
            writers: Mutex::new(Default::default()),
            commit_scratch: Mutex::default(),
            writers_cv: Condvar::new(),
            visible_seq: AtomicU64::new(p.last_seq),
            snapshots: Default::default(),
            lock_file: Mutex::new(p.lock),
            closed: AtomicBool::new(false),
            unlogged_writes: AtomicBool::new(false),
            trees: RwLock::new(BTreeMap::new()),
            ddl: Mutex::new(()),
            wal_deletion: Mutex::new(()),
            wal_deletion_paused: AtomicUsize::new(0),
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            caches: p.caches,
            info_log: p.info_log,
            secondary: p.secondary,
            pool: Pool::new(),
        }
    }

    /// The open tree of keyspace `id`.
    pub(crate) fn tree(&self, id: u32) -> Result<Arc<DbInner>> {
        if let Some(t) = self.trees.read().get(&id) {
            return Ok(t.clone());
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Err(Error::KeyspaceNotFound(format!("keyspace id {id} is not in this database (dropped?)")))
    }

    /// Every open tree, the default keyspace first.
    pub(crate) fn all_trees(&self) -> Vec<Arc<DbInner>> {
        self.trees.read().values().cloned().collect()
    }

    /// A failed WAL write or sync stops every keyspace (as any background
    /// error does, see `DbInner::set_bg_error_for`).
    pub(crate) fn set_bg_error_all(&self, e: &Error) {
        if let Some(t) = self.all_trees().first() {
            t.set_bg_error_for(e, crate::events::BackgroundErrorReason::Wal);
        }
    }

    /// The oldest WAL some keyspace's unflushed memtable still needs.
    pub(crate) fn oldest_needed_wal(&self) -> u64 {
        self.all_trees().iter().map(|t| t.oldest_needed_wal()).min().unwrap_or(u64::MAX)
    }

    /// Stops WAL deletion until the guard drops (a checkpoint copying WALs;
    /// RocksDB's `DisableFileDeletions`). Waits out a deletion in progress,
    /// so every WAL at or above [`Self::oldest_needed_wal`] read after this
    /// returns stays on disk. Never blocks flushes: they skip the deletion.
    pub(crate) fn pause_wal_deletion(&self) -> WalDeletionPause<'_> {
        let _deleting = self.wal_deletion.lock();
        self.wal_deletion_paused.fetch_add(1, Ordering::SeqCst);
        WalDeletionPause(self)
    }

    /// Notes WAL `number`, just created, for the root MANIFEST's record of
    /// WALs (with keyspaces; see [`Self::record_wals`]).
    pub(crate) fn note_wal_created(&self, number: u64) {
        if self.root_versions.ever_had_keyspaces() {
            self.unrecorded_wals.lock().push(number);
        }
    }

    /// Records the WALs created since the last call in the root MANIFEST
    /// (tag 0x201A), so an open notices one deleted from the middle of the
    /// chain. Done by the flush that follows a switch rather than by the
    /// switch itself, to keep a MANIFEST sync off the write path: a WAL not
    /// yet recorded is only checked less, never wrongly.
    pub(crate) fn record_wals(&self) -> Result<()> {
        let created = std::mem::take(&mut *self.unrecorded_wals.lock());
        if created.is_empty() {
            return Ok(());
        }
        self.root_versions
            .log_and_apply(VersionEdit { wals_created: created, ..Default::default() })
            .map(drop)
    }

    /// Deletes the WALs no keyspace needs any more.
    pub(crate) fn delete_obsolete_wals(&self) {
        if self.trees.read().is_empty() {
            return; // closed: nothing decides what is needed any more
        }
        let _deleting = self.wal_deletion.lock();
        if self.wal_deletion_paused.load(Ordering::SeqCst) > 0 {
            return; // the pause's end deletes them
        }
        let needed = self.oldest_needed_wal();
        if !self.old_wals.lock().keys().any(|n| *n < needed) {
            return;
        }
        // With keyspaces a log number alone cannot tell a WAL deleted here
        // from a lost one: the floor is durable before any deletion.
        if self.root_versions.ever_had_keyspaces() {
            let created = std::mem::take(&mut *self.unrecorded_wals.lock());
            let edit = VersionEdit { wal_floor: Some(needed), wals_created: created, ..Default::default() };
            if let Err(e) = self.root_versions.log_and_apply(edit) {
                if let Some(t) = self.all_trees().first() {
                    t.manifest_failed(&e);
                }
                return;
            }
        }
        let gone: Vec<u64> = {
            let mut old = self.old_wals.lock();
            let keep = old.split_off(&needed);
            std::mem::replace(&mut *old, keep).into_keys().collect()
        };
        for n in gone {
            let _ = self.vfs.remove_file(&wal_path(&self.dir, n));
        }
    }

    /// Bytes in live WALs: the older ones and the active one.
    pub(crate) fn total_wal_bytes(&self, active_len: u64) -> u64 {
        self.old_wals.lock().values().sum::<u64>() + active_len
    }

    /// The WAL size above which the keyspace holding the oldest WAL is flushed.
    pub(crate) fn wal_limit(&self) -> u64 {
        if self.max_total_wal_size > 0 {
            return self.max_total_wal_size;
        }
        let buffers: u64 = self.all_trees().iter().map(|t| t.opts.write_buffer_size as u64).sum();
        buffers.saturating_mul(4)
    }
}

/// See [`Shared::pause_wal_deletion`]; deletes what became obsolete meanwhile
/// when dropped.
pub(crate) struct WalDeletionPause<'a>(&'a Shared);

impl Drop for WalDeletionPause<'_> {
    fn drop(&mut self) {
        self.0.wal_deletion_paused.fetch_sub(1, Ordering::SeqCst);
        self.0.delete_obsolete_wals();
    }
}
