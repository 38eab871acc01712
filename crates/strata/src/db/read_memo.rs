//! [`ReadMemo`]: what a batch of point reads (multi_get.rs) carries from
//! one key to the next, handed down the single-key probe of read.rs.

use std::sync::Arc;

use crate::table::memo::BlockMemo;
use crate::table::Table;

/// Table handles a batch keeps at once (a run's file and the buffer files
/// beside it); older ones are looked up again if needed.
const TABLES: usize = 8;

/// What a batch of point reads keeps from one key to the next: the table
/// handles and the data blocks it used last.
#[derive(Debug, Default)]
pub(crate) struct ReadMemo {
    tables: Vec<Arc<Table>>,
    next_table: usize,
    blocks: BlockMemo,
}

impl ReadMemo {
    /// The remembered handle of table `id` in the state of `size` bytes.
    pub(super) fn table(&self, id: u64, size: u64) -> Option<Arc<Table>> {
        self.tables.iter().find(|t| t.file_id() == id && t.file_size() == size).cloned()
    }

    pub(super) fn remember_table(&mut self, t: &Arc<Table>) {
        if self.tables.len() < TABLES {
            self.tables.push(Arc::clone(t));
        } else {
            self.tables[self.next_table] = Arc::clone(t);
            self.next_table = (self.next_table + 1) % TABLES;
        }
    }

    pub(super) fn blocks(&mut self) -> &mut BlockMemo {
        &mut self.blocks
    }
}
