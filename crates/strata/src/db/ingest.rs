//! Ingesting external tables into one keyspace's tree (RocksDB
//! `IngestExternalFile`). In general the files' entries are written as new
//! tables of the tree, every one stamped with one new sequence number, so
//! they are newer than everything before and invisible to older snapshots.
//! Files that touch no key of the tree, while no snapshot is live, join as
//! they are (moved or copied): at sequence 0 there is nothing older to be
//! ordered against and no snapshot to hide them from. Either way the tables
//! go where the policy would place a flush of the same keys (its
//! `flush_level`, validated), in one MANIFEST edit.
//!
//! Writes stop for the rewrite (the WAL lock is held, as RocksDB stops them
//! for an ingestion): no write may take a sequence between the ingestion's
//! and the edit, and the memtables must not overlap the files' keys, or the
//! tables would sit below newer data of the same keys.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::DbInner;
use crate::compaction::policy::RunTarget;
use crate::compaction::view::build_view;
use crate::error::{Error, Result};
use crate::ingest::IngestExternalFileOptions;
use crate::iter::InternalIterator;
use crate::key::{append_internal_key, parse_internal_key, user_key, SeqNum};
use crate::range_del::Fragments;
use crate::sink::{OutputWriter, TableSink, WriteTarget};
use crate::stats::Counters;
use crate::table::reader::{BlockReadOptions, Table};
use crate::version::{NewFile, VersionEdit};
use crate::vfs::RandomOpenOptions;

/// How many times an ingestion flushes and finds new writes in its range
/// before it gives up with `TryAgain`.
const FLUSH_TRIES: usize = 5;

/// One external table, opened and checked.
struct External {
    path: PathBuf,
    table: Arc<Table>,
    size: u64,
    /// The user keys it touches, points and range deletes: `[lo, hi]`.
    lo: Vec<u8>,
    hi: Vec<u8>,
}

impl External {
    fn open(tree: &DbInner, path: &Path) -> Result<External> {
        let vfs = &tree.vfs;
        let size = vfs.file_size(path)?;
        let file = vfs.open_random(path, RandomOpenOptions::default())?;
        let table = Table::open(file, 0, size, None)
            .map_err(|e| Error::invalid(format!("{}: not a Strata table: {e}", path.display())))?
            .with_path(path);
        let props = table.properties();
        let mut bounds: Vec<&[u8]> = Vec::new();
        if !props.smallest.is_empty() {
            bounds.extend([user_key(&props.smallest), user_key(&props.largest)]);
        }
        let frags = table.range_dels().fragments();
        if let (Some(first), Some(last)) = (frags.first(), frags.last()) {
            bounds.extend([first.start.as_slice(), last.end.as_slice()]);
        }
        let (Some(lo), Some(hi)) = (bounds.iter().min(), bounds.iter().max()) else {
            return Err(Error::invalid(format!("{}: the table is empty", path.display())));
        };
        let (lo, hi) = (lo.to_vec(), hi.to_vec());
        Ok(External { path: path.to_path_buf(), table: Arc::new(table), size, lo, hi })
    }

    /// True if the table can join a tree as it is: no range deletes, every
    /// entry at sequence 0 (as `SstFileWriter` writes them), one per user
    /// key. Reads every block (checksums verified).
    fn is_plain(&self) -> Result<bool> {
        if !self.table.range_dels().is_empty() {
            return Ok(false);
        }
        let mut it = self.table.iter(BlockReadOptions { fill_cache: false, ..BlockReadOptions::default() });
        it.seek_to_first()?;
        // The previous user key, kept in one buffer (empty: none yet).
        let (mut last, mut first) = (Vec::new(), true);
        while it.valid() {
            let parsed = parse_internal_key(it.key())?;
            if parsed.seq != 0 || (!first && parsed.user_key <= last.as_slice()) {
                return Ok(false);
            }
            last.clear();
            last.extend_from_slice(parsed.user_key);
            first = false;
            it.next()?;
        }
        Ok(true)
    }

    /// The version-edit description of the table as it is.
    fn as_new_file(&self, id: u64) -> NewFile {
        let props = self.table.properties();
        NewFile {
            id,
            size: self.size,
            smallest: props.smallest.clone(),
            largest: props.largest.clone(),
            num_entries: props.num_entries,
            num_deletions: props.num_deletions,
            smallest_seq: 0,
            largest_seq: 0,
            bloom_bits_per_key: Some(props.bloom_bits_per_key),
            segments: Vec::new(),
            num_range_dels: 0,
        }
    }
}

