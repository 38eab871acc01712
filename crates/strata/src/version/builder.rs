//! Applies edits to a mutable copy of the tree and builds the next `Version`.
//!
//! Keeps one `Arc<FileMeta>` per file id with a count of the runs listing it, so a
//! file moved between runs or listed in several runs stays one object, and the
//! files whose count reaches zero are exactly the ones that became unreferenced.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::key::compare_internal;

use super::buffer::{Buffer, BufferTable};
use super::edit::{BufferOp, VersionEdit};
use super::file_meta::{FileMeta, NewFile, ObsoleteFiles};
use super::version::{check_file_keys, check_run, Level, Run, Version};

/// A tree under construction. Errors are `InvalidArgument`; recovery rewraps them.
pub(crate) struct Builder {
    /// Per level: run id -> files in key order.
    levels: Vec<BTreeMap<u64, Vec<Arc<FileMeta>>>>,
    /// Per level: run id -> its buffer's tables, newest first.
    buffers: Vec<BTreeMap<u64, Vec<BufferTable>>>,
    /// File id -> (metadata, number of runs and buffer tables listing it).
    refs: HashMap<u64, (Arc<FileMeta>, usize)>,
    queue: Arc<ObsoleteFiles>,
}

impl Builder {
    /// An empty tree with room for `max_levels` levels.
    pub(crate) fn new(max_levels: usize, queue: Arc<ObsoleteFiles>) -> Self {
        Builder {
            levels: vec![BTreeMap::new(); max_levels],
            buffers: vec![BTreeMap::new(); max_levels],
            refs: HashMap::new(),
            queue,
        }
    }

    /// Starts from `base` (O(files), like LevelDB's builder).
    pub(crate) fn from_version(base: &Version, queue: Arc<ObsoleteFiles>) -> Self {
        let mut b = Builder::new(base.num_levels(), queue);
        for (slot, level) in b.levels.iter_mut().zip(&base.levels) {
            for run in &level.runs {
                for f in &run.files {
                    b.refs.entry(f.id).or_insert_with(|| (f.clone(), 0)).1 += 1;
                }
                slot.insert(run.id, run.files.clone());
            }
        }
        for (slot, level) in b.buffers.iter_mut().zip(&base.levels) {
            for buf in &level.buffers {
                for f in buf.tables.iter().flat_map(|t| t.present()) {
                    b.refs.entry(f.id).or_insert_with(|| (f.clone(), 0)).1 += 1;
                }
                slot.insert(buf.run, buf.tables.clone());
            }
        }
        b
    }

    /// Applies `edit` (deletions first) and returns the files no run lists any more.
    pub(crate) fn apply(&mut self, edit: &VersionEdit) -> Result<Vec<Arc<FileMeta>>> {
        let max = self.levels.len();
        let mut touched = BTreeSet::new();
        let mut unlisted = Vec::new();
        for &(l, run_id, id) in &edit.deleted_files {
            let level = self
                .levels
                .get_mut(l)
                .ok_or_else(|| Error::invalid(format!("deleted file {id}: level {l} >= {max}")))?;
            let missing = || Error::invalid(format!("deleted file {id} is not in level {l} run {run_id}"));
            let run = level.get_mut(&run_id).ok_or_else(missing)?;
            let pos = run.iter().position(|f| f.id == id).ok_or_else(missing)?;
            run.remove(pos);
            if run.is_empty() {
                level.remove(&run_id);
            }
            if let Some((_, n)) = self.refs.get_mut(&id) {
                *n -= 1;
                unlisted.push(id);
            }
        }
        for (l, run_id, nf) in &edit.new_files {
            let meta = self.meta_for(nf)?;
            let level = self
                .levels
                .get_mut(*l)
                .ok_or_else(|| Error::invalid(format!("new file {}: level {l} >= {max}", nf.id)))?;
            level.entry(*run_id).or_default().push(meta);
            touched.insert((*l, *run_id));
        }
        for (l, run_id) in touched {
            if let Some(run) = self.levels.get_mut(l).and_then(|level| level.get_mut(&run_id)) {
                // Appends to a sorted run: the stable sort handles that in near-linear time.
                run.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
                check_run(run).map_err(|e| Error::invalid(format!("level {l} run {run_id}: {e}")))?;
            }
        }
        for op in &edit.buffer_ops {
            self.apply_buffer_op(op, &mut unlisted)?;
        }
        // A buffer goes with its run.
        for (runs, bufs) in self.levels.iter().zip(self.buffers.iter_mut()) {
            let orphans: Vec<u64> = bufs.keys().filter(|r| !runs.contains_key(r)).copied().collect();
            for r in orphans {
                for t in bufs.remove(&r).unwrap_or_default() {
                    for f in t.present() {
                        if let Some((_, n)) = self.refs.get_mut(&f.id) {
                            *n -= 1;
                            unlisted.push(f.id);
                        }
                    }
                }
            }
        }
        let mut gone = Vec::new();
        for id in unlisted {
            if let Some((meta, 0)) = self.refs.get(&id) {
                gone.push(meta.clone());
                self.refs.remove(&id);
            }
        }
        Ok(gone)
    }

