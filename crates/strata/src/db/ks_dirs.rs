//! Where keyspaces keep their files: one directory per keyspace under the
//! root's `keyspaces/`, and its removal.

use std::path::{Path, PathBuf};

use crate::vfs::Vfs;

/// The directory under the root that holds one directory per keyspace.
pub(crate) const KEYSPACES_DIR: &str = "keyspaces";

/// Where keyspace `id` (> 0) keeps its MANIFEST, CURRENT and tables.
pub(crate) fn keyspace_dir(root: &Path, id: u32) -> PathBuf {
    root.join(KEYSPACES_DIR).join(id.to_string())
}

/// Deletes a keyspace directory: its files, then the directory (best
/// effort; what is left is removed by the next open).
pub(crate) fn remove_tree_dir(vfs: &dyn Vfs, dir: &Path) {
    if let Ok(names) = vfs.list_dir(dir) {
        for n in names {
            let _ = vfs.remove_file(&dir.join(n));
        }
    }
    let _ = vfs.sync_dir(dir);
    let _ = vfs.remove_dir(dir);
    if let Some(parent) = dir.parent() {
        let _ = vfs.sync_dir(parent);
    }
}
