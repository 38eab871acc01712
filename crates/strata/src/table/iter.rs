//! The two-level table iterator: an index-block cursor picks the data block, a
//! block cursor walks it. Data blocks come through the block cache. A DTable
//! of several segments is a merge of one such cursor per segment.

use std::sync::Arc;

use crate::error::Result;
use crate::iter::{InternalIterator, MergingIterator};
use crate::table::block::BlockIter;
use crate::table::format::BlockHandle;
use crate::table::reader::{BlockReadOptions, Readahead, Table};

/// A bidirectional iterator over one table; owns a reference to it.
pub struct TableIter {
    inner: Inner,
}

// `One` is the common case and lives inline: boxing it would allocate each
// time a run's iterator moves to another table.
#[allow(clippy::large_enum_variant)]
enum Inner {
    One(SegmentIter),
    /// Segments hold disjoint (key, sequence) pairs, so a plain merge is exact.
    Many(MergingIterator),
}

impl std::fmt::Debug for TableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::One(s) => s.fmt(f),
            Inner::Many(_) => f.write_str("TableIter(segments)"),
        }
    }
}

impl Table {
    /// A two-level iterator over the whole table.
    pub fn iter(self: &Arc<Self>, opts: BlockReadOptions) -> TableIter {
        TableIter::new(Arc::clone(self), opts)
    }
}

impl TableIter {
    pub(crate) fn new(table: Arc<Table>, opts: BlockReadOptions) -> Self {
        Self::with_window(table, opts, Readahead::default())
    }

    /// An iterator whose forward reads come from `window` where it holds the
    /// block (read ahead by a compaction's read stage; one-segment tables only,
    /// a DTable reads each segment on its own).
    pub(crate) fn with_window(table: Arc<Table>, opts: BlockReadOptions, window: Readahead) -> Self {
        let n = table.num_segments();
        let inner = if n == 1 {
            Inner::One(SegmentIter::new(table, 0, opts, window))
        } else {
            let children = (0..n)
                .map(|i| {
                    Box::new(SegmentIter::new(Arc::clone(&table), i, opts, Readahead::default()))
                        as Box<dyn InternalIterator>
                })
                .collect();
            Inner::Many(MergingIterator::new(children))
        };
        TableIter { inner }
    }

    /// An iterator over only the segments `segs` (indexes into
    /// [`Table::segments`]) of `table`: those a prefix scan may find keys in.
    /// With none it is always invalid and reads nothing.
    pub(crate) fn over_segments(table: Arc<Table>, opts: BlockReadOptions, segs: &[usize]) -> Self {
        let inner = match segs {
            [only] => Inner::One(SegmentIter::new(table, *only, opts, Readahead::default())),
            _ => Inner::Many(MergingIterator::new(
                segs.iter()
                    .map(|&i| {
                        Box::new(SegmentIter::new(Arc::clone(&table), i, opts, Readahead::default()))
                            as Box<dyn InternalIterator>
                    })
                    .collect(),
            )),
        };
        TableIter { inner }
    }

    /// This iterator's key buffers (index and data cursor), for the next
    /// table's iterator of the same run ([`Self::reusing`]).
    pub(crate) fn into_key_buffers(self) -> Option<(Vec<u8>, Vec<u8>)> {
        match self.inner {
            Inner::One(s) => {
                let data = s.data.map_or(s.spare_key, BlockIter::into_key_buffer);
                Some((s.index.into_key_buffer(), data))
            }
            Inner::Many(_) => None,
        }
    }

    /// Decodes keys into `buffers` (a previous table's, see
    /// [`Self::into_key_buffers`]): a seek that moves to another table of a
    /// run then allocates nothing.
    pub(crate) fn reusing(mut self, buffers: Option<(Vec<u8>, Vec<u8>)>) -> Self {
        if let (Inner::One(s), Some((index, data))) = (&mut self.inner, buffers) {
            s.index.reuse_key_buffer(index);
            s.spare_key = data;
        }
        self
    }

    fn it(&self) -> &dyn InternalIterator {
        match &self.inner {
            Inner::One(s) => s,
            Inner::Many(m) => m,
        }
    }

