//! Creating, finding and dropping keyspaces, and the OPTIONS file that
//! lists them.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::handle::Db;
use super::keyspace::{Keyspace, DEFAULT_KEYSPACE};
use super::ks_dirs::{keyspace_dir, remove_tree_dir, KEYSPACES_DIR};
use super::shared::Shared;
use super::tree_open::{checked_policy, Parts, TreeCaches};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::{KeyspaceOptions, Options};
use crate::paths::TablePaths;
use crate::version::{KeyspaceOp, VersionEdit, VersionSet};

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 255 {
        return Err(Error::invalid(format!(
            "keyspace name must be 1 to 255 bytes, got {} bytes",
            name.len()
        )));
    }
    Ok(())
}

impl Db {
    /// The end of a read-write open: creates the keyspaces named with
    /// [`Options::with_keyspace`] that do not exist yet, then writes the
    /// OPTIONS file and logs the options.
    pub(super) fn finish_open(&self, wanted: &[(String, KeyspaceOptions)]) -> Result<()> {
        // The OPTIONS file is written once, below, not once per keyspace.
        let root = &self.inner().shared.root_versions;
        for (name, ks_opts) in wanted {
            if name != DEFAULT_KEYSPACE && !root.has_keyspace(name) {
                self.create_tree(name, ks_opts.clone())?;
            }
        }
        persist_options(&self.inner().shared)?;
        log_options(&self.inner().shared);
        Ok(())
    }

