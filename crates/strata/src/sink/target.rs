//! Where a write of tables lands: the description their filters are sized by
//! (Monkey's allocation, `compaction::monkey`).

use crate::compaction::policy::{FileRef, RunTarget};

/// Where a flush or compaction writes its tables, for sizing their filters.
#[derive(Clone, Copy, Debug)]
pub struct WriteTarget<'a> {
    /// Level receiving the tables.
    pub level: usize,
    /// Run receiving the tables.
    pub run: RunTarget,
    /// Files the write consumes (a merge's inputs; none for a flush).
    pub inputs: &'a [FileRef],
    /// Entries the write brings (an upper bound: a merge drops shadowed versions).
    pub entries: u64,
}
