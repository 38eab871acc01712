//! Table-file metadata with reference-counted lifetime.
//!
//! Every Version holds its files as `Arc<FileMeta>`: the logical table (size,
//! bounds, segments) as that Version sees it. One `FileMeta` is shared by every
//! run and Version listing the same state of the file; a segment appended to
//! the file (the `lwc` policy) gives the next Versions a new `FileMeta` with
//! more segments, while older Versions keep the old one. Both point at one
//! [`TableBacking`], the physical file (Pebble's `TableMetadata` over a
//! `TableBacking`). When the VersionSet publishes a Version in which no run
//! references a file any more it marks the backing obsolete; the file's id
//! reaches the [`ObsoleteFiles`] queue only when the last `FileMeta` of any
//! state of it (old Version, iterator) drops. Files still live at shutdown are
//! never queued.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cache::{TableCache, TableSlot};
use crate::error::Result;
use crate::key::{self, SeqNum};
use crate::table::{SegmentMeta, Table};

/// Ids of table files that no Version references any more and that may be removed
/// from disk.
#[derive(Debug, Default)]
pub struct ObsoleteFiles {
    ids: Mutex<Vec<u64>>,
}

impl ObsoleteFiles {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Removes and returns every queued id (oldest first).
    pub fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *self.ids.lock())
    }

    fn push(&self, id: u64) {
        self.ids.lock().push(id);
    }
}

/// The description of a table file: what a [`super::VersionEdit`] records
/// and what every [`FileMeta`] holds (through `Deref`), one struct for both.
/// (The policy's `FileView` is a different projection: user keys, and
/// whether a compaction is using the file.)
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewFile {
    /// File number (`NNNNNN.sst`).
    /// INVARIANT: unique among the live files of a database (a file listed in
    /// several runs or buffers is one file, with one description per state).
    pub id: u64,
    /// Size in bytes.
    /// INVARIANT: the file's length on disk is at least this; a DTable's size
    /// is the end of its last recorded segment.
    pub size: u64,
    /// Smallest internal key.
    /// INVARIANT: an internal key, and `smallest <= largest` (internal order).
    pub smallest: Vec<u8>,
    /// Largest internal key.
    /// INVARIANT: an internal key; every entry of the file (every segment)
    /// lies in `[smallest, largest]`.
    pub largest: Vec<u8>,
    /// Number of entries (puts and tombstones).
    pub num_entries: u64,
    /// Number of tombstones.
    /// INVARIANT: `num_deletions <= num_entries`.
    pub num_deletions: u64,
    /// Smallest sequence number in the file.
    pub smallest_seq: SeqNum,
    /// Largest sequence number in the file.
    /// INVARIANT: `smallest_seq <= largest_seq` for a file with entries.
    pub largest_seq: SeqNum,
    /// Bloom filter bits per key the table was built with (0: no filter);
    /// `None` for files recorded before the MANIFEST carried it. A file moved
    /// down keeps the filter it was built with.
    pub bloom_bits_per_key: Option<f64>,
    /// The table's segments when it has several (a DTable appended to);
    /// empty for a table written once.
    /// INVARIANT: never exactly one entry; segment ends strictly increase and
    /// the last one is `size`.
    pub segments: Vec<SegmentMeta>,
    /// Number of range tombstones in the table's range-deletion block (reads
    /// and compactions open only the tables that have some to look for them).
    pub num_range_dels: u64,
}

/// The physical file behind one or more states ([`FileMeta`]s) of a table.
/// Dropped when the last of them drops; queues the file for deletion then if
/// the newest Version no longer lists it.
pub struct TableBacking {
    id: u64,
    obsolete: AtomicBool,
    queue: Arc<ObsoleteFiles>,
}

impl Drop for TableBacking {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            self.queue.push(self.id);
        }
    }
}

/// A live table file as one Version sees it. Shared by every run and Version
/// that lists this state of it.
pub struct FileMeta {
    /// What the file is; read through `Deref` (`f.size`, `f.smallest`, ...).
    /// INVARIANT: never changes: a new state of the file (segments appended)
    /// is a new `FileMeta`.
    desc: NewFile,
    /// INVARIANT: `backing.id == desc.id`; shared by every state of the file.
    backing: Arc<TableBacking>,
    /// Seeks left before a seek-triggered compaction (LevelDB's `allowed_seeks`).
    allowed_seeks: AtomicI64,
    /// This state's open table while the table cache holds it.
    slot: Arc<TableSlot>,
}

