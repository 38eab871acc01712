//! Merges several sorted cursors into one. The valid children sit in a
//! binary heap with the current one on top (RocksDB's merger; LevelDB scans
//! every child on each step): a step compares only the moved child against
//! the heap below it, two compares per level and none more once it stays on
//! top, which is the common case in a scan where one level holds most keys.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
use crate::key::compare_internal;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A bidirectional merge of internal iterators. Equal keys (same user key and
/// sequence) cannot occur across sources; ties are still broken by child
/// order (the first child forward, the last in reverse) so the order is
/// total.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// Indices of the children, smallest key on top going forward, largest
    /// going in reverse.
    /// INVARIANT: holds exactly the valid children, each once, in heap order
    /// for `direction`; every child not in it is invalid.
    heap: Vec<usize>,
    direction: Direction,
}

impl MergingIterator {
    /// Merges `children`; the result is unpositioned until a seek.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        let heap = Vec::with_capacity(children.len());
        MergingIterator { children, heap, direction: Direction::Forward }
    }

    /// Whether child `a` comes out before child `b` in this direction.
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        let o = compare_internal(self.children[a].key(), self.children[b].key());
        match self.direction {
            Direction::Forward => o == Ordering::Less || (o == Ordering::Equal && a < b),
            Direction::Reverse => o == Ordering::Greater || (o == Ordering::Equal && a > b),
        }
    }

    /// Restores heap order below slot `i` after its child moved away from
    /// the top.
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                return;
            }
            let right = left + 1;
            let first =
                if right < n && self.before(self.heap[right], self.heap[left]) { right } else { left };
            if !self.before(self.heap[first], self.heap[i]) {
                return;
            }
            self.heap.swap(i, first);
            i = first;
        }
    }

    /// Rebuilds the heap from every valid child, for `direction`.
    fn rebuild(&mut self, direction: Direction) {
        self.direction = direction;
        self.heap.clear();
        self.heap.extend((0..self.children.len()).filter(|&i| self.children[i].valid()));
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// After the top child moved one step: back into order, or out of the
    /// heap if it ran off its end.
    fn settle_top(&mut self) {
        if self.children[self.heap[0]].valid() {
            self.sift_down(0);
        } else {
            self.heap.swap_remove(0);
            self.sift_down(0);
        }
    }

    /// Moves the top child one step with `step`; an error leaves the merge
    /// unpositioned (a child's position is unknown after it fails).
    fn step_top(&mut self, step: fn(&mut dyn InternalIterator) -> Result<()>) -> Result<()> {
        let top = self.heap[0];
        if let Err(e) = step(self.children[top].as_mut()) {
            self.heap.clear();
            return Err(e);
        }
        self.settle_top();
        Ok(())
    }

    /// Puts every child but the top one just past (`forward`) or just before
    /// the current key, for a change of direction.
    fn reposition_others(&mut self, forward: bool) -> Result<()> {
        let cur = self.heap[0];
        let key = self.children[cur].key().to_vec();
        for (i, c) in self.children.iter_mut().enumerate() {
            if i == cur {
                continue;
            }
            if forward {
                c.seek(&key)?;
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.next()?;
                }
            } else {
                c.seek_for_prev(&key)?;
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.prev()?;
                }
            }
        }
        Ok(())
    }

    /// Positions every child with `f`, then orders them for `direction`.
    fn position_all(
        &mut self,
        direction: Direction,
        mut f: impl FnMut(&mut dyn InternalIterator) -> Result<()>,
    ) -> Result<()> {
        self.heap.clear();
        for c in &mut self.children {
            f(c.as_mut())?;
        }
        self.rebuild(direction);
        Ok(())
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.position_all(Direction::Forward, |c| c.seek_to_first())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.position_all(Direction::Reverse, |c| c.seek_to_last())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.position_all(Direction::Forward, |c| c.seek(target))
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.position_all(Direction::Reverse, |c| c.seek_for_prev(target))
    }

    fn next(&mut self) -> Result<()> {
        if self.heap.is_empty() {
            return Ok(());
        }
        if self.direction != Direction::Forward {
            let top = self.heap[0];
            if let Err(e) = self.reposition_others(true).and_then(|()| self.children[top].next()) {
                self.heap.clear();
                return Err(e);
            }
            self.rebuild(Direction::Forward);
            return Ok(());
        }
        self.step_top(|c| c.next())
    }

    fn prev(&mut self) -> Result<()> {
        if self.heap.is_empty() {
            return Ok(());
        }
        if self.direction != Direction::Reverse {
            let top = self.heap[0];
            if let Err(e) = self.reposition_others(false).and_then(|()| self.children[top].prev()) {
                self.heap.clear();
                return Err(e);
            }
            self.rebuild(Direction::Reverse);
            return Ok(());
        }
        self.step_top(|c| c.prev())
    }

    fn key(&self) -> &[u8] {
        match self.heap.first() {
            Some(&i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.heap.first() {
            Some(&i) => self.children[i].value(),
            None => &[],
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    /// A cursor over a sorted vector, for tests of the composite iterators.
    pub(crate) struct VecIter {
        items: Vec<(Vec<u8>, Vec<u8>)>,
        pos: Option<usize>,
    }

    impl VecIter {
        pub(crate) fn new(mut items: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
            items.sort_by(|a, b| compare_internal(&a.0, &b.0));
            VecIter { items, pos: None }
        }
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos.is_some()
        }
        fn seek_to_first(&mut self) -> Result<()> {
            self.pos = if self.items.is_empty() { None } else { Some(0) };
            Ok(())
        }
        fn seek_to_last(&mut self) -> Result<()> {
            self.pos = self.items.len().checked_sub(1);
            Ok(())
        }
        fn seek(&mut self, t: &[u8]) -> Result<()> {
            let i = self.items.partition_point(|(k, _)| compare_internal(k, t) == Ordering::Less);
            self.pos = (i < self.items.len()).then_some(i);
            Ok(())
        }
        fn seek_for_prev(&mut self, t: &[u8]) -> Result<()> {
            let i = self.items.partition_point(|(k, _)| compare_internal(k, t) != Ordering::Greater);
            self.pos = i.checked_sub(1);
            Ok(())
        }
        fn next(&mut self) -> Result<()> {
            self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.items.len());
            Ok(())
        }
        fn prev(&mut self) -> Result<()> {
            self.pos = self.pos.and_then(|p| p.checked_sub(1));
            Ok(())
        }
        fn key(&self) -> &[u8] {
            self.pos.map(|p| self.items[p].0.as_slice()).unwrap_or(&[])
        }
        fn value(&self) -> &[u8] {
            self.pos.map(|p| self.items[p].1.as_slice()).unwrap_or(&[])
        }
    }

    #[test]
    fn merge_matches_sorted_union_both_ways() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut all = Vec::new();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut seq = 1;
        for _ in 0..4 {
            let mut items = Vec::new();
            for _ in 0..rng.gen_range(0..40) {
                let k = format!("k{:03}", rng.gen_range(0..60));
                items.push((make_internal_key(k.as_bytes(), seq, ValueKind::Put), vec![seq as u8]));
                seq += 1;
            }
            all.extend(items.clone());
            children.push(Box::new(VecIter::new(items)));
        }
        all.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let mut m = MergingIterator::new(children);
        m.seek_to_first().unwrap();
        let mut got = Vec::new();
        while m.valid() {
            got.push(m.key().to_vec());
            m.next().unwrap();
        }
        assert_eq!(got, all.iter().map(|x| x.0.clone()).collect::<Vec<_>>());
        // Zig-zag: forward 5, back 3, forward again must agree with the model.
        m.seek_to_first().unwrap();
        let mut pos = 0usize;
        for step in [1isize, 1, 1, 1, 1, -1, -1, -1, 1, 1, -1, 1] {
            if step > 0 {
                m.next().unwrap();
                pos += 1;
            } else {
                m.prev().unwrap();
                pos -= 1;
            }
            assert_eq!(m.key(), all[pos].0.as_slice());
        }
        m.seek_to_last().unwrap();
        assert_eq!(m.key(), all.last().unwrap().0.as_slice());
    }

    /// Drives `it` through `steps` random moves (seeks to either end, seeks
    /// and seeks-for-prev to `target(rng)`, nexts and prevs) and checks every
    /// position against `model`: the sorted internal keys `it` must yield.
    pub(crate) fn check_random_moves(
        it: &mut dyn InternalIterator,
        model: &[Vec<u8>],
        rng: &mut StdRng,
        steps: usize,
        mut target: impl FnMut(&mut StdRng) -> Vec<u8>,
        what: &str,
    ) {
        let mut pos: Option<usize> = None;
        for _ in 0..steps {
            match rng.gen_range(0..10) {
                0 => {
                    it.seek_to_first().unwrap();
                    pos = (!model.is_empty()).then_some(0);
                }
                1 => {
                    it.seek_to_last().unwrap();
                    pos = model.len().checked_sub(1);
                }
                2 | 3 => {
                    let t = target(rng);
                    it.seek(&t).unwrap();
                    let i = model.partition_point(|k| compare_internal(k, &t) == Ordering::Less);
                    pos = (i < model.len()).then_some(i);
                }
                4 => {
                    let t = target(rng);
                    it.seek_for_prev(&t).unwrap();
                    pos = model
                        .partition_point(|k| compare_internal(k, &t) != Ordering::Greater)
                        .checked_sub(1);
                }
                5..=7 => {
                    if let Some(p) = pos {
                        it.next().unwrap();
                        pos = Some(p + 1).filter(|&p| p < model.len());
                    }
                }
                _ => {
                    if let Some(p) = pos {
                        it.prev().unwrap();
                        pos = p.checked_sub(1);
                    }
                }
            }
            match pos {
                Some(p) => assert_eq!(it.key(), model[p].as_slice(), "{what}"),
                None => assert!(!it.valid(), "{what}"),
            }
        }
    }

    /// Random moves over up to 12 children (seeks, both directions, turns)
    /// agree with a position in the sorted union.
    #[test]
    fn random_moves_over_many_children_match_the_union() {
        for seed in 0..40u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut all = Vec::new();
            let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
            let mut seq = 1;
            for _ in 0..rng.gen_range(1..13) {
                let mut items = Vec::new();
                for _ in 0..rng.gen_range(0..30) {
                    let k = format!("k{:03}", rng.gen_range(0..80));
                    items.push((make_internal_key(k.as_bytes(), seq, ValueKind::Put), vec![seq as u8]));
                    seq += 1;
                }
                all.extend(items.clone());
                children.push(Box::new(VecIter::new(items)));
            }
            all.sort_by(|a, b| compare_internal(&a.0, &b.0));
            let keys: Vec<Vec<u8>> = all.iter().map(|x| x.0.clone()).collect();
            let mut m = MergingIterator::new(children);
            let target = |rng: &mut StdRng| {
                make_internal_key(format!("k{:03}", rng.gen_range(0..85)).as_bytes(), 50, ValueKind::Put)
            };
            check_random_moves(&mut m, &keys, &mut rng, 300, target, &format!("seed {seed}"));
        }
    }
}
