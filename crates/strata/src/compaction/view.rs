//! The policy's view of a [`Version`]: what every pick, validation and
//! simulation reads instead of the engine's own types.

use std::collections::HashSet;

use super::policy::{BufferEntryView, BufferTableView, BufferView, FileView, LevelView, LsmView, RunView};
use crate::version::{BufferEntry, FileMeta, Version, VersionSet};

/// Builds the policy's view of `version` (with the policy metadata of `versions`).
pub(crate) fn build_view(version: &Version, versions: &VersionSet, busy: &HashSet<u64>) -> LsmView {
    build_view_with(version, versions, busy, &|_| None)
}

/// [`build_view`], with `cached(file)` giving each buffer file's cached
/// fraction (the trim's input).
pub(crate) fn build_view_with(
    version: &Version,
    versions: &VersionSet,
    busy: &HashSet<u64>,
    cached: &dyn Fn(&FileMeta) -> Option<f64>,
) -> LsmView {
    view_of(version, versions.compact_pointers(), versions.policy_state(), busy, cached)
}

/// The view of `version` with the given policy metadata: the engine passes
/// its `VersionSet`'s, the simulator its own.
pub(crate) fn view_of(
    version: &Version,
    compact_pointers: Vec<Option<Vec<u8>>>,
    policy_state: Option<Vec<u8>>,
    busy: &HashSet<u64>,
    cached: &dyn Fn(&FileMeta) -> Option<f64>,
) -> LsmView {
    let file_view = |f: &FileMeta| FileView {
        id: f.id,
        size: f.size,
        smallest: f.smallest_user_key().to_vec(),
        largest: f.largest_user_key().to_vec(),
        num_entries: f.num_entries,
        num_deletions: f.num_deletions,
        being_compacted: busy.contains(&f.id),
        bloom_bits_per_key: f.bloom_bits_per_key,
        segments: f.num_segments(),
        num_range_dels: f.num_range_dels,
    };
    let entry_view = |e: &BufferEntry| {
        let (lo, hi) = e.range();
        BufferEntryView {
            file: e.file().map(|f| f.id),
            size: e.file().map_or(0, |f| f.size),
            smallest: lo.to_vec(),
            largest: hi.to_vec(),
            cached_fraction: e.file().and_then(|f| cached(f)),
        }
    };
    let levels = version
        .levels
        .iter()
        .map(|level| LevelView {
            runs: (level.runs.iter())
                .map(|run| RunView { id: run.id, files: run.files.iter().map(|f| file_view(f)).collect() })
                .collect(),
            buffers: (level.buffers.iter())
                .map(|b| BufferView {
                    run: b.run,
                    tables: (b.tables.iter())
                        .map(|t| BufferTableView {
                            id: t.id,
                            entries: t.entries().iter().map(entry_view).collect(),
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    LsmView { levels, compact_pointers, policy_state }
}