/// LevelDB's budget: one seek costs about as much as compacting 16 KiB (40 KB
/// in its reasoning, halved to be conservative), and small files get 100, so a
/// handful of unlucky reads never rewrites them.
fn initial_allowed_seeks(size: u64) -> i64 {
    i64::try_from(size / (16 << 10)).unwrap_or(i64::MAX).max(100)
}

impl FileMeta {
    /// Builds metadata whose id goes to `queue` once it is marked obsolete and dropped.
    /// Outside a VersionSet (policy simulators, tests) pass a private queue.
    pub fn new(f: NewFile, queue: Arc<ObsoleteFiles>) -> Self {
        let backing = Arc::new(TableBacking { id: f.id, obsolete: AtomicBool::new(false), queue });
        Self::with_backing(f, backing)
    }

    /// A new state of the file behind `self` (segments appended): shares its
    /// backing, so the file lives while any state of it is in use.
    pub(crate) fn successor(&self, f: NewFile) -> Self {
        debug_assert_eq!(f.id, self.id);
        Self::with_backing(f, Arc::clone(&self.backing))
    }

    fn with_backing(f: NewFile, backing: Arc<TableBacking>) -> Self {
        let allowed_seeks = AtomicI64::new(initial_allowed_seeks(f.size));
        FileMeta { desc: f, backing, allowed_seeks, slot: Arc::default() }
    }

    /// The open table of this state of the file, from `tables`: through the
    /// state's slot while the cache holds it, so a read of a hot table takes
    /// no cache lock.
    #[inline]
    pub(crate) fn table(&self, tables: &TableCache) -> Result<Arc<Table>> {
        tables.get_via(&self.slot, self.id, self.size, &self.segments)
    }

    /// The plain metadata, e.g. to re-add this file to another run in an edit.
    pub fn to_new_file(&self) -> NewFile {
        self.desc.clone()
    }

    /// True if `f` describes this file exactly.
    pub(crate) fn same_as(&self, f: &NewFile) -> bool {
        self.id == f.id
            && self.size == f.size
            && self.smallest == f.smallest
            && self.largest == f.largest
            && self.num_entries == f.num_entries
            && self.num_deletions == f.num_deletions
            && self.smallest_seq == f.smallest_seq
            && self.largest_seq == f.largest_seq
            && same_bits(self.bloom_bits_per_key, f.bloom_bits_per_key)
            && self.segments == f.segments
            && self.num_range_dels == f.num_range_dels
    }

    /// True if `f` is this table with segments appended: same file, longer,
    /// and its segment list starts with this one's (a one-segment table is the
    /// first segment of any longer list).
    pub(crate) fn grows_into(&self, f: &NewFile) -> bool {
        let mine: Vec<u64> = if self.segments.is_empty() {
            vec![self.size]
        } else {
            self.segments.iter().map(|s| s.end).collect()
        };
        f.id == self.id
            && f.size > self.size
            && f.segments.len() > mine.len()
            && (self.segments.is_empty() || f.segments.starts_with(&self.segments))
            && f.segments.get(mine.len() - 1).is_some_and(|s| s.end == self.size)
    }

    /// True if `f` is this one-segment table with its filter rebuilt (a
    /// filter patch appended, `table::filter_patch`): same file, longer,
    /// still one segment, the same entries; only the bits may differ.
    pub(crate) fn refilters_into(&self, f: &NewFile) -> bool {
        let data_kept = NewFile { size: self.size, bloom_bits_per_key: self.bloom_bits_per_key, ..f.clone() };
        self.segments.is_empty()
            && f.size > self.size
            && f.bloom_bits_per_key.is_some()
            && self.same_as(&data_kept)
    }

    /// Number of segments (1 for a table written once).
    pub fn num_segments(&self) -> usize {
        self.segments.len().max(1)
    }

