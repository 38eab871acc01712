//! `strata::repair` (LevelDB `RepairDB`) and `strata::destroy` (`DestroyDB`).
//!
//! Repair rebuilds a database that no longer opens from whatever is still
//! readable: every intact block of every table and every intact WAL record
//! are merged into one new sorted run in the last level of each tree (the
//! default keyspace and every registered keyspace), under new MANIFESTs.
//! One run, not the salvaged tables side by side in level 0: tables of
//! different levels have interleaving sequence ranges, so listing them as
//! overlapping runs could let an older version shadow a newer one.
//!
//! A readable MANIFEST decides the sources exactly as open does: its runs'
//! tables and the WALs from its log number. A table it does not name is
//! either retired or an output whose edit never committed; such an output's
//! inputs (or WAL) are still live, since nothing is deleted before the edit
//! that retires it is durable, so using it too would count its entries
//! twice (a merge operand applied twice). Repair is then never worse than
//! open.
//!
//! The steps are ordered so a crash anywhere leaves a directory that either
//! opens as before or can be repaired again without losing more: new tables
//! are written and synced first (unreferenced, so a crash leaves them for the
//! next open or repair to drop); then an empty WAL and the new MANIFESTs;
//! damaged files move to `lost/` (a repair after a crash reads a live file
//! from there); only then does each `CURRENT` switch, atomically, the
//! root's last; superseded files are deleted last.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::keyspace::DEFAULT_KEYSPACE;
use super::ks_dirs::{keyspace_dir, KEYSPACES_DIR};
use super::ks_recovery::resolve_options;
use super::tree_open::{checked_policy, table_cache};
use crate::batch::{BatchOp, WriteBatch};
use crate::compaction::policy::CompactionPolicy;
use crate::compaction::view::build_view;
use crate::compaction::RunTarget;
use crate::error::{Error, Result};
use crate::filename::{current_path, lock_path, parse_file_name, table_path, wal_path, FileKind};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::MAX_SEQ;
use crate::key::{parse_internal_key, ValueKind};
use crate::memtable::MemTable;
use crate::options::kinds::WalRecoveryMode;
use crate::options::Options;
use crate::paths::TablePaths;
use crate::range_del::{Fragments, RangeDelSkip, RangeTombstone};
use crate::sink::{Env, OutputWriter, TableSink, WriteTarget};
use crate::table::format::BlockHandle;
use crate::table::{discover_segments, BlockIter, BlockReadOptions, SegmentMeta, Table};
use crate::version::{set_current, KeyspaceOp, ManifestWriter, NewFile, VersionEdit, VersionSet};
use crate::vfs::{RandomOpenOptions, Vfs};
use crate::wal::LogReader;

/// What [`repair`] found and kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Table files read.
    pub tables_scanned: usize,
    /// Tables read whole, every block intact.
    pub tables_intact: usize,
    /// Tables of which some blocks were unreadable (their other entries were kept).
    pub tables_damaged: usize,
    /// Tables that could not be opened at all (footer or index damaged).
    pub tables_lost: usize,
    /// Data blocks that failed their checksum or did not decode.
    pub blocks_lost: u64,
    /// Tables left out because the readable MANIFEST did not name them: retired
    /// ones, and outputs whose edit never committed (their inputs are live).
    pub tables_superseded: usize,
    /// WAL files replayed.
    pub wal_files: usize,
    /// WAL records replayed.
    pub wal_records: u64,
    /// WAL bytes skipped as damaged or torn.
    pub wal_bytes_dropped: u64,
    /// Entries (newest version per key, deletions dropped) in the rebuilt runs.
    pub entries_kept: u64,
    /// Whether the old root MANIFEST could be read (it then decides which
    /// tables and WALs are still current; otherwise every one found is used).
    pub manifest_readable: bool,
    /// Keyspaces (besides the default one) rebuilt, each in its directory.
    pub keyspaces: usize,
    /// Files moved into `lost/` because they were damaged, by name.
    pub moved_to_lost: Vec<String>,
    /// Number of the new root MANIFEST.
    pub manifest_number: u64,
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "tables: {} scanned, {} intact, {} damaged ({} blocks lost), {} unreadable, {} superseded",
            self.tables_scanned,
            self.tables_intact,
            self.tables_damaged,
            self.blocks_lost,
            self.tables_lost,
            self.tables_superseded
        )?;
        writeln!(
            f,
            "logs: {} replayed, {} records, {} bytes dropped",
            self.wal_files, self.wal_records, self.wal_bytes_dropped
        )?;
        writeln!(
            f,
            "kept {} entries in MANIFEST-{:06} and {} keyspaces (old MANIFEST {})",
            self.entries_kept,
            self.manifest_number,
            self.keyspaces,
            if self.manifest_readable { "readable" } else { "unreadable: every table and log was used" }
        )?;
        if self.moved_to_lost.is_empty() {
            write!(f, "nothing moved to lost/")
        } else {
            write!(f, "moved to lost/: {}", self.moved_to_lost.join(", "))
        }
    }
}

