//! Filter memory of a database's live run files, replayed from its MANIFEST.

use std::collections::HashMap;
use std::path::Path;

use strata::version::{read_current, read_manifest};
use strata::MemVfs;

/// `(Σ entries × bits per key, Σ entries)` over the tables the MANIFEST lists
/// in runs (a compaction-buffer file no run lists was deleted from its run
/// there, so only the tree's own data counts). Every table must record its
/// bits.
pub fn live_filter_bits(vfs: &MemVfs, dir: &Path) -> (f64, u64) {
    let path = dir.join(format!("MANIFEST-{:06}", read_current(vfs, dir).unwrap()));
    let mut live = HashMap::new();
    read_manifest(vfs, &path, |e| {
        for (_, _, id) in &e.deleted_files {
            live.remove(id);
        }
        for (_, _, f) in &e.new_files {
            live.insert(f.id, (f.num_entries, f.bloom_bits_per_key.expect("bits recorded")));
        }
        Ok(())
    })
    .unwrap();
    (live.values().map(|&(n, b)| n as f64 * b).sum(), live.values().map(|&(n, _)| n).sum())
}