    /// User key of the smallest entry.
    #[inline]
    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }

    /// User key of the largest entry.
    #[inline]
    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.largest)
    }

    /// True if the file may hold a user key in `lo..=hi`.
    #[inline]
    pub fn overlaps_user_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest_user_key() <= hi && self.largest_user_key() >= lo
    }

    /// Charges `n` wasted seeks (a point read that looked in vain wastes one; an
    /// iterator seek that positioned a cursor in every segment of a DTable, one
    /// per extra segment); true exactly once, for the charge that spends the
    /// last allowed seek (the file then becomes a seek-compaction candidate).
    #[inline]
    pub(crate) fn charge_seeks(&self, n: i64) -> bool {
        // A spent budget is only read: hot files see no more write traffic.
        if n <= 0 || self.allowed_seeks.load(Ordering::Relaxed) <= 0 {
            return false;
        }
        let before = self.allowed_seeks.fetch_sub(n, Ordering::Relaxed);
        before > 0 && before <= n
    }

    /// Seeks left before the file becomes a seek-compaction candidate.
    pub fn allowed_seeks(&self) -> i64 {
        self.allowed_seeks.load(Ordering::Relaxed)
    }

    /// A fresh budget, for a file moved to another level (LevelDB gives a moved
    /// file new metadata, and so a new budget).
    pub(crate) fn reset_allowed_seeks(&self) {
        self.allowed_seeks.store(initial_allowed_seeks(self.size), Ordering::Relaxed);
    }

    /// Called when the newest Version no longer lists the file: its id is queued
    /// for deletion when the last reference drops.
    pub(crate) fn mark_obsolete(&self) {
        self.backing.obsolete.store(true, Ordering::Release);
    }
}

/// Bits recorded for one file must agree, except that a listing written before
/// the MANIFEST carried them (`None`) matches any: the file is the same.
fn same_bits(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => x.to_bits() == y.to_bits(),
        _ => true,
    }
}

impl std::ops::Deref for FileMeta {
    type Target = NewFile;

    fn deref(&self) -> &NewFile {
        &self.desc
    }
}