    fn apply_buffer_op(&mut self, op: &BufferOp, unlisted: &mut Vec<u64>) -> Result<()> {
        let (level, run, table) = match op {
            BufferOp::Append { level, run, table, .. }
            | BufferOp::Remove { level, run, table, .. }
            | BufferOp::DropTable { level, run, table } => (*level, *run, *table),
        };
        if !self.levels.get(level).is_some_and(|l| l.contains_key(&run)) {
            // Removing from the buffer of a run that just went away (e.g. the
            // last drain of `C'_i`) is a no-op: the buffer goes with the run.
            if matches!(op, BufferOp::Append { .. }) {
                return Err(Error::invalid(format!("buffer append to missing run {run} of level {level}")));
            }
            return Ok(());
        }
        let meta = match op {
            BufferOp::Append { file, .. } => Some(self.meta_for(file)?),
            _ => None,
        };
        let Some(bufs) = self.buffers.get_mut(level) else {
            return Err(Error::invalid(format!("buffer op: level {level} out of range")));
        };
        let tables = bufs.entry(run).or_default();
        let mut released = Vec::new();
        match op {
            BufferOp::DropTable { .. } => {
                let pos = tables.iter().position(|t| t.id == table).ok_or_else(|| {
                    Error::invalid(format!("buffer of level {level} run {run} has no table {table}"))
                })?;
                released.extend(tables.remove(pos).present().cloned());
            }
            BufferOp::Append { .. } | BufferOp::Remove { .. } => {
                if !tables.iter().any(|t| t.id == table) {
                    tables.insert(0, BufferTable { id: table, entries: Vec::new() });
                }
                let t = tables.iter_mut().find(|t| t.id == table);
                match (op, t, meta) {
                    (BufferOp::Append { file, .. }, Some(t), Some(m)) => {
                        if !t.insert(m) {
                            return Err(Error::invalid(format!(
                                "buffer table {table} of level {level} run {run}: file {} overlaps an entry",
                                file.id
                            )));
                        }
                    }
                    (BufferOp::Remove { lo, hi, .. }, Some(t), _) => released.extend(t.remove_range(lo, hi)),
                    _ => return Err(Error::invalid("buffer op could not be applied")),
                }
            }
        }
        for f in released {
            if let Some((_, n)) = self.refs.get_mut(&f.id) {
                *n -= 1;
                unlisted.push(f.id);
            }
        }
        Ok(())
    }

    /// The shared metadata for `nf`: the live object if the file is already in a
    /// run (its metadata must match), else a new one.
    fn meta_for(&mut self, nf: &NewFile) -> Result<Arc<FileMeta>> {
        if let Some((meta, n)) = self.refs.get_mut(&nf.id) {
            if !meta.same_as(nf) {
                return Err(Error::invalid(format!("file {} re-added with different metadata", nf.id)));
            }
            *n += 1;
            return Ok(meta.clone());
        }
        check_file_keys(&nf.smallest, &nf.largest)
            .map_err(|e| Error::invalid(format!("file {}: {e}", nf.id)))?;
        if nf.smallest_seq > nf.largest_seq {
            return Err(Error::invalid(format!("file {}: smallest seq above largest seq", nf.id)));
        }
        let meta = Arc::new(FileMeta::new(nf.clone(), self.queue.clone()));
        self.refs.insert(nf.id, (meta.clone(), 1));
        Ok(meta)
    }

    /// One past the highest non-empty level (0 for an empty tree).
    pub(crate) fn levels_in_use(&self) -> usize {
        self.levels.iter().rposition(|l| !l.is_empty()).map_or(0, |l| l + 1)
    }

    /// Ids and run ids in use, to keep the file-number counter above them.
    pub(crate) fn max_number(&self) -> u64 {
        let files = self.refs.keys().copied().max().unwrap_or(0);
        let runs = self.levels.iter().filter_map(|l| l.keys().next_back().copied()).max().unwrap_or(0);
        let tables = self.buffers.iter().flat_map(|b| b.values()).flatten().map(|t| t.id).max().unwrap_or(0);
        files.max(runs).max(tables)
    }

