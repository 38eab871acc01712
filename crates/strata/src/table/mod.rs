//! The table (SST) file format: sorted files of internal keys made of
//! prefix-compressed data blocks, one bloom filter, a properties block, an
//! index block and a fixed-size footer — one such segment, or several appended
//! one after another (a DTable of the `lwc` policy). See `docs/FORMAT.md`.

pub mod block;
pub mod builder;
pub mod filter;
pub mod filter_patch;
pub mod format;
pub mod iter;
pub(crate) mod memo;
pub(crate) mod observer;
pub(crate) mod pipeline;
pub mod reader;
pub mod segment;
pub mod verify;

#[cfg(test)]
mod prefix_filter_tests;
#[cfg(test)]
mod range_del_tests;
#[cfg(test)]
pub(crate) mod test_util;
#[cfg(test)]
mod tests;

pub use block::{Block, BlockIter};
pub use builder::{TableBuilder, TableBuilderOptions, TableSummary};
pub use format::TableProperties;
pub use iter::TableIter;
pub(crate) use reader::Resume;
pub use reader::{BlockReadOptions, CachedGet, Table};
pub use segment::{discover_segments, SegmentMeta};
pub use verify::{verify_table, Expected};

/// One decoded range tombstone: `(start, end, sequence)`, deleting `[start, end)`.
pub type RangeTombstoneParts = (Vec<u8>, Vec<u8>, crate::key::SeqNum);

/// A table segment's range-deletion block (its properties' `range_del`
/// handle) decoded, for tools that print a table. Anything malformed is `Corruption`.
///
/// # Examples
///
/// ```
/// let err = strata::table::decode_range_dels(&[5]).unwrap_err();
/// assert!(err.is_corruption(), "a count with no tombstones after it");
/// ```
pub fn decode_range_dels(block: &[u8]) -> crate::Result<Vec<RangeTombstoneParts>> {
    Ok(crate::range_del::decode_block(block)?.into_iter().map(|t| (t.start, t.end, t.seq)).collect())
}