impl fmt::Debug for FileMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileMeta")
            .field("id", &self.id)
            .field("size", &self.size)
            .field("smallest", &self.smallest)
            .field("largest", &self.largest)
            .field("seq", &(self.smallest_seq..=self.largest_seq))
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("segments", &self.segments.len())
            .field("obsolete", &self.backing.obsolete.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn nf(id: u64, lo: &[u8], hi: &[u8]) -> NewFile {
        NewFile {
            id,
            size: 10,
            smallest: make_internal_key(lo, 5, ValueKind::Put),
            largest: make_internal_key(hi, 1, ValueKind::Delete),
            ..NewFile::default()
        }
    }

    #[test]
    fn user_keys_and_overlap() {
        let q = Arc::new(ObsoleteFiles::new());
        let f = FileMeta::new(nf(1, b"c", b"f"), q);
        assert_eq!(f.smallest_user_key(), b"c");
        assert_eq!(f.largest_user_key(), b"f");
        assert!(f.overlaps_user_range(b"a", b"c"));
        assert!(f.overlaps_user_range(b"f", b"z"));
        assert!(f.overlaps_user_range(b"d", b"e"));
        assert!(!f.overlaps_user_range(b"a", b"b"));
        assert!(!f.overlaps_user_range(b"g", b"z"));
        assert!(f.same_as(&f.to_new_file()));
        assert!(!f.same_as(&nf(1, b"c", b"g")));
        // Recorded filter bits must agree; an unrecorded listing matches any.
        let mut g = NewFile { bloom_bits_per_key: Some(3.5), ..nf(2, b"c", b"f") };
        let h = FileMeta::new(g.clone(), Arc::new(ObsoleteFiles::new()));
        assert!(h.same_as(&g));
        g.bloom_bits_per_key = Some(4.0);
        assert!(!h.same_as(&g));
        g.bloom_bits_per_key = None;
        assert!(h.same_as(&g));
    }

    #[test]
    fn only_obsolete_files_are_queued_on_last_drop() {
        let q = Arc::new(ObsoleteFiles::new());
        let live = Arc::new(FileMeta::new(nf(1, b"a", b"b"), q.clone()));
        let dead = Arc::new(FileMeta::new(nf(2, b"a", b"b"), q.clone()));
        let pin = dead.clone();
        dead.mark_obsolete();
        drop(dead);
        assert!(q.take().is_empty(), "still pinned");
        drop(pin);
        drop(live);
        assert_eq!(q.take(), vec![2]);
        assert!(q.take().is_empty());
    }

    fn seg(end: u64, footer_crc: u32) -> SegmentMeta {
        SegmentMeta { end, footer_crc }
    }

    /// File 1 of `size` bytes made of `segments`.
    fn state(size: u64, segments: Vec<SegmentMeta>) -> NewFile {
        NewFile { size, segments, ..nf(1, b"c", b"f") }
    }

    #[test]
    fn refilters_into_accepts_only_a_longer_one_segment_table_with_the_same_entries() {
        let q = Arc::new(ObsoleteFiles::new());
        let once = FileMeta::new(NewFile { bloom_bits_per_key: Some(10.0), ..state(100, vec![]) }, q);
        let patched = NewFile { bloom_bits_per_key: Some(6.5), ..state(180, vec![]) };
        assert!(once.refilters_into(&patched));
        for (what, f) in [
            ("same size", NewFile { size: 100, ..patched.clone() }),
            ("segments", state(250, vec![seg(100, 1), seg(250, 2)])),
            ("other entries", NewFile { num_entries: 7, ..patched.clone() }),
            ("other keys", NewFile { largest: nf(1, b"c", b"g").largest, ..patched.clone() }),
            ("bits unrecorded", NewFile { bloom_bits_per_key: None, ..patched.clone() }),
            ("another file", NewFile { id: 2, ..patched.clone() }),
        ] {
            assert!(!once.refilters_into(&f), "{what}");
        }
    }

    #[test]
    fn grows_into_accepts_only_segments_appended() {
        let q = Arc::new(ObsoleteFiles::new());
        // A table written once (100 bytes): any longer list starting at its end.
        let once = FileMeta::new(state(100, vec![]), q.clone());
        assert_eq!(once.num_segments(), 1);
        assert!(once.grows_into(&state(250, vec![seg(100, 1), seg(250, 2)])));
        assert!(once.grows_into(&state(400, vec![seg(100, 9), seg(250, 2), seg(400, 3)])), "two at once");
        // A wider key range and newer sequence numbers come with the growth.
        let wider = NewFile { largest_seq: 99, ..state(250, vec![seg(100, 1), seg(250, 2)]) };
        assert!(once.grows_into(&NewFile { smallest: nf(1, b"a", b"z").smallest, ..wider }));
        for (what, f) in [
            ("no segments", state(250, vec![])),
            ("same size", state(100, vec![seg(50, 1), seg(100, 2)])),
            ("shrunk", state(90, vec![seg(40, 1), seg(90, 2)])),
            ("first end is not the old size", state(250, vec![seg(90, 1), seg(250, 2)])),
            ("first end past the old size", state(250, vec![seg(120, 1), seg(250, 2)])),
            ("a one-segment list", state(250, vec![seg(250, 2)])),
            ("another file", NewFile { id: 2, ..state(250, vec![seg(100, 1), seg(250, 2)]) }),
        ] {
            assert!(!once.grows_into(&f), "{what}");
        }
        // A DTable of two segments (250 bytes): its list must be kept, exactly.
        let dtable = FileMeta::new(state(250, vec![seg(100, 1), seg(250, 2)]), q);
        assert_eq!(dtable.num_segments(), 2);
        assert!(dtable.grows_into(&state(400, vec![seg(100, 1), seg(250, 2), seg(400, 3)])));
        assert!(dtable.grows_into(&state(500, vec![seg(100, 1), seg(250, 2), seg(400, 3), seg(500, 4)])));
        for (what, f) in [
            ("the same list", state(250, vec![seg(100, 1), seg(250, 2)])),
            ("the same list, bigger", state(400, vec![seg(100, 1), seg(250, 2)])),
            ("shrunk to one segment", state(100, vec![])),
            ("shrunk", state(200, vec![seg(100, 1), seg(200, 2)])),
            ("an old footer checksum changed", state(400, vec![seg(100, 1), seg(250, 7), seg(400, 3)])),
            ("an old end moved", state(400, vec![seg(100, 1), seg(260, 2), seg(400, 3)])),
            ("the first segment dropped", state(400, vec![seg(250, 2), seg(400, 3)])),
            ("an unrelated list", state(400, vec![seg(150, 1), seg(300, 2), seg(400, 3)])),
            ("no segments", state(400, vec![])),
        ] {
            assert!(!dtable.grows_into(&f), "{what}");
        }
        // Segments are part of a state's identity.
        assert!(dtable.same_as(&dtable.to_new_file()));
        assert!(!dtable.same_as(&state(250, vec![seg(100, 1), seg(250, 3)])));
    }

    /// Every state of a file shares its backing: marking any of them obsolete
    /// marks the file, and its id is queued once, when the last state drops,
    /// in whichever order they go.
    #[test]
    fn states_of_a_file_share_one_backing() {
        for new_first in [true, false] {
            let q = Arc::new(ObsoleteFiles::new());
            let old = Arc::new(FileMeta::new(state(100, vec![]), q.clone()));
            let grown = Arc::new(old.successor(state(250, vec![seg(100, 1), seg(250, 2)])));
            assert!(Arc::ptr_eq(&old.backing, &grown.backing));
            assert_eq!((grown.num_segments(), grown.size), (2, 250));
            assert_eq!(grown.allowed_seeks(), 100, "the new state has its own seek budget");
            let third = Arc::new(grown.successor(state(400, vec![seg(100, 1), seg(250, 2), seg(400, 3)])));
            assert!(Arc::ptr_eq(&old.backing, &third.backing));
            drop(grown);
            third.mark_obsolete();
            assert!(format!("{old:?}").contains("obsolete: true"), "{old:?}");
            let (first, last) = if new_first { (third, old) } else { (old, third) };
            drop(first);
            assert!(q.take().is_empty(), "new_first {new_first}: a state is still in use");
            drop(last);
            assert_eq!(q.take(), vec![1], "new_first {new_first}");
        }
        // Not obsolete: never queued, whatever drops.
        let q = Arc::new(ObsoleteFiles::new());
        let old = FileMeta::new(state(100, vec![]), q.clone());
        let grown = old.successor(state(250, vec![seg(100, 1), seg(250, 2)]));
        drop(old);
        drop(grown);
        assert!(q.take().is_empty());
    }

    #[test]
    fn seek_budget_is_spent_once() {
        let q = Arc::new(ObsoleteFiles::new());
        let small = FileMeta::new(nf(1, b"a", b"b"), q.clone());
        assert_eq!(small.allowed_seeks(), 100, "small files get the floor");
        let big = FileMeta::new(NewFile { size: 64 << 20, ..nf(2, b"a", b"b") }, q);
        assert_eq!(big.allowed_seeks(), 4096, "one seek per 16 KiB");
        let fired: Vec<usize> = (1..=250).filter(|_| small.charge_seeks(1)).collect();
        assert_eq!(fired, vec![100], "only the charge that spends the last seek nominates");
        assert_eq!(small.allowed_seeks(), 0, "a spent budget is not charged further");
        small.reset_allowed_seeks();
        assert_eq!(small.allowed_seeks(), 100);
        // Concurrent charges: exactly one thread sees the budget run out.
        let shared = Arc::new(big);
        let hits: usize = (0..4)
            .map(|_| {
                let f = shared.clone();
                std::thread::spawn(move || (0..2000).filter(|_| f.charge_seeks(1)).count())
            })
            .map(|t| t.join().unwrap())
            .sum();
        assert_eq!((hits, shared.allowed_seeks()), (1, 0));
    }

    #[test]
    fn a_charge_of_several_seeks_that_overshoots_nominates_once() {
        let f = FileMeta::new(nf(1, b"a", b"b"), Arc::new(ObsoleteFiles::new()));
        let fired: Vec<usize> = (1..=60).filter(|_| f.charge_seeks(3)).collect();
        assert_eq!(fired, vec![34], "100 seeks: the 34th charge of 3 spends the last");
        assert!(f.allowed_seeks() < 0);
        assert!(!f.charge_seeks(0) && !f.charge_seeks(5), "a spent budget stays spent");
    }
}
