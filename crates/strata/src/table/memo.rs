//! What a batch of point reads (`Db::multi_get`) keeps from one key to the
//! next: the data blocks it used last, so sorted keys that land in one block
//! search the index, look the block up in the cache and decode it once.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::key::compare_internal;
use crate::table::Block;

/// Blocks remembered at once: one per table segment a batch reads in turn (a
/// run's file and the compaction-buffer files beside it), and so few that the
/// memo never holds much memory.
const SLOTS: usize = 4;

/// One remembered block: the index chose it for lookup key `lo`, and `hi` is
/// its index entry (a key `>=` every key in the block).
#[derive(Debug)]
struct Slot {
    file_id: u64,
    segment: u64,
    lo: Vec<u8>,
    hi: Vec<u8>,
    block: Arc<Block>,
}

/// The last data blocks a batch of point reads used, by table segment.
#[derive(Debug, Default)]
pub(crate) struct BlockMemo {
    slots: Vec<Slot>,
    /// The slot the next new segment replaces (round robin).
    next: usize,
}

impl BlockMemo {
    /// The block the index of segment `segment` (its start offset) of file
    /// `file_id` would choose for `lookup`, if remembered. The index picks the
    /// first entry `>= lookup`; an entry chosen for `lo` has none `>= lo`
    /// before it, so for `lo <= lookup <= hi` it is the same entry.
    pub(crate) fn find(&self, file_id: u64, segment: u64, lookup: &[u8]) -> Option<&Arc<Block>> {
        let s = self.slots.iter().find(|s| s.file_id == file_id && s.segment == segment)?;
        let inside = compare_internal(&s.lo, lookup) != Ordering::Greater
            && compare_internal(lookup, &s.hi) != Ordering::Greater;
        inside.then_some(&s.block)
    }

    /// Remembers that the index of the segment chose `block`, with index entry
    /// `index_key`, for `lookup`; replaces what was remembered for the segment.
    pub(crate) fn remember(
        &mut self,
        file_id: u64,
        segment: u64,
        lookup: &[u8],
        index_key: &[u8],
        block: &Arc<Block>,
    ) {
        let i = match self.slots.iter().position(|s| s.file_id == file_id && s.segment == segment) {
            Some(i) => i,
            None if self.slots.len() < SLOTS => {
                self.slots.push(Slot {
                    file_id,
                    segment,
                    lo: Vec::new(),
                    hi: Vec::new(),
                    block: Arc::clone(block),
                });
                self.slots.len() - 1
            }
            None => {
                let i = self.next;
                self.next = (self.next + 1) % SLOTS;
                i
            }
        };
        let s = &mut self.slots[i];
        (s.file_id, s.segment, s.block) = (file_id, segment, Arc::clone(block));
        s.lo.clear();
        s.lo.extend_from_slice(lookup);
        s.hi.clear();
        s.hi.extend_from_slice(index_key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::lookup_key;

    fn block() -> Arc<Block> {
        let mut b = crate::table::block::BlockBuilder::new(16);
        b.add(&lookup_key(b"a", 1), b"");
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    #[test]
    fn a_block_answers_only_between_its_lookup_and_its_index_entry() {
        let (b, k) = (block(), |s: &str| lookup_key(s.as_bytes(), 100));
        let mut m = BlockMemo::default();
        m.remember(1, 0, &k("c"), &k("f"), &b);
        for (key, hit) in [("b", false), ("c", true), ("d", true), ("f", true), ("g", false)] {
            assert_eq!(m.find(1, 0, &k(key)).is_some(), hit, "{key}");
        }
        assert!(m.find(2, 0, &k("d")).is_none(), "another file");
        assert!(m.find(1, 4096, &k("d")).is_none(), "another segment");
        // The same segment's next block replaces the first.
        m.remember(1, 0, &k("g"), &k("k"), &b);
        assert!(m.find(1, 0, &k("d")).is_none() && m.find(1, 0, &k("h")).is_some());
    }

    #[test]
    fn at_most_a_few_segments_are_remembered() {
        let (b, k) = (block(), |s: &str| lookup_key(s.as_bytes(), 100));
        let mut m = BlockMemo::default();
        for file in 0..10 {
            m.remember(file, 0, &k("a"), &k("z"), &b);
        }
        assert_eq!(m.slots.len(), SLOTS);
        assert!(m.find(9, 0, &k("m")).is_some() && m.find(0, 0, &k("m")).is_none());
    }
}