/// Rebuilds the database in `path` from its readable tables and logs (LevelDB
/// `RepairDB`), for a database `Db::open` refuses. Every intact entry is kept;
/// a damaged data block loses its own entries (and, as in any repair, a
/// deletion or newer version it held), an unreadable table or log record is
/// lost, and damaged files are moved into `lost/` rather than deleted. Every
/// keyspace the root MANIFEST registers is rebuilt in its directory and stays
/// registered (a keyspace's merge operator or custom policy must be given
/// with `Options::with_keyspace`, as for open). Fails with [`Error::Locked`]
/// while the database is open, and with [`Error::Corruption`] when the
/// database has keyspace directories but no readable root MANIFEST (the
/// registry naming them is lost).
pub fn repair(path: impl AsRef<Path>, opts: Options) -> Result<RepairReport> {
    let dir = path.as_ref();
    checked_policy(&opts)?;
    let vfs = opts.vfs.clone();
    if !vfs.exists(dir) {
        return Err(Error::NotADatabase(format!("{} does not exist", dir.display())));
    }
    // Rebuilt from part of a backup it would look whole: restore again instead.
    crate::backup::refuse_incomplete_restore(vfs.as_ref(), dir)?;
    let _lock = vfs.lock(&lock_path(dir))?;
    let entries = vfs.list_dir(dir)?;
    let mut report = RepairReport::default();
    let mut trees =
        vec![Tree::scan(0, dir.to_path_buf(), opts.clone(), &opts.db_paths.clone(), &mut report)?];
    let logs = super::ks_recovery::listed_wals(&entries);
    let any_manifest = entries.iter().any(|n| matches!(parse_file_name(n), Some(FileKind::Manifest(_))));
    if trees[0].located.is_empty() && logs.is_empty() && !any_manifest && !vfs.exists(&current_path(dir)) {
        return Err(Error::NotADatabase(format!("{} holds no Strata files", dir.display())));
    }
    report.manifest_readable = trees[0].old.is_some();

    // The registry is in the root MANIFEST; without it a keyspace's name,
    // options and very existence are unknown.
    let ks_base = dir.join(KEYSPACES_DIR);
    let registry = match &trees[0].old {
        Some(v) => v.keyspaces(),
        None => {
            if vfs.exists(&ks_base) && !vfs.list_dir(&ks_base)?.is_empty() {
                return Err(Error::corruption(format!(
                    "{} has keyspaces but no readable root MANIFEST (it holds the keyspace registry): \
                     repair cannot rebuild them",
                    dir.display()
                )));
            }
            BTreeMap::new()
        }
    };
    for (&id, entry) in &registry {
        let (ks_opts, _, _) = resolve_options(&opts, &entry.name, &entry.options)?;
        trees.push(Tree::scan(id, keyspace_dir(dir, id), ks_opts, &[], &mut report)?);
    }
    report.keyspaces = registry.len();

    // The shared WALs, each op to its keyspace, from that keyspace's log
    // number on (as open routes them). Ops of a dropped keyspace are skipped.
    let min_log = trees.iter().map(Tree::log_number).min().unwrap_or(0);
    let mut wal_files: Vec<(u64, PathBuf, bool)> =
        logs.iter().filter(|&&l| l >= min_log).map(|&l| (l, wal_path(dir, l), false)).collect();
    let root_lost = dir.join("lost");
    if trees.iter().all(|t| t.old.is_some()) && vfs.exists(&root_lost) {
        // Live WALs an interrupted repair already moved aside. Every MANIFEST
        // is readable, so a WAL from an earlier, finished repair is below it.
        for n in vfs.list_dir(&root_lost)? {
            if let Some(FileKind::Wal(l)) = parse_file_name(&n) {
                if l >= min_log && !logs.contains(&l) {
                    wal_files.push((l, root_lost.join(n), true));
                }
            }
        }
    }
    wal_files.sort();
    let index: HashMap<u32, usize> = trees.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
    let mut max_seq =
        trees.iter().filter_map(|t| t.old.as_ref()).map(|v| v.last_sequence()).max().unwrap_or(0);
    let mut lost_wals = Vec::new();
    for (l, path, in_lost) in &wal_files {
        report.wal_files += 1;
        let (records, dropped, whole) = replay_wal(vfs.as_ref(), path, |seq, op| {
            max_seq = max_seq.max(seq);
            if let Some(&i) = index.get(&op.keyspace) {
                if *l >= trees[i].log_number() {
                    trees[i].mem.add_op(seq, op);
                }
            }
        });
        report.wal_records += records;
        report.wal_bytes_dropped += dropped;
        if (!whole || dropped > 0) && !in_lost {
            lost_wals.push(path.clone());
        }
    }

    let mut built = Vec::new();
    for t in &trees {
        built.push(t.rebuild(&mut report, &mut max_seq)?);
    }
    built[0].lost.extend(lost_wals);

    // One empty WAL, from the root's numbers, then each tree's MANIFEST
    // naming only its new run; every tree's log number is that WAL's.
    let log_number = built[0].scratch.new_file_number();
    let mut wal = vfs.create(&wal_path(dir, log_number))?;
    wal.sync()?;
    drop(wal);
    let mut new_manifests = Vec::new();
    for (t, b) in trees.iter().zip(&mut built) {
        b.scratch.mark_file_number_used(log_number);
        let run = b.scratch.new_file_number();
        let manifest_number = b.scratch.new_file_number();
        let mut edit = VersionEdit {
            log_number: Some(log_number),
            next_file_number: Some(manifest_number + 1),
            last_sequence: Some(max_seq),
            new_files: b.outputs.drain(..).map(|f| (t.opts.num_levels - 1, run, f)).collect(),
            ..Default::default()
        };
        if let (0, Some(v)) = (t.id, &t.old) {
            edit.keyspace_ops = registry
                .iter()
                .map(|(&id, e)| KeyspaceOp::Add { id, name: e.name.clone(), options: e.options.clone() })
                .collect();
            edit.next_keyspace_id = v.ever_had_keyspaces().then(|| v.next_keyspace_id());
            edit.default_options = v.default_options();
        }
        ManifestWriter::create(vfs.as_ref(), &t.dir, manifest_number, &edit)?;
        vfs.sync_dir(&t.dir)?;
        new_manifests.push(manifest_number);
    }
    if trees.len() > 1 {
        // The entries of keyspace directories this repair created.
        vfs.sync_dir(&ks_base)?;
    }
    report.manifest_number = new_manifests[0];

    // Damaged files are kept for a person to look at, never deleted.
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for (t, b) in trees.iter().zip(&mut built) {
        b.lost.sort();
        b.lost.dedup();
        if b.lost.is_empty() {
            continue;
        }
        // In the tree's directory, whichever data path a damaged table was in.
        let lost_dir = t.dir.join("lost");
        vfs.create_dir_all(&lost_dir)?;
        for path in &b.lost {
            vfs.rename(path, &lost_dir.join(name(path)))?;
            if let Some(parent) = path.parent() {
                vfs.sync_dir(parent)?;
            }
            report.moved_to_lost.push(match t.id {
                0 => name(path),
                id => format!("{KEYSPACES_DIR}/{id}/{}", name(path)),
            });
        }
        vfs.sync_dir(&lost_dir)?;
        vfs.sync_dir(&t.dir)?;
    }
    // Keyspaces first: each switch stands alone (its MANIFEST's log number
    // already skips the WAL ops its new run holds).
    for (t, &number) in trees.iter().zip(&new_manifests).rev() {
        set_current(vfs.as_ref(), &t.dir, number)?;
    }

    // Everything else the new MANIFESTs do not name is superseded.
    for t in &mut trees {
        t.old = None;
    }
    for ((t, b), &manifest_number) in trees.iter().zip(&built).zip(&new_manifests) {
        for (k, path) in &t.located {
            let file = table_path(path, *k);
            if !b.new_ids.contains(k) && !b.lost.contains(&file) {
                let _ = vfs.remove_file(&file);
            }
        }
        for n in &t.entries {
            let stale = match parse_file_name(n) {
                Some(FileKind::Wal(k)) => t.id == 0 && k != log_number && !b.lost.contains(&t.dir.join(n)),
                Some(FileKind::Manifest(k)) => k != manifest_number,
                Some(FileKind::Temp(_)) => true,
                _ => false,
            };
            if stale {
                let _ = vfs.remove_file(&t.dir.join(n));
            }
        }
        if t.id != 0 {
            vfs.sync_dir(&t.dir)?;
        }
    }
    // The rebuilt database stands: a failed write is logged, the next open writes one.
    let named: Vec<(String, Options)> = trees
        .iter()
        .zip(std::iter::once(DEFAULT_KEYSPACE.to_string()).chain(registry.values().map(|e| e.name.clone())))
        .map(|(t, n)| (n, t.opts.clone()))
        .collect();
    if let Err(e) = crate::options_file::write(vfs.as_ref(), dir, &named) {
        log::warn!(target: "strata::options", "repair: OPTIONS file not written: {e}");
    }
    vfs.sync_dir(dir)?;
    Ok(report)
}

