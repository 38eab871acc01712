//! `Db::checkpoint` (RocksDB `Checkpoint::CreateCheckpoint`): an openable copy
//! of the database as of one instant, tables shared by hard links where the
//! file system allows.
//!
//! The instant is taken with the WAL lock held (no write group or memtable
//! switch in flight) and the keyspace registry locked: each keyspace's
//! Version with the MANIFEST snapshot that rebuilds it, and the live WALs
//! with the active one's length. After the lock is released the files are
//! written: the held Versions keep their tables on disk and WAL deletion is
//! held off until the WAL prefixes are copied. Opening the checkpoint replays
//! those prefixes, so it holds every write acknowledged before the call and
//! a prefix of the writes racing it — never part of a batch.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Db;
use crate::compaction::style::CompactionStyle;
use crate::error::{Error, Result};
use crate::filename::{table_path, wal_path};
use crate::version::{set_current, ManifestWriter};
use crate::version::{FileMeta, Version, VersionEdit};
use crate::vfs::{copy_prefix, Vfs};

/// One keyspace's tree as the checkpoint captured it.
struct TreeCut {
    /// Its directory relative to the database's (empty for the default keyspace).
    rel_dir: PathBuf,
    /// Held until the tables are linked or copied: keeps them on disk.
    _version: Arc<Version>,
    /// Each distinct table and where it is now (the tree's data paths may
    /// spread them); the checkpoint puts them all in the keyspace's directory.
    files: Vec<(Arc<FileMeta>, PathBuf)>,
    snapshot: VersionEdit,
    manifest_number: u64,
    /// Its policy may append to tables in place (`lwc`, a custom policy): a
    /// hard link would let one database's appends change the other's file,
    /// so copy its tables.
    copy_tables: bool,
}

/// True unless the policy is a built-in one that never appends to a table
/// in place (`lwc` does; a custom policy may, through append tasks).
fn may_append(style: &CompactionStyle) -> bool {
    use CompactionStyle::*;
    !matches!(style, Leveled | Blsm | Lsbm | Dlsm | Tiered | Garnering { .. })
}

