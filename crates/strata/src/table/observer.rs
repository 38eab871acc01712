//! [`DataBlockObserver`]: a hook that sees each data block a table builder
//! writes, on whichever thread writes it (builder.rs or pipeline.rs).

use crate::table::format::BlockHandle;

/// Sees each data block as a [`TableBuilder`](crate::table::builder::TableBuilder) writes it (the compaction
/// warm-up of the block cache).
pub(crate) trait DataBlockObserver: Send + Sync {
    /// A data block was written at `handle`; `raw` is its uncompressed payload
    /// (what a read decodes), `first` and `last` its first and last internal keys.
    fn data_block(&mut self, handle: BlockHandle, first: &[u8], last: &[u8], raw: &[u8]);
}
