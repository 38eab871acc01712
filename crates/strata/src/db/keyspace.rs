//! Keyspaces (RocksDB column families, fjall partitions): each its own LSM
//! tree with its own policy and options, all sharing one WAL, one sequence
//! and one snapshot list. Creating, finding and dropping them, and the
//! [`Keyspace`] handle.

use std::fmt;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::ks_recovery::{keyspace_dir, remove_tree_dir, KEYSPACES_DIR};
use super::recovery::{checked_policy, table_cache, Parts};
use super::{into_vecs, Db, DbInner, DbIterator, DbRawIterator, Snapshot};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::keyspace_options::KeyspaceOptions;
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::paths::TablePaths;
use crate::pinned::PinnedValue;
use crate::stats::Stats;
use crate::version::{KeyspaceOp, VersionEdit, VersionSet};

/// The name of the keyspace the single-keyspace API works on.
pub(crate) const DEFAULT_KEYSPACE: &str = "default";

/// A handle on one keyspace of a [`Db`] (rust-rocksdb `ColumnFamily`, fjall
/// `Keyspace`): its own LSM tree, with its own compaction policy, memtables
/// and levels. Writes through it go to the database's one WAL, and a
/// [`WriteBatch`] may hold ops of several keyspaces and is applied
/// atomically. Snapshots are database-wide: a [`Snapshot`] of the `Db`
/// reads any keyspace at the same point. Cheap to clone. After
/// [`Db::drop_keyspace`], every operation through a handle of it fails with
/// [`Error::KeyspaceNotFound`].
///
/// # Examples
///
/// ```
/// use strata::{CompactionStyle, Db, KeyspaceOptions, MemVfs, Options};
///
/// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
/// let index = db.create_keyspace("index", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Garnering { c: 0.8 }))?;
/// index.put("by-name/ada", "u1")?;
/// assert_eq!(index.get("by-name/ada")?, Some(b"u1".to_vec()));
/// assert_eq!(db.get("by-name/ada")?, None, "the default keyspace is another tree");
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone)]
pub struct Keyspace {
    tree: Arc<DbInner>,
}

