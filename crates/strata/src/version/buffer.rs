//! The LSbM compaction buffer of a data run (the LSbM paper, docs/ARCHITECTURE.md): a list of
//! sorted tables, newest first, each made of files that already exist (the
//! files drained into the run), so their cached blocks stay valid while the
//! run itself is rewritten by compactions.
//!
//! A buffer holds *copies* of data its run already has; dropping any part of it
//! is always safe for completeness. What must hold for reads through it (see
//! `db/read.rs`): for a key, the newest table with an entry covering the key
//! tells the newest version that arrived in the run, because every later arrival
//! either came with a newer table (appended in the same edit) or left a removed
//! mark in the head table. A removed entry keeps only its user-key range.

use std::sync::{Arc, OnceLock};

use super::fences::Fences;
use super::file_meta::FileMeta;

/// One entry of a buffer table, in key order.
#[derive(Clone, Debug)]
pub enum BufferEntry {
    /// A file still readable through the buffer.
    /// INVARIANT: the same `FileMeta` state that entered the run (a buffered
    /// file is never appended to: the LWC append refuses buffered targets).
    Present(Arc<FileMeta>),
    /// The user-key range of a removed file (or a mark): a read stops probing here.
    Removed {
        /// Smallest user key (inclusive).
        smallest: Vec<u8>,
        /// Largest user key (inclusive).
        largest: Vec<u8>,
    },
}

impl BufferEntry {
    /// The entry's user-key range.
    pub fn range(&self) -> (&[u8], &[u8]) {
        match self {
            BufferEntry::Present(f) => (f.smallest_user_key(), f.largest_user_key()),
            BufferEntry::Removed { smallest, largest } => (smallest, largest),
        }
    }

    /// The file, if present.
    pub fn file(&self) -> Option<&Arc<FileMeta>> {
        match self {
            BufferEntry::Present(f) => Some(f),
            BufferEntry::Removed { .. } => None,
        }
    }
}

/// One sorted table of a buffer (`B_i^j`): disjoint entries in key order.
#[derive(Clone, Debug)]
pub struct BufferTable {
    /// Id, unique within the buffer (the id of the run whose files it receives).
    pub id: u64,
    /// Entries in key order.
    /// INVARIANT: user-key ranges sorted and disjoint (checked by
    /// `Version::check_invariants`); changed only by the methods below,
    /// which drop `fences`.
    entries: Vec<BufferEntry>,
    /// The entries' largest user keys for a point read's search, built by
    /// the first read of a table no edit changes any more (a Version's).
    fences: OnceLock<Fences>,
}

impl BufferTable {
    /// An empty table.
    pub(crate) fn new(id: u64) -> Self {
        BufferTable { id, entries: Vec::new(), fences: OnceLock::new() }
    }

    /// Entries in key order.
    pub fn entries(&self) -> &[BufferEntry] {
        &self.entries
    }

    /// The entry whose range contains `user_key`, if any (binary search).
    pub fn entry_for(&self, user_key: &[u8]) -> Option<&BufferEntry> {
        let fences = self.fences.get_or_init(|| Fences::new(self.entries.iter().map(|e| e.range().1)));
        let i = fences.first_at_least(user_key);
        self.entries.get(i).filter(|e| e.range().0 <= user_key)
    }

    /// Files still present.
    pub fn present(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.entries.iter().filter_map(BufferEntry::file)
    }

    /// Bytes of the present files.
    pub fn bytes(&self) -> u64 {
        self.present().map(|f| f.size).sum()
    }

    /// Inserts a file in key order; `false` if it overlaps an entry.
    pub(crate) fn insert(&mut self, f: Arc<FileMeta>) -> bool {
        let (lo, hi) = (f.smallest_user_key().to_vec(), f.largest_user_key().to_vec());
        let i = self.entries.partition_point(|e| e.range().1 < lo.as_slice());
        if self.entries.get(i).is_some_and(|e| e.range().0 <= hi.as_slice()) {
            return false;
        }
        self.entries.insert(i, BufferEntry::Present(f));
        self.fences = OnceLock::new();
        true
    }

    /// Marks `[lo, hi]` removed: every entry overlapping it is replaced by one
    /// removed entry spanning their union. Returns the files no longer present.
    pub(crate) fn remove_range(&mut self, lo: &[u8], hi: &[u8]) -> Vec<Arc<FileMeta>> {
        let start = self.entries.partition_point(|e| e.range().1 < lo);
        let end = self.entries.partition_point(|e| e.range().0 <= hi).max(start);
        let mut smallest = lo.to_vec();
        let mut largest = hi.to_vec();
        let mut gone = Vec::new();
        for e in self.entries.drain(start..end) {
            let (s, l) = e.range();
            if s < smallest.as_slice() {
                smallest = s.to_vec();
            }
            if l > largest.as_slice() {
                largest = l.to_vec();
            }
            if let BufferEntry::Present(f) = e {
                gone.push(f);
            }
        }
        self.entries.insert(start, BufferEntry::Removed { smallest, largest });
        self.fences = OnceLock::new();
        gone
    }

    /// True if nothing in the table is present any more.
    pub fn all_removed(&self) -> bool {
        self.present().next().is_none()
    }
}

/// The buffer attached to one data run of a level: `B_i` of `C_i`, or `B'_i`
/// of the draining `C'_i`.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// The data run it buffers.
    /// INVARIANT: a run of the same level; the buffer goes when the run does.
    pub run: u64,
    /// Tables, newest first.
    /// INVARIANT: for a key, the newest table with an entry covering it tells
    /// the newest version that arrived in the run (see the module comment).
    pub tables: Vec<BufferTable>,
    /// Every entry of the run has a copy in the buffer, so where no removed
    /// entry intervenes the buffer can replace the run for a range read (LSbM
    /// Algorithm 4). True when every file that ever entered the run was
    /// appended to the buffer and no table was dropped; see the builder.
    pub complete: bool,
}