    /// The finished Version with exactly `num_levels` levels; a non-empty level
    /// beyond that is `InvalidArgument`.
    pub(crate) fn build(self, num_levels: usize) -> Result<Version> {
        if self.levels_in_use() > num_levels {
            return Err(Error::invalid(format!(
                "the tree uses {} levels but only {num_levels} were requested",
                self.levels_in_use()
            )));
        }
        let mut levels: Vec<Level> = self
            .levels
            .into_iter()
            .zip(self.buffers)
            .take(num_levels)
            .map(|(runs, buffers)| Level {
                runs: runs.into_iter().rev().map(|(id, files)| Run { id, files }).collect(),
                buffers: (buffers.into_iter())
                    .filter(|(_, tables)| !tables.is_empty())
                    .map(|(run, tables)| Buffer { run, tables })
                    .collect(),
            })
            .collect();
        levels.resize_with(num_levels, Level::default);
        let v = Version { levels };
        if cfg!(debug_assertions) {
            v.check_invariants()?;
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn nf(id: u64, lo: &str, hi: &str) -> NewFile {
        NewFile {
            id,
            size: 10,
            smallest: make_internal_key(lo.as_bytes(), 2, ValueKind::Put),
            largest: make_internal_key(hi.as_bytes(), 1, ValueKind::Put),
            smallest_seq: 1,
            largest_seq: 2,
            ..NewFile::default()
        }
    }

    fn adds(files: Vec<(usize, u64, NewFile)>) -> VersionEdit {
        VersionEdit { new_files: files, ..Default::default() }
    }

    #[test]
    fn runs_sorted_and_files_shared() {
        let q = Arc::new(ObsoleteFiles::new());
        let mut b = Builder::new(3, q.clone());
        let e = adds(vec![
            (1, 5, nf(2, "m", "p")),
            (1, 5, nf(1, "a", "c")),
            (0, 3, nf(3, "a", "z")),
            (0, 8, nf(4, "a", "z")),
        ]);
        assert!(b.apply(&e).unwrap().is_empty());
        // The same file in a second run (another level) is the same object.
        assert!(b.apply(&adds(vec![(2, 9, nf(2, "m", "p"))])).unwrap().is_empty());
        assert_eq!(b.levels_in_use(), 3);
        assert_eq!(b.max_number(), 9);
        let v = b.build(3).unwrap();
        assert_eq!(v.levels[0].runs.iter().map(|r| r.id).collect::<Vec<_>>(), vec![8, 3]);
        assert_eq!(v.levels[1].runs[0].files.iter().map(|f| f.id).collect::<Vec<_>>(), vec![1, 2]);
        assert!(Arc::ptr_eq(&v.levels[1].runs[0].files[1], &v.levels[2].runs[0].files[0]));

        let mut b = Builder::from_version(&v, q);
        let mv = VersionEdit {
            deleted_files: vec![(1, 5, 2), (2, 9, 2), (0, 3, 3)],
            new_files: vec![(2, 10, nf(2, "m", "p"))],
            ..Default::default()
        };
        let gone = b.apply(&mv).unwrap();
        assert_eq!(gone.iter().map(|f| f.id).collect::<Vec<_>>(), vec![3]);
        let v2 = b.build(3).unwrap();
        assert!(Arc::ptr_eq(&v.levels[2].runs[0].files[0], &v2.levels[2].runs[0].files[0]));
        assert_eq!(v2.levels[0].runs.len(), 1);
    }

    #[test]
    fn rejects_bad_edits() {
        let q = Arc::new(ObsoleteFiles::new());
        let base = {
            let mut b = Builder::new(2, q.clone());
            b.apply(&adds(vec![(1, 5, nf(1, "a", "c"))])).unwrap();
            b.build(2).unwrap()
        };
        let try_edit = |e: VersionEdit| {
            let mut b = Builder::from_version(&base, q.clone());
            b.apply(&e).map(|_| ())
        };
        let inv = |r: Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
        assert!(inv(try_edit(adds(vec![(1, 5, nf(2, "c", "d"))]))), "user keys overlap");
        assert!(inv(try_edit(adds(vec![(2, 5, nf(2, "x", "y"))]))), "level out of range");
        assert!(inv(try_edit(adds(vec![(1, 6, nf(1, "a", "d"))]))), "metadata mismatch");
        assert!(inv(try_edit(adds(vec![(0, 6, nf(2, "d", "a"))]))), "inverted range");
        let mut short = nf(2, "a", "b");
        short.smallest = b"abc".to_vec();
        assert!(inv(try_edit(adds(vec![(0, 6, short)]))), "not an internal key");
        let del = |l, r, f| VersionEdit { deleted_files: vec![(l, r, f)], ..Default::default() };
        assert!(inv(try_edit(del(1, 6, 1))), "wrong run");
        assert!(inv(try_edit(del(0, 5, 1))), "wrong level");
        assert!(inv(try_edit(del(1, 5, 9))), "unknown file");
        assert!(inv(try_edit(del(7, 5, 1))), "level out of range");
        assert!(try_edit(del(1, 5, 1)).is_ok());
        // More levels used than requested.
        let mut b = Builder::new(4, q);
        b.apply(&adds(vec![(3, 1, nf(1, "a", "b"))])).unwrap();
        assert!(matches!(b.build(3), Err(Error::InvalidArgument(_))));
    }
}
