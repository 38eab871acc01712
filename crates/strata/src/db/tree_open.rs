//! The steps every open of one tree shares (the database's, a keyspace's,
//! read-only and repair): its policy and table cache, WAL replay into
//! memtables and L0, and the checks and cleanup of its files. The open
//! flows themselves are in recovery.rs, ks_recovery.rs and read_only.rs.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};

use super::shared::{Caches, Shared};
use super::write_controller::WriteController;
use super::{DbInner, DbState, SuperVersion};
use crate::batch::{BatchOp, WriteBatch};
use crate::cache::table_cache::OpenTables;
use crate::cache::{BlockCache, MapBudget, RowCache, TableCache};
use crate::compaction::factory::make_policy;
use crate::compaction::policy::{CompactionPolicy, RunTarget};
use crate::compaction::view::build_view;
use crate::error::{Error, Result};
use crate::filename::{parse_file_name, wal_path, FileKind};
use crate::iter::InternalIterator;
use crate::key::parse_internal_key;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::paths::TablePaths;
use crate::range_del::Fragments;
use crate::sink::{Env, OutputWriter, TableSink, WriteTarget};
use crate::stats::Counters;
use crate::version::{Version, VersionEdit, VersionSet};
use crate::vfs::{SequentialFile, Vfs};
use crate::wal::LogReader;

/// Validates the options and builds the policy they name.
pub(super) fn checked_policy(opts: &Options) -> Result<Arc<dyn CompactionPolicy>> {
    opts.validate()?;
    let policy = make_policy(opts)?;
    if policy.num_levels() != opts.num_levels {
        return Err(Error::invalid(format!(
            "policy {} uses {} levels but num_levels is {}",
            policy.name(),
            policy.num_levels(),
            opts.num_levels
        )));
    }
    Ok(policy)
}

/// The table cache of one tree, keeping its files open in `open` (the
/// database's) and reading blocks through `block_cache` (the tree's handle
/// on the database's block cache, if any), mapping tables while `maps` (the
/// database's bound, with `mmap_reads`) has room.
pub(super) fn table_cache(
    paths: &Arc<TablePaths>,
    opts: &Options,
    open: &OpenTables,
    block_cache: Option<Arc<BlockCache>>,
    maps: Option<&Arc<MapBudget>>,
) -> Arc<TableCache> {
    let cache =
        TableCache::with_paths(opts.vfs.clone(), Arc::clone(paths), open, block_cache, opts.use_direct_reads);
    Arc::new(match maps {
        Some(m) => cache.with_maps(Arc::clone(m)),
        None => cache,
    })
}

/// Logs what a recovered MANIFEST holds.
pub(super) fn log_manifest_replayed(keyspace: &str, vs: &VersionSet) {
    let v = vs.current();
    log::info!(
        target: "strata::recovery",
        "[{keyspace}] MANIFEST {:06} replayed: {} tables, {} B, last sequence {}, log number {}",
        vs.manifest_number(),
        v.live_files().len(),
        v.live_bytes(),
        vs.last_sequence(),
        vs.log_number()
    );
}

/// One tree's handles on the database's caches.
pub(super) struct TreeCaches {
    pub tables: Arc<TableCache>,
    pub block: Option<Arc<BlockCache>>,
    pub row: Option<Arc<RowCache>>,
}

impl TreeCaches {
    /// Handles of namespaces of their own in `caches`, the tables read from
    /// `paths` under `opts`.
    pub(super) fn new(caches: &Caches, paths: &Arc<TablePaths>, opts: &Options) -> Self {
        let (block, row) = caches.for_tree();
        let tables = table_cache(paths, opts, &caches.tables, block.clone(), caches.maps.as_ref());
        TreeCaches { tables, block, row }
    }
}

/// What a recovered database is built from.
pub(super) struct Parts {
    pub id: u32,
    pub name: String,
    pub dir: PathBuf,
    pub opts: Options,
    pub versions: Arc<VersionSet>,
    pub caches: TreeCaches,
    pub policy: Arc<dyn CompactionPolicy>,
}

