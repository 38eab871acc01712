//! Writing tables: every way the engine writes one goes through a
//! [`TableSink`] — new files cut by the output splitter (flushes, `memtable.rs`;
//! merges, WAL replay at open, repair; `output.rs`) or new segments appended to
//! existing files (light-weight compaction; `append.rs`) — with one layout
//! (`TableBuilderOptions::for_write`) and one read-back before anything
//! names a table (`verify.rs`, over `table::verify_table`). A table's filter
//! rebuilt at other bits (Monkey; `refilter.rs`) is read back the same way.

mod append;
mod env;
mod memtable;
mod output;
mod refilter;
mod target;
mod verify;

pub(crate) use append::Appender;
pub(crate) use env::Env;
pub(crate) use memtable::write_memtable;
pub(crate) use output::OutputWriter;
pub(crate) use refilter::rebuild_filter;
pub use target::WriteTarget;

use crate::error::Result;
use crate::key::SeqNum;
use crate::version::NewFile;

/// Where a sorted stream of entries is written as tables.
pub(crate) trait TableSink {
    /// Adds an entry: internal key, value, and the key's sequence. Entries
    /// come in internal-key order.
    fn add(&mut self, ikey: &[u8], value: &[u8], seq: SeqNum) -> Result<()>;

    /// Finishes the last table, syncs and reads back what was written, and
    /// describes each table as the version edit will list it. A sink dropped
    /// without finishing undoes what it wrote (files removed, or handles on
    /// grown tables evicted).
    fn finish(self) -> Result<Vec<NewFile>>
    where
        Self: Sized;
}
