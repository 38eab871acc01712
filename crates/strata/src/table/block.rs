//! Data and index blocks: prefix-compressed sorted entries with restart points.
//!
//! Payload layout: entries `varint32 shared | varint32 non_shared |
//! varint32 value_len | key[shared..] | value`, then `u32 LE` restart offsets
//! and a `u32 LE` restart count. The key at a restart point is stored whole
//! (`shared == 0`), so seeks binary-search restart keys without decoding.

use std::cmp::Ordering;
use std::ops::Deref;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::compare_internal;
use crate::util::coding::{decode_fixed32, decode_varint32, put_fixed32, put_varint32};
use crate::vfs::FileMap;

/// Accumulates sorted entries into a block payload.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    interval: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// A builder placing a restart point every `interval` entries (0 acts as 1).
    pub fn new(interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            interval: interval.max(1),
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Appends an entry. Keys must arrive in increasing order and the payload
    /// must stay below `u32::MAX` bytes (the table builder enforces both).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.interval {
            self.last_key.iter().zip(key).take_while(|(a, b)| a == b).count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.entries += 1;
    }

    /// Payload size if the block were finished now.
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Entries added since the last reset.
    pub fn num_entries(&self) -> usize {
        self.entries
    }

    /// True if no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The last key added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Appends the restart array and returns the finished payload; call
    /// [`BlockBuilder::reset`] before adding again.
    pub fn finish(&mut self) -> &[u8] {
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        put_fixed32(&mut self.buf, self.restarts.len() as u32);
        &self.buf
    }

    /// Empties the builder for the next block.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
    }
}

/// A decoded (decompressed, checksum-verified, restart array validated) block,
/// as held by the block cache and by open tables (index block). A block of
/// an uncompressed table read through a memory map borrows the map instead
/// (its checksum verified only when the read asks, see docs/FORMAT.md).
#[derive(Debug)]
pub struct Block {
    data: BlockData,
    /// Offset of the restart array = end of the entries.
    restarts_offset: usize,
    num_restarts: usize,
}

/// A block's payload bytes.
#[derive(Debug)]
enum BlockData {
    /// Read with `pread` or decompressed.
    Owned(Vec<u8>),
    /// In place in a mapped table file.
    /// INVARIANT: `start..end` lies inside `map` (checked by [`Block::mapped`]).
    Mapped { map: Arc<FileMap>, start: usize, end: usize },
}

impl Deref for BlockData {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            BlockData::Owned(v) => v,
            BlockData::Mapped { map, start, end } => map.bytes().get(*start..*end).unwrap_or(&[]),
        }
    }
}

/// Where one entry's parts lie inside the block.
#[derive(Debug, Clone, Copy)]
struct Entry {
    shared: usize,
    key_start: usize,
    key_end: usize,
    value_end: usize,
}

impl Block {
    /// Wraps a block payload, validating the restart array (count, bounds,
    /// order); anything malformed is `Corruption`.
    pub fn new(data: Vec<u8>) -> Result<Block> {
        Self::from_data(BlockData::Owned(data))
    }

    /// The payload `start..end` of a mapped table file, served in place.
    pub(crate) fn mapped(map: Arc<FileMap>, start: usize, end: usize) -> Result<Block> {
        if map.bytes().get(start..end).is_none() {
            return Err(Error::corruption("block: outside the mapped file"));
        }
        Self::from_data(BlockData::Mapped { map, start, end })
    }