impl fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Keyspace({:?}, id {})", self.tree.name, self.tree.id)
    }
}

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
        persist_options_after_ddl(&self.inner.shared, "creating a keyspace");
        Ok(ks)
    }

    /// [`Self::create_keyspace`] without the OPTIONS file write (batches write it once).
    pub(super) fn create_tree(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        check_name(name)?;
        self.inner.check_bg_error()?;
        let shared = self.inner.shared.clone();
        let _ddl = shared.ddl.lock();
        if shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if name == DEFAULT_KEYSPACE || shared.trees.read().values().any(|t| t.name == name) {
            return Err(Error::invalid(format!("keyspace {name:?} already exists")));
        }
        let tree_opts = opts.apply(&self.inner.opts);
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
        root.log_and_apply(edit).inspect_err(|e| self.inner.manifest_failed(e))?;
        versions.set_max_manifest_size(tree_opts.max_manifest_file_size);
        let paths = Arc::new(TablePaths::new(&dir, &[]));
        let (block_cache, row_cache) = shared.caches.for_tree();
        let tables = table_cache(&paths, &tree_opts, block_cache.clone());
        let parts = Parts {
            id,
            name: name.to_string(),
            dir,
            opts: tree_opts,
            versions: Arc::new(versions),
            tables,
            block_cache,
            row_cache,
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
        let found = self.inner.shared.all_trees().into_iter().find(|t| t.name == name);
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
        Keyspace { tree: self.inner.clone() }
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
        self.inner.check_bg_error()?;
        let shared = self.inner.shared.clone();
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
            shared.root_versions.log_and_apply(edit).inspect_err(|e| self.inner.manifest_failed(e))?;
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
        self.inner.shared.all_trees().iter().map(|t| t.name.clone()).collect()
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

    /// Refuses a handle of another database.
    fn own(&self, ks: &Keyspace) -> Result<Arc<DbInner>> {
        if !Arc::ptr_eq(&ks.tree.shared, &self.inner.shared) {
            return Err(Error::invalid(format!("keyspace {:?} belongs to another database", ks.tree.name)));
        }
        Ok(ks.tree.clone())
    }

    /// Stores a value in keyspace `ks` (rust-rocksdb `put_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// db.put_cf(&ks, "k", "v")?;
    /// assert_eq!(db.get_cf(&ks, "k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put_cf(&self, ks: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.own(ks)?;
        ks.put(key, value)
    }

    /// Deletes a key of keyspace `ks` (rust-rocksdb `delete_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// db.put_cf(&ks, "k", "v")?;
    /// db.delete_cf(&ks, "k")?;
    /// assert_eq!(db.get_cf(&ks, "k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_cf(&self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<()> {
        self.own(ks)?;
        ks.delete(key)
    }

    /// Deletes every key in `[start, end)` of keyspace `ks` (rust-rocksdb
    /// `delete_range_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// db.put_cf(&ks, "a", "1")?;
    /// db.delete_range_cf(&ks, "a", "b")?;
    /// assert_eq!(db.get_cf(&ks, "a")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range_cf(
        &self,
        ks: &Keyspace,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.own(ks)?;
        ks.delete_range(start, end)
    }

    /// Writes a merge operand in keyspace `ks` (rust-rocksdb `merge_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{associative_merge_operator, Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let op = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default().with_merge_operator(op))?;
    /// db.merge_cf(&ks, "k", "a")?;
    /// db.merge_cf(&ks, "k", "b")?;
    /// assert_eq!(db.get_cf(&ks, "k")?, Some(b"ab".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge_cf(&self, ks: &Keyspace, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.own(ks)?;
        ks.merge(key, operand)
    }

    /// Reads a key of keyspace `ks` (rust-rocksdb `get_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// assert_eq!(db.get_cf(&ks, "k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_cf(&self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.own(ks)?;
        ks.get(key)
    }

    /// Reads a key of keyspace `ks` with read options (rust-rocksdb `get_cf_opt`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("k", "old")?;
    /// let snap = db.snapshot();
    /// ks.put("k", "new")?;
    /// let ro = strata::ReadOptions::default().with_snapshot(&snap);
    /// assert_eq!(db.get_cf_opt(&ks, "k", &ro)?, Some(b"old".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_cf_opt(
        &self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.own(ks)?;
        ks.get_opt(key, ro)
    }

    /// Reads many keys, each of its own keyspace (rust-rocksdb `multi_get_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// let default = db.default_keyspace();
    /// ks.put("k", "in ks")?;
    /// db.put("k", "in default")?;
    /// let got = db.multi_get_cf([(&ks, "k"), (&default, "k")]);
    /// assert_eq!(got[0].as_ref().ok(), Some(&Some(b"in ks".to_vec())));
    /// assert_eq!(got[1].as_ref().ok(), Some(&Some(b"in default".to_vec())));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn multi_get_cf<'a, K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'a Keyspace, K)>,
    {
        keys.into_iter().map(|(ks, k)| self.own(ks).and_then(|_| ks.get(k))).collect()
    }

    /// Iterates keyspace `ks` in key order (rust-rocksdb `iterator_cf` from the start).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("b", "2")?;
    /// ks.put("a", "1")?;
    /// let keys: Vec<_> = db.iterator_cf(&ks).map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn iterator_cf(&self, ks: &Keyspace) -> DbIterator {
        match self.own(ks) {
            Ok(_) => ks.iter(),
            Err(e) => self.iter().with_error(e),
        }
    }

    /// The keys of keyspace `ks` that start with `prefix` (rust-rocksdb `prefix_iterator_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("p1", "")?;
    /// ks.put("q1", "")?;
    /// assert_eq!(db.prefix_iterator_cf(&ks, "p").count(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn prefix_iterator_cf(&self, ks: &Keyspace, prefix: impl AsRef<[u8]>) -> DbIterator {
        match self.own(ks) {
            Ok(_) => ks.prefix_iterator(prefix),
            Err(e) => self.iter().with_error(e),
        }
    }

    /// A seekable cursor over keyspace `ks` (rust-rocksdb `raw_iterator_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// let mut it = db.raw_iterator_cf(&ks);
    /// it.seek_to_first();
    /// assert_eq!(it.key(), Some(&b"a"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn raw_iterator_cf(&self, ks: &Keyspace) -> DbRawIterator {
        match self.own(ks) {
            Ok(_) => ks.raw_iterator(),
            Err(e) => self.raw_iterator().with_error(e),
        }
    }

    /// Flushes keyspace `ks`'s memtable (rust-rocksdb `flush_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// db.flush_cf(&ks)?;
    /// assert_eq!(ks.stats().levels[0].files, 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn flush_cf(&self, ks: &Keyspace) -> Result<()> {
        self.own(ks)?;
        ks.flush()
    }

    /// Compacts `[start, end]` of keyspace `ks` (rust-rocksdb `compact_range_cf`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// db.compact_range_cf(&ks, None, None)?;
    /// assert_eq!(ks.get("a")?, Some(b"1".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn compact_range_cf(&self, ks: &Keyspace, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.own(ks)?;
        ks.compact_range(start, end)
    }
}

