//! Keyspaces at open: the options they reopen with, their
//! recovered trees, and the WAL replay that sends each op to its keyspace.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use super::ks_dirs::{keyspace_dir, remove_tree_dir, KEYSPACES_DIR};
use super::policy_change::{check_merge_operator, reconcile_keyspace, Recorded};
use super::shared::Caches;
use super::tree_open::{
    check_files_present, checked_policy, cut_uncommitted_appends, flush_recovered, remove_unreferenced,
    replay_log_ops, verify_tables, Parts, TreeCaches,
};
use crate::batch::BatchOp;
use crate::error::{Error, Result};
use crate::filename::{current_path, parse_file_name, wal_path, FileKind};
use crate::info_log::InfoLog;
use crate::keyspace_options::PersistedStyle;
use crate::memtable::MemTable;
use crate::options::{KeyspaceOptions, Options};
use crate::paths::TablePaths;
use crate::sink::Env;
use crate::version::{KeyspaceEntry, Version, VersionEdit, VersionSet};
use crate::vfs::{SequentialFile, Vfs};
use crate::wal::{check_needed_wals, check_recorded_wals, TreeLog};

/// The options registered keyspace `name` opens with: those given with
/// `Options::with_keyspace` (another policy is a policy change, see
/// `policy_change`), else the persisted ones; with what the registry
/// recorded, and whether the open gave options.
pub(crate) fn resolve_options(
    db: &Options,
    name: &str,
    persisted: &[u8],
) -> Result<(Options, Recorded, bool)> {
    let (stored, style) = KeyspaceOptions::decode(persisted)
        .map_err(|e| Error::corruption(format!("keyspace {name:?}: {e}")))?;
    let recorded = Recorded::decode(persisted, &format!("keyspace {name:?}"))?;
    let supplied = db.keyspaces.iter().find(|(n, _)| n == name).map(|(_, o)| o);
    let chosen = match supplied {
        Some(supplied) => supplied.clone(),
        None => {
            if let PersistedStyle::Custom(policy) = &style {
                return Err(Error::invalid(format!(
                    "keyspace {name:?} uses the custom policy {policy:?}, which cannot be persisted: \
                     give it again with Options::with_keyspace"
                )));
            }
            stored
        }
    };
    let opts = chosen.apply(db);
    check_merge_operator(name, &recorded, &opts)?;
    Ok((opts, recorded, supplied.is_some()))
}

/// Recovers every keyspace the root MANIFEST registers (not the default
/// one), after removing directories of keyspaces it does not (a create
/// that crashed before it was logged, a drop that crashed before the
/// directory was removed).
pub(crate) fn recover_keyspaces(
    root: &Path,
    opts: &Options,
    root_versions: &VersionSet,
    caches: &Caches,
    info_log: Option<&InfoLog>,
) -> Result<Vec<Parts>> {
    open_keyspaces(root, opts, root_versions, caches, false, info_log)
}

/// The read-only open's keyspaces: as [`recover_keyspaces`], but every
/// MANIFEST is only read and nothing is removed, cut or reconciled.
pub(crate) fn load_keyspaces_read_only(
    root: &Path,
    opts: &Options,
    root_versions: &VersionSet,
    caches: &Caches,
) -> Result<Vec<Parts>> {
    open_keyspaces(root, opts, root_versions, caches, true, None)
}

fn open_keyspaces(
    root: &Path,
    opts: &Options,
    root_versions: &VersionSet,
    caches: &Caches,
    read_only: bool,
    info_log: Option<&InfoLog>,
) -> Result<Vec<Parts>> {
    let registry = root_versions.keyspaces();
    if opts.keyspaces.iter().any(|(n, _)| n == super::keyspace::DEFAULT_KEYSPACE) {
        return Err(Error::invalid(
            "Options::with_keyspace cannot name the default keyspace: its options are the database's",
        ));
    }
    if !read_only {
        remove_orphans(opts.vfs.as_ref(), root, &registry);
    }
    // Each keyspace's MANIFEST is read and rewritten (synced) on its own:
    // several at once, so thousands of keyspaces do not wait on one
    // another's syncs. The registry's changes below stay in order.
    let entries: Vec<(u32, KeyspaceEntry)> = registry.into_iter().collect();
    let recovered = parallel_map(&entries, |(id, entry)| {
        let (tree_opts, recorded, given) = resolve_options(opts, &entry.name, &entry.options)?;
        crate::keyspace_options::check_ttl(
            &format!("keyspace {:?}", entry.name),
            &entry.options,
            &tree_opts,
        )?;
        let tree = recover_tree(root, *id, entry.name.clone(), tree_opts, caches, read_only)?;
        Ok((tree, recorded, given))
    });
    let mut trees = Vec::with_capacity(recovered.len());
    for r in recovered {
        let (tree, recorded, given) = r?;
        if !read_only {
            reconcile_keyspace(root_versions, &tree, &recorded, given, info_log)?;
        }
        log::info!(
            target: "strata::recovery",
            "[{}] keyspace recovered (id {}, policy {})",
            tree.name,
            tree.id,
            tree.policy.name()
        );
        trees.push(tree);
    }
    Ok(trees)
}