impl Buffer {
    /// Bytes of the present files.
    pub fn bytes(&self) -> u64 {
        self.tables.iter().map(BufferTable::bytes).sum()
    }

    /// Number of present files.
    pub fn num_files(&self) -> usize {
        self.tables.iter().map(|t| t.present().count()).sum()
    }

    /// The table with this id.
    pub fn table(&self, id: u64) -> Option<&BufferTable> {
        self.tables.iter().find(|t| t.id == id)
    }

    /// The buffer's files overlapping `[lo, hi]` (`hi = None`: unbounded), one
    /// list per table in key order, when they can replace the run for a range
    /// read over that range: the buffer is complete, no removed entry overlaps
    /// the range (its data may be missing), and some file does. `None` sends
    /// the read to the run (LSbM Algorithm 4).
    pub fn range_files(&self, lo: &[u8], hi: Option<&[u8]>) -> Option<Vec<Vec<Arc<FileMeta>>>> {
        if !self.complete {
            return None;
        }
        let mut out = Vec::with_capacity(self.tables.len());
        for t in &self.tables {
            let start = t.entries.partition_point(|e| e.range().1 < lo);
            let mut files = Vec::new();
            for e in t.entries.get(start..).unwrap_or_default() {
                if hi.is_some_and(|hi| e.range().0 > hi) {
                    break;
                }
                files.push(e.file()?.clone());
            }
            if !files.is_empty() {
                out.push(files);
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use crate::version::{NewFile, ObsoleteFiles};

    fn file(id: u64, lo: &str, hi: &str) -> Arc<FileMeta> {
        let f = NewFile {
            id,
            size: 10,
            smallest: make_internal_key(lo.as_bytes(), 2, ValueKind::Put),
            largest: make_internal_key(hi.as_bytes(), 1, ValueKind::Put),
            ..NewFile::default()
        };
        Arc::new(FileMeta::new(f, Arc::new(ObsoleteFiles::new())))
    }

    fn ranges(t: &BufferTable) -> Vec<(String, String, bool)> {
        t.entries
            .iter()
            .map(|e| {
                let (a, b) = e.range();
                (String::from_utf8_lossy(a).into(), String::from_utf8_lossy(b).into(), e.file().is_some())
            })
            .collect()
    }

    #[test]
    fn insert_keeps_order_and_rejects_overlap() {
        let mut t = BufferTable::new(1);
        assert!(t.insert(file(2, "m", "p")));
        assert!(t.insert(file(1, "a", "c")));
        assert!(!t.insert(file(3, "c", "d")), "touches [a, c]");
        assert!(t.insert(file(4, "x", "z")));
        assert_eq!(t.present().map(|f| f.id).collect::<Vec<_>>(), vec![1, 2, 4]);
        assert_eq!(t.entry_for(b"b").and_then(|e| e.file()).map(|f| f.id), Some(1));
        assert!(t.entry_for(b"e").is_none());
        assert_eq!(t.bytes(), 30);
    }

    #[test]
    fn remove_range_merges_overlapping_entries_into_one_mark() {
        let mut t = BufferTable::new(1);
        for (id, lo, hi) in [(1, "a", "c"), (2, "f", "h"), (3, "k", "m"), (4, "x", "z")] {
            assert!(t.insert(file(id, lo, hi)));
        }
        let gone = t.remove_range(b"g", b"l");
        assert_eq!(gone.iter().map(|f| f.id).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(
            ranges(&t),
            vec![
                ("a".into(), "c".into(), true),
                ("f".into(), "m".into(), false),
                ("x".into(), "z".into(), true)
            ]
        );
        // A mark in a gap is its own entry; a read in the gap now stops there.
        assert!(t.remove_range(b"p", b"q").is_empty());
        assert!(matches!(t.entry_for(b"p"), Some(BufferEntry::Removed { .. })));
        assert!(t.entry_for(b"o").is_none());
        assert!(!t.all_removed());
        t.remove_range(b"a", b"z");
        assert!(t.all_removed());
        assert_eq!(t.entries.len(), 1);
    }

    /// A point read's search (built once per table state) answers as a scan
    /// of the entries after every insert and removal, on a table read
    /// between changes and on clones of it.
    #[test]
    fn entry_for_follows_every_change() {
        let scan = |t: &BufferTable, k: &[u8]| {
            t.entries
                .iter()
                .position(|e| e.range().0 <= k && k <= e.range().1)
                .map(|i| t.entries[i].range().0.to_vec())
        };
        let probes: Vec<Vec<u8>> = (b'a'..=b'z').flat_map(|c| [vec![c], vec![c, b'5']]).collect();
        let check = |t: &BufferTable| {
            for p in &probes {
                assert_eq!(
                    t.entry_for(p).map(|e| e.range().0.to_vec()),
                    scan(t, p),
                    "{p:?} in {:?}",
                    ranges(t)
                );
            }
        };
        let mut t = BufferTable::new(1);
        check(&t);
        for (id, lo, hi) in [(1, "m", "n"), (2, "b", "c"), (3, "w", "y"), (4, "e", "e5"), (5, "q", "s")] {
            assert!(t.insert(file(id, lo, hi)));
            check(&t);
        }
        let before = t.clone();
        t.remove_range(b"d", b"f");
        check(&t);
        check(&before);
        t.remove_range(b"r", b"x");
        check(&t);
        assert!(t.insert(file(6, "g", "h")));
        check(&t);
        assert!(t.entry_for(b"g5").is_some() && before.entry_for(b"g5").is_none());
    }
}