impl Keyspace {
    /// The keyspace's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// assert_eq!(db.create_keyspace("ks", strata::KeyspaceOptions::default())?.name(), "ks");
    /// assert_eq!(db.default_keyspace().name(), "default");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.tree.name
    }

    /// The keyspace's id (0 for the default keyspace; never reused).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// assert_eq!(db.default_keyspace().id(), 0);
    /// assert_eq!(db.create_keyspace("ks", strata::KeyspaceOptions::default())?.id(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn id(&self) -> u32 {
        self.tree.id
    }

    /// The per-tree options this keyspace runs with (those persisted in the
    /// root MANIFEST, or those given at open, which the open then recorded).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::new().with_compaction_style(CompactionStyle::Tiered))?;
    /// assert_eq!(ks.options().compaction_style().name(), "tiered");
    /// assert_eq!(db.default_keyspace().options().compaction_style().name(), "leveled");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn options(&self) -> KeyspaceOptions {
        KeyspaceOptions::from_options(&self.tree.opts)
    }

    /// A database snapshot held through this keyspace's tree (`TtlKeyspace`
    /// has no `Db` to take one from).
    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.tree.clone())
    }

    /// The instance id of the database this handle belongs to.
    pub(crate) fn db_instance(&self) -> u64 {
        self.tree.shared.instance
    }

    fn write_one(&self, kind: ValueKind, key: &[u8], value: &[u8], wo: &WriteOptions) -> Result<()> {
        self.tree.check_live()?;
        let mut b = WriteBatch::new();
        b.push_op(self.tree.id, kind, key, value);
        self.tree.write(b, wo)
    }

    /// Stores a value.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("k", "v")?;
    /// assert_eq!(ks.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Stores a value with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put_opt("k", "v", &strata::WriteOptions::default().with_sync(true))?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.write_one(ValueKind::Put, key.as_ref(), value.as_ref(), wo)
    }

    /// Deletes a key.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("k", "v")?;
    /// ks.delete("k")?;
    /// assert_eq!(ks.get("k")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// Deletes a key with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.delete_opt("k", &strata::WriteOptions::default())?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.write_one(ValueKind::Delete, key.as_ref(), &[], wo)
    }

    /// Deletes every key in `[start, end)` (RocksDB `DeleteRange`); see
    /// [`Db::delete_range`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// ks.put("c", "3")?;
    /// ks.delete_range("a", "c")?;
    /// assert_eq!(ks.get("a")?, None);
    /// assert_eq!(ks.get("c")?, Some(b"3".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_opt(start, end, &WriteOptions::default())
    }

    /// [`Self::delete_range`] with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.delete_range_opt("a", "c", &strata::WriteOptions::default().with_sync(true))?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn delete_range_opt(
        &self,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
        wo: &WriteOptions,
    ) -> Result<()> {
        self.write_one(ValueKind::RangeDelete, start.as_ref(), end.as_ref(), wo)
    }

    /// Writes a merge operand, combined by the keyspace's merge operator
    /// (without one the write is refused with `InvalidArgument`).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{associative_merge_operator, Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let op = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default().with_merge_operator(op))?;
    /// ks.merge("k", "a")?;
    /// ks.merge("k", "b")?;
    /// assert_eq!(ks.get("k")?, Some(b"ab".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.merge_opt(key, operand, &WriteOptions::default())
    }

    /// [`Self::merge`] with write options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// let err = ks.merge_opt("k", "operand", &strata::WriteOptions::default()).unwrap_err();
    /// assert!(matches!(err, strata::Error::InvalidArgument(_)), "no merge operator to read it with");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn merge_opt(
        &self,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
        wo: &WriteOptions,
    ) -> Result<()> {
        self.write_one(ValueKind::Merge, key.as_ref(), operand.as_ref(), wo)
    }

    /// Reads a key.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// assert_eq!(ks.get("missing")?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// Reads a key with read options (at a database snapshot, …).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// let snap = db.snapshot();
    /// ks.put("k", "v")?;
    /// assert_eq!(ks.get_opt("k", &strata::ReadOptions::default().with_snapshot(&snap))?, None);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        self.tree.check_live()?;
        self.tree.get_at(key.as_ref(), ro.snapshot.as_ref().map(Snapshot::sequence), ro)
    }

    /// Reads a key without copying it out of its table block.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("k", "v")?;
    /// ks.flush()?;
    /// assert!(ks.get_pinned("k")?.expect("present").is_pinned());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<PinnedValue>> {
        self.get_pinned_opt(key, &ReadOptions::default())
    }

    /// [`Self::get_pinned`] with read options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("k", "v")?;
    /// assert_eq!(ks.get_pinned_opt("k", &strata::ReadOptions::default())?.map(|v| v.into_vec()), Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_pinned_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<PinnedValue>> {
        self.tree.check_live()?;
        self.tree.get_pinned_at(key.as_ref(), ro.snapshot.as_ref().map(Snapshot::sequence), ro)
    }

    /// Reads many keys of this keyspace at one consistent state.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// let got: Vec<_> = ks.multi_get(["a", "b"]).into_iter().collect::<Result<_, _>>()?;
    /// assert_eq!(got, [Some(b"1".to_vec()), None]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn multi_get<K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        self.multi_get_opt(keys, &ReadOptions::default())
    }

    /// [`Self::multi_get`] with read options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// let got = ks.multi_get_opt(["a"], &strata::ReadOptions::default());
    /// assert!(matches!(got[0], Ok(None)));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn multi_get_opt<K, I>(&self, keys: I, ro: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        let keys: Vec<K> = keys.into_iter().collect();
        if let Err(e) = self.tree.check_live() {
            return keys.iter().map(|_| Err(e.duplicate())).collect();
        }
        let refs: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        into_vecs(self.tree.multi_get_at(&refs, ro.snapshot.as_ref().map(Snapshot::sequence), ro))
    }

    /// Iterates all keys in order; also backwards (`.rev()`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// ks.put("b", "2")?;
    /// let last = ks.iter().next_back().transpose()?;
    /// assert_eq!(last, Some((b"b".to_vec(), b"2".to_vec())));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn iter(&self) -> DbIterator {
        self.range::<&[u8], _>(..)
    }

    /// Iterates all keys with read options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// let ro = strata::ReadOptions::default().with_iterate_lower_bound("b");
    /// assert_eq!(ks.iter_opt(&ro).count(), 0);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn iter_opt(&self, ro: &ReadOptions) -> DbIterator {
        self.range_opt::<&[u8], _>(.., ro)
    }

    /// Iterates the keys in `range`.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// for k in ["a", "b", "c"] {
    ///     ks.put(k, "")?;
    /// }
    /// assert_eq!(ks.range("b".."c").count(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        self.range_opt(range, &ReadOptions::default())
    }

    /// Iterates a range with read options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// assert_eq!(ks.range_opt("a".., &strata::ReadOptions::default()).count(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn range_opt<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R, ro: &ReadOptions) -> DbIterator {
        let it = DbIterator::new(self.tree.clone(), ro.snapshot.as_ref().map(Snapshot::sequence), &range, ro);
        match self.tree.check_live() {
            Ok(()) => it,
            Err(e) => it.with_error(e),
        }
    }

    /// Iterates exactly the keys that start with `prefix`.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// for k in ["u:1", "u:2", "v:1"] {
    ///     ks.put(k, "")?;
    /// }
    /// assert_eq!(ks.prefix_iterator("u:").count(), 2);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn prefix_iterator(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        self.prefix_iterator_opt(prefix, &ReadOptions::default())
    }

    /// [`Self::prefix_iterator`] with read options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("u:1", "")?;
    /// assert_eq!(ks.prefix_iterator_opt("u:", &strata::ReadOptions::default()).count(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn prefix_iterator_opt(&self, prefix: impl AsRef<[u8]>, ro: &ReadOptions) -> DbIterator {
        let seq = ro.snapshot.as_ref().map(Snapshot::sequence);
        let it = DbIterator::prefix(self.tree.clone(), seq, prefix.as_ref(), ro);
        match self.tree.check_live() {
            Ok(()) => it,
            Err(e) => it.with_error(e),
        }
    }

    /// A seekable cursor over the latest state.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// let mut it = ks.raw_iterator();
    /// it.seek("a");
    /// assert_eq!(it.value(), Some(&b"1"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn raw_iterator(&self) -> DbRawIterator {
        self.raw_iterator_opt(&ReadOptions::default())
    }

    /// A seekable cursor with read options.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// let mut it = ks.raw_iterator_opt(&strata::ReadOptions::default());
    /// it.seek_to_first();
    /// assert!(!it.valid());
    /// it.status()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn raw_iterator_opt(&self, ro: &ReadOptions) -> DbRawIterator {
        let it = DbRawIterator::new(self.tree.clone(), ro.snapshot.as_ref().map(Snapshot::sequence), ro);
        match self.tree.check_live() {
            Ok(()) => it,
            Err(e) => it.with_error(e),
        }
    }

    /// Writes the keyspace's memtable to a table and waits.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// ks.flush()?;
    /// assert_eq!(ks.stats().flushes, 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn flush(&self) -> Result<()> {
        self.tree.check_live()?;
        self.tree.flush()
    }

    /// Compacts `[start, end]` of this keyspace down its tree and waits.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// ks.compact_range(None, None)?;
    /// assert_eq!(ks.get("a")?, Some(b"1".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.tree.check_live()?;
        self.tree.compact_range(start, end)
    }

    /// Waits until this keyspace's pending flushes and compactions are done.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.wait_for_compactions()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.tree.check_live()?;
        self.tree.wait_for_compactions()
    }

    /// This keyspace's counters and tree shape. Write counters (groups, WAL
    /// bytes) count the write groups a write to this keyspace led. `cache`
    /// and `row_cache` are this keyspace's share of the database's caches: its
    /// lookups, inserts and invalidations, the evictions of its entries (by
    /// any keyspace's insert) and its resident entries and bytes;
    /// `capacity_bytes` is the whole shared capacity ([`Db::block_cache_stats`]
    /// has the totals).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.get("a")?;
    /// assert_eq!(ks.stats().gets, 1);
    /// assert_eq!(db.stats().gets, 0, "Db::stats is the default keyspace's");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.tree.stats()
    }

    /// [`Db::property`] for this keyspace.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{CompactionStyle, Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default().with_compaction_style(CompactionStyle::Tiered))?;
    /// assert_eq!(ks.property("strata.policy")?, "tiered");
    /// assert_eq!(ks.property_int("rocksdb.num-levels")?, 7);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn property(&self, name: &str) -> Result<String> {
        self.tree.check_live()?;
        self.tree.property(name)
    }

    /// [`Db::property_names`] for this keyspace.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default().with_num_levels(3))?;
    /// assert!(ks.property_names().iter().any(|n| n == "strata.num-files-at-level2"));
    /// assert!(!ks.property_names().iter().any(|n| n == "strata.num-files-at-level3"));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn property_names(&self) -> Vec<String> {
        self.tree.property_names()
    }

    /// [`Db::property_int`] for this keyspace.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default())?;
    /// ks.put("k", "v")?;
    /// assert_eq!(ks.property_int("rocksdb.num-entries-active-mem-table")?, 1);
    /// assert_eq!(db.property_int("rocksdb.num-entries-active-mem-table")?, 0);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn property_int(&self, name: &str) -> Result<u64> {
        self.tree.check_live()?;
        self.tree.property_int(name)
    }

    /// [`Db::approximate_sizes`] for this keyspace.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, KeyspaceOptions, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default())?;
    /// ks.put("k", "v")?;
    /// ks.flush()?;
    /// assert!(ks.approximate_sizes(&[(&b"a"[..], &b"z"[..])])?[0] > 0);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Result<Vec<u64>> {
        self.tree.check_live()?;
        self.tree.approximate_sizes(ranges)
    }
}

