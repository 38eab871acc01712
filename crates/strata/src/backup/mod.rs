//! Incremental backups (RocksDB `BackupEngine`): a directory of backups of one
//! database, each a checkpoint whose tables are kept once in `shared/` however
//! many backups hold them.
//!
//! Layout of a backup directory:
//! - `shared/<keyspace-id>-<number>-<size>-<crc32c>.sst`: table files; a
//!   table appended to in place (`lwc`) has a new size and checksum and so a
//!   new name;
//! - `private/<id>/…`: the backup's other files (MANIFESTs, `CURRENT`s, WALs)
//!   at the paths they have in a database directory;
//! - `meta/<id>`: the backup's description (`meta.rs`; the format is in
//!   docs/FORMAT.md), written last;
//! - `LOCK`: held by the open engine.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::vfs::{FileLock, RealVfs, Vfs};

mod create;
mod files;
mod meta;
mod restore;

pub(crate) use restore::{refuse_incomplete_restore, RESTORE_MARKER};

use meta::BackupMeta;

/// A backup's number in its backup directory: 1 for the first, each new
/// backup one more than the newest present.
///
/// # Examples
///
/// ```
/// use strata::{BackupEngine, BackupId, Db, Options};
/// let base = tempfile::tempdir()?;
/// let db = Db::open(base.path().join("db"), Options::default())?;
/// let engine = BackupEngine::open(base.path().join("backups"))?;
/// let id: BackupId = engine.create_new_backup(&db)?;
/// assert_eq!(id, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type BackupId = u64;

/// What [`BackupEngine::get_backup_info`] reports of one backup.
///
/// # Examples
///
/// ```
/// use strata::{BackupEngine, Db, Options};
/// let base = tempfile::tempdir()?;
/// let db = Db::open(base.path().join("db"), Options::default())?;
/// db.put("k", "v")?;
/// let engine = BackupEngine::open(base.path().join("backups"))?;
/// engine.create_new_backup(&db)?;
/// let info = &engine.get_backup_info()[0];
/// assert_eq!(info.id, 1);
/// assert!(info.num_files >= 3 && info.size > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// The backup's id.
    pub id: BackupId,
    /// When it was taken, in seconds since the Unix epoch.
    pub timestamp: u64,
    /// Total bytes of its files (shared tables counted in full in every
    /// backup holding them).
    pub size: u64,
    /// How many files it holds.
    pub num_files: usize,
}

/// A directory of incremental backups of a database (RocksDB
/// `BackupEngine`). Each backup is a checkpoint ([`crate::Db::checkpoint`]);
/// its tables go to a shared area where a table already backed up is kept
/// once, so a new backup copies only the tables made since the last one. A
/// backup is listed once its meta file is durably written, last, so one cut
/// short by a crash or an error is never listed; what it left is removed at
/// the next open. One engine at a time may hold a directory (a `LOCK` file).
///
/// The database must be on the same file system as the backup directory:
/// the checkpoint is written inside it and its files renamed into place. On
/// a file system with hard links the checkpoint links the database's
/// immutable tables, so a backup shares their storage with the database
/// (copy the backup directory elsewhere to guard against losing the device).
///
/// # Examples
///
/// ```
/// use strata::{BackupEngine, Db, Options};
/// let base = tempfile::tempdir()?;
/// let db = Db::open(base.path().join("db"), Options::default())?;
/// db.put("k", "v1")?;
/// let engine = BackupEngine::open(base.path().join("backups"))?;
/// let first = engine.create_new_backup(&db)?;
/// db.put("k", "v2")?;
/// engine.create_new_backup(&db)?;
/// engine.verify_backup(first)?;
/// engine.restore_db_from_backup(first, base.path().join("restored"))?;
/// let restored = Db::open(base.path().join("restored"), Options::default())?;
/// assert_eq!(restored.get("k")?, Some(b"v1".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct BackupEngine {
    dir: PathBuf,
    vfs: Arc<dyn Vfs>,
    /// The listed backups; held for the whole of every operation.
    backups: Mutex<BTreeMap<BackupId, BackupMeta>>,
    _lock: Box<dyn FileLock>,
}