impl DbInner {
    /// Adds the tables at `paths` to this tree (see the module comment).
    pub(crate) fn ingest(&self, paths: &[PathBuf], opts: &IngestExternalFileOptions) -> Result<()> {
        self.check_live()?;
        if self.shared.read_only {
            return Err(Error::opened_read_only());
        }
        if paths.is_empty() {
            return Err(Error::invalid("ingest_external_file: no file given"));
        }
        self.idle.touch();
        let mut files = paths.iter().map(|p| External::open(self, p)).collect::<Result<Vec<_>>>()?;
        files.sort_by(|a, b| a.lo.cmp(&b.lo));
        for w in files.windows(2) {
            if w[1].lo <= w[0].hi {
                return Err(Error::invalid(format!(
                    "ingest_external_file: {} and {} overlap in their keys",
                    w[0].path.display(),
                    w[1].path.display()
                )));
            }
        }
        let (lo, hi) = (files[0].lo.clone(), files[files.len() - 1].hi.clone());
        // Reading every block to learn whether the files could join as they
        // are is worth it only when no table overlaps them (checked again below).
        let mut plain = !self.tables_overlap(&lo, &hi);
        for f in &files {
            if !plain {
                break;
            }
            plain = f.is_plain()?;
        }
        // The memtables must hold nothing of the range, with writes stopped.
        let mut tries = 0;
        let (compaction, mut wal) = loop {
            if self.memtables_overlap(&lo, &hi) {
                if !opts.allow_blocking_flush {
                    return Err(Error::invalid(
                        "ingest_external_file: the files overlap writes in the memtable, and allow_blocking_flush is off",
                    ));
                }
                self.flush()?;
            }
            let compaction = self.compaction_lock.lock();
            let wal = self.shared.wal.lock();
            if !self.memtables_overlap(&lo, &hi) {
                break (compaction, wal);
            }
            tries += 1;
            if tries == FLUSH_TRIES {
                return Err(Error::TryAgain(
                    "ingest_external_file: new writes kept arriving in the files' key range".into(),
                ));
            }
        };
        // Every earlier write becomes durable first: an ingestion that
        // survives a crash must not outlive the writes acknowledged before it.
        match wal.as_mut() {
            Some(w) => w.sync()?,
            None => return Err(Error::Closed),
        }
        let seq = self.shared.root_versions.last_sequence() + 1;
        // Files that touch no key of the tree need no sequence of their own
        // when no snapshot could tell them from older data: they join as they
        // are, and no snapshot is taken until they are visible.
        let adopted = (plain && !self.tables_overlap(&lo, &hi))
            .then(|| {
                self.shared.snapshots.while_none(|| {
                    let outputs = self.adopt_ingested(&files, opts.move_files)?;
                    self.install_or_undo(&outputs, seq).map(|()| outputs)
                })
            })
            .flatten();
        let as_is = adopted.is_some();
        let outputs = match adopted {
            Some(outputs) => outputs?,
            None => {
                let outputs = self.write_ingested(&files, seq)?;
                self.install_or_undo(&outputs, seq)?;
                outputs
            }
        };
        if opts.move_files {
            // The ingestion is durable: a source that cannot be removed is
            // left behind with a warning, as in RocksDB, not an error.
            for f in &files {
                if let Err(e) = self.vfs.remove_file(&f.path) {
                    log::warn!(target: "strata::ingest", "[{}] ingested {} but could not remove it: {e}", self.name, f.path.display());
                }
            }
        }
        drop(wal);
        drop(compaction);
        let entries: u64 = outputs.iter().map(|f| f.num_entries).sum();
        log::info!(
            target: "strata::ingest",
            "[{}] ingested {} files: {entries} entries into {} tables, {}",
            self.name,
            files.len(),
            outputs.len(),
            if as_is { "as they were".to_string() } else { format!("rewritten at sequence {seq}") }
        );
        Counters::add(&self.counters.ingested_files, files.len() as u64);
        if as_is {
            Counters::add(&self.counters.ingested_files_as_is, files.len() as u64);
        }
        self.bg_cv.notify_all();
        Ok(())
    }

    fn tables_overlap(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.versions
            .current()
            .live_files()
            .iter()
            .any(|f| user_key(&f.smallest) <= hi && lo <= user_key(&f.largest))
    }

