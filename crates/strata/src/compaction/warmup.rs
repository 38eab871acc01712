//! Incremental warm-up of the block cache by compactions (the LSbM paper's
//! baseline). As a merge writes each data block, it checks whether any input
//! file has a cached block overlapping the new block's user-key range; if so
//! the new block goes into the block cache under (output file, offset), from
//! memory, as a read of it would have cached it. Reads of hot keys then hit
//! the new file as soon as it is installed, instead of missing once the
//! inputs' blocks are invalidated with their files.
//!
//! Cost per output block: one index seek per input whose key range overlaps
//! it, a peek at each overlapping input block (no hit counted, no promotion),
//! and, for a warmed block, one copy of its uncompressed payload. No file is
//! read.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::cache::BlockCache;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{lookup_key, user_key, MAX_SEQ};
use crate::sink::Env;
use crate::table::format::BlockHandle;
use crate::table::observer::DataBlockObserver;
use crate::table::{Block, Table};
use crate::version::FileMeta;

struct Input {
    meta: Arc<FileMeta>,
    table: Arc<Table>,
}

/// The warm-up of one merge: its inputs and the block cache.
pub(crate) struct Warmup {
    cache: Arc<BlockCache>,
    inputs: Vec<Input>,
    inserted: AtomicU64,
}

impl Warmup {
    /// The warm-up of a merge of `inputs`, when the options ask for one and
    /// the tables read through a block cache.
    pub(crate) fn for_merge(env: &Env<'_>, inputs: &[Arc<FileMeta>]) -> Result<Option<Arc<Warmup>>> {
        let Some(cache) = env.tables.block_cache().filter(|_| env.opts.compaction_warmup) else {
            return Ok(None);
        };
        let inputs = inputs
            .iter()
            .map(|m| Ok(Input { table: m.table(env.tables)?, meta: Arc::clone(m) }))
            .collect::<Result<_>>()?;
        Ok(Some(Arc::new(Warmup { cache: Arc::clone(cache), inputs, inserted: AtomicU64::new(0) })))
    }

    /// Blocks put into the cache so far.
    pub(crate) fn inserted(&self) -> u64 {
        self.inserted.load(Relaxed)
    }

    /// The block cache it fills.
    pub(crate) fn cache(&self) -> &BlockCache {
        &self.cache
    }

    /// The observer of output table `file_id`'s builder.
    pub(crate) fn observer(self: &Arc<Self>, file_id: u64) -> Box<dyn DataBlockObserver> {
        Box::new(Observer { warmup: Arc::clone(self), file_id })
    }

    /// True if some input has a cached data block holding a user key in `lo..=hi`.
    fn overlaps_cached(&self, lo: &[u8], hi: &[u8]) -> bool {
        // An unreadable index only means no warm-up: the merge reports it.
        (self.inputs.iter())
            .any(|i| i.meta.overlaps_user_range(lo, hi) && self.cached_block_in(i, lo, hi).unwrap_or(false))
    }

    fn cached_block_in(&self, input: &Input, lo: &[u8], hi: &[u8]) -> Result<bool> {
        // Index keys are each block's last key: start at the first block
        // ending at or after `lo` (in every segment of a DTable).
        for seg in input.table.segments() {
            let mut index = seg.index.iter();
            index.seek(&lookup_key(lo, MAX_SEQ))?;
            while index.valid() {
                let handle = BlockHandle::decode(index.value())?;
                if let Some(block) = self.cache.peek(input.table.file_id(), handle.offset) {
                    let mut it = block.iter();
                    it.seek_to_first()?;
                    if it.valid() && user_key(it.key()) <= hi {
                        return Ok(true);
                    }
                }
                // The next block starts after this one's last key.
                if user_key(index.key()) > hi {
                    break;
                }
                index.next()?;
            }
        }
        Ok(false)
    }
}

struct Observer {
    warmup: Arc<Warmup>,
    file_id: u64,
}

impl DataBlockObserver for Observer {
    fn data_block(&mut self, handle: BlockHandle, first: &[u8], last: &[u8], raw: &[u8]) {
        let w = &self.warmup;
        if !w.overlaps_cached(user_key(first), user_key(last)) {
            return;
        }
        // `raw` is exactly what a read of the block decodes.
        if let Ok(block) = Block::new(raw.to_vec()) {
            if w.cache.insert(self.file_id, handle.offset, Arc::new(block)) {
                w.inserted.fetch_add(1, Relaxed);
            }
        }
    }
}
