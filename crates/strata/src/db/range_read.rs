//! Reads under range tombstones (`Db::delete_range`): which tables of a view
//! hold any, the newest tombstone covering a key (point reads), and the
//! fragments an iterator skips covered entries with. With no range tombstone
//! in the view every step here is a length check. See `range_del.rs` for why
//! gathering every copy from every source is right.

use std::sync::Arc;

use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::SeqNum;
use crate::memtable::MemTable;
use crate::range_del::Fragments;
use crate::version::{BufferEntry, FileMeta, Version};

impl SuperVersion {
    /// The view of `mem`, `imms` (newest first) and `version`, with the list
    /// of its tables that hold range tombstones.
    pub(crate) fn new(mem: Arc<MemTable>, imms: Vec<Arc<MemTable>>, version: Arc<Version>) -> Self {
        let range_del_files = range_del_files(&version);
        SuperVersion { mem, imms, version, range_del_files }
    }

    /// True if a memtable or table of the view holds range tombstones.
    pub(crate) fn has_range_dels(&self) -> bool {
        !self.range_del_files.is_empty() || self.mems().any(|m| m.has_range_dels())
    }

    fn mems(&self) -> impl Iterator<Item = &Arc<MemTable>> {
        std::iter::once(&self.mem).chain(self.imms.iter())
    }
}

/// Every table of `version` with range tombstones: in runs, and in
/// compaction buffers (a buffer may hold copies of covered keys, and the
/// tombstones that came with them).
fn range_del_files(version: &Version) -> Vec<Arc<FileMeta>> {
    let mut out: Vec<Arc<FileMeta>> = Vec::new();
    for level in &version.levels {
        let buffered =
            level.buffers.iter().flat_map(|b| &b.tables).flat_map(|t| t.entries()).filter_map(|e| match e {
                BufferEntry::Present(f) => Some(f),
                BufferEntry::Removed { .. } => None,
            });
        for f in level.runs.iter().flat_map(|r| &r.files).chain(buffered) {
            if f.num_range_dels > 0 && !out.iter().any(|g| g.id == f.id && g.size == f.size) {
                out.push(Arc::clone(f));
            }
        }
    }
    out
}

impl DbInner {
    /// The newest sequence `<= seq` of a range tombstone in `sv` covering
    /// `key`: entries of the key older than it are deleted.
    pub(super) fn max_range_del(&self, sv: &SuperVersion, key: &[u8], seq: SeqNum) -> Result<Option<SeqNum>> {
        let mut best = sv.mems().filter_map(|m| m.max_range_del(key, seq)).max();
        for f in &sv.range_del_files {
            if f.smallest_user_key() <= key && key <= f.largest_user_key() {
                let t = f.table(&self.tables)?;
                best = best.max(t.range_dels().max_covering(key, seq));
            }
        }
        Ok(best)
    }

    /// The fragments of every range tombstone of `sv` visible at `seq` whose
    /// table overlaps `[lo, hi]` (`hi` `None`: unbounded).
    pub(super) fn view_range_dels(
        &self,
        sv: &SuperVersion,
        seq: SeqNum,
        lo: &[u8],
        hi: Option<&[u8]>,
    ) -> Result<Arc<Fragments>> {
        if !sv.has_range_dels() {
            return Ok(Arc::default());
        }
        let mut tombs: Vec<(Vec<u8>, Vec<u8>, SeqNum)> = Vec::new();
        for m in sv.mems() {
            tombs.extend(m.range_dels(seq).into_iter().map(|t| (t.start, t.end, t.seq)));
        }
        for f in &sv.range_del_files {
            if f.largest_user_key() < lo || hi.is_some_and(|hi| f.smallest_user_key() > hi) {
                continue;
            }
            let t = f.table(&self.tables)?;
            for frag in t.range_dels().fragments() {
                if let Some(&s) = frag.seqs.iter().find(|&&s| s <= seq) {
                    tombs.push((frag.start.clone(), frag.end.clone(), s));
                }
            }
        }
        Ok(Arc::new(Fragments::new(tombs.iter().map(|(s, e, q)| (s.as_slice(), e.as_slice(), *q)))))
    }
}

/// A source that fails every positioning with the error met while loading a
/// view's range tombstones, so an iterator reports it instead of showing
/// deleted keys.
pub(super) struct FailingIter {
    corruption: bool,
    message: String,
}

impl FailingIter {
    pub(super) fn new(e: &Error) -> Self {
        FailingIter { corruption: e.is_corruption(), message: e.to_string() }
    }

    fn fail(&self) -> Result<()> {
        Err(if self.corruption {
            Error::corruption(self.message.clone())
        } else {
            Error::Io(std::io::Error::other(self.message.clone()))
        })
    }
}

impl InternalIterator for FailingIter {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.fail()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.fail()
    }
    fn seek(&mut self, _: &[u8]) -> Result<()> {
        self.fail()
    }
    fn seek_for_prev(&mut self, _: &[u8]) -> Result<()> {
        self.fail()
    }
    fn next(&mut self) -> Result<()> {
        self.fail()
    }
    fn prev(&mut self) -> Result<()> {
        self.fail()
    }
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
}