    /// Makes `files` tables of this tree as they are: hard-linked for a move
    /// (copied where the file system cannot link; the caller removes the
    /// sources once the edit is durable) or copied, their directory synced.
    fn adopt_ingested(&self, files: &[External], move_files: bool) -> Result<Vec<NewFile>> {
        let mut outputs: Vec<NewFile> = Vec::with_capacity(files.len());
        let undo = |outputs: &[NewFile]| {
            for f in outputs {
                let _ = self.vfs.remove_file(&self.tables.paths().table(f.id));
            }
        };
        for f in files {
            let id = self.versions.new_file_number();
            let to = self.tables.paths().table(id);
            let placed = if move_files && self.vfs.hard_link(&f.path, &to).is_ok() {
                Ok(())
            } else {
                crate::vfs::copy_prefix(self.vfs.as_ref(), &f.path, &to, f.size)
            };
            if let Err(e) = placed {
                undo(&outputs);
                return Err(e);
            }
            outputs.push(f.as_new_file(id));
        }
        let ids: Vec<u64> = outputs.iter().map(|f| f.id).collect();
        if let Err(e) = self.tables.paths().sync_data_dirs(self.vfs.as_ref(), &ids) {
            undo(&outputs);
            return Err(e);
        }
        Ok(outputs)
    }

    fn memtables_overlap(&self, lo: &[u8], hi: &[u8]) -> bool {
        let st = self.state.lock();
        st.mem.overlaps(lo, hi) || st.imms.iter().any(|i| i.mem.overlaps(lo, hi))
    }

    /// Writes `files`' entries, in key order, as tables of this tree, each
    /// stamped with `seq`. A file holding a key twice (several versions, or
    /// out of order) is refused: one sequence cannot order them.
    fn write_ingested(&self, files: &[External], seq: SeqNum) -> Result<Vec<NewFile>> {
        let env = self.env(true);
        let view = build_view(&self.versions.current(), &self.versions, &HashSet::new());
        let entries = files.iter().map(|f| f.table.properties().num_entries).sum();
        let target = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries };
        let tombs = files.iter().flat_map(|f| f.table.range_dels().fragments().iter());
        let range_dels = Fragments::new(tombs.map(|t| (t.start.as_slice(), t.end.as_slice(), seq)));
        let mut out = OutputWriter::new(&env, &view, &target, self.opts.target_file_size_base)
            .with_range_dels(range_dels);
        // The entry last written, restamped (empty: none yet); its user key
        // is the one the next entry must follow.
        let mut ikey = Vec::new();
        for f in files {
            let mut it = f.table.iter(BlockReadOptions { fill_cache: false, ..BlockReadOptions::default() });
            it.seek_to_first()?;
            while it.valid() {
                let parsed = parse_internal_key(it.key())?;
                if !ikey.is_empty() && parsed.user_key <= user_key(&ikey) {
                    return Err(Error::invalid(format!(
                        "{}: key {:?} is out of order or has several versions; write ingested files with SstFileWriter",
                        f.path.display(),
                        String::from_utf8_lossy(parsed.user_key)
                    )));
                }
                ikey.clear();
                append_internal_key(&mut ikey, parsed.user_key, seq, parsed.kind);
                out.add(&ikey, it.value(), seq)?;
                it.next()?;
            }
        }
        out.finish()
    }

    /// [`Self::install_ingested`], removing the tables if it fails.
    fn install_or_undo(&self, outputs: &[NewFile], seq: SeqNum) -> Result<()> {
        let r = self.install_ingested(outputs, seq);
        if r.is_err() {
            for f in outputs {
                let _ = self.vfs.remove_file(&self.tables.paths().table(f.id));
            }
        }
        r
    }

    /// Records `outputs` at the level the policy places them, with `seq` as
    /// the last sequence. Callers hold `compaction_lock` and the WAL lock.
    fn install_ingested(&self, outputs: &[NewFile], seq: SeqNum) -> Result<()> {
        let (level, run) = self.flush_placement(outputs, self.opts.num_levels.saturating_sub(1))?;
        let run = run.unwrap_or_else(|| self.versions.new_file_number());
        let mut edit = VersionEdit::default();
        for f in outputs {
            edit.new_files.push((level, run, f.clone()));
        }
        self.shared.root_versions.set_last_sequence(seq);
        self.versions.set_last_sequence(seq);
        self.versions.log_and_apply(edit)?;
        let mut guard = self.state.lock();
        let st = &mut *guard;
        // The ingested keys changed at `seq` with no memtable entry, so no
        // memtable speaks for a transaction that read before it: the history
        // goes (it may hold older versions of those keys), and the others,
        // which hold none of them, now prove nothing before `seq`.
        st.history.clear();
        st.mem_floor = st.mem_floor.max(seq);
        for m in st.imms.iter_mut() {
            m.floor = m.floor.max(seq);
        }
        let st = guard;
        self.install_super_version(&st);
        drop(st);
        self.shared.visible_seq.store(seq, Ordering::Release);
        Ok(())
    }
}