/// Below this many keyspaces an open works on them one at a time (threads
/// would cost more than they save, and the order of I/O stays fixed).
const PARALLEL_FROM: usize = 64;

/// `f` over `items`, on up to 8 threads from [`PARALLEL_FROM`] items on;
/// the results in `items`' order.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> Result<R> + Sync) -> Vec<Result<R>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(2, 8).min(items.len());
    if items.len() < PARALLEL_FROM {
        return items.iter().map(&f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, Result<R>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { return done };
                        done.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

fn recover_tree(
    root: &Path,
    id: u32,
    name: String,
    opts: Options,
    caches: &Caches,
    read_only: bool,
) -> Result<Parts> {
    let policy = checked_policy(&opts)?;
    let vfs = opts.vfs.clone();
    let dir = keyspace_dir(root, id);
    if !vfs.exists(&current_path(&dir)) {
        return Err(Error::corruption(format!(
            "keyspace {name:?} (id {id}) is registered but {} has no CURRENT file",
            dir.display()
        )));
    }
    let entries = vfs.list_dir(&dir)?;
    let paths = Arc::new(TablePaths::new(&dir, &[]));
    let located = paths.scan(vfs.as_ref(), !read_only)?;
    // Keyspace directories hold no WAL: the root's WALs are checked there.
    let check = |v: &Version, _: u64| check_files_present(vfs.as_ref(), &dir, &paths, v, 0);
    let versions = if read_only {
        VersionSet::load_read_only(vfs.clone(), &dir, opts.num_levels, check)?
    } else {
        VersionSet::recover_checked(vfs.clone(), &dir, opts.num_levels, check)?
    };
    super::tree_open::log_manifest_replayed(&name, &versions);
    versions.set_max_manifest_size(opts.max_manifest_file_size);
    for n in &entries {
        if let Some(FileKind::Table(k) | FileKind::Temp(k) | FileKind::Manifest(k)) = parse_file_name(n) {
            versions.mark_file_number_used(k)
        }
    }
    let tree_caches = TreeCaches::new(caches, &paths, &opts);
    let tables = &tree_caches.tables;
    if !read_only {
        cut_uncommitted_appends(vfs.as_ref(), &versions.current(), tables)?;
    }
    if opts.paranoid_checks {
        verify_tables(vfs.as_ref(), &versions.current(), tables)?;
    }
    if !read_only {
        remove_unreferenced(&name, &dir, vfs.as_ref(), &versions, &entries, &located);
    }
    Ok(Parts { id, name, dir, opts, versions: Arc::new(versions), caches: tree_caches, policy })
}

/// Removes keyspace directories the registry does not name.
fn remove_orphans(vfs: &dyn Vfs, root: &Path, registry: &BTreeMap<u32, KeyspaceEntry>) {
    let base = root.join(KEYSPACES_DIR);
    if !vfs.exists(&base) {
        return;
    }
    let Ok(names) = vfs.list_dir(&base) else { return };
    for n in names {
        match n.parse::<u32>() {
            Ok(id) if !registry.contains_key(&id) => remove_tree_dir(vfs, &base.join(&n)),
            _ => {}
        }
    }
}

/// The WALs the trees' MANIFESTs, the root's WAL floor and its record of
/// created WALs need are on disk (see [`crate::wal::check_needed_wals`] and
/// [`crate::wal::check_recorded_wals`]).
pub(crate) fn check_newest_wal(trees: &[Parts], entries: &[String]) -> Result<()> {
    let logs: Vec<TreeLog<'_>> =
        trees.iter().map(|t| TreeLog { keyspace: &t.name, log_number: t.versions.log_number() }).collect();
    let present = listed_wals(entries);
    check_needed_wals(&logs, true, trees[0].versions.wal_floor(), &present)?;
    check_recorded_wals(&trees[0].versions.recorded_wals(), &present, false)
}

/// What [`replay_wals`] leaves for the open.
pub(crate) struct Replayed {
    /// The highest sequence of every MANIFEST and WAL.
    pub last_seq: u64,
    /// Per tree (in `trees`' order): the memtable its replayed ops stay in,
    /// and the oldest WAL they came from; `None`: nothing left in memory.
    pub kept: Vec<Option<(MemTable, u64)>>,
    /// The oldest WAL still needed: older ones may be deleted, this one and
    /// newer ones hold the kept memtables' ops.
    pub floor: u64,
}

/// Replays the WALs every keyspace may still need (from the smallest log
/// number on): an op goes to its keyspace only if the WAL's number is at or
/// after that keyspace's log number; ops of dropped keyspaces are skipped;
/// an op of an id never handed out is `Corruption`.
///
/// The default tree's ops are written to L0 tables. A keyspace's ops stay in
/// its memtable, and their WALs on disk, when they fit in one write buffer
/// and every replayed WAL was read whole (RocksDB's
/// `avoid_flush_during_recovery`): thousands of keyspaces then reopen
/// without writing a table or a MANIFEST each, and their WALs go when they
/// flush. Otherwise (a WAL with a torn or damaged record, a keyspace that
/// flushed during the replay) its ops go to L0 tables, so no later WAL is
/// ever replayed after a damaged one. Each tree that writes records its
/// tables, the highest sequence and the new log number in one edit, so a
/// crash during recovery never replays a log twice into one keyspace; the
/// root's edit records the WAL floor.
pub(crate) fn replay_wals(
    root: &Path,
    opts: &Options,
    trees: &[Parts],
    entries: &[String],
    new_log: u64,
) -> Result<Replayed> {
    let pipeline = crate::compaction::auto::resolve_without_history(opts.compaction_pipeline);
    let envs: Vec<Env<'_>> = trees
        .iter()
        .map(|t| Env {
            vfs: t.opts.vfs.as_ref(),
            versions: &t.versions,
            tables: &t.caches.tables,
            opts: &t.opts,
            policy: t.policy.as_ref(),
            pipeline,
            split_merges: Env::splits(t.opts.compaction_pipeline),
        })
        .collect();
    let mut mems: Vec<MemTable> = trees.iter().map(|_| MemTable::new()).collect();
    let mut first_log: Vec<Option<u64>> = vec![None; trees.len()];
    let mut edits: Vec<VersionEdit> =
        trees.iter().map(|_| VersionEdit { log_number: Some(new_log), ..Default::default() }).collect();
    let vfs = opts.vfs.as_ref();
    let open = |log| vfs.open_sequential(&wal_path(root, log));
    let (max_seq, whole) = route_wal_ops(opts, trees, listed_wals(entries), open, |i, log, seq, op| {
        first_log[i].get_or_insert(log);
        mems[i].add_op(seq, op);
        if mems[i].approximate_memory_usage() >= trees[i].opts.write_buffer_size {
            flush_recovered(&envs[i], std::mem::take(&mut mems[i]), &mut edits[i])?;
        }
        Ok(())
    })?;
    let with_keyspaces = trees[0].versions.ever_had_keyspaces();
    let keep = |i: usize, mem: &MemTable, edit: &VersionEdit| {
        with_keyspaces && whole && i > 0 && edit.new_files.is_empty() && !mem.is_empty()
    };
    let floor = (0..trees.len())
        .filter(|&i| keep(i, &mems[i], &edits[i]))
        .filter_map(|i| first_log[i])
        .fold(new_log, u64::min);
    if with_keyspaces {
        // WALs below the floor are replayed into tables now and deleted
        // once the edits are durable; the new one is recorded as created.
        edits[0].wal_floor = Some(floor);
        edits[0].wals_created.push(new_log);
    }
    // The root's edit first (as before); the keyspaces' edits, each to its
    // own MANIFEST, need no order among them.
    let work: Vec<(usize, Pending)> =
        mems.into_iter().zip(edits).enumerate().map(|(i, w)| (i, std::sync::Mutex::new(Some(w)))).collect();
    let finish = |(i, w): &(usize, Pending)| -> Result<Option<(MemTable, u64)>> {
        let Some((mem, mut edit)) = w.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return Ok(None);
        };
        let versions = &trees[*i].versions;
        versions.set_last_sequence(max_seq);
        if keep(*i, &mem, &edit) {
            // Its MANIFEST stays as it is (its log number is at or below its
            // first kept WAL): no write, no sync.
            return Ok(Some((mem, first_log[*i].unwrap_or(new_log))));
        }
        if mem.is_empty() && edit.new_files.is_empty() && *i > 0 && with_keyspaces {
            // Nothing of this keyspace was in the replayed WALs: the root's
            // WAL floor tells the next open that the WALs below it are not needed.
            return Ok(None);
        }
        if !mem.is_empty() {
            flush_recovered(&envs[*i], mem, &mut edit)?;
        }
        // WAL numbers come from the root MANIFEST: never a keyspace's table number.
        versions.mark_file_number_used(new_log);
        edit.last_sequence = Some(max_seq);
        versions.log_and_apply(edit)?;
        Ok(None)
    };
    let mut kept = vec![finish(&work[0])?];
    for k in parallel_map(&work[1..], finish) {
        kept.push(k?);
    }
    Ok(Replayed { last_seq: max_seq, kept, floor })
}

/// A keyspace's replayed memtable and edit, taken by whichever thread finishes it.
type Pending = std::sync::Mutex<Option<(MemTable, VersionEdit)>>;

/// The WALs a directory listing names, oldest first.
pub(super) fn listed_wals(entries: &[String]) -> Vec<u64> {
    let mut logs: Vec<u64> = entries
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Wal(k)) => Some(k),
            _ => None,
        })
        .collect();
    logs.sort_unstable();
    logs
}