/// Writes a new OPTIONS file for every open keyspace (the caller holds
/// `Shared::ddl`, or the open has not returned yet).
pub(super) fn persist_options(shared: &super::shared::Shared) -> Result<()> {
    let trees: Vec<(String, Options)> =
        shared.all_trees().iter().map(|t| (t.name.clone(), t.opts.clone())).collect();
    crate::options_file::write(shared.vfs.as_ref(), &shared.dir, &trees).map(|_| ())
}

/// Writes every open keyspace's options into the info log, one line each as
/// the OPTIONS file has them (RocksDB dumps its options into `LOG` at open).
pub(super) fn log_options(shared: &super::shared::Shared) {
    let Some(log) = &shared.info_log else { return };
    let trees: Vec<(String, Options)> =
        shared.all_trees().iter().map(|t| (t.name.clone(), t.opts.clone())).collect();
    let text = crate::options_file::render(&trees);
    log.lines("options", text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')));
}

/// After a keyspace was created or dropped, which stands whatever happens
/// here: a failed OPTIONS write is logged, and the next open writes one.
pub(super) fn persist_options_after_ddl(shared: &super::shared::Shared, what: &str) {
    if let Err(e) = persist_options(shared) {
        log::warn!(target: "strata::options", "OPTIONS file not written after {what}: {e}");
    }
}
