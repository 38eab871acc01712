//! The two-level table iterator: an index-block cursor picks the data block, a
//! block cursor walks it. Data blocks come through the block cache.

use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::table::block::BlockIter;
use crate::table::format::BlockHandle;
use crate::table::reader::{BlockReadOptions, Readahead, Table};

/// A bidirectional iterator over one table; owns a reference to it.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<Table>,
    opts: BlockReadOptions,
    index: BlockIter,
    /// Cursor in the data block the index cursor points at (None: invalid).
    data: Option<BlockIter>,
    /// Offset of the block `data` walks, to reuse it across seeks.
    data_offset: u64,
    /// Readahead window for forward moves (`opts.readahead`).
    window: Readahead,
}

impl TableIter {
    pub(crate) fn new(table: Arc<Table>, opts: BlockReadOptions) -> Self {
        Self::with_window(table, opts, Readahead::default())
    }

    /// An iterator whose forward reads come from `window` where it holds the
    /// block (read ahead by a compaction's read stage).
    pub(crate) fn with_window(table: Arc<Table>, opts: BlockReadOptions, window: Readahead) -> Self {
        let index = table.index_block().iter();
        TableIter { table, opts, index, data: None, data_offset: 0, window }
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
        self.data = None;
        let window =
            (forward && (self.opts.readahead > 0 || self.window.is_seeded())).then_some(&mut self.window);
        let block = self.table.read_block_ahead(handle, self.opts, window)?;
        self.data = Some(block.iter());
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

impl InternalIterator for TableIter {
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
