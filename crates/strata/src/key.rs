//! Internal keys: a user key followed by an 8-byte trailer `(seq << 8) | kind`,
//! little-endian (LevelDB's layout). Ordered by user key ascending, then trailer
//! descending, so the newest version of a key comes first.
//!
//! **Unstable**: public for [`BatchOp::kind`](crate::BatchOp::kind) and for
//! policies written outside the crate; it changes with the engine.

use std::cmp::Ordering;

use crate::error::{Error, Result};

/// A sequence number. Only the low 56 bits are used.
pub type SeqNum = u64;

/// The largest sequence number that fits in an internal key.
pub const MAX_SEQ: SeqNum = (1 << 56) - 1;

/// Bytes of the trailer that follows the user key.
pub const TRAILER_LEN: usize = 8;

/// What an internal key records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone.
    Delete = 0,
    /// A value.
    Put = 1,
    /// A merge operand, combined with older versions by the
    /// [`MergeOperator`](crate::MergeOperator) when read.
    Merge = 2,
    /// A range deletion (batch records only): the record's key is the range's
    /// start (inclusive) and its value the end (exclusive). Never part of an
    /// internal key: range tombstones are kept apart from point entries
    /// (memtable lists, tables' range-deletion blocks), so
    /// [`parse_internal_key`] refuses this kind.
    RangeDelete = 3,
}

impl ValueKind {
    /// Decodes the kind byte of a trailer.
    pub fn from_u8(b: u8) -> Result<Self> {
        match b {
            0 => Ok(ValueKind::Delete),
            1 => Ok(ValueKind::Put),
            2 => Ok(ValueKind::Merge),
            other => Err(Error::corruption(format!("unknown value kind {other}"))),
        }
    }
}

/// Kind used when building a lookup key: the largest kind of a point entry
/// (range deletions never appear in internal keys), so that a seek to
/// `(user, seq, KIND_FOR_SEEK)` lands on the newest entry with sequence `<= seq`.
pub const KIND_FOR_SEEK: ValueKind = ValueKind::Merge;

/// Packs a sequence number and kind into a trailer value.
#[inline]
pub fn pack_trailer(seq: SeqNum, kind: ValueKind) -> u64 {
    debug_assert!(seq <= MAX_SEQ);
    (seq << 8) | kind as u64
}

/// Appends the internal key `(user_key, seq, kind)` to `buf`.
#[inline]
pub fn append_internal_key(buf: &mut Vec<u8>, user_key: &[u8], seq: SeqNum, kind: ValueKind) {
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// Returns a new internal key.
pub fn make_internal_key(user_key: &[u8], seq: SeqNum, kind: ValueKind) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seq, kind);
    v
}

/// User keys up to this long make a [`LookupKey`] without a heap allocation.
const LOOKUP_INLINE: usize = 120;

/// [`lookup_key`] kept on the stack for user keys up to 120 bytes
/// (LevelDB's `LookupKey`): every point read builds one.
pub struct LookupKey {
    inline: [u8; LOOKUP_INLINE + TRAILER_LEN],
    /// INVARIANT: `heap` is empty and the key is `inline[..len]`, or the key is `heap`.
    len: usize,
    heap: Vec<u8>,
}

impl LookupKey {
    /// The key seeking to the newest version of `user_key` visible at `seq`.
    pub fn new(user_key: &[u8], seq: SeqNum) -> LookupKey {
        let mut k = LookupKey { inline: [0; LOOKUP_INLINE + TRAILER_LEN], len: 0, heap: Vec::new() };
        if user_key.len() <= LOOKUP_INLINE {
            let n = user_key.len();
            k.inline[..n].copy_from_slice(user_key);
            k.inline[n..n + TRAILER_LEN].copy_from_slice(&pack_trailer(seq, KIND_FOR_SEEK).to_le_bytes());
            k.len = n + TRAILER_LEN;
        } else {
            k.heap = lookup_key(user_key, seq);
        }
        k
    }

    /// The encoded internal key.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }
}

/// Returns the key that seeks to the newest version of `user_key` visible at `seq`.
pub fn lookup_key(user_key: &[u8], seq: SeqNum) -> Vec<u8> {
    make_internal_key(user_key, seq, KIND_FOR_SEEK)
}

/// A decoded internal key borrowing its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// Sequence number of the write.
    pub seq: SeqNum,
    /// Put, delete or merge.
    pub kind: ValueKind,
}

/// Splits an internal key; a short key or unknown kind is `Corruption`.
#[inline]
pub fn parse_internal_key(ikey: &[u8]) -> Result<ParsedKey<'_>> {
    if ikey.len() < TRAILER_LEN {
        return Err(Error::corruption("internal key shorter than its trailer"));
    }
    let (user_key, t) = ikey.split_at(ikey.len() - TRAILER_LEN);
    let mut b = [0u8; 8];
    b.copy_from_slice(t);
    let trailer = u64::from_le_bytes(b);
    Ok(ParsedKey { user_key, seq: trailer >> 8, kind: ValueKind::from_u8((trailer & 0xff) as u8)? })
}

/// The user-key part of an internal key (the whole slice if it is too short).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

#[inline]
fn trailer(ikey: &[u8]) -> u64 {
    if ikey.len() < TRAILER_LEN {
        return 0;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&ikey[ikey.len() - TRAILER_LEN..]);
    u64::from_le_bytes(b)
}

/// Orders internal keys: user key ascending, then trailer (sequence) descending.
#[inline]
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    match user_key(a).cmp(user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// The first `N` bytes of `bytes`, zero padded: an order-preserving head,
/// read as a big-endian integer by its caller (`u64` or `u128`). Where two
/// heads differ, their byte strings compare the same way (one that ended is
/// a prefix of the other, so smaller); equal heads say nothing. Sorted
/// structures compare heads first and whole keys only on a tie: one integer
/// compare instead of a `memcmp` call.
#[inline]
pub(crate) fn order_head<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut b = [0u8; N];
    let n = bytes.len().min(N);
    b[..n].copy_from_slice(&bytes[..n]);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_is_user_asc_seq_desc() {
        let a1 = make_internal_key(b"a", 1, ValueKind::Put);
        let a2 = make_internal_key(b"a", 2, ValueKind::Put);
        let b1 = make_internal_key(b"b", 1, ValueKind::Delete);
        assert_eq!(compare_internal(&a2, &a1), Ordering::Less);
        assert_eq!(compare_internal(&a1, &b1), Ordering::Less);
        // A lookup sorts at or before every entry at its sequence, a merge included.
        assert_eq!(compare_internal(&lookup_key(b"a", 1), &a1), Ordering::Less);
        let m1 = make_internal_key(b"a", 1, ValueKind::Merge);
        assert_eq!(compare_internal(&lookup_key(b"a", 1), &m1), Ordering::Equal);
        assert_eq!(compare_internal(&m1, &a1), Ordering::Less);
        assert_eq!(compare_internal(&lookup_key(b"a", 0), &a1), Ordering::Greater);
        assert_eq!(compare_internal(&lookup_key(b"a", 5), &a2), Ordering::Less);
        let p = parse_internal_key(&b1).unwrap();
        assert_eq!((p.user_key, p.seq, p.kind), (&b"b"[..], 1, ValueKind::Delete));
        assert!(parse_internal_key(b"short").is_err());
        assert_eq!(parse_internal_key(&m1).unwrap().kind, ValueKind::Merge);
        let unknown = [b'a', 3, 1, 0, 0, 0, 0, 0, 0];
        assert!(parse_internal_key(&unknown).unwrap_err().to_string().contains("unknown value kind 3"));
    }
}
