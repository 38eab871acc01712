//! The memtable: recent writes in a lock-free skip list ordered by internal
//! key. Adds may run concurrently; reads and iterators take no lock.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use crossbeam_skiplist::SkipMap;
use parking_lot::RwLock;

use crate::key::{self, SeqNum, ValueKind, TRAILER_LEN};
use crate::range_del::RangeTombstone;

mod iter;

pub use iter::MemTableIter;

/// Estimated bytes per entry beyond its key and value: the skip-list node
/// (key handle, tower of next pointers, reference count) and allocator slack.
const ENTRY_OVERHEAD: usize = 80;

/// Lookup keys up to this size are built on the stack.
const STACK_KEY: usize = 128;

/// An internal key, ordered by [`key::compare_internal`]. Unsized so that a
/// borrowed `&[u8]` can be searched for without copying it into an entry.
#[repr(transparent)]
struct IKey([u8]);

impl IKey {
    fn new(bytes: &[u8]) -> &IKey {
        // SAFETY: `IKey` is `repr(transparent)` over `[u8]`, so both reference
        // types have the same layout and metadata (the slice length).
        unsafe { &*(bytes as *const [u8] as *const IKey) }
    }
}

impl Ord for IKey {
    fn cmp(&self, other: &Self) -> Ordering {
        key::compare_internal(&self.0, &other.0)
    }
}
impl PartialOrd for IKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for IKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for IKey {}

/// One entry: the internal key followed by the value, in a single allocation.
struct Entry {
    /// The first 16 user-key bytes, big-endian, zero-padded: comparing these
    /// inline settles most comparisons without touching `buf` (a cache miss).
    head: u128,
    buf: Box<[u8]>,
    key_len: usize,
}

impl Entry {
    fn ikey(&self) -> &[u8] {
        self.buf.get(..self.key_len).unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        self.buf.get(self.key_len..).unwrap_or_default()
    }
}

impl Borrow<IKey> for Entry {
    fn borrow(&self) -> &IKey {
        IKey::new(self.ikey())
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        match self.head.cmp(&other.head) {
            Ordering::Equal => key::compare_internal(self.ikey(), other.ikey()),
            o => o,
        }
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}

/// An in-memory sorted buffer of writes (internal key -> value).
#[derive(Default)]
pub struct MemTable {
    map: SkipMap<Entry, ()>,
    usage: AtomicUsize,
    /// Range tombstones, apart from the point entries (see `range_del.rs`).
    range_dels: RwLock<Vec<RangeTombstone>>,
    /// `range_dels.len()`, read without the lock (zero: reads pay nothing).
    num_range_dels: AtomicUsize,
    /// The largest sequence of a point entry added (iterators seek past the
    /// entries a newer range tombstone hides).
    largest_seq: AtomicU64,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("len", &self.len())
            .field("usage", &self.approximate_memory_usage())
            .finish()
    }
}

impl MemTable {
    /// Returns an empty memtable.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `(user_key, seq, kind) -> value`. Safe to call from several threads at once.
    pub fn add(&self, seq: SeqNum, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        let key_len = user_key.len() + TRAILER_LEN;
        let mut buf = Vec::with_capacity(key_len + value.len());
        key::append_internal_key(&mut buf, user_key, seq, kind);
        buf.extend_from_slice(value);
        let head = u128::from_be_bytes(key::order_head(user_key));
        self.map.insert(Entry { head, buf: buf.into_boxed_slice(), key_len }, ());
        self.usage.fetch_add(key_len + value.len() + ENTRY_OVERHEAD, AtomicOrdering::Relaxed);
        // Published by the write's `visible_seq` store (release), so a reader
        // at sequence R sees a value at least every added sequence <= R.
        self.largest_seq.fetch_max(seq, AtomicOrdering::Relaxed);
    }

    /// The largest sequence of a point entry added so far (0: none): an
    /// upper bound on the sequences an iterator over the memtable meets, for
    /// a read at any sequence already visible when this is called.
    pub(crate) fn largest_seq(&self) -> SeqNum {
        self.largest_seq.load(AtomicOrdering::Relaxed)
    }

