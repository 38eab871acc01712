//! A file's open table, pinned in the file's metadata while the table cache
//! keeps it open, so a read finds its table without the cache's shard lock,
//! hash lookup and LRU promotion (RocksDB keeps a table-reader handle in
//! `FileMetaData` the same way). The table cache stays the only owner that
//! decides what is open: a slot is filled only while the LRU holds the
//! table, and emptied when the LRU lets go of it, so `max_open_files` still
//! bounds the descriptors.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwapOption;

use crate::table::Table;

/// One file state's slot (a `FileMeta` has its own; a file grown by an
/// append is a new state, with a new slot).
#[derive(Default)]
pub(crate) struct TableSlot {
    /// INVARIANT: `Some` only while the table cache holds this table, and
    /// only for the table at the state's size.
    table: ArcSwapOption<Table>,
    /// A read through the slot since the cache last looked: the LRU's
    /// recency, which reads through the slot do not refresh, is given back
    /// as a second chance at eviction.
    used: AtomicBool,
}

impl TableSlot {
    /// The pinned table, if the cache holds it; marks the slot used.
    #[inline]
    pub(crate) fn get(&self) -> Option<Arc<Table>> {
        let table = self.table.load_full()?;
        // Read first: a slot already marked costs no write to a shared line.
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        Some(table)
    }

    /// Pins `table`. REQUIRES: the table cache holds it, under its shard lock.
    pub(crate) fn pin(&self, table: &Arc<Table>) {
        self.table.store(Some(Arc::clone(table)));
        self.used.store(true, Ordering::Relaxed);
    }

    /// Unpins `table` if it is the one pinned (a newer pin stays).
    /// REQUIRES: called as the table cache lets go of `table`.
    pub(crate) fn unpin(&self, table: &Arc<Table>) {
        let current = self.table.load();
        if current.as_ref().is_some_and(|t| Arc::ptr_eq(t, table)) {
            self.table.compare_and_swap(&*current, None);
        }
    }

    /// True if the slot was read since the last call (and clears the mark).
    pub(crate) fn take_used(&self) -> bool {
        self.used.swap(false, Ordering::Relaxed)
    }

    /// True while a table is pinned.
    #[cfg(test)]
    pub(crate) fn is_pinned(&self) -> bool {
        self.table.load().is_some()
    }
}

impl std::fmt::Debug for TableSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableSlot").field("pinned", &self.table.load().is_some()).finish()
    }
}
