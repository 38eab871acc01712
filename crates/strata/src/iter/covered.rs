//! [`SeekPastCovered`]: one source of a merge without the entries range
//! tombstones hide, passing a hidden stretch with one seek instead of a step
//! per entry where that is provably right (RocksDB's range-tombstone-aware
//! merging iterator, per child). Hiding is a property of each entry alone
//! (`k @ q` is hidden at `R` iff a tombstone `t` with `q < t <= R` covers
//! `k`), so filtering every source before the merge yields exactly the merge
//! filtered after it.
//!
//! A seek may only jump over hidden entries. The source says, for its current
//! entry, which piece of it holds that entry (a memtable, one table of a run)
//! with that piece's key span and an upper bound on its sequences
//! ([`Piece`]). If the bound is below the fragment's newest visible tombstone
//! `t`, every entry of the piece under the fragment is older than `t`, hence
//! hidden: forward, the source seeks to the end of the fragment or just past
//! the piece, whichever comes first; backward, to before the fragment's start
//! or the piece's first key, whichever comes last. Otherwise (an entry newer
//! than `t` may lie ahead) it steps.

use std::sync::Arc;

use super::InternalIterator;
use crate::error::Result;
use crate::key::{append_internal_key, parse_internal_key, SeqNum, KIND_FOR_SEEK, MAX_SEQ};
use crate::range_del::{successor, Fragments};

/// The part of a source its current entry lies in: every entry of the
/// source with a user key in `[lo, hi]` (`None`: unbounded) is in this
/// piece, and has a sequence at most `max_seq`.
pub(crate) struct Piece<'a> {
    pub(crate) max_seq: SeqNum,
    pub(crate) lo: Option<&'a [u8]>,
    pub(crate) hi: Option<&'a [u8]>,
}

/// A source that can say which [`Piece`] its current entry is in.
pub(crate) trait Pieces: InternalIterator {
    /// The piece of the current entry. Requires `valid()`.
    fn piece(&self) -> Piece<'_>;
}

/// Hidden entries stepped over before seeking: a stretch this short costs
/// less to walk than a seek (an index search, maybe a block read).
const STEPS_BEFORE_SEEK: u32 = 4;

/// `inner` without the entries a tombstone of `frags` at or below `horizon`
/// hides, in both directions; long hidden stretches are passed by seeking.
pub(crate) struct SeekPastCovered<I> {
    inner: I,
    frags: Arc<Fragments>,
    horizon: SeqNum,
    /// The fragment the last check used.
    hint: usize,
    /// A reused seek target.
    target: Vec<u8>,
}

impl<I: Pieces> SeekPastCovered<I> {
    pub(crate) fn new(inner: I, frags: Arc<Fragments>, horizon: SeqNum) -> Self {
        SeekPastCovered { inner, frags, horizon, hint: 0, target: Vec::new() }
    }

    fn skip_forward(&mut self) -> Result<()> {
        let mut stepped = 0;
        while self.inner.valid() {
            let k = parse_internal_key(self.inner.key())?;
            let Some((f, t)) = self.frags.hiding(&mut self.hint, k.user_key, k.seq, self.horizon) else {
                return Ok(());
            };
            let piece = self.inner.piece();
            if stepped < STEPS_BEFORE_SEEK || piece.max_seq >= t {
                stepped += 1;
                self.inner.next()?;
                continue;
            }
            // Every entry of the piece in [k, f.end) is older than t. The
            // target is past k: k < f.end, and k <= piece.hi < its successor.
            let past_piece = piece.hi.map(successor);
            let end = match &past_piece {
                Some(p) if p.as_slice() < f.end.as_slice() => p.as_slice(),
                _ => f.end.as_slice(),
            };
            smallest_of(&mut self.target, end);
            self.inner.seek(&self.target)?;
            stepped = 0;
        }
        Ok(())
    }

    fn skip_backward(&mut self) -> Result<()> {
        let mut stepped = 0;
        while self.inner.valid() {
            let k = parse_internal_key(self.inner.key())?;
            let Some((f, t)) = self.frags.hiding(&mut self.hint, k.user_key, k.seq, self.horizon) else {
                return Ok(());
            };
            let piece = self.inner.piece();
            if stepped < STEPS_BEFORE_SEEK || piece.max_seq >= t {
                stepped += 1;
                self.inner.prev()?;
                continue;
            }
            // Every entry of the piece in [start, k] is older than t; the
            // target sorts before all of them (and before k: start <= k),
            // and an entry equal to it is not jumped over.
            let start = match piece.lo {
                Some(lo) if lo > f.start.as_slice() => lo,
                _ => f.start.as_slice(),
            };
            smallest_of(&mut self.target, start);
            self.inner.seek_for_prev(&self.target)?;
            stepped = 0;
        }
        Ok(())
    }
}

/// Sets `buf` to the smallest internal key of `user_key`: every entry at or
/// after `user_key` sorts after it.
fn smallest_of(buf: &mut Vec<u8>, user_key: &[u8]) {
    buf.clear();
    append_internal_key(buf, user_key, MAX_SEQ, KIND_FOR_SEEK);
}

impl<I: Pieces> InternalIterator for SeekPastCovered<I> {
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
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::iter::merge::tests::{check_random_moves, VecIter};
    use crate::iter::MergingIterator;
    use crate::key::{compare_internal, make_internal_key, user_key, ValueKind};

    /// A sorted source cut into pieces by user key (like a run's tables),
    /// each with a sequence bound; counts the seeks past covered entries it
    /// is given (no other seek targets sequence `MAX_SEQ`).
    struct Pieced {
        inner: VecIter,
        /// (first user key, last user key, max sequence), in order.
        pieces: Vec<Span>,
        seeks: Arc<AtomicUsize>,
    }

