//! One table file's answer to a point read, through the row cache.

use std::sync::Arc;

use super::DbInner;
use crate::error::Result;
use crate::key::{parse_internal_key, ValueKind};
use crate::table::{BlockReadOptions, Table};
use crate::version::FileMeta;

impl DbInner {
    /// `table.get(lookup)` for the table of `file`, answered from the row cache
    /// when it is on and `lookup`'s sequence is at least the file's largest:
    /// then the answer is simply the newest entry of the key in the file, the
    /// same for every such read. Reads at older snapshots go to the table.
    pub(super) fn table_get(
        &self,
        table: &Arc<Table>,
        file: &FileMeta,
        lookup: &[u8],
        bro: BlockReadOptions,
    ) -> Result<Option<(ValueKind, Vec<u8>)>> {
        let Some(rows) = &self.row_cache else { return table.get(lookup, bro) };
        let target = parse_internal_key(lookup)?;
        if target.seq < file.largest_seq {
            return table.get(lookup, bro);
        }
        // The filter first: a key the file cannot hold costs no cache lock.
        if !table.may_contain(target.user_key) {
            return Ok(None);
        }
        if let Some(hit) = rows.get(file.id, target.user_key) {
            return Ok(Some(hit));
        }
        let found = table.get(lookup, bro)?;
        if let (Some((kind, value)), true) = (&found, bro.fill_cache) {
            rows.insert(file.id, target.user_key, *kind, value);
        }
        Ok(found)
    }
}