impl Parts {
    /// The keyspace tree around the active memtable `mem` (logged from WAL
    /// `mem_wal` on), in the database `shared`.
    pub(super) fn assemble(self, mem: MemTable, mem_wal: u64, shared: Arc<Shared>) -> Arc<DbInner> {
        let mem = Arc::new(mem);
        let sv = SuperVersion::new(mem.clone(), Vec::new(), self.versions.current());
        let events = crate::events::EventHub::new(&self.opts.listeners, shared.info_log.clone());
        let write_controller = WriteController::new(self.opts.delayed_write_rate);
        Arc::new(DbInner {
            id: self.id,
            name: self.name,
            dropped: AtomicBool::new(false),
            dir: self.dir,
            vfs: self.opts.vfs.clone(),
            opts: self.opts,
            versions: self.versions,
            tables: self.caches.tables,
            block_cache: self.caches.block,
            row_cache: self.caches.row,
            policy: self.policy,
            sv: ArcSwap::from_pointee(sv),
            events,
            state: Mutex::new(DbState {
                mem,
                mem_wal,
                // Replayed writes are older than any transaction of this open.
                mem_floor: shared.root_versions.last_sequence(),
                imms: VecDeque::new(),
                history: VecDeque::new(),
                bg_error: None,
                shutting_down: false,
            }),
            bg_cv: super::pool::Waker::new(shared.pool.clone(), self.id),
            done_cv: Condvar::new(),
            counters: Counters::default(),
            compaction_lock: Mutex::new(()),
            write_controller,
            task_running: AtomicBool::new(false),
            running: Mutex::new(Vec::new()),
            seek_candidates: Mutex::new(Vec::new()),
            purging: Mutex::new(()),
            idle: super::idle::IdleClock::new(),
            shared,
        })
    }
}

/// Calls `on_op(seq, op)` for every op of every record of WAL `log`, read
/// from `file`, that `wal_recovery_mode` keeps, in log order. Returns the
/// bytes of damaged or torn records dropped.
pub(super) fn replay_log_ops(
    file: Box<dyn SequentialFile>,
    opts: &Options,
    log: u64,
    mut on_op: impl FnMut(u64, BatchOp<'_>) -> Result<()>,
) -> Result<u64> {
    let mut reader = LogReader::new(file, opts.wal_recovery_mode);
    let (mut records, mut ops) = (0u64, 0u64);
    while let Some(record) =
        reader.read_record().map_err(|e| Error::corruption(format!("WAL {:06}.log: {e}", log)))?
    {
        let batch = WriteBatch::from_data(record)
            .map_err(|e| Error::corruption(format!("WAL {:06}.log: {e}", log)))?;
        records += 1;
        for (seq, op) in (batch.sequence()..).zip(batch.iter()) {
            on_op(seq, op?)?;
            ops += 1;
        }
    }
    log::info!(target: "strata::recovery", "WAL {log:06}.log replayed: {records} records, {ops} ops");
    if reader.dropped_bytes() > 0 {
        log::warn!(
            target: "strata::recovery",
            "WAL {log:06}.log: {} bytes of damaged or torn records dropped ({:?})",
            reader.dropped_bytes(),
            opts.wal_recovery_mode
        );
    }
    Ok(reader.dropped_bytes())
}

pub(super) fn flush_recovered(env: &Env<'_>, mem: MemTable, edit: &mut VersionEdit) -> Result<()> {
    let mem = Arc::new(mem);
    let view = build_view(&env.versions.current(), env.versions, &HashSet::new());
    let target = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries: mem.len() as u64 };
    let mut out = OutputWriter::new(env, &view, &target, u64::MAX)
        .with_range_dels(Fragments::of(&mem.range_dels(crate::key::MAX_SEQ)));
    let mut it = mem.iter();
    it.seek_to_first()?;
    while it.valid() {
        out.add(it.key(), it.value(), parse_internal_key(it.key())?.seq)?;
        it.next()?;
    }
    let run = env.versions.new_file_number();
    for f in out.finish()? {
        edit.new_files.push((0, run, f));
    }
    Ok(())
}

