//! Merges several sorted cursors into one (LevelDB's merger). Children are few
//! (memtables + L0 runs + one run per level), so a linear scan for the smallest
//! beats a heap's bookkeeping and keeps direction switches simple.

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
/// sequence) cannot occur across sources, so ties are broken by child order.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
}

impl MergingIterator {
    /// Merges `children`; the result is unpositioned until a seek.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator { children, current: None, direction: Direction::Forward }
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if compare_internal(c.key(), self.children[b].key()) != Ordering::Less => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }

    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate().rev() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if compare_internal(c.key(), self.children[b].key()) != Ordering::Greater => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        for c in &mut self.children {
            c.seek_to_first()?;
        }
        self.direction = Direction::Forward;
        self.find_smallest();
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        for c in &mut self.children {
            c.seek_to_last()?;
        }
        self.direction = Direction::Reverse;
        self.find_largest();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for c in &mut self.children {
            c.seek(target)?;
        }
        self.direction = Direction::Forward;
        self.find_smallest();
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        for c in &mut self.children {
            c.seek_for_prev(target)?;
        }
        self.direction = Direction::Reverse;
        self.find_largest();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(cur) = self.current else { return Ok(()) };
        if self.direction != Direction::Forward {
            // Put every other child just after the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key)?;
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.next()?;
                }
            }
            self.direction = Direction::Forward;
        }
        self.children[cur].next()?;
        self.find_smallest();
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        let Some(cur) = self.current else { return Ok(()) };
        if self.direction != Direction::Reverse {
            // Put every other child just before the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek_for_prev(&key)?;
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.prev()?;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.children[cur].prev()?;
        self.find_largest();
        Ok(())
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].value(),
            None => &[],
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
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
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
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
}
