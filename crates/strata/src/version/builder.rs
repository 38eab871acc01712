//! Applies edits to a mutable copy of the tree and builds the next `Version`.
//!
//! Keeps one `Arc<FileMeta>` per file id with a count of the runs listing it, so a
//! file moved between runs or listed in several runs stays one object, and the
//! files whose count reaches zero are exactly the ones that became unreferenced.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::key::{compare_internal, user_key};
use crate::table::segment::check_segment_ends;

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
    /// Per level: runs whose buffer is complete (`Buffer::complete`).
    complete: Vec<BTreeSet<u64>>,
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
            complete: vec![BTreeSet::new(); max_levels],
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
        for (slot, level) in b.complete.iter_mut().zip(&base.levels) {
            slot.extend(level.buffers.iter().filter(|buf| buf.complete).map(|buf| buf.run));
        }
        b
    }

    /// Applies `edit` (deletions first) and returns the files no run lists any more.
    pub(crate) fn apply(&mut self, edit: &VersionEdit) -> Result<Vec<Arc<FileMeta>>> {
        let max = self.levels.len();
        let existed: BTreeSet<(usize, u64)> = (edit.new_files.iter())
            .filter(|(l, run, _)| self.levels.get(*l).is_some_and(|level| level.contains_key(run)))
            .map(|(l, run, _)| (*l, *run))
            .collect();
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
        for &(l, run_id) in &touched {
            if let Some(run) = self.levels.get_mut(l).and_then(|level| level.get_mut(&run_id)) {
                // Appends to a sorted run: the stable sort handles that in near-linear time.
                run.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
                check_run(run).map_err(|e| Error::invalid(format!("level {l} run {run_id}: {e}")))?;
            }
        }
        // Before the buffer ops: a dropped table or a snapshot's `Complete`
        // overrides what the edit's moves imply.
        self.derive_complete(edit, &touched, &existed);
        for op in &edit.buffer_ops {
            self.apply_buffer_op(op, &mut unlisted)?;
        }
        // A buffer goes with its run.
        for (runs, complete) in self.levels.iter().zip(self.complete.iter_mut()) {
            complete.retain(|r| runs.contains_key(r));
        }
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

    /// Which runs that received files in `edit` keep (or start with) a
    /// complete buffer: the run was complete or is new, and either the edit
    /// moved data in from other runs only (not from a memtable: it deletes
    /// some file) and appended every such file to this run's buffer, or it
    /// marked every arriving file's range removed in the buffer (a frozen
    /// buffer: range reads there fall back to the run). Anything else — a
    /// flush, a merge or move that skips the buffer unmarked — leaves data in
    /// the run the buffer lacks, for the run's whole life; so does losing
    /// files while receiving none. Removals keep the flag; a dropped table
    /// clears it, in [`Self::apply_buffer_op`].
    fn derive_complete(
        &mut self,
        edit: &VersionEdit,
        touched: &BTreeSet<(usize, u64)>,
        existed: &BTreeSet<(usize, u64)>,
    ) {
        // A run that loses files without receiving any (drained, moved or
        // dropped, or a merge whose output vanished, say a tombstone meeting
        // what it deletes at the last level) keeps stale copies in its buffer
        // that nothing below may shadow any more: its buffer no longer
        // mirrors it.
        for &(l, run, _) in &edit.deleted_files {
            if !touched.contains(&(l, run)) {
                if let Some(c) = self.complete.get_mut(l) {
                    c.remove(&run);
                }
            }
        }
        for &(l, run) in touched {
            let Some(complete) = self.complete.get_mut(l) else { continue };
            let was = complete.contains(&run) || !existed.contains(&(l, run));
            let appended = |id: u64| {
                edit.buffer_ops.iter().any(|op| {
                    matches!(op, BufferOp::Append { level, run: r, file, .. }
                        if *level == l && *r == run && file.id == id)
                })
            };
            let fed = !edit.deleted_files.is_empty()
                && (edit.deleted_files.iter())
                    .all(|&(dl, drun, id)| (dl == l && drun == run) || appended(id));
            let marked = |f: &super::file_meta::NewFile| {
                let (lo, hi) = (user_key(&f.smallest), user_key(&f.largest));
                edit.buffer_ops.iter().any(|op| {
                    matches!(op, BufferOp::Remove { level, run: r, lo: a, hi: b, .. }
                        if *level == l && *r == run && a.as_slice() <= lo && b.as_slice() >= hi)
                })
            };
            let all_marked = (edit.new_files.iter())
                .filter(|(nl, nrun, _)| *nl == l && *nrun == run)
                .all(|(_, _, f)| marked(f));
            if was && (fed || all_marked) {
                complete.insert(run);
            } else {
                complete.remove(&run);
            }
        }
    }

    fn apply_buffer_op(&mut self, op: &BufferOp, unlisted: &mut Vec<u64>) -> Result<()> {
        let (level, run, table) = match op {
            BufferOp::Append { level, run, table, .. }
            | BufferOp::Remove { level, run, table, .. }
            | BufferOp::DropTable { level, run, table } => (*level, *run, *table),
            BufferOp::Complete { level, run } => {
                if self.levels.get(*level).is_some_and(|l| l.contains_key(run)) {
                    if let Some(c) = self.complete.get_mut(*level) {
                        c.insert(*run);
                    }
                }
                return Ok(());
            }
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
                if let Some(c) = self.complete.get_mut(level) {
                    c.remove(&run);
                }
                let pos = tables.iter().position(|t| t.id == table).ok_or_else(|| {
                    Error::invalid(format!("buffer of level {level} run {run} has no table {table}"))
                })?;
                released.extend(tables.remove(pos).present().cloned());
            }
            BufferOp::Append { .. } | BufferOp::Remove { .. } => {
                if !tables.iter().any(|t| t.id == table) {
                    tables.insert(0, BufferTable::new(table));
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
            BufferOp::Complete { .. } => {}
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
            if meta.same_as(nf) {
                *n += 1;
                return Ok(meta.clone());
            }
            // Segments appended (LWC) or a filter patch (Monkey): the edit
            // unlisted every listing of the old state first, and the new
            // state extends it. The new state shares the physical file with
            // the old one, which older Versions may still read.
            if *n == 0 && (meta.grows_into(nf) || meta.refilters_into(nf)) {
                check_file_keys(&nf.smallest, &nf.largest)
                    .map_err(|e| Error::invalid(format!("file {}: {e}", nf.id)))?;
                check_segment_ends(&nf.segments, nf.size, 1)
                    .map_err(|e| Error::invalid(format!("file {}: {e}", nf.id)))?;
                if nf.smallest_seq > nf.largest_seq {
                    return Err(Error::invalid(format!("file {}: smallest seq above largest seq", nf.id)));
                }
                let grown = Arc::new(meta.successor(nf.clone()));
                *meta = grown.clone();
                *n = 1;
                return Ok(grown);
            }
            return Err(Error::invalid(format!("file {} re-added with different metadata", nf.id)));
        }
        check_file_keys(&nf.smallest, &nf.largest)
            .map_err(|e| Error::invalid(format!("file {}: {e}", nf.id)))?;
        check_segment_ends(&nf.segments, nf.size, 1)
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
            .zip(self.complete)
            .take(num_levels)
            .map(|((runs, buffers), complete)| Level {
                runs: runs.into_iter().rev().map(|(id, files)| Run::new(id, files)).collect(),
                buffers: (buffers.into_iter())
                    .filter(|(_, tables)| !tables.is_empty())
                    .map(|(run, tables)| Buffer { run, tables, complete: complete.contains(&run) })
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

    fn seg(end: u64, footer_crc: u32) -> crate::table::SegmentMeta {
        crate::table::SegmentMeta { end, footer_crc }
    }

    /// File 7 over `[lo, hi]`: `size` bytes made of `segments`.
    fn dt(lo: &str, hi: &str, size: u64, segments: Vec<crate::table::SegmentMeta>) -> NewFile {
        NewFile { size, segments, ..nf(7, lo, hi) }
    }

    /// L1 run 5 holds file 7 (10 bytes, written once) and file 8.
    fn one_segment_base(q: &Arc<ObsoleteFiles>) -> Version {
        let mut b = Builder::new(3, q.clone());
        b.apply(&adds(vec![(1, 5, nf(7, "c", "f")), (1, 5, nf(8, "m", "p"))])).unwrap();
        b.build(3).unwrap()
    }

    /// An append's edit: file 7 unlisted and listed again in its new state.
    fn regrow(f: NewFile) -> VersionEdit {
        VersionEdit { deleted_files: vec![(1, 5, 7)], new_files: vec![(1, 5, f)], ..Default::default() }
    }

    #[test]
    fn an_append_replaces_a_file_with_its_grown_state() {
        let q = Arc::new(ObsoleteFiles::new());
        let v1 = one_segment_base(&q);
        let old = v1.levels[1].runs[0].files[0].clone();
        // Segments appended (the range grows into the gap): accepted, nothing unlisted.
        let grown = dt("b", "h", 25, vec![seg(10, 1), seg(25, 2)]);
        let mut b = Builder::from_version(&v1, q.clone());
        assert!(b.apply(&regrow(grown.clone())).unwrap().is_empty(), "the file is still listed");
        assert_eq!(b.max_number(), 8);
        let v2 = b.build(3).unwrap();
        let new = v2.levels[1].runs[0].files[0].clone();
        assert_eq!((new.id, new.size, new.num_segments()), (7, 25, 2));
        assert!(new.same_as(&grown));
        assert!(!Arc::ptr_eq(&old, &new), "the old Version keeps the old state");
        assert_eq!((old.size, old.num_segments()), (10, 1));
        assert!(Arc::ptr_eq(&v1.levels[1].runs[0].files[1], &v2.levels[1].runs[0].files[1]));
        // Appended to again; then the grown state moved down as it is.
        let mut b = Builder::from_version(&v2, q.clone());
        b.apply(&regrow(dt("b", "h", 40, vec![seg(10, 1), seg(25, 2), seg(40, 3)]))).unwrap();
        let v3 = b.build(3).unwrap();
        assert_eq!(v3.levels[1].runs[0].files[0].num_segments(), 3);
        let moved = v3.levels[1].runs[0].files[0].to_new_file();
        let mut b = Builder::from_version(&v3, q.clone());
        b.apply(&VersionEdit {
            deleted_files: vec![(1, 5, 7)],
            new_files: vec![(2, 9, moved)],
            ..Default::default()
        })
        .unwrap();
        let v4 = b.build(3).unwrap();
        assert!(Arc::ptr_eq(&v3.levels[1].runs[0].files[0], &v4.levels[2].runs[0].files[0]));
        // Merged away: unlisted (the engine marks it obsolete). The id is queued
        // only once every state of the file is gone, the oldest included.
        let mut b = Builder::from_version(&v4, q.clone());
        let gone = b.apply(&VersionEdit { deleted_files: vec![(2, 9, 7)], ..Default::default() }).unwrap();
        assert_eq!(gone.iter().map(|f| (f.id, f.num_segments())).collect::<Vec<_>>(), vec![(7, 3)]);
        for f in &gone {
            f.mark_obsolete();
        }
        let v5 = b.build(3).unwrap();
        assert!(v5.levels[2].runs.is_empty());
        drop((gone, v4, v3, v5));
        assert!(q.take().is_empty(), "v2 and v1 still hold older states");
        drop((v2, new));
        assert!(q.take().is_empty(), "v1 still reads the first state");
        drop(v1);
        assert!(q.take().is_empty(), "the test's handle on the first state");
        drop(old);
        assert_eq!(q.take(), vec![7]);
    }

    #[test]
    fn a_grown_state_must_extend_the_listed_one() {
        let q = Arc::new(ObsoleteFiles::new());
        let one = one_segment_base(&q);
        let two = {
            let mut b = Builder::from_version(&one, q.clone());
            b.apply(&regrow(dt("c", "f", 25, vec![seg(10, 1), seg(25, 2)]))).unwrap();
            b.build(3).unwrap()
        };
        let try_edit = |base: &Version, e: VersionEdit| {
            let mut b = Builder::from_version(base, q.clone());
            b.apply(&e).map(|_| ())
        };
        let refused = |r: Result<()>| matches!(r, Err(Error::InvalidArgument(m)) if m.contains("file 7"));
        // Shrunk, unrelated, or not appended to at all.
        for (what, f) in [
            ("grown without segments", dt("c", "f", 25, vec![])),
            ("first end is not the old size", dt("c", "f", 25, vec![seg(12, 1), seg(25, 2)])),
            ("smaller", dt("c", "f", 8, vec![seg(4, 1), seg(8, 2)])),
        ] {
            assert!(refused(try_edit(&one, regrow(f))), "{what}");
        }
        for (what, f) in [
            ("shrunk to one segment", dt("c", "f", 10, vec![])),
            ("shrunk", dt("c", "f", 20, vec![seg(10, 1), seg(20, 2)])),
            ("longer, same segments", dt("c", "f", 40, vec![seg(10, 1), seg(25, 2)])),
            ("unrelated", dt("c", "f", 40, vec![seg(15, 1), seg(30, 2), seg(40, 3)])),
            ("an old footer changed", dt("c", "f", 40, vec![seg(10, 1), seg(25, 9), seg(40, 3)])),
            ("inverted range", dt("z", "a", 40, vec![seg(10, 1), seg(25, 2), seg(40, 3)])),
        ] {
            assert!(refused(try_edit(&two, regrow(f))), "{what}");
        }
        // The old state still listed (not unlisted first): refused; re-listing
        // the same state (a move within the run) is fine.
        let grown = dt("c", "f", 40, vec![seg(10, 1), seg(25, 2), seg(40, 3)]);
        let add_only = VersionEdit { new_files: vec![(2, 6, grown.clone())], ..Default::default() };
        assert!(refused(try_edit(&two, add_only)));
        try_edit(&two, regrow(dt("c", "f", 25, vec![seg(10, 1), seg(25, 2)]))).unwrap();
        try_edit(&two, regrow(grown.clone())).unwrap();
        // Unlisted from one run of two: the other still lists the old state.
        let linked = {
            let mut b = Builder::from_version(&two, q.clone());
            b.apply(&adds(vec![(2, 6, two.levels[1].runs[0].files[0].to_new_file())])).unwrap();
            b.build(3).unwrap()
        };
        assert!(refused(try_edit(&linked, regrow(grown.clone()))));
        // Unlisted from both: the grown state may be listed twice.
        try_edit(
            &linked,
            VersionEdit {
                deleted_files: vec![(1, 5, 7), (2, 6, 7)],
                new_files: vec![(1, 5, grown.clone()), (2, 6, grown)],
                ..Default::default()
            },
        )
        .unwrap();
    }

    fn complete(v: &Version, level: usize, run: u64) -> Option<bool> {
        v.levels[level].buffers.iter().find(|b| b.run == run).map(|b| b.complete)
    }

    #[test]
    fn buffer_completeness_follows_what_entered_the_run() {
        let q = Arc::new(ObsoleteFiles::new());
        let append = |level, run, table, f: NewFile| BufferOp::Append { level, run, table, file: f };
        // L0 runs 1 and 2 (a flush: no buffer anywhere) merge into a new L1
        // run 10 with both files appended: complete.
        let mut b = Builder::new(3, q.clone());
        b.apply(&adds(vec![(0, 1, nf(1, "a", "c")), (0, 2, nf(2, "d", "f"))])).unwrap();
        let merge = VersionEdit {
            deleted_files: vec![(0, 1, 1), (0, 2, 2)],
            new_files: vec![(1, 10, nf(3, "a", "f"))],
            buffer_ops: vec![append(1, 10, 1, nf(1, "a", "c")), append(1, 10, 2, nf(2, "d", "f"))],
            ..Default::default()
        };
        b.apply(&merge).unwrap();
        let v = b.build(3).unwrap();
        assert_eq!(complete(&v, 1, 10), Some(true));
        let base = v;
        let after = |e: VersionEdit| {
            let mut b = Builder::from_version(&base, q.clone());
            b.apply(&e).unwrap();
            b.build(3).unwrap()
        };
        // A merge of the run's own file with a new L0 file that is not
        // appended: the run now holds data its buffer lacks.
        let mut b = Builder::from_version(&base, q.clone());
        b.apply(&adds(vec![(0, 4, nf(4, "b", "b"))])).unwrap();
        let with_l0 = b.build(3).unwrap();
        let step = |ops: Vec<BufferOp>| {
            let mut b = Builder::from_version(&with_l0, q.clone());
            b.apply(&VersionEdit {
                deleted_files: vec![(0, 4, 4), (1, 10, 3)],
                new_files: vec![(1, 10, nf(5, "a", "f"))],
                buffer_ops: ops,
                ..Default::default()
            })
            .unwrap();
            b.build(3).unwrap()
        };
        assert_eq!(complete(&step(vec![]), 1, 10), Some(false), "unappended input");
        assert_eq!(
            complete(&step(vec![append(1, 10, 4, nf(4, "b", "b"))]), 1, 10),
            Some(true),
            "appended input"
        );
        let mark = |lo: &str, hi: &str| BufferOp::Remove {
            level: 1,
            run: 10,
            table: 2,
            lo: lo.as_bytes().to_vec(),
            hi: hi.as_bytes().to_vec(),
        };
        assert_eq!(complete(&step(vec![mark("a", "f")]), 1, 10), Some(true), "arrival marked (frozen)");
        assert_eq!(complete(&step(vec![mark("a", "c")]), 1, 10), Some(false), "arrival partly marked");
        // Removing a buffer file keeps the flag; dropping a table clears it.
        let removed = after(VersionEdit { buffer_ops: vec![mark("a", "c")], ..Default::default() });
        assert_eq!(complete(&removed, 1, 10), Some(true));
        let dropped = after(VersionEdit {
            buffer_ops: vec![BufferOp::DropTable { level: 1, run: 10, table: 1 }],
            ..Default::default()
        });
        assert_eq!(complete(&dropped, 1, 10), Some(false));
        // Two files in run 10, fed from L0 file 4: still complete.
        let two = {
            let mut b = Builder::from_version(&with_l0, q.clone());
            b.apply(&VersionEdit {
                deleted_files: vec![(0, 4, 4), (1, 10, 3)],
                new_files: vec![(1, 10, nf(5, "a", "c")), (1, 10, nf(8, "d", "f"))],
                buffer_ops: vec![append(1, 10, 4, nf(4, "b", "b"))],
                ..Default::default()
            })
            .unwrap();
            b.build(3).unwrap()
        };
        assert_eq!(complete(&two, 1, 10), Some(true));
        let then = |e: VersionEdit| {
            let mut b = Builder::from_version(&two, q.clone());
            b.apply(&e).unwrap();
            b.build(3).unwrap()
        };
        // A drained file leaves a stale copy in the buffer: incomplete.
        let drained = then(VersionEdit {
            deleted_files: vec![(1, 10, 8)],
            new_files: vec![(2, 20, nf(8, "d", "f"))],
            ..Default::default()
        });
        assert_eq!(complete(&drained, 1, 10), Some(false));
        // Regression (a tombstone and what it deleted vanished in a merge with
        // no output, and the buffer still showed the deleted value to range
        // reads): losing files while receiving none clears the flag.
        let vanished = then(VersionEdit { deleted_files: vec![(1, 10, 8)], ..Default::default() });
        assert_eq!(complete(&vanished, 1, 10), Some(false));
        // Data from outside the tree (no file deleted) makes it incomplete.
        let ingested = after(adds(vec![(1, 10, nf(6, "x", "z"))]));
        assert_eq!(complete(&ingested, 1, 10), Some(false));
        // A snapshot (adds only) carries the flag with an explicit op.
        let snap = |with: bool| {
            let mut ops = vec![append(1, 10, 1, nf(1, "a", "c"))];
            if with {
                ops.push(BufferOp::Complete { level: 1, run: 10 });
            }
            let mut b = Builder::new(3, q.clone());
            b.apply(&VersionEdit {
                new_files: vec![(1, 10, nf(3, "a", "f"))],
                buffer_ops: ops,
                ..Default::default()
            })
            .unwrap();
            b.build(3).unwrap()
        };
        assert_eq!(complete(&snap(true), 1, 10), Some(true));
        assert_eq!(complete(&snap(false), 1, 10), Some(false));
    }
}