/// One tree being rebuilt: the default keyspace (id 0) in the root directory
/// and its data paths, or a keyspace in `keyspaces/<id>/`.
struct Tree {
    id: u32,
    dir: PathBuf,
    opts: Options,
    policy: Arc<dyn CompactionPolicy>,
    paths: Arc<TablePaths>,
    /// Every table on disk, with its directory.
    located: Vec<(u64, PathBuf)>,
    /// The directory's file names.
    entries: Vec<String>,
    /// The highest file number on disk.
    max_number: u64,
    /// The newest MANIFEST that reads whole.
    old: Option<VersionSet>,
    /// The tables to salvage, each where it is (in place, or in `lost/`).
    use_tables: Vec<(u64, PathBuf)>,
    /// What the MANIFEST recorded of each live table: its length and segments.
    recorded: HashMap<u64, (u64, Vec<SegmentMeta>)>,
    /// The tree's ops from the WALs.
    mem: Arc<MemTable>,
}

/// A tree's new run, before its MANIFEST is written.
struct Built {
    scratch: VersionSet,
    outputs: Vec<NewFile>,
    new_ids: HashSet<u64>,
    /// Damaged files to move into `lost/`.
    lost: Vec<PathBuf>,
}

impl Tree {
    /// Finds a tree's files and decides which tables are current.
    fn scan(
        id: u32,
        dir: PathBuf,
        opts: Options,
        data: &[PathBuf],
        report: &mut RepairReport,
    ) -> Result<Tree> {
        let policy = checked_policy(&opts)?;
        let vfs = opts.vfs.clone();
        // A registered keyspace whose directory is gone is rebuilt from the WALs.
        vfs.create_dir_all(&dir)?;
        let entries = vfs.list_dir(&dir)?;
        let paths = Arc::new(TablePaths::new(&dir, data));
        let located = paths.scan(vfs.as_ref(), true)?;
        let mut manifests = Vec::new();
        let mut max_number = located.iter().map(|(k, _)| *k).max().unwrap_or(0);
        for n in &entries {
            if let Some(FileKind::Manifest(k)) = parse_file_name(n) {
                manifests.push(k);
            }
            if let Some(FileKind::Table(k) | FileKind::Wal(k) | FileKind::Manifest(k) | FileKind::Temp(k)) =
                parse_file_name(n)
            {
                max_number = max_number.max(k);
            }
        }
        manifests.sort_unstable();
        let levels = opts.num_levels;
        let old = VersionSet::load_read_only(vfs.clone(), &dir, levels, |_, _| Ok(())).ok().or_else(|| {
            // CURRENT lost or damaged: the newest MANIFEST that reads whole.
            manifests.iter().rev().find_map(|&n| {
                VersionSet::load_read_only_at(vfs.clone(), &dir, n, levels, |_, _| Ok(())).ok()
            })
        });
        let mut tables: Vec<u64> = located.iter().map(|(k, _)| *k).collect();
        tables.sort_unstable();
        tables.dedup();
        let mut recorded = HashMap::new();
        let mut use_tables = Vec::new();
        match &old {
            Some(v) => {
                // Run files only, as open: a compaction buffer holds older
                // copies of data already merged below, which a dropped
                // deletion may have retired; a table named nowhere is retired
                // or an uncommitted output (see the module comment).
                let version = v.current();
                for f in version.levels.iter().flat_map(|l| &l.runs).flat_map(|r| &r.files) {
                    recorded.insert(f.id, (f.size, f.segments.clone()));
                }
                let mut live: Vec<u64> = recorded.keys().copied().collect();
                live.sort_unstable();
                for t in live {
                    if tables.binary_search(&t).is_ok() {
                        use_tables.push((t, paths.table(t)));
                    } else {
                        // Moved aside by a repair that crashed before its CURRENT switch.
                        let aside =
                            dir.join("lost").join(table_path(&dir, t).file_name().unwrap_or_default());
                        if vfs.exists(&aside) {
                            use_tables.push((t, aside));
                        }
                    }
                }
                report.tables_superseded += tables.iter().filter(|t| !recorded.contains_key(t)).count();
            }
            None => use_tables = tables.iter().map(|&t| (t, paths.table(t))).collect(),
        }
        Ok(Tree {
            id,
            dir,
            opts,
            policy,
            paths,
            located,
            entries,
            max_number,
            old,
            use_tables,
            recorded,
            mem: Arc::new(MemTable::new()),
        })
    }

