//! Ingesting external tables into one keyspace's tree (RocksDB
//! `IngestExternalFile`). The files' entries are written as new tables of
//! the tree, every one stamped with one new sequence number, so they are
//! newer than everything before and invisible to older snapshots; the
//! tables go where the policy would place a flush of the same keys (its
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
use crate::key::{make_internal_key, parse_internal_key, user_key, SeqNum};
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
        Ok(External { path: path.to_path_buf(), table: Arc::new(table), lo, hi })
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
        // The memtables must hold nothing of the range, with writes stopped.
        let mut tries = 0;
        let (compaction, wal) = loop {
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
        if wal.is_none() {
            return Err(Error::Closed);
        }
        let seq = self.shared.root_versions.last_sequence() + 1;
        let outputs = self.write_ingested(&files, seq)?;
        let r = self.install_ingested(&outputs, seq);
        if r.is_err() {
            for f in &outputs {
                let _ = self.vfs.remove_file(&self.tables.paths().table(f.id));
            }
        }
        r?;
        drop(wal);
        drop(compaction);
        if opts.move_files {
            for f in &files {
                self.vfs.remove_file(&f.path)?;
            }
        }
        let entries: u64 = outputs.iter().map(|f| f.num_entries).sum();
        log::info!(
            target: "strata::ingest",
            "[{}] ingested {} files: {entries} entries at sequence {seq} into {} tables",
            self.name,
            files.len(),
            outputs.len()
        );
        Counters::add(&self.counters.ingested_files, files.len() as u64);
        self.bg_cv.notify_all();
        Ok(())
    }

    fn memtables_overlap(&self, lo: &[u8], hi: &[u8]) -> bool {
        let st = self.state.lock();
        st.mem.overlaps(lo, hi) || st.imms.iter().any(|i| i.mem.overlaps(lo, hi))
    }

    /// Writes `files`' entries, in key order, as tables of this tree, each
    /// stamped with `seq`. A file holding a key twice (several versions, or
    /// out of order) is refused: one sequence cannot order them.
    fn write_ingested(&self, files: &[External], seq: SeqNum) -> Result<Vec<NewFile>> {
        let env = self.env();
        let view = build_view(&self.versions.current(), &self.versions, &HashSet::new());
        let entries = files.iter().map(|f| f.table.properties().num_entries).sum();
        let target = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries };
        let tombs = files.iter().flat_map(|f| f.table.range_dels().fragments().iter());
        let range_dels = Fragments::new(tombs.map(|t| (t.start.as_slice(), t.end.as_slice(), seq)));
        let mut out = OutputWriter::new(&env, &view, &target, self.opts.target_file_size_base)
            .with_range_dels(range_dels);
        let mut last: Option<Vec<u8>> = None;
        let mut ikey = Vec::new();
        for f in files {
            let mut it = f.table.iter(BlockReadOptions { fill_cache: false, ..BlockReadOptions::default() });
            it.seek_to_first()?;
            while it.valid() {
                let parsed = parse_internal_key(it.key())?;
                if last.as_deref().is_some_and(|l| parsed.user_key <= l) {
                    return Err(Error::invalid(format!(
                        "{}: key {:?} is out of order or has several versions; write ingested files with SstFileWriter",
                        f.path.display(),
                        String::from_utf8_lossy(parsed.user_key)
                    )));
                }
                ikey.clear();
                ikey.extend_from_slice(&make_internal_key(parsed.user_key, seq, parsed.kind));
                out.add(&ikey, it.value(), seq)?;
                last = Some(parsed.user_key.to_vec());
                it.next()?;
            }
        }
        out.finish()
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
