//! One table file's answer to a point read, through the row cache.

use std::sync::Arc;

use super::DbInner;
use crate::error::Result;
use crate::key::{parse_internal_key, user_key, ValueKind};
use crate::pinned::PinnedValue;
use crate::table::memo::BlockMemo;
use crate::table::{BlockReadOptions, Resume, Table};
use crate::version::FileMeta;

impl DbInner {
    /// `table.get(lookup)` for the table of `file`, answered from the row cache
    /// when it is on and `lookup`'s sequence is at least the file's largest:
    /// then the answer is simply the newest entry of the key in the file, the
    /// same for every such read. Reads at older snapshots go to the table.
    /// `memo` is a batch's last blocks (`None` for a single read).
    pub(super) fn table_get(
        &self,
        table: &Arc<Table>,
        file: &FileMeta,
        lookup: &[u8],
        bro: BlockReadOptions,
        memo: Option<&mut BlockMemo>,
    ) -> Result<Option<(ValueKind, PinnedValue)>> {
        // The filter first: a key the file cannot hold costs no cache lock.
        if !table.may_contain(user_key(lookup)) {
            return Ok(None);
        }
        self.table_get_unfiltered(table, file, lookup, bro, memo, None)
    }

    /// [`Self::table_get`] for a table whose filter the caller already asked.
    /// A row cache hit shares the cached row's bytes. `resume` is where a
    /// cached-only read of this table for `lookup` stopped (`Table::get_unfiltered_in`).
    pub(super) fn table_get_unfiltered(
        &self,
        table: &Arc<Table>,
        file: &FileMeta,
        lookup: &[u8],
        bro: BlockReadOptions,
        memo: Option<&mut BlockMemo>,
        resume: Option<Resume>,
    ) -> Result<Option<(ValueKind, PinnedValue)>> {
        let Some(rows) = &self.row_cache else { return table.get_unfiltered_in(lookup, bro, memo, resume) };
        let target = parse_internal_key(lookup)?;
        if target.seq < file.largest_seq {
            return table.get_unfiltered_in(lookup, bro, memo, resume);
        }
        if let Some((kind, value)) = rows.get_shared(file.id, file.size, target.user_key) {
            return Ok(Some((kind, PinnedValue::shared(value))));
        }
        let found = table.get_unfiltered_in(lookup, bro, memo, resume)?;
        // A merge operand is not the key's answer: only puts and deletes are cached.
        if let (Some((kind, value)), true) = (&found, bro.fill_cache) {
            if *kind != ValueKind::Merge {
                rows.insert(file.id, file.size, target.user_key, *kind, value);
            }
        }
        Ok(found)
    }
}