    type Span = (Vec<u8>, Vec<u8>, SeqNum);

    impl Pieced {
        fn count(&self, target: &[u8]) {
            if parse_internal_key(target).unwrap().seq == MAX_SEQ {
                self.seeks.fetch_add(1, Relaxed);
            }
        }
    }

    impl Pieces for Pieced {
        fn piece(&self) -> Piece<'_> {
            let uk = user_key(self.inner.key());
            let i = self.pieces.partition_point(|p| p.1.as_slice() < uk);
            let (lo, hi, max_seq) = &self.pieces[i];
            assert!(lo.as_slice() <= uk, "an entry outside every piece");
            Piece { max_seq: *max_seq, lo: Some(lo), hi: Some(hi) }
        }
    }

    impl InternalIterator for Pieced {
        fn valid(&self) -> bool {
            self.inner.valid()
        }
        fn seek_to_first(&mut self) -> Result<()> {
            self.inner.seek_to_first()
        }
        fn seek_to_last(&mut self) -> Result<()> {
            self.inner.seek_to_last()
        }
        fn seek(&mut self, t: &[u8]) -> Result<()> {
            self.count(t);
            self.inner.seek(t)
        }
        fn seek_for_prev(&mut self, t: &[u8]) -> Result<()> {
            self.count(t);
            self.inner.seek_for_prev(t)
        }
        fn next(&mut self) -> Result<()> {
            self.inner.next()
        }
        fn prev(&mut self) -> Result<()> {
            self.inner.prev()
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
    }

    fn uk(i: u32) -> Vec<u8> {
        format!("k{i:04}").into_bytes()
    }

    /// Random sources (each cut into pieces, some with a loose sequence
    /// bound) under random wide and overlapping tombstones, each source
    /// wrapped and all merged, against the filtered sorted union: random
    /// seeks both ways and moves both ways land where the model does, and
    /// hidden stretches were passed by seeking.
    #[test]
    fn seeking_past_covered_entries_matches_stepping_over_them() {
        let mut wrapper_seeks = 0;
        for seed in 0..60 {
            let mut rng = StdRng::seed_from_u64(seed);
            let space = 400u32;
            let mut seq = 0;
            let mut tombs = Vec::new();
            let mut sources = Vec::new();
            for _ in 0..rng.gen_range(1..5) {
                let mut items = Vec::new();
                for _ in 0..rng.gen_range(0..600) {
                    seq += 1;
                    // Sometimes a wide tombstone, then refills inside it.
                    if rng.gen_bool(0.01) {
                        let a = rng.gen_range(0..space);
                        let b = a + rng.gen_range(1..space / 2);
                        tombs.push((uk(a), uk(b), seq));
                        seq += 1;
                    }
                    let k = uk(rng.gen_range(0..space));
                    items.push((make_internal_key(&k, seq, ValueKind::Put), seq.to_le_bytes().to_vec()));
                }
                sources.push(items);
            }
            // Some tombstones older than most entries, some between.
            for _ in 0..rng.gen_range(0..4) {
                let a = rng.gen_range(0..space);
                let b = a + rng.gen_range(1..space);
                tombs.push((uk(a), uk(b).into_iter().chain([b'x']).collect(), rng.gen_range(1..=seq + 1)));
            }
            let frags = Arc::new(Fragments::new(tombs.iter().map(|(a, b, s)| (&a[..], &b[..], *s))));
            let horizon = if rng.gen_bool(0.3) { rng.gen_range(1..=seq + 1) } else { MAX_SEQ };
            let hidden = |k: &[u8]| {
                let k = parse_internal_key(k).unwrap();
                frags.hiding(&mut 0, k.user_key, k.seq, horizon).is_some()
            };
            let mut model: Vec<Vec<u8>> =
                sources.iter().flatten().map(|e| e.0.clone()).filter(|k| !hidden(k)).collect();
            model.sort_by(|a, b| compare_internal(a, b));
            let seeks = Arc::new(AtomicUsize::new(0));
            let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
            for items in sources {
                let mut sorted = items.clone();
                sorted.sort_by(|a, b| compare_internal(&a.0, &b.0));
                // Cut into pieces at random user-key boundaries.
                let mut pieces: Vec<Span> = Vec::new();
                let mut i = 0;
                while i < sorted.len() {
                    let mut j = (i + rng.gen_range(1..80)).min(sorted.len());
                    while j < sorted.len() && user_key(&sorted[j].0) == user_key(&sorted[j - 1].0) {
                        j += 1;
                    }
                    let part = &sorted[i..j];
                    let max = part.iter().map(|e| parse_internal_key(&e.0).unwrap().seq).max().unwrap();
                    let slack = if rng.gen_bool(0.2) { rng.gen_range(0..50) } else { 0 };
                    let lo = user_key(&part[0].0).to_vec();
                    let hi = user_key(&part[part.len() - 1].0).to_vec();
                    pieces.push((lo, hi, max + slack));
                    i = j;
                }
                let it = Pieced { inner: VecIter::new(items), pieces, seeks: seeks.clone() };
                children.push(Box::new(SeekPastCovered::new(it, frags.clone(), horizon)));
            }
            let mut m = MergingIterator::new(children);
            let target = |rng: &mut StdRng| {
                make_internal_key(&uk(rng.gen_range(0..space + 5)), rng.gen_range(0..=seq), ValueKind::Put)
            };
            check_random_moves(&mut m, &model, &mut rng, 300, target, &format!("seed {seed}"));
            wrapper_seeks += seeks.load(Relaxed);
        }
        assert!(wrapper_seeks > 100, "{wrapper_seeks} seeks past covered entries");
    }
}