    fn it_mut(&mut self) -> &mut dyn InternalIterator {
        match &mut self.inner {
            Inner::One(s) => s,
            Inner::Many(m) => m,
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.it().valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.it_mut().seek_to_first()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.it_mut().seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.it_mut().seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.it_mut().seek_for_prev(target)
    }
    fn next(&mut self) -> Result<()> {
        self.it_mut().next()
    }
    fn prev(&mut self) -> Result<()> {
        self.it_mut().prev()
    }
    fn key(&self) -> &[u8] {
        self.it().key()
    }
    fn value(&self) -> &[u8] {
        self.it().value()
    }
}

/// The two-level cursor over one segment.
#[derive(Debug)]
struct SegmentIter {
    table: Arc<Table>,
    seg: usize,
    opts: BlockReadOptions,
    index: BlockIter,
    /// Cursor in the data block the index cursor points at (None: invalid).
    data: Option<BlockIter>,
    /// Offset of the block `data` walks, to reuse it across seeks.
    data_offset: u64,
    /// Readahead window for forward moves (`opts.readahead`).
    window: Readahead,
    /// A key buffer for the next data block's cursor while `data` is None
    /// (handed over from the previous table's iterator, see `TableIter::reusing`).
    spare_key: Vec<u8>,
}

impl SegmentIter {
    fn new(table: Arc<Table>, seg: usize, opts: BlockReadOptions, window: Readahead) -> Self {
        let index = table.segments()[seg].index.iter();
        SegmentIter { table, seg, opts, index, data: None, data_offset: 0, window, spare_key: Vec::new() }
    }

    /// Points `data` at the block the index cursor names (unpositioned).
    /// `forward`: the iterator is moving forward, so readahead pays off.
    fn load_data_block(&mut self, forward: bool) -> Result<()> {
        if !self.index.valid() {
            self.data = None;
            return Ok(());
        }
        let handle = BlockHandle::decode(self.index.value())?;
        if self.data.is_some() && self.data_offset == handle.offset {
            return Ok(());
        }
        let buf = match self.data.take() {
            Some(d) => d.into_key_buffer(),
            None => std::mem::take(&mut self.spare_key),
        };
        let window =
            (forward && (self.opts.readahead > 0 || self.window.is_seeded())).then_some(&mut self.window);
        let block =
            self.table.read_block_ahead(&self.table.segments()[self.seg], handle, self.opts, window)?;
        self.data = Some(block.iter_reusing(buf));
        self.data_offset = handle.offset;
        Ok(())
    }

    fn data_valid(&self) -> bool {
        self.data.as_ref().is_some_and(InternalIterator::valid)
    }

    /// Moves forward over exhausted (or empty) data blocks.
    fn skip_forward(&mut self) -> Result<()> {
        while !self.data_valid() {
            if !self.index.valid() {
                self.data = None;
                return Ok(());
            }
            self.index.next()?;
            self.load_data_block(true)?;
            if let Some(d) = &mut self.data {
                d.seek_to_first()?;
            }
        }
        Ok(())
    }

    /// Moves backward over exhausted (or empty) data blocks.
    fn skip_backward(&mut self) -> Result<()> {
        while !self.data_valid() {
            if !self.index.valid() {
                self.data = None;
                return Ok(());
            }
            self.index.prev()?;
            self.load_data_block(false)?;
            if let Some(d) = &mut self.data {
                d.seek_to_last()?;
            }
        }
        Ok(())
    }

    /// Runs a movement; on error leaves the iterator invalid.
    fn run(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        let r = f(self);
        if r.is_err() {
            self.data = None;
        }
        r
    }
}

impl InternalIterator for SegmentIter {
    fn valid(&self) -> bool {
        self.data_valid()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.run(|s| {
            s.index.seek_to_first()?;
            s.load_data_block(true)?;
            if let Some(d) = &mut s.data {
                d.seek_to_first()?;
            }
            s.skip_forward()
        })
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.run(|s| {
            s.index.seek_to_last()?;
            s.load_data_block(false)?;
            if let Some(d) = &mut s.data {
                d.seek_to_last()?;
            }
            s.skip_backward()
        })
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.run(|s| {
            // The first block whose last key is >= target holds the first entry >= target.
            s.index.seek(target)?;
            s.load_data_block(true)?;
            if let Some(d) = &mut s.data {
                d.seek(target)?;
            }
            s.skip_forward()
        })
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.run(|s| {
            // Entries <= target are in the first block whose last key is >= target
            // or before it; past the last block, the last block holds them.
            s.index.seek(target)?;
            if !s.index.valid() {
                s.index.seek_to_last()?;
            }
            s.load_data_block(false)?;
            if let Some(d) = &mut s.data {
                d.seek_for_prev(target)?;
            }
            s.skip_backward()
        })
    }

    fn next(&mut self) -> Result<()> {
        self.run(|s| {
            if let Some(d) = &mut s.data {
                d.next()?;
            }
            s.skip_forward()
        })
    }

    fn prev(&mut self) -> Result<()> {
        self.run(|s| {
            if let Some(d) = &mut s.data {
                d.prev()?;
            }
            s.skip_backward()
        })
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], InternalIterator::key)
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], InternalIterator::value)
    }
}