/// Removes tables no version names (outputs of an interrupted compaction),
/// temp files and old MANIFESTs.
pub(super) fn remove_unreferenced(
    keyspace: &str,
    dir: &Path,
    vfs: &dyn Vfs,
    versions: &VersionSet,
    entries: &[String],
    tables: &[(u64, PathBuf)],
) {
    let live = versions.live_files();
    let mut removed = Vec::new();
    for (id, path) in tables {
        if !live.contains(id) {
            let _ = vfs.remove_file(&crate::filename::table_path(path, *id));
            removed.push(*id);
        }
    }
    if !removed.is_empty() {
        log::info!(target: "strata::recovery", "[{keyspace}] obsolete tables removed: {removed:?}");
    }
    for n in entries {
        let stale = match parse_file_name(n) {
            Some(FileKind::Temp(_)) => true,
            Some(FileKind::Manifest(k)) => k != versions.manifest_number(),
            _ => false,
        };
        if stale {
            let _ = vfs.remove_file(&dir.join(n));
        }
    }
}

/// A live table longer than the MANIFEST records holds a segment appended by
/// a light-weight compaction whose edit never became durable (a crash between
/// the append and the edit): the bytes past the recorded length are cut off,
/// so the next append starts where the recorded segments end.
pub(super) fn cut_uncommitted_appends(vfs: &dyn Vfs, version: &Version, tables: &TableCache) -> Result<()> {
    for f in version.live_files() {
        let path = tables.paths().table(f.id);
        match vfs.file_size(&path) {
            // A file with another name (a checkpoint's or backup's) is given a
            // private copy of the recorded bytes instead: cutting it would cut
            // the other side's own committed segments.
            Ok(size) if size > f.size => {
                if !crate::compaction::unshare::unshare_table(vfs, &path, f.id, f.size)? {
                    vfs.truncate(&path, f.size)?;
                }
            }
            Ok(_) => {}
            // A missing table is reported by the checks that follow.
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `paranoid_checks`: every live table has at least the size the MANIFEST
/// recorded and opens (footer, index and filter checksums verified) before
/// anything is written, so damage is reported at open rather than by a later
/// read or a compaction that would go read-only. Bytes past the recorded
/// length (an append that never committed; a read-only open cannot cut them)
/// are not part of the table and are ignored.
pub(super) fn verify_tables(vfs: &dyn Vfs, version: &Version, tables: &TableCache) -> Result<()> {
    for f in version.live_files() {
        let size = vfs.file_size(&tables.paths().table(f.id))?;
        if size < f.size {
            return Err(Error::corruption(format!(
                "table {:06}.sst is {size} bytes but the MANIFEST recorded {}",
                f.id, f.size
            )));
        }
        f.table(tables)?;
    }
    Ok(())
}

/// The recovered state must match the directory: every live table exists, and
/// so does the WAL of the oldest unflushed memtable (`log_number`). Files are
/// deleted only after the edit that retires them is durable, so a damaged last
/// MANIFEST record that was never acknowledged (a torn append, dropped as a
/// tail) leaves everything in place; losing an acknowledged edit (bit rot in
/// the last record, a truncated MANIFEST) is followed by deletions, and is
/// reported here instead of silently rolling the tree back.
pub(super) fn check_files_present(
    vfs: &dyn Vfs,
    dir: &Path,
    paths: &TablePaths,
    version: &Version,
    log_number: u64,
) -> Result<()> {
    let missing = |what: String| {
        Error::corruption(format!(
            "the MANIFEST names {what}, which does not exist: it lost acknowledged edits, or files were removed"
        ))
    };
    check_wal_present(vfs, dir, log_number)?;
    let mut ids: Vec<u64> = version.all_file_ids().into_iter().collect();
    ids.sort_unstable();
    for id in ids {
        if !vfs.exists(&paths.table(id)) {
            return Err(missing(format!("table {id:06}.sst (looked in {})", paths.table(id).display())));
        }
    }
    Ok(())
}

/// The WAL of the oldest unflushed memtable (`log_number`) exists.
pub(super) fn check_wal_present(vfs: &dyn Vfs, dir: &Path, log_number: u64) -> Result<()> {
    if log_number > 0 && !vfs.exists(&wal_path(dir, log_number)) {
        return Err(Error::corruption(format!(
            "the MANIFEST names WAL {log_number:06}.log as the oldest log to replay, which does not exist: it lost acknowledged edits, or files were removed"
        )));
    }
    Ok(())
}
