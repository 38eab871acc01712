//! `strata::repair` (LevelDB `RepairDB`) and `strata::destroy` (`DestroyDB`).
//!
//! Repair rebuilds a database that no longer opens from whatever is still
//! readable: every intact block of every table and every intact WAL record
//! are merged into one new sorted run in the last level, under a new MANIFEST.
//! One run, not the salvaged tables side by side in level 0: tables of
//! different levels have interleaving sequence ranges, so listing them as
//! overlapping runs could let an older version shadow a newer one.
//!
//! The steps are ordered so a crash anywhere leaves a directory that either
//! opens as before or can be repaired again without losing more: new tables
//! are written and synced first (unreferenced, so a crash leaves them for the
//! next repair); then an empty WAL and the new MANIFEST; damaged files move to
//! `lost/`; only then does `CURRENT` switch, atomically; superseded files are
//! deleted last.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::recovery::{checked_policy, table_cache};
use crate::batch::WriteBatch;
use crate::compaction::executor::Env;
use crate::compaction::monkey::WriteTarget;
use crate::compaction::output::OutputWriter;
use crate::compaction::view::build_view;
use crate::compaction::RunTarget;
use crate::error::{Error, Result};
use crate::filename::{lock_path, parse_file_name, table_path, wal_path, FileKind};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::MAX_SEQ;
use crate::key::{parse_internal_key, ValueKind};
use crate::memtable::MemTable;
use crate::options::{Options, WalRecoveryMode};
use crate::paths::TablePaths;
use crate::range_del::{Fragments, RangeDelSkip, RangeTombstone};
use crate::table::format::BlockHandle;
use crate::table::{discover_segments, BlockIter, BlockReadOptions, SegmentMeta, Table};
use crate::version::{set_current, ManifestWriter, VersionEdit, VersionSet};
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
    /// Tables left out because the readable MANIFEST had already retired them.
    pub tables_superseded: usize,
    /// WAL files replayed.
    pub wal_files: usize,
    /// WAL records replayed.
    pub wal_records: u64,
    /// WAL bytes skipped as damaged or torn.
    pub wal_bytes_dropped: u64,
    /// Entries (newest version per key, deletions dropped) in the rebuilt run.
    pub entries_kept: u64,
    /// Whether the old MANIFEST could be read (it then decides which tables and
    /// WALs are still current; otherwise every one found is used).
    pub manifest_readable: bool,
    /// Files moved into `lost/` because they were damaged, by name.
    pub moved_to_lost: Vec<String>,
    /// Number of the new MANIFEST.
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
            "kept {} entries in MANIFEST-{:06} (old MANIFEST {})",
            self.entries_kept,
            self.manifest_number,
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
/// lost, and damaged files are moved into `lost/` rather than deleted. Fails
/// with [`Error::Locked`] while the database is open, and with
/// [`Error::InvalidArgument`] for a database with keyspaces (not supported yet).
pub fn repair(path: impl AsRef<Path>, opts: Options) -> Result<RepairReport> {
    let dir = path.as_ref();
    let policy = checked_policy(&opts)?;
    let vfs = opts.vfs.clone();
    if !vfs.exists(dir) {
        return Err(Error::NotADatabase(format!("{} does not exist", dir.display())));
    }
    let _lock = vfs.lock(&lock_path(dir))?;
    let entries = vfs.list_dir(dir)?;
    // The rebuilt root MANIFEST would lose the keyspace registry, and the
    // next open would then delete every keyspace's directory.
    let ks_dir = dir.join(super::ks_recovery::KEYSPACES_DIR);
    if vfs.exists(&ks_dir) && !vfs.list_dir(&ks_dir)?.is_empty() {
        return Err(Error::invalid(format!(
            "{} has keyspaces: repair handles only databases without keyspaces",
            dir.display()
        )));
    }
    // Tables in every data path (the main directory's included).
    let paths = Arc::new(TablePaths::new(dir, &opts.db_paths));
    let located = paths.scan(vfs.as_ref(), true)?;
    let mut report = RepairReport::default();
    let (mut tables, mut logs, mut manifests) = (Vec::new(), Vec::new(), Vec::new());
    let mut max_number = located.iter().map(|(k, _)| *k).max().unwrap_or(0);
    tables.extend(located.iter().map(|(k, _)| *k));
    for n in &entries {
        match parse_file_name(n) {
            Some(FileKind::Wal(k)) => logs.push(k),
            Some(FileKind::Manifest(k)) => manifests.push(k),
            _ => {}
        }
        if let Some(FileKind::Table(k) | FileKind::Wal(k) | FileKind::Manifest(k) | FileKind::Temp(k)) =
            parse_file_name(n)
        {
            max_number = max_number.max(k);
        }
    }
    tables.sort_unstable();
    tables.dedup();
    logs.sort_unstable();
    manifests.sort_unstable();
    if tables.is_empty() && logs.is_empty() && manifests.is_empty() && !vfs.exists(&dir.join("CURRENT")) {
        return Err(Error::NotADatabase(format!("{} holds no Strata files", dir.display())));
    }

    // A readable MANIFEST says which tables were already retired (their
    // deletions may not have happened) and which logs were already flushed:
    // using those could bring back data a later deletion removed.
    let old =
        VersionSet::load_read_only(vfs.clone(), dir, opts.num_levels, |_, _| Ok(())).ok().or_else(|| {
            // CURRENT lost or damaged: the newest MANIFEST that reads whole.
            manifests.iter().rev().find_map(|&n| {
                VersionSet::load_read_only_at(vfs.clone(), dir, n, opts.num_levels, |_, _| Ok(())).ok()
            })
        });
    let (mut use_tables, mut superseded) = (Vec::new(), Vec::new());
    // What the MANIFEST recorded of each live table: its length and segments.
    let mut recorded: HashMap<u64, (u64, Vec<SegmentMeta>)> = HashMap::new();
    match &old {
        Some(v) => {
            report.manifest_readable = true;
            // Run files only: a compaction buffer holds older copies of data
            // already merged below, which a dropped deletion may have retired.
            let version = v.current();
            for f in version.levels.iter().flat_map(|l| &l.runs).flat_map(|r| &r.files) {
                recorded.insert(f.id, (f.size, f.segments.clone()));
            }
            let in_runs: HashSet<u64> =
                version.levels.iter().flat_map(|l| &l.runs).flat_map(|r| &r.files).map(|f| f.id).collect();
            let newer_than = v.new_file_number();
            for &t in &tables {
                if in_runs.contains(&t) || t >= newer_than {
                    use_tables.push(t);
                } else {
                    superseded.push(t);
                }
            }
            logs.retain(|&l| l >= v.log_number());
        }
        None => use_tables = tables.clone(),
    }
    report.tables_superseded = superseded.len();

    let cache = table_cache(&paths, &opts, None);
    let mut sources: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut counters = Vec::new();
    // Full paths of damaged files (tables may be in any data path).
    let mut lost: Vec<PathBuf> = Vec::new();
    let mut range_dels: Vec<RangeTombstone> = Vec::new();
    for &t in &use_tables {
        report.tables_scanned += 1;
        match salvage_table(vfs.as_ref(), &paths.table(t), t, recorded.get(&t)) {
            Ok((iters, damaged, frags)) => {
                range_dels.extend(frags.clipped(None, None));
                sources.extend(iters.into_iter().map(|it| Box::new(it) as Box<dyn InternalIterator>));
                counters.push((t, damaged));
            }
            Err(_) => {
                report.tables_lost += 1;
                lost.push(paths.table(t));
            }
        }
    }
    let mut mem = MemTable::new();
    let mut max_seq = old.as_ref().map_or(0, |v| v.last_sequence());
    for &l in &logs {
        report.wal_files += 1;
        let (records, dropped, whole) = replay_wal(vfs.as_ref(), dir, l, &mut mem, &mut max_seq);
        report.wal_records += records;
        report.wal_bytes_dropped += dropped;
        if !whole || dropped > 0 {
            lost.push(wal_path(dir, l));
        }
    }
    let mem = Arc::new(mem);
    sources.push(Box::new(mem.iter()));
    range_dels.extend(mem.range_dels(crate::key::MAX_SEQ));

    // Write the new run with numbers above everything on disk.
    let scratch = VersionSet::scratch(vfs.clone(), dir, opts.num_levels, max_number + 1);
    let env = Env {
        vfs: vfs.as_ref(),
        versions: &scratch,
        tables: &cache,
        opts: &opts,
        policy: policy.as_ref(),
        pipeline: crate::compaction::auto::resolve_without_history(opts.compaction_pipeline),
        split_merges: Env::splits(opts.compaction_pipeline),
    };
    let level = opts.num_levels - 1;
    // The view of the tree being rebuilt (empty until this output is installed).
    let view = build_view(&scratch.current(), &scratch, &HashSet::new());
    // One run holds everything: any allocation gives it the configured bits.
    let target = WriteTarget { level, run: RunTarget::New, inputs: &[], entries: 1 };
    let mut out = OutputWriter::new(&env, &view, &target, opts.target_file_size_base);
    // The new run is the only one and no snapshot exists: range tombstones
    // are applied here (every entry they cover is left out) instead of kept.
    let mut merged =
        RangeDelSkip::new(MergingIterator::new(sources), Arc::new(Fragments::of(&range_dels)), MAX_SEQ);
    merged.seek_to_first()?;
    let mut last_user_key: Option<Vec<u8>> = None;
    // Whether the versions of the current key kept so far are all merge
    // operands, which need the versions below them.
    let mut operands_only = false;
    while merged.valid() {
        let k = parse_internal_key(merged.key())?;
        max_seq = max_seq.max(k.seq);
        // The first entry of a user key is its newest version, with the
        // operands down to a put if it is one; a deletion has nothing below
        // it any more, so it goes too.
        if last_user_key.as_deref() != Some(k.user_key) {
            last_user_key = Some(k.user_key.to_vec());
            operands_only = true;
        }
        if operands_only {
            operands_only = k.kind == ValueKind::Merge;
            if k.kind != ValueKind::Delete {
                out.add(merged.key(), merged.value(), k.seq)?;
                report.entries_kept += 1;
            }
        }
        merged.next()?;
    }
    let outputs = out.finish()?;
    for (t, damaged) in counters {
        let n = damaged.load(Ordering::Relaxed);
        report.blocks_lost += n;
        if n > 0 {
            report.tables_damaged += 1;
            lost.push(paths.table(t));
        } else {
            report.tables_intact += 1;
        }
    }

    // An empty log and a MANIFEST naming only the new run.
    let log_number = scratch.new_file_number();
    let run = scratch.new_file_number();
    let manifest_number = scratch.new_file_number();
    let new_ids: HashSet<u64> = outputs.iter().map(|f| f.id).collect();
    let mut wal = vfs.create(&wal_path(dir, log_number))?;
    wal.sync()?;
    drop(wal);
    let edit = VersionEdit {
        log_number: Some(log_number),
        next_file_number: Some(manifest_number + 1),
        last_sequence: Some(max_seq),
        new_files: outputs.into_iter().map(|f| (level, run, f)).collect(),
        ..Default::default()
    };
    ManifestWriter::create(vfs.as_ref(), dir, manifest_number, &edit)?;
    vfs.sync_dir(dir)?;
    report.manifest_number = manifest_number;

    // Damaged files are kept for a person to look at, never deleted.
    lost.sort();
    lost.dedup();
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !lost.is_empty() {
        // In the main directory, whichever data path a damaged table was in.
        let lost_dir = dir.join("lost");
        vfs.create_dir_all(&lost_dir)?;
        for path in &lost {
            vfs.rename(path, &lost_dir.join(name(path)))?;
            if let Some(parent) = path.parent() {
                vfs.sync_dir(parent)?;
            }
        }
        vfs.sync_dir(&lost_dir)?;
        vfs.sync_dir(dir)?;
    }
    report.moved_to_lost = lost.iter().map(|p| name(p)).collect();
    set_current(vfs.as_ref(), dir, manifest_number)?;

    // Everything else the new MANIFEST does not name is superseded.
    drop(old);
    for (k, path) in &located {
        let file = table_path(path, *k);
        if !new_ids.contains(k) && !lost.contains(&file) {
            let _ = vfs.remove_file(&file);
        }
    }
    for n in &entries {
        let stale = match parse_file_name(n) {
            Some(FileKind::Wal(k)) => k != log_number && !lost.contains(&dir.join(n)),
            Some(FileKind::Manifest(k)) => k != manifest_number,
            Some(FileKind::Temp(_)) => true,
            _ => false,
        };
        if stale {
            let _ = vfs.remove_file(&dir.join(n));
        }
    }
    // The rebuilt database stands: a failed write is logged, the next open writes one.
    if let Err(e) = crate::options_file::write(vfs.as_ref(), dir, &[("default".to_string(), opts.clone())]) {
        log::warn!(target: "strata::options", "repair: OPTIONS file not written: {e}");
    }
    vfs.sync_dir(dir)?;
    Ok(report)
}

