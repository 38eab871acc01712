//! `BackupEngine::create_new_backup`: a checkpoint inside the backup
//! directory, its tables moved to `shared/` (or dropped where an identical
//! one is there), the rest to `private/<id>/`, then the meta file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::meta::{BackupMeta, FileEntry};
use super::{files, BackupEngine, BackupId, META, SHARED, TMP};
use crate::db::Db;
use crate::error::{Error, Result};
use crate::filename::{parse_file_name, FileKind};

/// The checkpoint's keyspace directories (`keyspaces/<id>/`).
const KEYSPACES: &str = "keyspaces";

impl BackupEngine {
    /// Backs up `db` (every keyspace, as [`Db::checkpoint`] captures it:
    /// every write acknowledged before the call and of writes racing it a
    /// prefix of whole batches) and returns the new backup's id. Tables
    /// already in the backup directory are not copied again. On error
    /// nothing of the new backup is listed and what it wrote is removed
    /// (where the file system allows; the rest goes at the next open).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BackupEngine, Db, Options};
    /// let base = tempfile::tempdir()?;
    /// let db = Db::open(base.path().join("db"), Options::default())?;
    /// db.put("k", "v")?;
    /// db.flush()?;
    /// let engine = BackupEngine::open(base.path().join("backups"))?;
    /// let first = engine.create_new_backup(&db)?;
    /// let second = engine.create_new_backup(&db)?;
    /// assert_eq!((first, second), (1, 2));
    /// // The one table is stored once.
    /// assert_eq!(std::fs::read_dir(base.path().join("backups/shared"))?.count(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_new_backup(&self, db: &Db) -> Result<BackupId> {
        let mut backups = self.backups.lock();
        let id = backups.keys().next_back().map_or(1, |last| last + 1);
        let vfs = self.vfs.as_ref();
        let tmp = self.dir.join(TMP);
        files::remove_tree(vfs, &tmp);
        files::remove_tree(vfs, &self.private_dir(id));
        let mut added = Vec::new();
        let made = self.make_backup(db, id, &tmp, &mut added);
        files::remove_tree(vfs, &tmp);
        match made {
            Ok(meta) => {
                backups.insert(id, meta);
                Ok(id)
            }
            Err(e) => {
                files::remove_tree(vfs, &self.private_dir(id));
                for name in added {
                    let _ = vfs.remove_file(&self.dir.join(SHARED).join(name));
                }
                Err(e)
            }
        }
    }

    /// Writes backup `id`, noting in `added` the shared tables it put in.
    fn make_backup(&self, db: &Db, id: BackupId, tmp: &Path, added: &mut Vec<String>) -> Result<BackupMeta> {
        let vfs = self.vfs.as_ref();
        db.checkpoint(tmp)?;
        if !vfs.exists(&tmp.join("CURRENT")) {
            return Err(Error::invalid(format!(
                "the database's checkpoint is not visible in {}: the backup directory must be on the database's file system",
                self.dir.display()
            )));
        }
        let timestamp =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let shared = self.dir.join(SHARED);
        let private = self.private_dir(id);
        let mut entries = Vec::new();
        let mut dirs: BTreeMap<PathBuf, ()> = BTreeMap::new();
        for rel in checkpoint_files(vfs, tmp)? {
            let src = tmp.join(&rel);
            let (size, crc) = files::checksum(vfs, &src)?;
            let table = rel.file_name().and_then(|n| n.to_str()).and_then(parse_file_name);
            let shared_name = match table {
                Some(FileKind::Table(number)) => {
                    Some(format!("{}-{number}-{size}-{crc:08x}.sst", keyspace_of(&rel)))
                }
                _ => None,
            };
            match &shared_name {
                // An identical table is already stored (a shared file is
                // complete: it was renamed in after its checkpoint synced it).
                Some(name) if vfs.exists(&shared.join(name)) => vfs.remove_file(&src)?,
                Some(name) => {
                    vfs.rename(&src, &shared.join(name))?;
                    added.push(name.clone());
                }
                None => {
                    let dst = private.join(&rel);
                    let parent = dst.parent().unwrap_or(&private).to_path_buf();
                    vfs.create_dir_all(&parent)?;
                    vfs.rename(&src, &dst)?;
                    dirs.insert(parent, ());
                }
            }
            entries.push(FileEntry { rel, size, crc, shared: shared_name });
        }
        // Every file's name durable before the meta file lists it.
        vfs.sync_dir(&shared)?;
        for dir in dirs.keys().rev() {
            vfs.sync_dir(dir)?;
        }
        vfs.sync_dir(&self.dir.join(super::PRIVATE))?;
        let meta = BackupMeta { timestamp, files: entries };
        self.write_meta(id, &meta)?;
        Ok(meta)
    }

    /// Writes `meta/<id>` through a temporary file, renamed and synced: the
    /// backup is listed from here on.
    fn write_meta(&self, id: BackupId, meta: &BackupMeta) -> Result<()> {
        let vfs = self.vfs.as_ref();
        let meta_dir = self.dir.join(META);
        let (tmp, path) = (meta_dir.join(format!("{id}.tmp")), meta_dir.join(id.to_string()));
        let written = (|| {
            let mut f = vfs.create(&tmp)?;
            f.append(&meta.encode()?)?;
            f.sync()?;
            drop(f);
            vfs.rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = vfs.remove_file(&tmp);
            return Err(e);
        }
        if let Err(e) = vfs.sync_dir(&meta_dir) {
            // Not known durable: unlist it, as the error says it failed.
            let _ = vfs.remove_file(&path);
            let _ = vfs.sync_dir(&meta_dir);
            return Err(e);
        }
        Ok(())
    }
}

/// The files of the checkpoint in `dir`, relative to it: its own, and those
/// of each `keyspaces/<id>/` directory.
fn checkpoint_files(vfs: &dyn crate::vfs::Vfs, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for name in vfs.list_dir(dir)? {
        if name != KEYSPACES {
            out.push(PathBuf::from(name));
            continue;
        }
        for ks in vfs.list_dir(&dir.join(KEYSPACES))? {
            let rel = Path::new(KEYSPACES).join(&ks);
            for file in vfs.list_dir(&dir.join(&rel))? {
                out.push(rel.join(file));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The keyspace id a checkpoint file belongs to: `keyspaces/<id>/…`, or 0
/// (the default keyspace) for the top directory.
fn keyspace_of(rel: &Path) -> String {
    let mut parts = rel.iter();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(k), Some(id), Some(_)) if k == KEYSPACES => id.to_string_lossy().into_owned(),
        _ => "0".to_string(),
    }
}
