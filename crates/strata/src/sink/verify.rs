//! The read-back of every table a write made, before a version edit names it
//! (LevelDB's "verify that the table is usable"): a file system that
//! acknowledged bytes it never stored fails the write here, instead of
//! installing a table that would fail every later open.

use std::sync::Arc;

use super::Env;
use crate::error::{Error, Result};
use crate::table::{verify_table, Expected, SegmentMeta};

/// Opens table `id` as its next Version will (through the table cache: every
/// segment's footer, index, filter and properties checked) and compares its
/// entry count with what was written; with `paranoid_file_checks`, reads
/// every block and entry too ([`verify_table`]).
pub(super) fn read_back(
    env: &Env<'_>,
    id: u64,
    size: u64,
    segments: &[SegmentMeta],
    expect: &Expected<'_>,
) -> Result<()> {
    let table = env.tables.get(id, size, segments)?;
    if expect.entries.is_some_and(|n| n != table.properties().num_entries) {
        return Err(Error::corruption("entry count in properties differs from what was written"));
    }
    if !env.opts.paranoid_file_checks {
        return Ok(());
    }
    // Past the block cache: warmed blocks are in it, and the check is of the file.
    let table = Arc::new(env.tables.open_uncached(id, size, segments)?);
    verify_table(&table, expect)
}
