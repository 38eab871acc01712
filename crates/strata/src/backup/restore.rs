//! Verifying backups and restoring them into a database directory.

use std::path::{Path, PathBuf};

use super::{files, BackupEngine, BackupId};
use crate::error::{Error, Result};

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

    /// Restores backup `id` into `db_dir`, which must be missing or empty
    /// ([`Error::InvalidArgument`] otherwise): every file is copied to where
    /// `Db::open` expects it and checked against its recorded CRC32C on the
    /// way ([`Error::Corruption`] naming a bad one). The database's
    /// `CURRENT` is written last, so a restore cut short never opens; on
    /// error what was written is removed. Opening `db_dir` gives the
    /// database as the backup captured it.
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
        if vfs.exists(db_dir) && !vfs.list_dir(db_dir)?.is_empty() {
            return Err(Error::invalid(format!("restore target {} is not empty", db_dir.display())));
        }
        // CURRENTs last, the database's own (shortest path) the very last.
        let mut order: Vec<_> = meta.files.iter().collect();
        order.sort_by_key(|f| {
            (f.rel.file_name().is_some_and(|n| n == "CURRENT"), std::cmp::Reverse(f.rel.iter().count()))
        });
        let restored = (|| {
            vfs.create_dir_all(db_dir)?;
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
            if let Some(parent) = db_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                vfs.sync_dir(parent)?;
            }
            Ok(())
        })();
        if restored.is_err() {
            files::remove_tree(vfs, db_dir);
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