    /// WALs below this were flushed into the tree's tables (0: no MANIFEST, all count).
    fn log_number(&self) -> u64 {
        self.old.as_ref().map_or(0, |v| v.log_number())
    }

    /// Merges the tree's salvaged tables and WAL ops into one new run in its
    /// last level, numbered above everything in its directory.
    fn rebuild(&self, report: &mut RepairReport, max_seq: &mut u64) -> Result<Built> {
        let vfs = self.opts.vfs.clone();
        let lost_dir = self.dir.join("lost");
        let open = crate::cache::table_cache::OpenTables::new(self.opts.max_open_files);
        let cache = table_cache(&self.paths, &self.opts, &open, None, None);
        let mut sources: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut counters = Vec::new();
        let mut lost = Vec::new();
        let mut range_dels: Vec<RangeTombstone> = Vec::new();
        for (t, path) in &self.use_tables {
            report.tables_scanned += 1;
            // A file already in lost/ stays there.
            let aside = path.starts_with(&lost_dir);
            match salvage_table(vfs.as_ref(), path, *t, self.recorded.get(t)) {
                Ok((iters, damaged, frags)) => {
                    range_dels.extend(frags.clipped(None, None));
                    sources.extend(iters.into_iter().map(|it| Box::new(it) as Box<dyn InternalIterator>));
                    counters.push((path.clone(), damaged, aside));
                }
                Err(_) => {
                    report.tables_lost += 1;
                    if !aside {
                        lost.push(path.clone());
                    }
                }
            }
        }
        sources.push(Box::new(self.mem.iter()));
        range_dels.extend(self.mem.range_dels(MAX_SEQ));

        let scratch = VersionSet::scratch(vfs.clone(), &self.dir, self.opts.num_levels, self.max_number + 1);
        let env = Env {
            vfs: vfs.as_ref(),
            versions: &scratch,
            tables: &cache,
            opts: &self.opts,
            policy: self.policy.as_ref(),
            pipeline: crate::compaction::auto::resolve_without_history(self.opts.compaction_pipeline),
            split_merges: Env::splits(self.opts.compaction_pipeline),
        };
        let level = self.opts.num_levels - 1;
        // The view of the tree being rebuilt (empty until this output is installed).
        let view = build_view(&scratch.current(), &scratch, &HashSet::new());
        // One run holds everything: any allocation gives it the configured bits.
        let target = WriteTarget { level, run: RunTarget::New, inputs: &[], entries: 1 };
        let mut out = OutputWriter::new(&env, &view, &target, self.opts.target_file_size_base);
        // The new run is the only one and no snapshot exists: range tombstones
        // are applied here (every entry they cover is left out) instead of kept.
        let mut merged =
            RangeDelSkip::new(MergingIterator::new(sources), Arc::new(Fragments::of(&range_dels)), MAX_SEQ);
        merged.seek_to_first()?;
        let mut keep = Keep::default();
        // Entries of one user key at one sequence number are one write seen
        // twice (a table and the WAL it was flushed from, or without a
        // MANIFEST an output and its inputs): one is kept, a put or deletion
        // over a merge operand, since a merge folded onto older versions is
        // a put at the operand's sequence that already holds it.
        let mut pending: Option<(Vec<u8>, Vec<u8>)> = None;
        while merged.valid() {
            let k = parse_internal_key(merged.key())?;
            *max_seq = (*max_seq).max(k.seq);
            if let Some(p) = pending.as_mut() {
                let held = parse_internal_key(&p.0)?;
                if held.user_key == k.user_key && held.seq == k.seq {
                    if held.kind == ValueKind::Merge && k.kind != ValueKind::Merge {
                        *p = (merged.key().to_vec(), merged.value().to_vec());
                    }
                    merged.next()?;
                    continue;
                }
            }
            if let Some((key, value)) = pending.replace((merged.key().to_vec(), merged.value().to_vec())) {
                report.entries_kept += u64::from(keep.add(&mut out, &key, &value)?);
            }
            merged.next()?;
        }
        if let Some((key, value)) = pending {
            report.entries_kept += u64::from(keep.add(&mut out, &key, &value)?);
        }
        let outputs = out.finish()?;
        for (path, damaged, aside) in counters {
            let n = damaged.load(Ordering::Relaxed);
            report.blocks_lost += n;
            if n > 0 {
                report.tables_damaged += 1;
                if !aside {
                    lost.push(path);
                }
            } else {
                report.tables_intact += 1;
            }
        }
        let new_ids = outputs.iter().map(|f| f.id).collect();
        Ok(Built { scratch, outputs, new_ids, lost })
    }
}

