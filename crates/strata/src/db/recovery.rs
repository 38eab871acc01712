//! Opening a database: lock, read or create the MANIFEST, replay WALs newer
//! than the recorded log number into L0 tables, remove files nothing names,
//! and start a fresh WAL and the background threads.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};

use super::ks_recovery;
use super::shared::{Caches, Shared, SharedParts};
use super::{DbInner, DbState, SuperVersion};
use crate::batch::{BatchOp, WriteBatch};
use crate::cache::{BlockCache, RowCache, TableCache};
use crate::compaction::executor::Env;
use crate::compaction::monkey::WriteTarget;
use crate::compaction::output::OutputWriter;
use crate::compaction::view::build_view;
use crate::compaction::{
    BlsmPolicy, BufferVariant, CompactionPolicy, GarneringPolicy, LeveledConfig, LeveledPolicy, LsbmPolicy,
    LwcConfig, LwcPolicy, RunTarget, TieredPolicy,
};
use crate::error::{Error, Result};
use crate::filename::{current_path, lock_path, parse_file_name, wal_path, FileKind};
use crate::info_log::InfoLog;
use crate::iter::InternalIterator;
use crate::key::parse_internal_key;
use crate::memtable::MemTable;
use crate::options::{CompactionStyle, Options};
use crate::paths::TablePaths;
use crate::range_del::Fragments;
use crate::stats::Counters;
use crate::version::{Version, VersionEdit, VersionSet};
use crate::vfs::{SequentialFile, Vfs};
use crate::wal::{LogReader, LogWriter};

/// LSbM and dLSM write files of a quarter of `target_file_size_base` and
/// drain them four at a time (super-files, LSbM paper §4.3): compaction works
/// in big units, the trim on small files.
const SUPER_FILE_PARTS: u64 = 4;

fn make_policy(opts: &Options) -> Result<Arc<dyn CompactionPolicy>> {
    let shape = LeveledConfig {
        num_levels: opts.num_levels,
        l0_trigger: opts.level0_file_num_compaction_trigger,
        max_bytes_for_level_base: opts.max_bytes_for_level_base,
        multiplier: opts.max_bytes_for_level_multiplier,
        target_file_size: opts.target_file_size_base,
    };
    Ok(match &opts.compaction_style {
        CompactionStyle::Leveled => Arc::new(LeveledPolicy::new(shape)?),
        CompactionStyle::Blsm => Arc::new(BlsmPolicy::new(shape)?),
        CompactionStyle::Tiered => Arc::new(TieredPolicy::new(shape)?),
        CompactionStyle::Garnering { c } => Arc::new(GarneringPolicy::new(shape, *c)?),
        CompactionStyle::Lwc { max_segments } => {
            Arc::new(LwcPolicy::new(LwcConfig { max_segments: *max_segments, ..LwcConfig::new(shape) })?)
        }
        CompactionStyle::Lsbm | CompactionStyle::Dlsm => {
            let variant = if matches!(opts.compaction_style, CompactionStyle::Lsbm) {
                BufferVariant::Lsbm
            } else {
                BufferVariant::Dlsm
            };
            let blsm = BlsmPolicy::new(shape)?.with_super_files(SUPER_FILE_PARTS);
            Arc::new(LsbmPolicy::new(blsm, variant, opts.buffer_trim_threshold))
        }
        CompactionStyle::Custom(p) => p.clone(),
    })
}

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

/// The table cache of one tree, reading blocks through `block_cache` (the
/// tree's handle on the database's block cache, if any).
pub(super) fn table_cache(
    paths: &Arc<TablePaths>,
    opts: &Options,
    block_cache: Option<Arc<BlockCache>>,
) -> Arc<TableCache> {
    Arc::new(TableCache::with_paths(
        opts.vfs.clone(),
        Arc::clone(paths),
        opts.max_open_files,
        block_cache,
        opts.use_direct_reads,
    ))
}