    /// Creates keyspace `name` with its own options and policy (RocksDB
    /// `CreateColumnFamily`, fjall `keyspace`). Its directory and MANIFEST
    /// are made durable first, then the root MANIFEST records it; a crash in
    /// between leaves a directory that the next open removes. A name in use
    /// (or `"default"`) is [`Error::InvalidArgument`].
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let events = db.create_keyspace("events", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Lwc { max_segments: 8 }))?;
    /// events.put("e1", "login")?;
    /// assert!(db.create_keyspace("events", KeyspaceOptions::default()).is_err(), "duplicate");
    /// assert_eq!(db.list_keyspaces(), ["default", "events"]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn create_keyspace(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        let ks = self.create_tree(name, opts)?;
        persist_options_after_ddl(&self.inner().shared, "creating a keyspace");
        Ok(ks)
    }

    /// Creates keyspaces `specs` (name and options each) in order, as
    /// [`Db::create_keyspace`] does, but writes the OPTIONS file once, after
    /// the last (RocksDB `CreateColumnFamilies`): its size grows with the
    /// number of keyspaces. On an error the keyspaces created before it stay,
    /// and the OPTIONS file lists them.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let made = db.create_keyspaces((0..3).map(|i| (format!("ks{i}"), KeyspaceOptions::default())))?;
    /// made[2].put("k", "v")?;
    /// assert_eq!(db.list_keyspaces(), ["default", "ks0", "ks1", "ks2"]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn create_keyspaces<N: AsRef<str>>(
        &self,
        specs: impl IntoIterator<Item = (N, KeyspaceOptions)>,
    ) -> Result<Vec<Keyspace>> {
        let mut made = Vec::new();
        let mut result = Ok(());
        for (name, opts) in specs {
            match self.create_tree(name.as_ref(), opts) {
                Ok(ks) => made.push(ks),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if !made.is_empty() {
            persist_options_after_ddl(&self.inner().shared, "creating keyspaces");
        }
        result.map(|()| made)
    }

    /// [`Self::create_keyspace`] without the OPTIONS file write (batches
    /// write it once).
    pub(super) fn create_tree(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        check_name(name)?;
        self.inner().check_bg_error()?;
        let shared = self.inner().shared.clone();
        let _ddl = shared.ddl.lock();
        if shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if name == DEFAULT_KEYSPACE || shared.root_versions.has_keyspace(name) {
            return Err(Error::invalid(format!("keyspace {name:?} already exists")));
        }
        let tree_opts = opts.apply(&self.inner().opts);
        let policy = checked_policy(&tree_opts)?;
        let vfs = shared.vfs.clone();
        let root = &shared.root_versions;
        let id = root.next_keyspace_id();
        let dir = keyspace_dir(&shared.dir, id);
        if vfs.exists(&dir) {
            // Left by a create that failed before it was logged.
            remove_tree_dir(vfs.as_ref(), &dir);
        }
        vfs.create_dir_all(&dir)?;
        let made = VersionSet::create(vfs.clone(), &dir, tree_opts.num_levels).and_then(|v| {
            vfs.sync_dir(&shared.dir.join(KEYSPACES_DIR))?;
            vfs.sync_dir(&shared.dir)?;
            Ok(v)
        });
        let versions = match made {
            Ok(v) => v,
            Err(e) => {
                remove_tree_dir(vfs.as_ref(), &dir);
                return Err(e);
            }
        };
        let edit = VersionEdit {
            keyspace_ops: vec![KeyspaceOp::Add { id, name: name.to_string(), options: opts.encode() }],
            next_keyspace_id: Some(id + 1),
            ..Default::default()
        };
        // On failure the directory stays: a failed sync may still have put the
        // edit on disk, and then the next open needs it (without the edit,
        // that open removes it).
        root.log_and_apply(edit).inspect_err(|e| self.inner().manifest_failed(e))?;
        versions.set_max_manifest_size(tree_opts.max_manifest_file_size);
        let paths = Arc::new(TablePaths::new(&dir, &[]));
        let caches = TreeCaches::new(&shared.caches, &paths, &tree_opts);
        let parts = Parts {
            id,
            name: name.to_string(),
            dir,
            opts: tree_opts,
            versions: Arc::new(versions),
            caches,
            policy,
        };
        let tree = {
            // No memtable switch between reading the WAL number and listing the tree.
            let _wal = shared.wal.lock();
            let tree =
                parts.assemble(MemTable::new(), shared.wal_number.load(Ordering::SeqCst), shared.clone());
            shared.trees.write().insert(id, tree.clone());
            tree
        };
        if let Err(e) = tree.spawn_background() {
            tree.set_bg_error(&e);
            return Err(e);
        }
        log::info!(target: "strata::keyspace", "[{name}] keyspace created (id {}, policy {})", tree.id, tree.policy.name());
        Ok(Keyspace { tree })
    }

    /// The handle of keyspace `name` (`"default"` is the default keyspace);
    /// [`Error::KeyspaceNotFound`] if there is none.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let vfs = std::sync::Arc::new(MemVfs::new());
    /// let db = Db::open("/db", Options::default().with_vfs(vfs.clone()))?;
    /// db.create_keyspace("users", KeyspaceOptions::default())?.put("u1", "ada")?;
    /// db.close()?;
    /// let db = Db::open("/db", Options::default().with_vfs(vfs))?;
    /// assert_eq!(db.keyspace("users")?.get("u1")?, Some(b"ada".to_vec()));
    /// assert!(db.keyspace("nope").is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn keyspace(&self, name: &str) -> Result<Keyspace> {
        let found = self.inner().shared.all_trees().into_iter().find(|t| t.name == name);
        match found {
            Some(tree) => Ok(Keyspace { tree }),
            None => Err(Error::KeyspaceNotFound(format!("{name:?} is not in this database"))),
        }
    }

    /// The default keyspace's handle: the tree the single-keyspace API uses.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// assert_eq!(db.default_keyspace().get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn default_keyspace(&self) -> Keyspace {
        Keyspace { tree: self.inner().clone() }
    }

    /// Drops keyspace `name` (RocksDB `DropColumnFamily`): the root MANIFEST
    /// records the drop, then its background work stops and its directory is
    /// removed (an open after a crash removes what is left). Its data is
    /// gone, its name can be used again, and its handles fail from now on
    /// (iterators made earlier may fail with I/O errors). The default
    /// keyspace cannot be dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let tmp = db.create_keyspace("tmp", KeyspaceOptions::default())?;
    /// tmp.put("k", "v")?;
    /// db.drop_keyspace("tmp")?;
    /// assert!(tmp.get("k").is_err(), "the handle is dead");
    /// assert_eq!(db.create_keyspace("tmp", KeyspaceOptions::default())?.get("k")?, None);
    /// assert!(db.drop_keyspace("default").is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        if name == DEFAULT_KEYSPACE {
            return Err(Error::invalid("the default keyspace cannot be dropped"));
        }
        self.inner().check_bg_error()?;
        let shared = self.inner().shared.clone();
        let _ddl = shared.ddl.lock();
        let tree = shared
            .all_trees()
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| Error::KeyspaceNotFound(format!("{name:?} is not in this database")))?;
        {
            // No write group is between resolving its keyspaces and applying them.
            let _wal = shared.wal.lock();
            let edit =
                VersionEdit { keyspace_ops: vec![KeyspaceOp::Drop { id: tree.id }], ..Default::default() };
            shared.root_versions.log_and_apply(edit).inspect_err(|e| self.inner().manifest_failed(e))?;
            tree.dropped.store(true, Ordering::Release);
            shared.trees.write().remove(&tree.id);
        }
        tree.stop_background();
        // Its unflushed writes no longer keep WALs alive.
        shared.delete_obsolete_wals();
        remove_tree_dir(shared.vfs.as_ref(), &tree.dir);
        log::info!(target: "strata::keyspace", "[{name}] keyspace dropped (id {})", tree.id);
        persist_options_after_ddl(&shared, "dropping a keyspace");
        Ok(())
    }

    /// The names of the open keyspaces, `"default"` first, then by creation.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.create_keyspace("b", strata::KeyspaceOptions::default())?;
    /// db.create_keyspace("a", strata::KeyspaceOptions::default())?;
    /// assert_eq!(db.list_keyspaces(), ["default", "b", "a"]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn list_keyspaces(&self) -> Vec<String> {
        self.inner().shared.all_trees().iter().map(|t| t.name.clone()).collect()
    }

    /// The keyspaces of the database at `path` without opening it (RocksDB
    /// `ListColumnFamilies`): reads the root MANIFEST, writes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let opts = Options::default().with_vfs(std::sync::Arc::new(MemVfs::new()));
    /// let db = Db::open("/db", opts.clone())?;
    /// db.create_keyspace("users", KeyspaceOptions::default())?;
    /// db.close()?;
    /// assert_eq!(Db::list_keyspaces_at("/db", &opts)?, ["default", "users"]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn list_keyspaces_at(path: impl AsRef<Path>, opts: &Options) -> Result<Vec<String>> {
        let dir = path.as_ref();
        let versions = VersionSet::load_read_only(opts.vfs.clone(), dir, 64, |_, _| Ok(()))?;
        let mut names = vec![DEFAULT_KEYSPACE.to_string()];
        names.extend(versions.keyspaces().into_values().map(|e| e.name));
        Ok(names)
    }
}

/// Writes a new OPTIONS file for every open keyspace (the caller holds
/// `Shared::ddl`, or the open has not returned yet).
fn persist_options(shared: &Shared) -> Result<()> {
    let trees: Vec<(String, Options)> =
        shared.all_trees().iter().map(|t| (t.name.clone(), t.opts.clone())).collect();
    crate::options_file::write(shared.vfs.as_ref(), &shared.dir, &trees).map(|_| ())
}

/// Writes every open keyspace's options into the info log, one line each as
/// the OPTIONS file has them (RocksDB dumps its options into `LOG` at open).
fn log_options(shared: &Shared) {
    let Some(log) = &shared.info_log else { return };
    let trees: Vec<(String, Options)> =
        shared.all_trees().iter().map(|t| (t.name.clone(), t.opts.clone())).collect();
    let text = crate::options_file::render(&trees);
    log.lines("options", text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')));
}

/// After a keyspace was created or dropped, which stands whatever happens
/// here: a failed OPTIONS write is logged, and the next open writes one.
fn persist_options_after_ddl(shared: &Shared, what: &str) {
    if let Err(e) = persist_options(shared) {
        log::warn!(target: "strata::options", "OPTIONS file not written after {what}: {e}");
    }
}