impl Db {
    /// Writes an openable copy of the whole database (every keyspace) to
    /// `dir`, which must not exist (RocksDB `Checkpoint::CreateCheckpoint`).
    /// Tables are hard-linked where the file system allows and copied
    /// otherwise (always copied for keyspaces under `lwc` or a custom policy,
    /// which may append to tables in place); each keyspace gets a fresh MANIFEST; the WALs are
    /// copied up to the moment of the call, the newest OPTIONS file as it is. The copy holds every write
    /// acknowledged before the call, and of writes racing it a prefix of
    /// whole batches. `dir`'s `CURRENT` is written last, so a checkpoint cut
    /// short by a crash or an error cannot be opened as a database; the
    /// partial directory is removed on error where the file system allows.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    /// let base = tempfile::tempdir()?;
    /// let db = Db::open(base.path().join("db"), Options::default())?;
    /// db.put("k", "v")?;
    /// db.checkpoint(base.path().join("backup"))?;
    /// db.put("k", "newer")?;
    /// let copy = Db::open(base.path().join("backup"), Options::default())?;
    /// assert_eq!(copy.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        let target = dir.as_ref();
        let shared = &self.inner().shared;
        self.inner().check_bg_error()?;
        let vfs = shared.vfs.as_ref();
        if vfs.exists(target) {
            return Err(Error::invalid(format!("checkpoint directory {} already exists", target.display())));
        }
        // Held until the copy is done: a dropped keyspace's tables would go.
        let _ddl = shared.ddl.lock();
        let (trees, wals, no_wal_deletion) = {
            let mut wal = shared.wal.lock();
            let Some(writer) = wal.as_mut() else {
                return Err(Error::opened_read_only());
            };
            // Acknowledged writes are in the OS, where the copy reads them.
            if let Err(e) = writer.flush() {
                // As for a failed write: the log's state is unknown now.
                shared.set_bg_error_all(&e);
                return Err(e);
            }
            let active = (shared.wal_number.load(std::sync::atomic::Ordering::SeqCst), writer.len());
            let pause = shared.pause_wal_deletion();
            // Read before the Versions: whatever a Version taken later lacks
            // is in a memtable whose WAL is at or above this one.
            let needed = shared.oldest_needed_wal();
            // The copy's MANIFEST may record an older floor, which open checks.
            let from = shared.root_versions.wal_floor().map_or(needed, |f| f.min(needed));
            let trees: Vec<TreeCut> = shared
                .all_trees()
                .iter()
                .map(|t| {
                    let (version, snapshot) = t.versions.checkpoint_state();
                    let files = version
                        .live_files()
                        .into_iter()
                        .map(|f| (f.clone(), t.tables.paths().table(f.id)))
                        .collect();
                    TreeCut {
                        files,
                        rel_dir: t.dir.strip_prefix(&shared.dir).unwrap_or(Path::new("")).to_path_buf(),
                        _version: version,
                        snapshot,
                        manifest_number: t.versions.manifest_number(),
                        copy_tables: may_append(&t.opts.compaction_style),
                    }
                })
                .collect();
            let mut wals: Vec<(u64, u64)> =
                shared.old_wals.lock().iter().filter(|(n, _)| **n >= from).map(|(n, l)| (*n, *l)).collect();
            wals.push(active);
            (trees, wals, pause)
        };
        vfs.create_dir_all(target)?;
        let written = (|| {
            for &(n, len) in &wals {
                copy_prefix(vfs, &wal_path(&shared.dir, n), &wal_path(target, n), len)?;
            }
            drop(no_wal_deletion);
            // The newest OPTIONS file, as RocksDB's checkpoints carry it
            // (the checkpoint's first open writes a fresh one beside it).
            if let Some(from) = crate::options_file::newest(vfs, &shared.dir)? {
                let to = target.join(from.file_name().unwrap_or_default());
                copy_prefix(vfs, &from, &to, vfs.file_size(&from)?)?;
            }
            write_trees(vfs, target, &trees)
        })();
        match &written {
            Ok(()) => log::info!(
                target: "strata::checkpoint",
                "checkpoint written to {}: {} keyspace(s), {} WAL(s)",
                target.display(),
                trees.len(),
                wals.len()
            ),
            Err(_) => remove_partial(vfs, target),
        }
        written
    }
}

/// Links or copies each tree's tables and writes its MANIFEST and `CURRENT`.
fn write_trees(vfs: &dyn Vfs, target: &Path, trees: &[TreeCut]) -> Result<()> {
    // Keyspaces first, the default keyspace (whose CURRENT makes the
    // checkpoint a database) last.
    let mut order: Vec<&TreeCut> = trees.iter().collect();
    order.sort_by_key(|t| t.rel_dir.as_os_str().is_empty());
    for tree in order {
        let to = target.join(&tree.rel_dir);
        vfs.create_dir_all(&to)?;
        for (f, a) in &tree.files {
            let b = table_path(&to, f.id);
            if tree.copy_tables || vfs.hard_link(a, &b).is_err() {
                copy_prefix(vfs, a, &b, f.size)?;
            }
        }
        drop(ManifestWriter::create(vfs, &to, tree.manifest_number, &tree.snapshot)?);
        vfs.sync_dir(&to)?;
        set_current(vfs, &to, tree.manifest_number)?;
    }
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        vfs.sync_dir(parent)?;
    }
    Ok(())
}

/// Best effort: removes what a failed checkpoint wrote.
fn remove_partial(vfs: &dyn Vfs, dir: &Path) {
    if let Ok(names) = vfs.list_dir(dir) {
        for name in names {
            let path = dir.join(&name);
            if vfs.remove_file(&path).is_err() {
                remove_partial(vfs, &path);
            }
        }
    }
    let _ = vfs.remove_dir(dir);
}