/// Which versions of each user key the new run keeps, fed newest first.
#[derive(Default)]
struct Keep {
    user_key: Option<Vec<u8>>,
    /// Whether the versions of the current key kept so far are all merge
    /// operands, which need the versions below them.
    operands_only: bool,
}

impl Keep {
    /// Writes the entry if the key still needs it; true if written.
    fn add(&mut self, out: &mut OutputWriter<'_>, ikey: &[u8], value: &[u8]) -> Result<bool> {
        let k = parse_internal_key(ikey)?;
        // The first entry of a user key is its newest version, with the
        // operands down to a put if it is one; a deletion has nothing below
        // it any more, so it goes too.
        if self.user_key.as_deref() != Some(k.user_key) {
            self.user_key = Some(k.user_key.to_vec());
            self.operands_only = true;
        }
        if !self.operands_only {
            return Ok(false);
        }
        self.operands_only = k.kind == ValueKind::Merge;
        if k.kind == ValueKind::Delete {
            return Ok(false);
        }
        out.add(ikey, value, k.seq)?;
        Ok(true)
    }
}

/// Removes a database's files (LevelDB `DestroyDB`): its keyspaces'
/// directories, CURRENT, LOCK, MANIFESTs, OPTIONS files, logs, tables, temp files and an unfinished restore's marker, the tables in its data paths
/// (`Options::with_db_paths`), then each directory if nothing else is in it. Other files stay. A missing directory is not an error. Fails
/// with [`Error::Locked`] while the database is open.
pub fn destroy(path: impl AsRef<Path>, opts: Options) -> Result<()> {
    let dir = path.as_ref();
    let vfs = opts.vfs.clone();
    if !vfs.exists(dir) {
        return Ok(());
    }
    let names = vfs.list_dir(dir)?;
    let lock = vfs.lock(&lock_path(dir))?;
    let ks_dir = dir.join(super::ks_dirs::KEYSPACES_DIR);
    if vfs.exists(&ks_dir) {
        for n in vfs.list_dir(&ks_dir)? {
            if n.parse::<u32>().is_ok() {
                super::ks_dirs::remove_tree_dir(vfs.as_ref(), &ks_dir.join(n));
            }
        }
        if vfs.list_dir(&ks_dir)?.is_empty() {
            let _ = vfs.remove_dir(&ks_dir);
        }
    }
    for n in &names {
        match parse_file_name(n) {
            Some(FileKind::Lock) => {}
            None if !crate::options_file::is_options_file(n)
                && n != crate::backup::RESTORE_MARKER
                && !crate::info_log::is_info_log(n) => {}
            _ => vfs.remove_file(&dir.join(n))?,
        }
    }
    for data in opts.db_paths.iter().filter(|d| d.as_path() != dir && vfs.exists(d)) {
        for n in vfs.list_dir(data)? {
            if let Some(FileKind::Table(_)) = parse_file_name(&n) {
                vfs.remove_file(&data.join(n))?;
            }
        }
        vfs.sync_dir(data)?;
        if vfs.list_dir(data)?.is_empty() {
            vfs.remove_dir(data)?;
        }
    }
    drop(lock);
    if vfs.exists(&lock_path(dir)) {
        vfs.remove_file(&lock_path(dir))?;
    }
    vfs.sync_dir(dir)?;
    if vfs.list_dir(dir)?.is_empty() {
        vfs.remove_dir(dir)?;
    }
    Ok(())
}

