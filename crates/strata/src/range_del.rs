//! Range tombstones (`Db::delete_range`). A tombstone `[start, end) @ t` says
//! that at sequence `t` every key in the range was deleted, so an entry
//! `k @ q` is hidden for a read at `R` iff some tombstone with `q < t <= R`
//! covers `k`. Applying any copy of a tombstone anywhere is therefore always
//! right, which lets reads gather them from every memtable and table of their
//! view regardless of order. Tombstones live apart from point entries (a list
//! per memtable, a block per table), never in the merged point streams.
//!
//! [`Fragments`] cuts overlapping tombstones into sorted, disjoint pieces;
//! [`RangeDelSkip`] hides the covered entries of a point stream.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{parse_internal_key, SeqNum, MAX_SEQ};
use crate::util::coding::{put_length_prefixed, put_varint64, Reader};

/// One range tombstone: every key in `[start, end)` deleted at `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeTombstone {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seq: SeqNum,
}

/// A piece of the key space and the sequences (newest first) of every
/// tombstone covering all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seqs: Vec<SeqNum>,
}

/// Sorted, disjoint fragments of a set of tombstones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Fragments {
    frags: Vec<Fragment>,
}

impl Fragments {
    /// Fragments the tombstones `(start, end, seq)`; empty ranges are ignored.
    pub(crate) fn new<'a>(tombs: impl IntoIterator<Item = (&'a [u8], &'a [u8], SeqNum)>) -> Self {
        let mut ts: Vec<(&[u8], &[u8], SeqNum)> = tombs.into_iter().filter(|(s, e, _)| s < e).collect();
        if ts.is_empty() {
            return Fragments::default();
        }
        ts.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut bounds: Vec<&[u8]> = ts.iter().flat_map(|(s, e, _)| [*s, *e]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut frags: Vec<Fragment> = Vec::new();
        let mut active: Vec<(&[u8], SeqNum)> = Vec::new();
        let mut next = 0;
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            while next < ts.len() && ts[next].0 <= lo {
                active.push((ts[next].1, ts[next].2));
                next += 1;
            }
            active.retain(|(end, _)| *end > lo);
            if active.is_empty() {
                continue;
            }
            let mut seqs: Vec<SeqNum> = active.iter().map(|a| a.1).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            match frags.last_mut() {
                Some(last) if last.end.as_slice() == lo && last.seqs == seqs => last.end = hi.to_vec(),
                _ => frags.push(Fragment { start: lo.to_vec(), end: hi.to_vec(), seqs }),
            }
        }
        Fragments { frags }
    }

    /// Fragments of `tombs`.
    pub(crate) fn of(tombs: &[RangeTombstone]) -> Self {
        Self::new(tombs.iter().map(|t| (t.start.as_slice(), t.end.as_slice(), t.seq)))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    pub(crate) fn fragments(&self) -> &[Fragment] {
        &self.frags
    }

    /// Index of the fragment covering `key`.
    fn find(&self, key: &[u8]) -> Option<usize> {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        self.frags.get(i).filter(|f| f.start.as_slice() <= key).map(|_| i)
    }

    /// The fragment hiding `user_key @ seq` from a read at `horizon`, and
    /// that fragment's newest tombstone at or below `horizon` (`None`: the
    /// entry is not hidden). `hint` is the index of the fragment the last
    /// call found (consecutive entries mostly hit it again); it is updated.
    pub(crate) fn hiding(
        &self,
        hint: &mut usize,
        user_key: &[u8],
        seq: SeqNum,
        horizon: SeqNum,
    ) -> Option<(&Fragment, SeqNum)> {
        let i = match self.frags.get(*hint) {
            Some(f) if f.start.as_slice() <= user_key && user_key < f.end.as_slice() => *hint,
            _ => self.find(user_key)?,
        };
        *hint = i;
        let f = &self.frags[i];
        // Newest first: the first at or below the horizon hides the most.
        let t = f.seqs.iter().copied().find(|&t| t <= horizon)?;
        (seq < t).then_some((f, t))
    }

    /// The newest sequence `<= horizon` of a tombstone covering `key`.
    pub(crate) fn max_covering(&self, key: &[u8], horizon: SeqNum) -> Option<SeqNum> {
        let f = &self.frags[self.find(key)?];
        f.seqs.iter().copied().find(|&s| s <= horizon)
    }

    /// Keeps, per fragment, the sequences above `oldest` and the newest at or
    /// below it (it hides whatever an older one at or below `oldest` hides, for
    /// every reader), and none where `drop(start, end)` says nothing older
    /// than the output can be under the fragment. Returns what is kept and
    /// how many sequences were removed.
    pub(crate) fn collapse(&self, oldest: SeqNum, drop: impl Fn(&[u8], &[u8]) -> bool) -> (Fragments, u64) {
        let mut frags = Vec::with_capacity(self.frags.len());
        let mut removed = 0;
        for f in &self.frags {
            let mut seqs: Vec<SeqNum> = f.seqs.iter().copied().filter(|&s| s > oldest).collect();
            if let Some(&s) = f.seqs.iter().find(|&&s| s <= oldest) {
                if !drop(&f.start, &f.end) {
                    seqs.push(s);
                }
            }
            removed += (f.seqs.len() - seqs.len()) as u64;
            if !seqs.is_empty() {
                frags.push(Fragment { start: f.start.clone(), end: f.end.clone(), seqs });
            }
        }
        (Fragments { frags }, removed)
    }

    /// The tombstones of the fragments, clipped to `[lo, hi)` (`None`:
    /// unbounded), in order.
    pub(crate) fn clipped(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<RangeTombstone> {
        let mut out = Vec::new();
        for f in &self.frags {
            let start = match lo {
                Some(lo) if lo > f.start.as_slice() => lo,
                _ => f.start.as_slice(),
            };
            let end = match hi {
                Some(hi) if hi < f.end.as_slice() => hi,
                _ => f.end.as_slice(),
            };
            if start < end {
                for &seq in &f.seqs {
                    out.push(RangeTombstone { start: start.to_vec(), end: end.to_vec(), seq });
                }
            }
        }
        out
    }
}

/// The immediate successor of `key` as a byte string (`key + [0]`): the
/// smallest key greater than it.
pub(crate) fn successor(key: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(key.len() + 1);
    v.extend_from_slice(key);
    v.push(0);
    v
}

/// The largest user key a range ending (exclusive) at `end` can hold, as an
/// inclusive bound: exact when `end` is some key's successor (`key + [0]`,
/// as a file's clipped fragment ends), else `end` itself (conservative).
pub(crate) fn inclusive_end(end: &[u8]) -> &[u8] {
    match end.split_last() {
        Some((0, head)) => head,
        _ => end,
    }
}

/// Encodes a table's range-deletion block: a varint count, then per
/// tombstone its start and end (length-prefixed) and its sequence (varint).
pub(crate) fn encode_block(tombs: &[RangeTombstone]) -> Vec<u8> {
    let mut b = Vec::new();
    put_varint64(&mut b, tombs.len() as u64);
    for t in tombs {
        put_length_prefixed(&mut b, &t.start);
        put_length_prefixed(&mut b, &t.end);
        put_varint64(&mut b, t.seq);
    }
    b
}

/// Decodes a range-deletion block; anything malformed is `Corruption`.
pub(crate) fn decode_block(src: &[u8]) -> Result<Vec<RangeTombstone>> {
    let bad = |what: &str| Error::corruption(format!("malformed range-deletion block: {what}"));
    let mut r = Reader::new(src);
    let n = r.varint64().ok_or_else(|| bad("count"))?;
    // Each tombstone takes at least three bytes.
    if n > src.len() as u64 {
        return Err(bad("count larger than the block"));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let start = r.length_prefixed().ok_or_else(|| bad("start"))?.to_vec();
        let end = r.length_prefixed().ok_or_else(|| bad("end"))?.to_vec();
        let seq = r.varint64().ok_or_else(|| bad("sequence"))?;
        if start >= end || seq > MAX_SEQ {
            return Err(bad("empty range or sequence past 56 bits"));
        }
        out.push(RangeTombstone { start, end, seq });
    }
    if !r.is_empty() {
        return Err(bad("bytes after the last tombstone"));
    }
    Ok(out)
}

/// A point stream without the entries a tombstone of `frags` at or below
/// `horizon` hides (`k @ q` with a covering `t`, `q < t <= horizon`), in both
/// directions. A key's hidden versions are its oldest ones, so to a reader
/// the skip looks like the end of the key's versions: a fold of merge
/// operands stops there as it does at a delete. With no fragments it only
/// forwards.
pub(crate) struct RangeDelSkip<I> {
    inner: I,
    frags: Arc<Fragments>,
    horizon: SeqNum,
    /// The fragment the last covered check used (most checks hit it again).
    last: usize,
}

impl<I: InternalIterator> RangeDelSkip<I> {
    pub(crate) fn new(inner: I, frags: Arc<Fragments>, horizon: SeqNum) -> Self {
        RangeDelSkip { inner, frags, horizon, last: 0 }
    }

    fn covered(&mut self) -> Result<bool> {
        let k = parse_internal_key(self.inner.key())?;
        Ok(self.frags.hiding(&mut self.last, k.user_key, k.seq, self.horizon).is_some())
    }

    fn skip_forward(&mut self) -> Result<()> {
        if self.frags.is_empty() {
            return Ok(());
        }
        while self.inner.valid() && self.covered()? {
            self.inner.next()?;
        }
        Ok(())
    }

    fn skip_backward(&mut self) -> Result<()> {
        if self.frags.is_empty() {
            return Ok(());
        }
        while self.inner.valid() && self.covered()? {
            self.inner.prev()?;
        }
        Ok(())
    }
}

impl<I: InternalIterator> InternalIterator for RangeDelSkip<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.inner.seek_to_first()?;
        self.skip_forward()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.inner.seek_to_last()?;
        self.skip_backward()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.inner.seek(target)?;
        self.skip_forward()
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.inner.seek_for_prev(target)?;
        self.skip_backward()
    }
    fn next(&mut self) -> Result<()> {
        self.inner.next()?;
        self.skip_forward()
    }
    fn prev(&mut self) -> Result<()> {
        self.inner.prev()?;
        self.skip_backward()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(s: &str, e: &str, seqs: &[SeqNum]) -> Fragment {
        Fragment { start: s.into(), end: e.into(), seqs: seqs.to_vec() }
    }

    #[test]
    fn overlapping_tombstones_fragment_into_disjoint_pieces() {
        let f = Fragments::new([
            (&b"a"[..], &b"e"[..], 5),
            (&b"c"[..], &b"g"[..], 7),
            (&b"x"[..], &b"x"[..], 9),
            (&b"e"[..], &b"f"[..], 5),
        ]);
        assert_eq!(f.fragments(), &[frag("a", "c", &[5]), frag("c", "f", &[7, 5]), frag("f", "g", &[7])]);
        assert_eq!(f.max_covering(b"a", 100), Some(5));
        assert_eq!(f.max_covering(b"d", 100), Some(7));
        assert_eq!(f.max_covering(b"d", 6), Some(5));
        assert_eq!(f.max_covering(b"d", 4), None);
        assert_eq!(f.max_covering(b"g", 100), None, "end is exclusive");
        assert_eq!(f.max_covering(b"0", 100), None);
        assert!(Fragments::new([(&b"b"[..], &b"a"[..], 1)]).is_empty(), "start >= end is empty");
    }

    #[test]
    fn collapse_keeps_what_a_snapshot_needs_and_clip_cuts() {
        let f =
            Fragments::new([(&b"a"[..], &b"m"[..], 3), (&b"a"[..], &b"m"[..], 5), (&b"a"[..], &b"m"[..], 9)]);
        let (kept, removed) = f.collapse(6, |_, _| false);
        assert_eq!((kept.fragments(), removed), (&[frag("a", "m", &[9, 5])][..], 1));
        let (kept, removed) = f.collapse(6, |_, _| true);
        assert_eq!((kept.fragments(), removed), (&[frag("a", "m", &[9])][..], 2));
        let c = kept.clipped(Some(b"c"), Some(b"d\0"));
        assert_eq!(c, vec![RangeTombstone { start: b"c".to_vec(), end: b"d\0".to_vec(), seq: 9 }]);
        assert!(kept.clipped(Some(b"m"), None).is_empty());
        assert_eq!(inclusive_end(&successor(b"d")), b"d");
        assert_eq!(inclusive_end(b"d"), b"d");
    }

    #[test]
    fn block_round_trips_and_damage_is_corruption_never_a_panic() {
        let tombs = vec![
            RangeTombstone { start: b"a".to_vec(), end: b"b".to_vec(), seq: 1 },
            RangeTombstone { start: vec![], end: vec![0; 300], seq: MAX_SEQ },
        ];
        let enc = encode_block(&tombs);
        assert_eq!(decode_block(&enc).unwrap(), tombs);
        for n in 0..enc.len() {
            assert!(decode_block(&enc[..n]).unwrap_err().is_corruption());
        }
        for i in 0..enc.len() {
            for x in [1u8, 0x80, 0xff] {
                let mut d = enc.clone();
                d[i] ^= x;
                let _ = decode_block(&d);
            }
        }
        let empty_range =
            encode_block(&[RangeTombstone { start: b"b".to_vec(), end: b"b".to_vec(), seq: 1 }]);
        assert!(decode_block(&empty_range).is_err());
    }
}
