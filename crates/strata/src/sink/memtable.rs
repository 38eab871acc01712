//! A flush: a memtable written as level-0 tables.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Env, OutputWriter, TableSink, WriteTarget};
use crate::compaction::policy::RunTarget;
use crate::compaction::view::build_view;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{parse_internal_key, MAX_SEQ};
use crate::memtable::MemTable;
use crate::range_del::Fragments;
use crate::stats::StageTimes;
use crate::version::NewFile;

/// Writes `mem` as one new run of level 0 of the tree `env` writes to (one
/// file, its filter sized for that run in the current tree), its range
/// tombstones with it. Returns the tables, synced and read back, and the
/// output's stage times.
pub(crate) fn write_memtable(env: &Env<'_>, mem: &Arc<MemTable>) -> Result<(Vec<NewFile>, StageTimes)> {
    let view = build_view(&env.versions.current(), env.versions, &HashSet::new());
    let target = WriteTarget { level: 0, run: RunTarget::New, inputs: &[], entries: mem.len() as u64 };
    let mut out = OutputWriter::new(env, &view, &target, u64::MAX)
        .with_range_dels(Fragments::of(&mem.range_dels(MAX_SEQ)));
    let progress = out.progress();
    let outputs = progress.counting_cpu(|| {
        let mut it = mem.iter();
        it.seek_to_first()?;
        while it.valid() {
            out.add(it.key(), it.value(), parse_internal_key(it.key())?.seq)?;
            it.next()?;
        }
        out.finish()
    })?;
    Ok((outputs, progress.times()))
}
