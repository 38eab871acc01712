//! Copy-on-write before an in-place append. A checkpoint or backup may share
//! a table with the database by hard link (taken under a policy that never
//! appends, which the database may later be reopened without); an append to
//! that inode would grow the other side's file, and each side's open would
//! then cut the other's committed segments. So a table with more than one
//! name is first given a private copy under its own name: the table's id,
//! size and bytes are unchanged, so the MANIFEST needs nothing.

use std::path::Path;

use crate::error::{Error, Result};
use crate::filename::temp_path;
use crate::vfs::{copy_prefix, Vfs};

/// Makes table `id` at `path` a file no other name shares, holding its first
/// `size` bytes (what the MANIFEST records). Returns true if it copied.
///
/// The copy is written to `NNNNNN.dbtmp` (the table's number) in the table's
/// directory, synced, renamed over the table and the directory synced: a
/// crash leaves the shared original or the private copy under the table's
/// name, both valid, and open removes a leftover temp file. On error no
/// name changed and the temp file is removed where possible.
pub(crate) fn unshare_table(vfs: &dyn Vfs, path: &Path, id: u64, size: u64) -> Result<bool> {
    let links = vfs.link_count(path)?;
    if links <= 1 {
        return Ok(false);
    }
    let dir = path.parent().ok_or_else(|| Error::invalid(format!("{}: no directory", path.display())))?;
    let tmp = temp_path(dir, id);
    let copied = (|| {
        copy_prefix(vfs, path, &tmp, size)?;
        vfs.rename(&tmp, path)?;
        vfs.sync_dir(dir)
    })();
    if copied.is_err() && vfs.exists(&tmp) {
        // Best effort: the error that matters is the one returned.
        let _ = vfs.remove_file(&tmp);
    }
    copied?;
    log::info!(
        target: "strata::compaction",
        "table {id:06}.sst had {links} names (shared with a checkpoint or backup): copied before an append"
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::testing::{FaultConfig, FaultOp, FaultVfs, PathFilter};
    use crate::vfs::RealVfs;
    use std::sync::Arc;

    fn write(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) {
        let mut f = vfs.create(path).unwrap();
        f.append(bytes).unwrap();
        f.sync().unwrap();
    }

    #[test]
    fn a_private_table_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = RealVfs::new();
        let t = dir.path().join("000007.sst");
        write(&vfs, &t, b"0123456789");
        assert!(!unshare_table(&vfs, &t, 7, 10).unwrap());
        assert_eq!(vfs.read_file(&t).unwrap(), b"0123456789");
    }

    #[test]
    fn a_shared_table_gets_a_private_copy_of_its_recorded_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = RealVfs::new();
        let (t, other) = (dir.path().join("000007.sst"), dir.path().join("elsewhere"));
        write(&vfs, &t, b"0123456789tail");
        vfs.hard_link(&t, &other).unwrap();
        assert!(unshare_table(&vfs, &t, 7, 10).unwrap());
        assert_eq!((vfs.link_count(&t).unwrap(), vfs.link_count(&other).unwrap()), (1, 1));
        assert_eq!(vfs.read_file(&t).unwrap(), b"0123456789");
        assert_eq!(vfs.read_file(&other).unwrap(), b"0123456789tail");
        assert!(!vfs.exists(&temp_path(dir.path(), 7)));
    }

    #[test]
    fn a_shared_table_shorter_than_recorded_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = RealVfs::new();
        let (t, other) = (dir.path().join("000007.sst"), dir.path().join("elsewhere"));
        write(&vfs, &t, b"01234");
        vfs.hard_link(&t, &other).unwrap();
        assert!(unshare_table(&vfs, &t, 7, 10).unwrap_err().is_corruption());
        assert_eq!(vfs.link_count(&t).unwrap(), 2);
        assert!(!vfs.exists(&temp_path(dir.path(), 7)));
    }

    #[test]
    fn a_failed_copy_changes_no_name_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = FaultVfs::new(
            Arc::new(RealVfs::new()),
            FaultConfig::new(1).with_filter(PathFilter::extension("dbtmp")),
        );
        let (t, other) = (dir.path().join("000007.sst"), dir.path().join("elsewhere"));
        write(&vfs, &t, b"0123456789");
        vfs.hard_link(&t, &other).unwrap();
        for op in [FaultOp::Write, FaultOp::DataSync, FaultOp::Rename] {
            vfs.fail_next(op);
            assert!(unshare_table(&vfs, &t, 7, 10).is_err(), "{op}");
            vfs.disarm();
            assert_eq!(vfs.link_count(&t).unwrap(), 2, "{op}");
            assert!(!vfs.exists(&temp_path(dir.path(), 7)), "{op}");
        }
        assert!(unshare_table(&vfs, &t, 7, 10).unwrap());
    }
}