/// Opens every WAL of the listing `entries` of `root` now, for the
/// read-only open: beside a writer, a WAL it deletes later stays readable
/// (an open file outlives its name), and one deleted before it is opened
/// is left out, as if it had been deleted before the listing: the writer
/// deletes a WAL only after every tree with ops in it recorded their flush,
/// which the MANIFESTs read after this show.
pub(crate) fn open_listed_wals(
    vfs: &dyn Vfs,
    root: &Path,
    entries: &[String],
) -> Result<BTreeMap<u64, Box<dyn SequentialFile>>> {
    let mut wals = BTreeMap::new();
    for log in listed_wals(entries) {
        match vfs.open_sequential(&wal_path(root, log)) {
            Ok(f) => {
                wals.insert(log, f);
            }
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(wals)
}

/// The read-only open's replay: the ops of the WALs `wals` (from
/// [`open_listed_wals`]) routed as [`replay_wals`] routes them, into one
/// in-memory memtable per tree (in `trees`' order). Writes nothing;
/// returns the memtables and the last sequence.
pub(crate) fn replay_wals_into_memory(
    opts: &Options,
    trees: &[Parts],
    mut wals: BTreeMap<u64, Box<dyn SequentialFile>>,
) -> Result<(Vec<MemTable>, u64)> {
    let mems: Vec<MemTable> = trees.iter().map(|_| MemTable::new()).collect();
    let logs: Vec<u64> = wals.keys().copied().collect();
    let open = |log| wals.remove(&log).ok_or_else(|| Error::corruption(format!("WAL {log:06}.log not open")));
    let (max_seq, _) = route_wal_ops(opts, trees, logs, open, |i, _, seq, op| {
        mems[i].add_op(seq, op);
        Ok(())
    })?;
    for t in trees {
        t.versions.set_last_sequence(max_seq);
    }
    Ok((mems, max_seq))
}

/// Reads the WALs `logs` (oldest first; `open` opens one) at or after the
/// smallest log number of `trees` and calls `add(i, log, seq, op)` for every
/// op of WAL `log` that `trees[i]` still needs. Returns the highest sequence
/// of every tree's MANIFEST and the WALs, and whether every WAL was read
/// whole (no torn or damaged record dropped).
fn route_wal_ops(
    opts: &Options,
    trees: &[Parts],
    logs: Vec<u64>,
    mut open: impl FnMut(u64) -> Result<Box<dyn SequentialFile>>,
    mut add: impl FnMut(usize, u64, u64, &BatchOp<'_>) -> Result<()>,
) -> Result<(u64, bool)> {
    let next_id = trees[0].versions.next_keyspace_id();
    let index: HashMap<u32, usize> = trees.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
    let min_log = trees.iter().map(|t| t.versions.log_number()).min().unwrap_or(0);
    let mut max_seq = trees.iter().map(|t| t.versions.last_sequence()).max().unwrap_or(0);
    let mut dropped = 0;
    for log in logs.into_iter().filter(|&k| k >= min_log) {
        dropped += replay_log_ops(open(log)?, opts, log, |seq, op| {
            max_seq = max_seq.max(seq);
            let Some(&i) = index.get(&op.keyspace) else {
                if op.keyspace < next_id {
                    return Ok(()); // a dropped keyspace
                }
                return Err(Error::corruption(format!(
                    "WAL {log:06}.log: an op of keyspace id {}, which was never created",
                    op.keyspace
                )));
            };
            if log < trees[i].versions.log_number() {
                return Ok(()); // already in that keyspace's tables
            }
            add(i, log, seq, &op)
        })?;
    }
    Ok((max_seq, dropped == 0))
}