    /// True if the block's bytes are a mapped file's.
    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.data, BlockData::Mapped { .. })
    }

    fn from_data(data: BlockData) -> Result<Block> {
        let bad = |what: &str| Error::corruption(format!("block: {what}"));
        let n = data
            .len()
            .checked_sub(4)
            .and_then(|p| decode_fixed32(data.get(p..)?))
            .ok_or_else(|| bad("too short"))? as usize;
        let restarts_offset = n
            .checked_add(1)
            .and_then(|m| m.checked_mul(4))
            .and_then(|len| data.len().checked_sub(len))
            .filter(|_| n >= 1)
            .ok_or_else(|| bad("bad restart count"))?;
        let block = Block { data, restarts_offset, num_restarts: n };
        let mut prev = None;
        for i in 0..n {
            let r = decode_fixed32(block.data.get(restarts_offset + 4 * i..).unwrap_or(&[]))
                .ok_or_else(|| bad("bad restart array"))? as usize;
            let ok = match prev {
                None => r == 0,
                Some(p) => p < r && r < restarts_offset,
            };
            if !ok {
                return Err(bad("restart points out of order or bounds"));
            }
            prev = Some(r);
        }
        Ok(block)
    }

    /// Bytes this block occupies in memory (the cache charge).
    pub fn memory_size(&self) -> usize {
        let own = match &self.data {
            BlockData::Owned(v) => v.capacity(),
            BlockData::Mapped { .. } => 0,
        };
        own + std::mem::size_of::<Block>()
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// A bidirectional iterator over the block's entries.
    pub fn iter(self: &Arc<Self>) -> BlockIter {
        self.iter_reusing(Vec::new())
    }

    /// [`Self::iter`], decoding keys into `buf` (a previous iterator's, see
    /// [`BlockIter::into_key_buffer`]): moving to the next block of a table
    /// then allocates nothing.
    pub fn iter_reusing(self: &Arc<Self>, mut buf: Vec<u8>) -> BlockIter {
        buf.clear();
        BlockIter {
            block: Arc::clone(self),
            current: self.restarts_offset,
            next: self.restarts_offset,
            restart_index: self.num_restarts,
            key: buf,
            value: (0, 0),
        }
    }

    /// Offset of restart point `i` (validated by [`Block::new`]).
    fn restart_point(&self, i: usize) -> usize {
        self.data
            .get(self.restarts_offset + 4 * i..)
            .and_then(decode_fixed32)
            .map_or(self.restarts_offset, |r| r as usize)
    }

    /// Decodes the entry header at `offset` and bounds-checks its parts.
    #[inline]
    fn decode_entry(&self, offset: usize) -> Result<Entry> {
        let bad = || Error::corruption("block: malformed entry");
        let region = self.data.get(offset..self.restarts_offset).ok_or_else(bad)?;
        // Fast path (LevelDB's too): all three lengths below 128 take a byte each.
        if let [shared, non_shared, value_len, ..] = *region {
            if (shared | non_shared | value_len) < 0x80 {
                let key_start = offset + 3;
                let key_end = key_start + non_shared as usize;
                let value_end = key_end + value_len as usize;
                if value_end > self.restarts_offset {
                    return Err(bad());
                }
                return Ok(Entry { shared: shared as usize, key_start, key_end, value_end });
            }
        }
        let (shared, a) = decode_varint32(region).ok_or_else(bad)?;
        let (non_shared, b) = decode_varint32(region.get(a..).ok_or_else(bad)?).ok_or_else(bad)?;
        let (value_len, c) = decode_varint32(region.get(a + b..).ok_or_else(bad)?).ok_or_else(bad)?;
        let key_start = offset + a + b + c;
        let key_end = key_start.checked_add(non_shared as usize).ok_or_else(bad)?;
        let value_end =
            key_end.checked_add(value_len as usize).filter(|&e| e <= self.restarts_offset).ok_or_else(bad)?;
        Ok(Entry { shared: shared as usize, key_start, key_end, value_end })
    }

    /// The whole key stored at restart point `i`.
    fn restart_key(&self, i: usize) -> Result<&[u8]> {
        let e = self.decode_entry(self.restart_point(i))?;
        if e.shared != 0 {
            return Err(Error::corruption("block: restart entry shares a prefix"));
        }
        Ok(self.data.get(e.key_start..e.key_end).unwrap_or(&[]))
    }

    /// Index of the last restart point whose key is `< target` (0 if none).
    fn find_restart(&self, target: &[u8]) -> Result<usize> {
        let (mut left, mut right) = (0, self.num_restarts - 1);
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            if compare_internal(self.restart_key(mid)?, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        Ok(left)
    }

    /// Point lookup without an iterator: finds the first entry with key `>= target`,
    /// leaves its key in `key_buf` (reused across calls, so no allocation once
    /// warm) and returns its value.
    pub(crate) fn seek_ge<'a>(&'a self, target: &[u8], key_buf: &mut Vec<u8>) -> Result<Option<&'a [u8]>> {
        Ok(self.seek_ge_range(target, key_buf)?.map(|(start, end)| self.bytes(start, end).unwrap_or(&[])))
    }

    /// The bytes `start..end` of the block's payload, if it holds them.
    #[inline]
    pub(crate) fn bytes(&self, start: usize, end: usize) -> Option<&[u8]> {
        self.data.get(start..end)
    }

    /// [`Self::seek_ge`] returning where the value lies in the block (for
    /// [`Self::bytes`]), so a reader can keep the block instead of a copy.
    pub(crate) fn seek_ge_range(
        &self,
        target: &[u8],
        key_buf: &mut Vec<u8>,
    ) -> Result<Option<(usize, usize)>> {
        if self.restarts_offset == 0 {
            return Ok(None);
        }
        let mut offset = self.restart_point(self.find_restart(target)?);
        key_buf.clear();
        while offset < self.restarts_offset {
            let e = self.decode_entry(offset)?;
            if e.shared > key_buf.len() {
                return Err(Error::corruption("block: shared prefix longer than previous key"));
            }
            key_buf.truncate(e.shared);
            key_buf.extend_from_slice(self.data.get(e.key_start..e.key_end).unwrap_or(&[]));
            if compare_internal(key_buf, target) != Ordering::Less {
                return Ok(Some((e.key_end, e.value_end)));
            }
            offset = e.value_end;
        }
        Ok(None)
    }
}