/// Replays the WAL at `path`, skipping damaged records, handing each op to
/// `on_op`. Returns (records, bytes dropped, read to the end).
fn replay_wal(vfs: &dyn Vfs, path: &Path, mut on_op: impl FnMut(u64, &BatchOp<'_>)) -> (u64, u64, bool) {
    let Ok(file) = vfs.open_sequential(path) else { return (0, 0, false) };
    let mut reader = LogReader::new(file, WalRecoveryMode::SkipAnyCorruptedRecords);
    let mut records = 0;
    let whole = loop {
        match reader.read_record() {
            Ok(Some(record)) => {
                let Ok(batch) = WriteBatch::from_data(record) else { continue };
                let ops: Result<Vec<_>> = batch.iter().collect();
                let Ok(ops) = ops else { continue };
                for (seq, op) in (batch.sequence()..).zip(ops) {
                    on_op(seq, &op);
                }
                records += 1;
            }
            Ok(None) => break true,
            Err(_) => break false,
        }
    };
    (records, reader.dropped_bytes(), whole)
}

/// Opens table `id` for salvage: one cursor per segment (a DTable's segments
/// overlap in keys; the repair merge orders them), found from the file alone
/// (the MANIFEST that lists them may be what was lost). When the walk back from
/// the file's end had to skip a tail, that tail is an append that never
/// committed only if the readable MANIFEST recorded a state inside what was
/// found; otherwise (no record, or the recorded length reaches into the
/// skipped bytes: its newest segment is damaged) the table counts as damaged
/// and the file is kept in `lost/`. Each salvaged segment's footer and index
/// must be readable.
fn salvage_table(
    vfs: &dyn Vfs,
    path: &Path,
    id: u64,
    recorded: Option<&(u64, Vec<SegmentMeta>)>,
) -> Result<(Vec<SalvageIter>, Arc<AtomicU64>, Arc<Fragments>)> {
    let file = vfs.open_random(path, RandomOpenOptions::default())?;
    let damaged = Arc::new(AtomicU64::new(0));
    let (segments, len) = discover_segments(&*file, id, file.len())?;
    let uncommitted_tail = recorded.is_some_and(|(size, _)| *size <= len);
    if len < file.len() && !uncommitted_tail {
        // A lost segment counts as one lost block.
        damaged.fetch_add(1, Ordering::Relaxed);
    }
    let table = Table::open_segments(file.clone(), id, len, &segments, None)?;
    let table = Arc::new(table);
    let mut iters = Vec::new();
    for seg in table.segments() {
        let mut handles = Vec::new();
        let mut index = seg.index.iter();
        index.seek_to_first()?;
        while index.valid() {
            handles.push(BlockHandle::decode(index.value())?);
            index.next()?;
        }
        let table = Arc::clone(&table);
        iters.push(SalvageIter { table, handles, next_block: 0, block: None, damaged: damaged.clone() });
    }
    let frags = Arc::clone(table.range_dels());
    Ok((iters, damaged, frags))
}

/// A forward-only cursor over a table's intact data blocks: a block that
/// fails its checksum or does not decode is counted and skipped.
struct SalvageIter {
    table: Arc<Table>,
    handles: Vec<BlockHandle>,
    next_block: usize,
    block: Option<BlockIter>,
    damaged: Arc<AtomicU64>,
}

impl SalvageIter {
    fn lose_block(&mut self) {
        self.damaged.fetch_add(1, Ordering::Relaxed);
        self.block = None;
    }

    /// Moves to the first entry of the next readable, non-empty block.
    fn next_block(&mut self) {
        self.block = None;
        let opts = BlockReadOptions::verified();
        while let Some(&h) = self.handles.get(self.next_block) {
            self.next_block += 1;
            let Ok(block) = self.table.read_block(h, opts) else {
                self.lose_block();
                continue;
            };
            let mut it = block.iter();
            match it.seek_to_first() {
                Ok(()) if it.valid() && parse_internal_key(it.key()).is_ok() => {
                    self.block = Some(it);
                    return;
                }
                Ok(()) if !it.valid() => {}
                _ => self.lose_block(),
            }
        }
    }
}

fn forward_only() -> Error {
    Error::invalid("a salvage cursor only moves forward")
}

impl InternalIterator for SalvageIter {
    fn valid(&self) -> bool {
        self.block.as_ref().is_some_and(|b| b.valid())
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.next_block = 0;
        self.next_block();
        Ok(())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        Err(forward_only())
    }
    fn seek(&mut self, _target: &[u8]) -> Result<()> {
        Err(forward_only())
    }
    fn seek_for_prev(&mut self, _target: &[u8]) -> Result<()> {
        Err(forward_only())
    }
    fn next(&mut self) -> Result<()> {
        let Some(b) = self.block.as_mut() else { return Ok(()) };
        let moved = b.next();
        let ok = moved.is_ok() && (!b.valid() || parse_internal_key(b.key()).is_ok());
        if !ok {
            // The rest of this block is lost; the entries before it were kept.
            self.lose_block();
            self.next_block();
        } else if !b.valid() {
            self.next_block();
        }
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        Err(forward_only())
    }
    fn key(&self) -> &[u8] {
        self.block.as_ref().map_or(&[], |b| b.key())
    }
    fn value(&self) -> &[u8] {
        self.block.as_ref().map_or(&[], |b| b.value())
    }
}
