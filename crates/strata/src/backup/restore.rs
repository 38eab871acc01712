//! Verifying backups and restoring them into a database directory.

use std::path::{Path, PathBuf};

use super::{files, BackupEngine, BackupId};
use crate::error::{Error, Result};
use crate::vfs::Vfs;

/// The file a restore writes into its target first and removes last.
pub(crate) const RESTORE_MARKER: &str = "RESTORE-INCOMPLETE";

/// [`Error::NotADatabase`] if `dir` is a restore that did not finish (open,
/// read-only open and repair call this first).
pub(crate) fn refuse_incomplete_restore(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    if vfs.exists(&dir.join(RESTORE_MARKER)) {
        return Err(Error::NotADatabase(format!(
            "{}: restore incomplete ({RESTORE_MARKER} is present): restore again",
            dir.display()
        )));
    }
    Ok(())
}

/// The topmost ancestor of `dir` (itself included) that does not exist yet.
fn first_missing_ancestor(vfs: &dyn Vfs, dir: &Path) -> Option<PathBuf> {
    dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !vfs.exists(d)).last().map(Path::to_path_buf)
}

/// Removes everything in `dir` but the restore marker, and makes that durable;
/// an error if something stayed.
fn clear_except_marker(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    for n in vfs.list_dir(dir)? {
        if n != RESTORE_MARKER {
            files::remove_tree(vfs, &dir.join(&n));
        }
    }
    vfs.sync_dir(dir)?;
    let left: Vec<String> = vfs.list_dir(dir)?.into_iter().filter(|n| n != RESTORE_MARKER).collect();
    if !left.is_empty() {
        return Err(Error::invalid(format!("restore target {}: could not remove {left:?}", dir.display())));
    }
    Ok(())
}

