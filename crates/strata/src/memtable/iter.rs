//! [`MemTableIter`]: a cursor over a memtable that owns a reference to it and
//! steps in O(1) by following the skip list's links.

use std::ops::Bound;
use std::sync::Arc;

use crossbeam_skiplist::{map, SkipMap};

use super::{Entry, IKey, MemTable};
use crate::error::Result;
use crate::iter::{InternalIterator, Piece, Pieces};

type Cursor = map::Entry<'static, Entry, ()>;

/// A bidirectional [`InternalIterator`] over a memtable. Entries added while
/// it is open may or may not be seen; the order is always correct.
pub struct MemTableIter {
    // Borrows `mem`'s skip list, so it is declared first: fields drop in order.
    cur: Option<Cursor>,
    mem: Arc<MemTable>,
}

impl MemTableIter {
    pub(super) fn new(mem: Arc<MemTable>) -> Self {
        MemTableIter { cur: None, mem }
    }

    /// The skip list, with a lifetime detached from `self` so that a cursor
    /// into it can be stored next to the `Arc` that keeps it alive.
    fn map(&self) -> &'static SkipMap<Entry, ()> {
        // SAFETY: the map lives in the `Arc` allocation held by `self.mem`,
        // which is never replaced and does not move when `self` moves. The
        // `'static` cursors made from it are only stored in `self.cur`, which
        // is dropped before `self.mem`, and are never handed out: `key` and
        // `value` return borrows tied to `&self`. Nothing is ever removed
        // from a memtable, so a cursor's node stays valid.
        unsafe { &*(&self.mem.map as *const SkipMap<Entry, ()>) }
    }

    fn entry(&self) -> Option<&Entry> {
        self.cur.as_ref().map(|c| c.key())
    }
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.cur = self.map().front();
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.cur = self.map().back();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.cur = self.map().lower_bound(Bound::Included(IKey::new(target)));
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.cur = self.map().upper_bound(Bound::Included(IKey::new(target)));
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if let Some(c) = &mut self.cur {
            if !c.move_next() {
                self.cur = None;
            }
        }
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        if let Some(c) = &mut self.cur {
            if !c.move_prev() {
                self.cur = None;
            }
        }
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.entry().map(Entry::ikey).unwrap_or_default()
    }

    fn value(&self) -> &[u8] {
        self.entry().map(Entry::value).unwrap_or_default()
    }
}

impl Pieces for MemTableIter {
    /// The whole memtable, bounded by its largest sequence so far.
    fn piece(&self) -> Piece<'_> {
        Piece { max_seq: self.mem.largest_seq(), lo: None, hi: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{self, ValueKind, MAX_SEQ};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::cmp::Ordering;

    /// Position of the model cursor, `None` when invalid.
    fn check(it: &MemTableIter, model: &[(Vec<u8>, Vec<u8>)], pos: Option<usize>) {
        match pos {
            Some(i) => {
                assert!(it.valid());
                assert_eq!((it.key(), it.value()), (&model[i].0[..], &model[i].1[..]));
            }
            None => assert!(!it.valid()),
        }
    }

    #[test]
    fn empty_memtable() {
        let mut it = Arc::new(MemTable::new()).iter();
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        it.seek_to_last().unwrap();
        it.seek(&key::lookup_key(b"x", MAX_SEQ)).unwrap();
        assert!(!it.valid());
        assert_eq!((it.key(), it.value()), (&b""[..], &b""[..]));
        it.next().unwrap();
        it.prev().unwrap();
        assert!(!it.valid());
    }

    #[test]
    fn both_directions_match_a_sorted_model() {
        let mut rng = SmallRng::seed_from_u64(11);
        let mem = Arc::new(MemTable::new());
        let mut model = Vec::new();
        for seq in 1..=600u64 {
            let user: Vec<u8> = format!("k{:03}", rng.gen_range(0..150)).into_bytes();
            let kind = if rng.gen_bool(0.2) { ValueKind::Delete } else { ValueKind::Put };
            let value = if kind == ValueKind::Put { seq.to_string().into_bytes() } else { Vec::new() };
            mem.add(seq, kind, &user, &value);
            model.push((key::make_internal_key(&user, seq, kind), value));
        }
        model.sort_by(|a, b| key::compare_internal(&a.0, &b.0));
        let mut it = mem.iter();
        let mut pos: Option<usize> = None;
        for _ in 0..3000 {
            match rng.gen_range(0..6) {
                0 => {
                    it.seek_to_first().unwrap();
                    pos = Some(0);
                }
                1 => {
                    it.seek_to_last().unwrap();
                    pos = Some(model.len() - 1);
                }
                op @ (2 | 3) => {
                    let target = key::lookup_key(
                        format!("k{:03}", rng.gen_range(0..160)).as_bytes(),
                        rng.gen_range(0..700),
                    );
                    let ge =
                        model.partition_point(|e| key::compare_internal(&e.0, &target) == Ordering::Less);
                    if op == 2 {
                        it.seek(&target).unwrap();
                        pos = (ge < model.len()).then_some(ge);
                    } else {
                        it.seek_for_prev(&target).unwrap();
                        let gt = model
                            .partition_point(|e| key::compare_internal(&e.0, &target) != Ordering::Greater);
                        pos = gt.checked_sub(1);
                    }
                }
                4 if pos.is_some() => {
                    it.next().unwrap();
                    pos = pos.map(|p| p + 1).filter(|&p| p < model.len());
                }
                5 if pos.is_some() => {
                    it.prev().unwrap();
                    pos = pos.and_then(|p| p.checked_sub(1));
                }
                _ => {}
            }
            check(&it, &model, pos);
        }
        // Full scans both ways.
        it.seek_to_first().unwrap();
        for i in 0..model.len() {
            check(&it, &model, Some(i));
            it.next().unwrap();
        }
        assert!(!it.valid());
        it.seek_to_last().unwrap();
        for i in (0..model.len()).rev() {
            check(&it, &model, Some(i));
            it.prev().unwrap();
        }
        assert!(!it.valid());
    }

    #[test]
    fn iterator_keeps_the_memtable_alive() {
        let mem = Arc::new(MemTable::new());
        mem.add(1, ValueKind::Put, b"k", b"v");
        let mut it = mem.iter();
        drop(mem);
        it.seek_to_first().unwrap();
        assert_eq!(it.value(), b"v");
        let moved = Box::new(it);
        assert_eq!(moved.value(), b"v");
    }
}