/// Removes a database's files (LevelDB `DestroyDB`): its keyspaces'
/// directories, CURRENT, LOCK, MANIFESTs, OPTIONS files, logs, tables and temp files, the tables in its data paths
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
    let ks_dir = dir.join(super::ks_recovery::KEYSPACES_DIR);
    if vfs.exists(&ks_dir) {
        for n in vfs.list_dir(&ks_dir)? {
            if n.parse::<u32>().is_ok() {
                super::ks_recovery::remove_tree_dir(vfs.as_ref(), &ks_dir.join(n));
            }
        }
        if vfs.list_dir(&ks_dir)?.is_empty() {
            let _ = vfs.remove_dir(&ks_dir);
        }
    }
    for n in &names {
        match parse_file_name(n) {
            Some(FileKind::Lock) => {}
            None if !crate::options_file::is_options_file(n) => {}
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

/// Replays one WAL into `mem`, skipping damaged records. Returns (records,
/// bytes dropped, read to the end).
fn replay_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    log: u64,
    mem: &mut MemTable,
    max_seq: &mut u64,
) -> (u64, u64, bool) {
    let Ok(file) = vfs.open_sequential(&wal_path(dir, log)) else { return (0, 0, false) };
    let mut reader = LogReader::new(file, WalRecoveryMode::SkipAnyCorruptedRecords);
    let mut records = 0;
    let whole = loop {
        match reader.read_record() {
            Ok(Some(record)) => {
                let Ok(batch) = WriteBatch::from_data(record) else { continue };
                let ops: Result<Vec<_>> = batch.iter().collect();
                let Ok(ops) = ops else { continue };
                for (seq, op) in (batch.sequence()..).zip(ops) {
                    // Never another keyspace's op into the default keyspace.
                    if op.keyspace != 0 {
                        continue;
                    }
                    mem.add_op(seq, &op);
                    *max_seq = (*max_seq).max(seq);
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
        let opts =
            BlockReadOptions { verify_checksums: true, fill_cache: false, readahead: 0, prefetch: false };
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