/// A bidirectional cursor over one block; owns a reference to it.
#[derive(Debug)]
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry; `restarts_offset` when invalid.
    current: usize,
    /// Offset of the entry after the current one.
    next: usize,
    /// Restart interval containing `current`.
    restart_index: usize,
    key: Vec<u8>,
    value: (usize, usize),
}

impl BlockIter {
    /// The buffer keys are decoded into, for the next block's iterator.
    pub fn into_key_buffer(self) -> Vec<u8> {
        self.key
    }

    /// Decodes keys into `buf` from now on (its bytes are dropped): an
    /// iterator that is not positioned keeps its place.
    pub(crate) fn reuse_key_buffer(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        buf.extend_from_slice(&self.key);
        self.key = buf;
    }

    fn invalidate(&mut self) {
        self.current = self.block.restarts_offset;
        self.next = self.block.restarts_offset;
        self.restart_index = self.block.num_restarts;
        self.key.clear();
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        self.next = self.block.restart_point(i);
    }

    /// Decodes the entry at `self.next`; false at the end of the entries.
    fn parse_next(&mut self) -> Result<bool> {
        self.current = self.next;
        if self.current >= self.block.restarts_offset {
            self.invalidate();
            return Ok(false);
        }
        let e = match self.block.decode_entry(self.current) {
            Ok(e) if e.shared <= self.key.len() => e,
            Ok(_) => {
                self.invalidate();
                return Err(Error::corruption("block: shared prefix longer than previous key"));
            }
            Err(err) => {
                self.invalidate();
                return Err(err);
            }
        };
        self.key.truncate(e.shared);
        self.key.extend_from_slice(self.block.data.get(e.key_start..e.key_end).unwrap_or(&[]));
        self.value = (e.key_end, e.value_end);
        self.next = e.value_end;
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
        Ok(true)
    }