pub(crate) fn open(dir: &Path, opts: Options) -> Result<Arc<DbInner>> {
    let vfs = opts.vfs.clone();
    crate::backup::refuse_incomplete_restore(vfs.as_ref(), dir)?;
    // Options a new database takes as given are refused before anything is
    // created; an existing one's are checked once laid over the recorded ones.
    if !vfs.exists(&current_path(dir)) {
        checked_policy(&opts)?;
    }
    if !vfs.exists(dir) {
        if !opts.create_if_missing {
            return Err(Error::NotADatabase(format!(
                "{} does not exist (create_if_missing is off)",
                dir.display()
            )));
        }
        vfs.create_dir_all(dir)?;
    }
    let entries = vfs.list_dir(dir).map_err(|e| match e {
        Error::Io(io) if io.kind() == std::io::ErrorKind::NotADirectory => {
            Error::NotADatabase(format!("{} is not a directory: {io}", dir.display()))
        }
        other => other,
    })?;
    let lock = vfs.lock(&lock_path(dir))?;
    let info_log =
        opts.info_log.then(|| InfoLog::open(vfs.clone(), dir, opts.info_log_limits(), &entries)).flatten();
    if let Some(l) = &info_log {
        l.line("open", format_args!("Strata {} opening {}", env!("CARGO_PKG_VERSION"), dir.display()));
    }
    crate::options_file::check_at_open(vfs.as_ref(), dir)?;
    let paths = Arc::new(TablePaths::new(dir, &opts.db_paths));
    let located = paths.scan(vfs.as_ref(), true)?;
    let has_current = vfs.exists(&current_path(dir));
    // Every persisted per-tree option the caller did not set keeps its recorded value.
    let opts = if has_current && !opts.error_if_exists {
        super::policy_change::resolve_default(opts, dir)?
    } else {
        opts
    };
    let policy = checked_policy(&opts)?;
    let mut root_log = 0;
    let versions = if has_current {
        if opts.error_if_exists {
            return Err(Error::invalid(format!("{} already exists (error_if_exists)", dir.display())));
        }
        let vs = VersionSet::recover_checked(vfs.clone(), dir, opts.num_levels, |v, log| {
            root_log = log;
            check_files_present(vfs.as_ref(), dir, &paths, v, 0)
        })?;
        // With keyspaces, a cold keyspace's log number may name a WAL that
        // every keyspace has moved past (and that was deleted): only a
        // database that never had keyspaces can insist on it.
        if !vs.ever_had_keyspaces() {
            check_wal_present(vfs.as_ref(), dir, root_log)?;
        }
        log_manifest_replayed("default", &vs);
        vs
    } else {
        // Tables or WALs without CURRENT: data we cannot interpret; never overwrite it.
        let data = entries
            .iter()
            .find(|n| matches!(parse_file_name(n), Some(FileKind::Table(_) | FileKind::Wal(_))));
        if let Some(name) = data {
            return Err(Error::NotADatabase(format!(
                "{} holds {name} but no CURRENT file; refusing to create a database over it",
                dir.display()
            )));
        }
        if let Some((id, path)) = located.first() {
            return Err(Error::NotADatabase(format!(
                "data path {} holds table {id:06}.sst but {} has no CURRENT file; refusing to create a database over it",
                path.display(),
                dir.display()
            )));
        }
        if !opts.create_if_missing {
            return Err(Error::NotADatabase(format!("{} has no CURRENT file", dir.display())));
        }
        // A MANIFEST or temp file alone is what a crash during the first open
        // leaves (CURRENT is installed before any WAL exists): no data, start over.
        for n in &entries {
            if matches!(parse_file_name(n), Some(FileKind::Manifest(_) | FileKind::Temp(_))) {
                vfs.remove_file(&dir.join(n))?;
            }
        }
        log::info!(target: "strata::recovery", "[default] new database created in {}", dir.display());
        VersionSet::create(vfs.clone(), dir, opts.num_levels)?
    };
    versions.set_max_manifest_size(opts.max_manifest_file_size);
    for n in &entries {
        if let Some(FileKind::Wal(k) | FileKind::Table(k) | FileKind::Temp(k) | FileKind::Manifest(k)) =
            parse_file_name(n)
        {
            versions.mark_file_number_used(k)
        }
    }
    for (id, _) in &located {
        versions.mark_file_number_used(*id);
    }
    let caches = Caches::new(&opts);
    let (block_cache, row_cache) = caches.for_tree();
    let tables = table_cache(&paths, &opts, block_cache.clone());
    cut_uncommitted_appends(vfs.as_ref(), &versions.current(), &tables)?;
    if opts.paranoid_checks {
        verify_tables(vfs.as_ref(), &versions.current(), &tables)?;
    }
    remove_unreferenced("default", dir, vfs.as_ref(), &versions, &entries, &located);
    paths.remove_temps(vfs.as_ref());
    super::policy_change::reconcile_default(
        &versions,
        &opts,
        policy.as_ref(),
        !has_current,
        info_log.as_deref(),
    )?;
    let versions = Arc::new(versions);
    let mut trees = vec![Parts {
        id: 0,
        name: "default".into(),
        dir: dir.to_path_buf(),
        opts: opts.clone(),
        versions: versions.clone(),
        tables,
        block_cache,
        row_cache,
        policy,
    }];
    let ks_opts = super::policy_change::keyspaces_over_recorded(&opts, &versions)?;
    trees.extend(ks_recovery::recover_keyspaces(dir, &ks_opts, &versions, &caches, info_log.as_deref())?);
    ks_recovery::check_newest_wal(&trees, &entries)?;
    // The new WAL exists (durably) before the edits that retire the old ones.
    let wal_number = versions.new_file_number();
    let wal_file = vfs.create(&wal_path(dir, wal_number))?;
    vfs.sync_dir(dir)?;
    let last_seq = ks_recovery::replay_wals(dir, &opts, &trees, &entries, wal_number)?;
    // Logs before the new one were replayed into tables every keyspace's MANIFEST names.
    for n in &entries {
        if let Some(FileKind::Wal(k)) = parse_file_name(n) {
            let _ = vfs.remove_file(&wal_path(dir, k));
        }
    }
    let shared = Arc::new(Shared::new(SharedParts {
        dir: dir.to_path_buf(),
        vfs: vfs.clone(),
        root_versions: versions,
        wal: Some(LogWriter::new(wal_file)),
        wal_number,
        lock: Some(lock),
        last_seq,
        max_total_wal_size: opts.max_total_wal_size,
        caches,
        info_log,
    }));
    let inners: Vec<Arc<DbInner>> =
        trees.into_iter().map(|p| p.assemble(MemTable::new(), wal_number, shared.clone())).collect();
    shared.trees.write().extend(inners.iter().map(|t| (t.id, t.clone())));
    if let Err(e) = shared.pool.start(super::pool::workers_for(&opts)) {
        let _ = inners[0].shutdown();
        return Err(e.into());
    }
    for t in &inners {
        if let Err(e) = t.spawn_background() {
            let _ = inners[0].shutdown();
            return Err(e);
        }
    }
    log::info!(
        target: "strata::recovery",
        "[default] database open: {} keyspace(s), last sequence {last_seq}, new WAL {wal_number:06}.log",
        inners.len()
    );
    if let Some(l) = &shared.info_log {
        l.line(
            "open",
            format_args!(
                "open: {} keyspace(s), last sequence {last_seq}, new WAL {wal_number:06}.log",
                inners.len()
            ),
        );
    }
    Ok(inners[0].clone())
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

/// What a recovered database is built from.
pub(super) struct Parts {
    pub id: u32,
    pub name: String,
    pub dir: PathBuf,
    pub opts: Options,
    pub versions: Arc<VersionSet>,
    pub tables: Arc<TableCache>,
    /// The tree's handles on the database's caches.
    pub block_cache: Option<Arc<BlockCache>>,
    pub row_cache: Option<Arc<RowCache>>,
    pub policy: Arc<dyn CompactionPolicy>,
}

impl Parts {
    /// The keyspace tree around the active memtable `mem` (logged from WAL
    /// `mem_wal` on), in the database `shared`.
    pub(super) fn assemble(self, mem: MemTable, mem_wal: u64, shared: Arc<Shared>) -> Arc<DbInner> {
        let mem = Arc::new(mem);
        let sv = SuperVersion::new(mem.clone(), Vec::new(), self.versions.current());
        let events = crate::events::EventHub::new(&self.opts.listeners, shared.info_log.clone());
        Arc::new(DbInner {
            id: self.id,
            name: self.name,
            dropped: AtomicBool::new(false),
            dir: self.dir,
            vfs: self.opts.vfs.clone(),
            opts: self.opts,
            versions: self.versions,
            tables: self.tables,
            block_cache: self.block_cache,
            row_cache: self.row_cache,
            policy: self.policy,
            sv: ArcSwap::from_pointee(sv),
            events,
            state: Mutex::new(DbState {
                mem,
                mem_wal,
                imms: VecDeque::new(),
                bg_error: None,
                shutting_down: false,
            }),
            bg_cv: super::pool::Waker::new(shared.pool.clone(), self.id),
            done_cv: Condvar::new(),
            counters: Counters::default(),
            compaction_lock: Mutex::new(()),
            running: Mutex::new(Vec::new()),
            seek_candidates: Mutex::new(Vec::new()),
            purging: Mutex::new(()),
            shared,
        })
    }
}

/// Calls `on_op(seq, op)` for every op of every record of WAL `log`, read
/// from `file`, that `wal_recovery_mode` keeps, in log order.
pub(super) fn replay_log_ops(
    file: Box<dyn SequentialFile>,
    opts: &Options,
    log: u64,
    mut on_op: impl FnMut(u64, BatchOp<'_>) -> Result<()>,
) -> Result<()> {
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
    Ok(())
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
        tables.get(f.id, f.size, &f.segments)?;
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