/// The shared tables' directory.
const SHARED: &str = "shared";
/// The backups' other files, one directory per backup.
const PRIVATE: &str = "private";
/// The meta files.
const META: &str = "meta";
/// Where a backup's checkpoint is written before its files are moved.
const TMP: &str = "tmp-checkpoint";

impl BackupEngine {
    /// Opens (creating it if missing) the backup directory `dir` on the real
    /// file system; see [`BackupEngine::open_with_vfs`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::BackupEngine;
    /// let base = tempfile::tempdir()?;
    /// let engine = BackupEngine::open(base.path().join("backups"))?;
    /// assert!(engine.get_backup_info().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(dir: impl AsRef<Path>) -> Result<BackupEngine> {
        Self::open_with_vfs(dir, Arc::new(RealVfs::new()))
    }

    /// Opens (creating it if missing) the backup directory `dir` on `vfs`,
    /// locks it, reads every backup's meta file (one that fails its checksum
    /// is [`Error::Corruption`] naming it) and removes what an interrupted
    /// backup or deletion left: the temporary checkpoint, private
    /// directories and shared tables no listed backup refers to.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::{BackupEngine, Db, MemVfs, Options, Vfs};
    /// let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    /// let db = Db::open("/db", Options::default().with_vfs(vfs.clone()))?;
    /// let engine = BackupEngine::open_with_vfs("/backups", vfs.clone())?;
    /// engine.create_new_backup(&db)?;
    /// drop(engine);
    /// let engine = BackupEngine::open_with_vfs("/backups", vfs)?;
    /// assert_eq!(engine.get_backup_info().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with_vfs(dir: impl AsRef<Path>, vfs: Arc<dyn Vfs>) -> Result<BackupEngine> {
        let dir = dir.as_ref().to_path_buf();
        for sub in [SHARED, PRIVATE, META] {
            vfs.create_dir_all(&dir.join(sub))?;
        }
        let lock = vfs.lock(&dir.join("LOCK"))?;
        let mut backups = BTreeMap::new();
        for name in vfs.list_dir(&dir.join(META))? {
            let path = dir.join(META).join(&name);
            match name.parse::<BackupId>() {
                Ok(id) if id > 0 && id.to_string() == name => {
                    backups.insert(id, BackupMeta::decode(&vfs.read_file(&path)?, &path)?);
                }
                // A meta file being written when a backup stopped.
                _ if name.ends_with(".tmp") => files::remove_tree(vfs.as_ref(), &path),
                _ => {}
            }
        }
        let engine = BackupEngine { dir, vfs, backups: Mutex::new(backups), _lock: lock };
        let backups = engine.backups.lock();
        files::remove_tree(engine.vfs.as_ref(), &engine.dir.join(TMP));
        engine.collect_garbage(&backups);
        drop(backups);
        Ok(engine)
    }

    /// Every listed backup, oldest first.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BackupEngine, Db, Options};
    /// let base = tempfile::tempdir()?;
    /// let db = Db::open(base.path().join("db"), Options::default())?;
    /// let engine = BackupEngine::open(base.path().join("backups"))?;
    /// engine.create_new_backup(&db)?;
    /// engine.create_new_backup(&db)?;
    /// let ids: Vec<_> = engine.get_backup_info().iter().map(|b| b.id).collect();
    /// assert_eq!(ids, [1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_backup_info(&self) -> Vec<BackupInfo> {
        self.backups
            .lock()
            .iter()
            .map(|(&id, m)| BackupInfo {
                id,
                timestamp: m.timestamp,
                size: m.size(),
                num_files: m.files.len(),
            })
            .collect()
    }

    /// Deletes backup `id` ([`Error::InvalidArgument`] if it is not
    /// listed): its meta file first (durably), then its private files and the
    /// shared tables no other backup holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BackupEngine, Db, Options};
    /// let base = tempfile::tempdir()?;
    /// let db = Db::open(base.path().join("db"), Options::default())?;
    /// let engine = BackupEngine::open(base.path().join("backups"))?;
    /// let id = engine.create_new_backup(&db)?;
    /// engine.delete_backup(id)?;
    /// assert!(engine.get_backup_info().is_empty());
    /// assert!(engine.delete_backup(id).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_backup(&self, id: BackupId) -> Result<()> {
        let mut backups = self.backups.lock();
        self.delete_locked(&mut backups, id)?;
        self.collect_garbage(&backups);
        Ok(())
    }

    /// Deletes the oldest backups until at most `keep` remain, then the
    /// shared tables no remaining backup holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BackupEngine, Db, Options};
    /// let base = tempfile::tempdir()?;
    /// let db = Db::open(base.path().join("db"), Options::default())?;
    /// let engine = BackupEngine::open(base.path().join("backups"))?;
    /// for _ in 0..3 {
    ///     engine.create_new_backup(&db)?;
    /// }
    /// engine.purge_old_backups(1)?;
    /// let ids: Vec<_> = engine.get_backup_info().iter().map(|b| b.id).collect();
    /// assert_eq!(ids, [3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn purge_old_backups(&self, keep: usize) -> Result<()> {
        let mut backups = self.backups.lock();
        while backups.len() > keep {
            let Some(&oldest) = backups.keys().next() else { break };
            self.delete_locked(&mut backups, oldest)?;
        }
        self.collect_garbage(&backups);
        Ok(())
    }

    /// Unlists backup `id`: its meta file is removed durably, then its
    /// private directory (best effort; leftovers go at the next open).
    fn delete_locked(&self, backups: &mut BTreeMap<BackupId, BackupMeta>, id: BackupId) -> Result<()> {
        if !backups.contains_key(&id) {
            return Err(Error::invalid(format!("no backup {id} in {}", self.dir.display())));
        }
        let meta_dir = self.dir.join(META);
        self.vfs.remove_file(&meta_dir.join(id.to_string()))?;
        backups.remove(&id);
        self.vfs.sync_dir(&meta_dir)?;
        files::remove_tree(self.vfs.as_ref(), &self.private_dir(id));
        Ok(())
    }

    /// Best effort: removes private directories and shared tables that no
    /// listed backup refers to.
    fn collect_garbage(&self, backups: &BTreeMap<BackupId, BackupMeta>) {
        let vfs = self.vfs.as_ref();
        let used: HashSet<&str> =
            backups.values().flat_map(|m| m.files.iter().filter_map(|f| f.shared.as_deref())).collect();
        let shared = self.dir.join(SHARED);
        for name in vfs.list_dir(&shared).unwrap_or_default() {
            if !used.contains(name.as_str()) {
                files::remove_tree(vfs, &shared.join(name));
            }
        }
        let _ = vfs.sync_dir(&shared);
        let private = self.dir.join(PRIVATE);
        for name in vfs.list_dir(&private).unwrap_or_default() {
            if !name.parse::<BackupId>().is_ok_and(|id| backups.contains_key(&id) && id.to_string() == name) {
                files::remove_tree(vfs, &private.join(name));
            }
        }
        let _ = vfs.sync_dir(&private);
    }

    /// Where backup `id`'s private files are.
    fn private_dir(&self, id: BackupId) -> PathBuf {
        self.dir.join(PRIVATE).join(id.to_string())
    }

    /// Where `file` of backup `id` is stored.
    fn stored_path(&self, id: BackupId, file: &meta::FileEntry) -> PathBuf {
        match &file.shared {
            Some(name) => self.dir.join(SHARED).join(name),
            None => self.private_dir(id).join(&file.rel),
        }
    }
}