    fn guard<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.invalidate();
        }
        r
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.current < self.block.restarts_offset
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.seek_to_restart(0);
        self.parse_next().map(drop)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.seek_to_restart(self.block.num_restarts - 1);
        while self.parse_next()? && self.next < self.block.restarts_offset {}
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.block.find_restart(target);
        let i = self.guard(r)?;
        self.seek_to_restart(i);
        while self.parse_next()? {
            if compare_internal(&self.key, target) != Ordering::Less {
                break;
            }
        }
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.seek(target)?;
        if !self.valid() {
            self.seek_to_last()
        } else if compare_internal(&self.key, target) == Ordering::Greater {
            self.prev()
        } else {
            Ok(())
        }
    }

    fn next(&mut self) -> Result<()> {
        debug_assert!(self.valid());
        self.parse_next().map(drop)
    }

    fn prev(&mut self) -> Result<()> {
        debug_assert!(self.valid());
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.invalidate();
                return Ok(());
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        while self.parse_next()? && self.next < original {}
        Ok(())
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        self.block.data.get(self.value.0..self.value.1).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        assert_eq!(b.num_entries(), entries.len());
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    fn random_entries(rng: &mut SmallRng, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut keys: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let len = rng.gen_range(0..12);
                let user: Vec<u8> = (0..len).map(|_| rng.gen_range(b'a'..b'e')).collect();
                make_internal_key(&user, rng.gen_range(0..100), ValueKind::Put)
            })
            .collect();
        keys.sort_by(|a, b| compare_internal(a, b));
        keys.dedup();
        keys.into_iter()
            .map(|k| {
                let v = vec![rng.gen::<u8>(); rng.gen_range(0..20)];
                (k, v)
            })
            .collect()
    }

    fn check_block(entries: &[(Vec<u8>, Vec<u8>)], interval: usize, rng: &mut SmallRng) {
        let block = build(entries, interval);
        let mut it = block.iter();
        it.seek_to_first().unwrap();
        for (k, v) in entries {
            assert!(it.valid());
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.next().unwrap();
        }
        assert!(!it.valid());
        it.seek_to_last().unwrap();
        for (k, v) in entries.iter().rev() {
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.prev().unwrap();
        }
        assert!(!it.valid());
        let mut buf = Vec::new();
        for _ in 0..50 {
            let target = make_internal_key(
                &(0..rng.gen_range(0..12)).map(|_| rng.gen_range(b'a'..b'f')).collect::<Vec<_>>(),
                rng.gen_range(0..100),
                ValueKind::Put,
            );
            let ge = entries.iter().position(|(k, _)| compare_internal(k, &target) != Ordering::Less);
            it.seek(&target).unwrap();
            let got = block.seek_ge(&target, &mut buf).unwrap();
            match ge {
                Some(i) => {
                    assert_eq!(it.key(), &entries[i].0[..]);
                    assert_eq!(got, Some(&entries[i].1[..]));
                    assert_eq!(buf, entries[i].0);
                    // Step both ways from a seek position.
                    if i > 0 {
                        it.prev().unwrap();
                        assert_eq!(it.key(), &entries[i - 1].0[..]);
                        it.next().unwrap();
                    }
                    it.next().unwrap();
                    assert_eq!(it.valid(), i + 1 < entries.len());
                }
                None => {
                    assert!(!it.valid());
                    assert_eq!(got, None);
                }
            }
            let le = entries.iter().rposition(|(k, _)| compare_internal(k, &target) != Ordering::Greater);
            it.seek_for_prev(&target).unwrap();
            match le {
                Some(i) => assert_eq!(it.key(), &entries[i].0[..]),
                None => assert!(!it.valid()),
            }
        }
    }

    #[test]
    fn random_round_trips_for_many_intervals() {
        let mut rng = SmallRng::seed_from_u64(7);
        for interval in [0, 1, 2, 3, 16, 1000] {
            for n in [0, 1, 2, 15, 16, 17, 200] {
                let entries = random_entries(&mut rng, n);
                check_block(&entries, interval, &mut rng);
            }
        }
    }

    #[test]
    fn empty_block() {
        let block = build(&[], 16);
        let mut it = block.iter();
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        it.seek_to_last().unwrap();
        assert!(!it.valid());
        it.seek(b"anything").unwrap();
        assert!(!it.valid());
        it.seek_for_prev(b"anything").unwrap();
        assert!(!it.valid());
        assert_eq!(block.seek_ge(b"x", &mut Vec::new()).unwrap(), None);
    }

    #[test]
    fn malformed_blocks_are_corruption() {
        for data in
            [vec![], vec![1, 0, 0], vec![0, 0, 0, 0], vec![255, 255, 255, 255], vec![0, 0, 0, 0, 2, 0, 0, 0]]
        {
            assert!(Block::new(data).unwrap_err().is_corruption());
        }
        // Restart points out of order.
        let mut b = BlockBuilder::new(1);
        for k in [b"a", b"b", b"c"] {
            b.add(&make_internal_key(k, 1, ValueKind::Put), b"v");
        }
        let good = b.finish().to_vec();
        let n = good.len();
        let mut bad = good.clone();
        bad.swap(n - 12, n - 8);
        assert!(Block::new(bad).unwrap_err().is_corruption());
        // A one-byte value length that runs into the restart array (the
        // one-byte header fast path checks it like the varint path).
        let mut d = good.clone();
        d[2] = 0x7f;
        let block = Block::new(d).unwrap();
        assert!(block.seek_ge(b"a", &mut Vec::new()).unwrap_err().is_corruption());
        // Every single-byte change of a valid block: never a panic.
        for i in 0..n {
            for x in [0u8, 0x7f, 0x80, 0xff] {
                let mut d = good.clone();
                d[i] = x;
                if let Ok(block) = Block::new(d) {
                    let block = Arc::new(block);
                    let mut it = block.iter();
                    let mut steps = 0;
                    if it.seek_to_first().is_ok() {
                        while it.valid() && it.next().is_ok() && steps < 10 {
                            steps += 1;
                        }
                    }
                    if it.seek_to_last().is_ok() {
                        while it.valid() && it.prev().is_ok() && steps < 20 {
                            steps += 1;
                        }
                    }
                    let _ = it.seek(b"b\x01\0\0\0\0\0\0\0");
                    let _ = it.seek_for_prev(b"b\x01\0\0\0\0\0\0\0");
                    let _ = block.seek_ge(b"c", &mut Vec::new());
                }
            }
        }
    }
}