    /// Records the deletion of `[start, end)` at `seq`; an empty range is
    /// not kept.
    pub(crate) fn add_range_delete(&self, seq: SeqNum, start: &[u8], end: &[u8]) {
        if start >= end {
            return;
        }
        let mut list = self.range_dels.write();
        list.push(RangeTombstone { start: start.to_vec(), end: end.to_vec(), seq });
        self.num_range_dels.store(list.len(), AtomicOrdering::Release);
        self.usage.fetch_add(start.len() + end.len() + ENTRY_OVERHEAD, AtomicOrdering::Relaxed);
    }

    /// Applies one batch operation at `seq`.
    pub(crate) fn add_op(&self, seq: SeqNum, op: &crate::batch::BatchOp<'_>) {
        match op.kind {
            ValueKind::RangeDelete => self.add_range_delete(seq, op.key, op.value),
            kind => self.add(seq, kind, op.key, op.value),
        }
    }

    /// True if the memtable holds range tombstones.
    pub(crate) fn has_range_dels(&self) -> bool {
        self.num_range_dels.load(AtomicOrdering::Acquire) > 0
    }

    /// The range tombstones with a sequence `<= seq`.
    pub(crate) fn range_dels(&self, seq: SeqNum) -> Vec<RangeTombstone> {
        if !self.has_range_dels() {
            return Vec::new();
        }
        self.range_dels.read().iter().filter(|t| t.seq <= seq).cloned().collect()
    }

    /// The newest sequence `<= seq` of a range tombstone covering `user_key`.
    pub(crate) fn max_range_del(&self, user_key: &[u8], seq: SeqNum) -> Option<SeqNum> {
        if !self.has_range_dels() {
            return None;
        }
        let list = self.range_dels.read();
        list.iter()
            .filter(|t| t.seq <= seq && t.start.as_slice() <= user_key && user_key < t.end.as_slice())
            .map(|t| t.seq)
            .max()
    }

    /// The newest entry for `user_key` with a sequence number `<= seq`
    /// (a `Delete` kind means the key was deleted).
    pub fn get(&self, user_key: &[u8], seq: SeqNum) -> Option<(ValueKind, Vec<u8>)> {
        self.newest_entry(user_key, seq, |_, kind, value| (kind, value.to_vec()))
    }

    /// The sequence of the newest change to `user_key` held here: a point
    /// entry or a range tombstone covering it. A transaction's commit asks
    /// this to find writes made since it read the key.
    pub(crate) fn latest_seq(&self, user_key: &[u8]) -> Option<SeqNum> {
        let point = self.newest_entry(user_key, key::MAX_SEQ, |seq, _, _| seq);
        point.max(self.max_range_del(user_key, key::MAX_SEQ))
    }

    /// `found(seq, kind, value)` of the newest point entry for `user_key`
    /// with a sequence `<= seq`.
    fn newest_entry<T>(
        &self,
        user_key: &[u8],
        seq: SeqNum,
        found: impl FnOnce(SeqNum, ValueKind, &[u8]) -> T,
    ) -> Option<T> {
        let find = |lookup: &[u8]| {
            let e = self.map.lower_bound(Bound::Included(IKey::new(lookup)))?;
            let entry = e.key();
            let parsed = key::parse_internal_key(entry.ikey()).ok()?;
            (parsed.user_key == user_key).then(|| found(parsed.seq, parsed.kind, entry.value()))
        };
        let len = user_key.len() + TRAILER_LEN;
        if len <= STACK_KEY {
            let mut buf = [0u8; STACK_KEY];
            buf[..user_key.len()].copy_from_slice(user_key);
            let trailer = key::pack_trailer(seq, key::KIND_FOR_SEEK);
            buf[user_key.len()..len].copy_from_slice(&trailer.to_le_bytes());
            find(&buf[..len])
        } else {
            find(&key::lookup_key(user_key, seq))
        }
    }

