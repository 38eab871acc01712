//! [`PinnedValue`]: a value read without copying it out of the table block
//! that holds it (RocksDB's `PinnableSlice`).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use crate::table::Block;

/// A value returned by [`Db::get_pinned`](crate::Db::get_pinned) and
/// [`Db::multi_get_pinned`](crate::Db::multi_get_pinned) (RocksDB
/// `PinnableSlice`, rust-rocksdb `DBPinnableSlice`; fjall returns a `Slice`).
///
/// It derefs to `&[u8]`. Where the value came from decides what it holds:
/// - **a table's data block** (cached or just read): a reference-counted
///   handle on the decoded block and the value's range in it, no copy. The
///   block stays in memory for as long as the value lives, even if the block
///   cache evicts it or a compaction deletes its file; holding many pinned
///   values holds their whole blocks (each at least `block_size` bytes);
/// - **the row cache**: the cached row's shared bytes, no copy;
/// - **a memtable**: a copy, as in RocksDB (memtable entries are freed when
///   the memtable is, and copying one value is cheaper than pinning it).
///
/// Unlike RocksDB's `PinnableSlice`, a `PinnedValue` does not borrow the
/// database: it may outlive the [`Db`](crate::Db) it came from, and it is
/// `Send` and `Sync`. Cloning it is cheap unless it owns a copy.
///
/// # Examples
///
/// ```
/// use strata::{Db, Options};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"k", vec![7u8; 4096])?;
/// db.flush()?; // the value now lives in a table block
/// let v = db.get_pinned(b"k")?.expect("present");
/// assert!(v.is_pinned());
/// assert_eq!(v.len(), 4096);
/// assert_eq!(&v[..2], &[7, 7]);
/// drop(db); // the block lives as long as the value
/// assert_eq!(v[4095], 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PinnedValue {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Owned(Vec<u8>),
    Shared(Arc<[u8]>),
    /// `block`'s bytes `start..end` (checked when built).
    Block {
        block: Arc<Block>,
        start: usize,
        end: usize,
    },
}

impl PinnedValue {
    /// A value that owns its bytes (a memtable's, or a tombstone's empty value).
    pub(crate) fn owned(bytes: Vec<u8>) -> Self {
        PinnedValue { repr: Repr::Owned(bytes) }
    }

    /// A value sharing a row cache entry's bytes.
    pub(crate) fn shared(bytes: Arc<[u8]>) -> Self {
        PinnedValue { repr: Repr::Shared(bytes) }
    }

    /// The bytes `start..end` of a decoded block; `None` if the range is not
    /// inside it (the block reader only passes ranges it decoded).
    pub(crate) fn in_block(block: Arc<Block>, start: usize, end: usize) -> Option<Self> {
        block.bytes(start, end)?;
        Some(PinnedValue { repr: Repr::Block { block, start, end } })
    }

    /// True if the value references a table block instead of a copy (RocksDB
    /// `PinnableSlice::IsPinned`); false for values from a memtable or the
    /// row cache.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// assert!(!db.get_pinned(b"k")?.expect("present").is_pinned(), "from the memtable: a copy");
    /// db.flush()?;
    /// assert!(db.get_pinned(b"k")?.expect("present").is_pinned(), "from a table block");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_pinned(&self) -> bool {
        matches!(self.repr, Repr::Block { .. })
    }

    /// The value as an owned `Vec`: moved out when the value owns a copy,
    /// copied otherwise (what [`Db::get`](crate::Db::get) returns).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// let v: Vec<u8> = db.get_pinned(b"k")?.expect("present").into_vec();
    /// assert_eq!(v, b"v");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_vec(self) -> Vec<u8> {
        match self.repr {
            Repr::Owned(v) => v,
            _ => self.as_slice().to_vec(),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match &self.repr {
            Repr::Owned(v) => v,
            Repr::Shared(s) => s,
            Repr::Block { block, start, end } => block.bytes(*start, *end).unwrap_or_default(),
        }
    }
}

impl Deref for PinnedValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for PinnedValue {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for PinnedValue {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<PinnedValue> for Vec<u8> {
    fn from(v: PinnedValue) -> Vec<u8> {
        v.into_vec()
    }
}

impl fmt::Debug for PinnedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl PartialEq for PinnedValue {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for PinnedValue {}

impl PartialEq<[u8]> for PinnedValue {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<&[u8]> for PinnedValue {
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_slice() == *other
    }
}

impl PartialEq<Vec<u8>> for PinnedValue {
    fn eq(&self, other: &Vec<u8>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Hash for PinnedValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_with_value() -> (Arc<Block>, usize, usize) {
        let mut b = crate::table::block::BlockBuilder::new(16);
        b.add(&crate::key::lookup_key(b"k", 1), b"value");
        let block = Arc::new(Block::new(b.finish().to_vec()).unwrap());
        let (start, end) =
            block.seek_ge_range(&crate::key::lookup_key(b"k", 9), &mut Vec::new()).unwrap().unwrap();
        (block, start, end)
    }

    #[test]
    fn every_form_reads_the_same_bytes() {
        let (block, start, end) = block_with_value();
        let forms = [
            PinnedValue::owned(b"value".to_vec()),
            PinnedValue::shared(Arc::from(&b"value"[..])),
            PinnedValue::in_block(block, start, end).unwrap(),
        ];
        for v in &forms {
            assert_eq!(&v[..], b"value");
            assert_eq!(v, &forms[0]);
            assert_eq!(*v, b"value".to_vec());
            assert_eq!(format!("{v:?}"), format!("{:?}", &b"value"[..]));
            assert_eq!(v.clone().into_vec(), b"value");
        }
        assert_eq!(forms.iter().map(PinnedValue::is_pinned).collect::<Vec<_>>(), [false, false, true]);
    }

    #[test]
    fn a_range_outside_the_block_is_refused() {
        let (block, _, _) = block_with_value();
        assert!(PinnedValue::in_block(Arc::clone(&block), 4, 2).is_none());
        assert!(PinnedValue::in_block(block, 0, 1 << 20).is_none());
    }

    #[test]
    fn values_cross_threads() {
        fn check<T: Send + Sync>() {}
        check::<PinnedValue>();
    }
}