impl BackupEngine {
    /// Checks every file of backup `id` against the size and CRC32C its
    /// meta file recorded: a missing or changed file is
    /// [`Error::Corruption`] naming it; an unknown id is
    /// [`Error::InvalidArgument`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BackupEngine, Db, Options};
    /// let base = tempfile::tempdir()?;
    /// let db = Db::open(base.path().join("db"), Options::default())?;
    /// db.put("k", "v")?;
    /// let engine = BackupEngine::open(base.path().join("backups"))?;
    /// let id = engine.create_new_backup(&db)?;
    /// engine.verify_backup(id)?;
    /// std::fs::remove_file(base.path().join("backups/private/1/CURRENT"))?;
    /// assert!(engine.verify_backup(id).unwrap_err().is_corruption());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify_backup(&self, id: BackupId) -> Result<()> {
        let backups = self.backups.lock();
        let meta = backups.get(&id).ok_or_else(|| Error::invalid(format!("no backup {id}")))?;
        for f in &meta.files {
            files::check(self.vfs.as_ref(), &self.stored_path(id, f), f.size, f.crc)?;
        }
        Ok(())
    }

    /// Restores backup `id` into `db_dir`, which must be missing, empty, or
    /// what an interrupted restore left ([`Error::InvalidArgument`]
    /// otherwise): every file is copied to where `Db::open` expects it and
    /// checked against its recorded CRC32C on the way ([`Error::Corruption`]
    /// naming a bad one). A restore cut short never opens: until the last
    /// step `db_dir` holds a marker file that `Db::open`, read-only opens and
    /// `strata::repair` refuse ([`Error::NotADatabase`], "restore
    /// incomplete"); restoring again finishes the job. On error what was
    /// written is removed. Opening `db_dir` gives the database as the backup
    /// captured it.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BackupEngine, Db, Options};
    /// let base = tempfile::tempdir()?;
    /// let db = Db::open(base.path().join("db"), Options::default())?;
    /// db.put("k", "v")?;
    /// let engine = BackupEngine::open(base.path().join("backups"))?;
    /// let id = engine.create_new_backup(&db)?;
    /// engine.restore_db_from_backup(id, base.path().join("restored"))?;
    /// let restored = Db::open(base.path().join("restored"), Options::default())?;
    /// assert_eq!(restored.get("k")?, Some(b"v".to_vec()));
    /// // The target is not empty any more.
    /// assert!(engine.restore_db_from_backup(id, base.path().join("restored")).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn restore_db_from_backup(&self, id: BackupId, db_dir: impl AsRef<Path>) -> Result<()> {
        let db_dir = db_dir.as_ref();
        let backups = self.backups.lock();
        let meta = backups.get(&id).ok_or_else(|| Error::invalid(format!("no backup {id}")))?;
        let vfs = self.vfs.as_ref();
        let marker = db_dir.join(RESTORE_MARKER);
        let resuming = vfs.exists(&marker);
        if !resuming && vfs.exists(db_dir) && !vfs.list_dir(db_dir)?.is_empty() {
            return Err(Error::invalid(format!("restore target {} is not empty", db_dir.display())));
        }
        // CURRENTs last, the database's own (shortest path) the very last.
        let mut order: Vec<_> = meta.files.iter().collect();
        order.sort_by_key(|f| {
            (f.rel.file_name().is_some_and(|n| n == "CURRENT"), std::cmp::Reverse(f.rel.iter().count()))
        });
        // In place, as RocksDB restores, with a marker rather than a sibling
        // directory renamed at the end: a target that is still missing would
        // be created empty by the next open (create_if_missing), and the
        // target may be a mount point. The marker is durable before any
        // other file exists and goes only once every file is.
        let created = first_missing_ancestor(vfs, db_dir);
        let restored = (|| {
            vfs.create_dir_all(db_dir)?;
            if resuming {
                // What the interrupted restore left goes, the marker stays.
                clear_except_marker(vfs, db_dir)?;
            } else {
                let mut f = vfs.create(&marker)?;
                f.sync()?;
                drop(f);
                vfs.sync_dir(db_dir)?;
            }
            // The entries naming `db_dir`, up to a directory that existed.
            if let Some(top) = &created {
                for d in db_dir.ancestors().skip(1) {
                    if d.as_os_str().is_empty() {
                        break;
                    }
                    vfs.sync_dir(d)?;
                    if !d.starts_with(top) {
                        break;
                    }
                }
            }
            let mut synced_dirs: Vec<PathBuf> = Vec::new();
            for f in order {
                let to = db_dir.join(&f.rel);
                let parent = to.parent().unwrap_or(db_dir).to_path_buf();
                if f.rel.file_name().is_some_and(|n| n == "CURRENT") {
                    // Every file this CURRENT's MANIFEST names is durable.
                    for d in synced_dirs.drain(..).rev() {
                        vfs.sync_dir(&d)?;
                    }
                }
                vfs.create_dir_all(&parent)?;
                // The file's directory and the entries naming it up to `db_dir`.
                for d in parent.ancestors().take_while(|d| d.starts_with(db_dir)) {
                    if !synced_dirs.iter().any(|s| s == d) {
                        synced_dirs.push(d.to_path_buf());
                    }
                }
                files::copy_checked(vfs, &self.stored_path(id, f), &to, f.size, f.crc)?;
            }
            for d in synced_dirs.iter().rev() {
                vfs.sync_dir(d)?;
            }
            vfs.remove_file(&marker)?;
            vfs.sync_dir(db_dir)
        })();
        if restored.is_err() {
            // The marker goes last, and only if everything else went.
            if clear_except_marker(vfs, db_dir).is_ok()
                && (!vfs.exists(&marker) || vfs.remove_file(&marker).is_ok())
            {
                let _ = vfs.sync_dir(db_dir);
                files::remove_tree(vfs, db_dir);
            }
        }
        restored
    }

    /// Restores the newest backup into `db_dir`
    /// ([`BackupEngine::restore_db_from_backup`]); [`Error::InvalidArgument`]
    /// if there is none.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BackupEngine, Db, Options};
    /// let base = tempfile::tempdir()?;
    /// let db = Db::open(base.path().join("db"), Options::default())?;
    /// let engine = BackupEngine::open(base.path().join("backups"))?;
    /// assert!(engine.restore_db_from_latest_backup(base.path().join("r")).is_err());
    /// db.put("k", "v1")?;
    /// engine.create_new_backup(&db)?;
    /// db.put("k", "v2")?;
    /// engine.create_new_backup(&db)?;
    /// engine.restore_db_from_latest_backup(base.path().join("r"))?;
    /// assert_eq!(Db::open(base.path().join("r"), Options::default())?.get("k")?, Some(b"v2".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn restore_db_from_latest_backup(&self, db_dir: impl AsRef<Path>) -> Result<()> {
        let latest = self.backups.lock().keys().next_back().copied();
        let id = latest.ok_or_else(|| Error::invalid(format!("no backups in {}", self.dir.display())))?;
        self.restore_db_from_backup(id, db_dir)
    }
}