    /// True if an entry or a range tombstone here touches the user keys
    /// `[lo, hi]` (an ingestion must then flush first).
    pub(crate) fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        let seek = key::lookup_key(lo, key::MAX_SEQ);
        let first = self.map.lower_bound(Bound::Included(IKey::new(&seek)));
        let point = first.is_some_and(|e| key::user_key(e.key().ikey()) <= hi);
        point
            || (self.has_range_dels()
                && self.range_dels.read().iter().any(|t| t.start.as_slice() <= hi && lo < t.end.as_slice()))
    }

    /// Bytes used by keys, values and per-entry overhead (an estimate).
    pub fn approximate_memory_usage(&self) -> usize {
        self.usage.load(AtomicOrdering::Relaxed)
    }

    /// Number of point entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if nothing was added (no point entry, no range tombstone).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty() && !self.has_range_dels()
    }

    /// A bidirectional cursor over all entries that keeps the memtable alive.
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter::new(Arc::clone(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::MAX_SEQ;

    #[test]
    fn get_sees_versions_snapshots_and_tombstones() {
        let m = MemTable::new();
        assert!(m.is_empty());
        m.add(1, ValueKind::Put, b"a", b"a1");
        m.add(2, ValueKind::Put, b"b", b"b2");
        m.add(3, ValueKind::Put, b"a", b"a3");
        m.add(4, ValueKind::Delete, b"a", b"");
        m.add(5, ValueKind::Put, b"a", b"a5");
        m.add(6, ValueKind::Put, b"ab", b"ab6");
        assert_eq!(m.len(), 6);
        assert_eq!(m.get(b"a", 0), None);
        assert_eq!(m.get(b"a", 1), Some((ValueKind::Put, b"a1".to_vec())));
        assert_eq!(m.get(b"a", 2), Some((ValueKind::Put, b"a1".to_vec())));
        assert_eq!(m.get(b"a", 3), Some((ValueKind::Put, b"a3".to_vec())));
        assert_eq!(m.get(b"a", 4), Some((ValueKind::Delete, vec![])));
        assert_eq!(m.get(b"a", MAX_SEQ), Some((ValueKind::Put, b"a5".to_vec())));
        assert_eq!(m.get(b"b", 1), None);
        assert_eq!(m.get(b"b", MAX_SEQ), Some((ValueKind::Put, b"b2".to_vec())));
        assert_eq!(m.get(b"", MAX_SEQ), None);
        assert_eq!(m.get(b"c", MAX_SEQ), None);
        // Keys longer than the stack buffer take the allocating path.
        let long = vec![b'z'; 500];
        m.add(7, ValueKind::Put, &long, b"long");
        assert_eq!(m.get(&long, MAX_SEQ), Some((ValueKind::Put, b"long".to_vec())));
        assert_eq!(m.get(&long[..499], MAX_SEQ), None);
        assert!(m.approximate_memory_usage() >= 7 * (ENTRY_OVERHEAD + TRAILER_LEN) + 500);
    }

    #[test]
    fn concurrent_adds_from_two_threads() {
        let m = Arc::new(MemTable::new());
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let m = Arc::clone(&m);
                std::thread::spawn(move || {
                    for i in 0..2000u64 {
                        let seq = i * 2 + t + 1;
                        m.add(seq, ValueKind::Put, format!("k{:04}", i % 500).as_bytes(), &seq.to_le_bytes());
                    }
                })
            })
            .collect();
        // Read while the writers run: iteration stays sorted.
        let mut it = m.iter();
        for _ in 0..5 {
            crate::iter::InternalIterator::seek_to_first(&mut it).unwrap();
            let mut prev: Option<Vec<u8>> = None;
            while crate::iter::InternalIterator::valid(&it) {
                let k = crate::iter::InternalIterator::key(&it).to_vec();
                if let Some(p) = &prev {
                    assert_eq!(key::compare_internal(p, &k), Ordering::Less);
                }
                prev = Some(k);
                crate::iter::InternalIterator::next(&mut it).unwrap();
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(m.len(), 4000);
        for i in 0..500u64 {
            // The newest write of key i%500 has the largest seq: i = 1500+i, thread 1.
            let newest = (1500 + i) * 2 + 2;
            let got = m.get(format!("k{i:04}").as_bytes(), MAX_SEQ).unwrap();
            assert_eq!(got, (ValueKind::Put, newest.to_le_bytes().to_vec()));
        }
    }
}
