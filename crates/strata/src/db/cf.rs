//! The rust-rocksdb `*_cf` forms: each forwards to the [`Keyspace`] handle
//! after checking that it belongs to this database.

use std::sync::Arc;

use super::handle::Db;
use super::keyspace::Keyspace;
use super::{DbIterator, DbRawIterator};
use crate::error::{Error, Result};
use crate::options::ReadOptions;

impl Db {
    /// Refuses a handle of another database.
    fn own<'k>(&self, ks: &'k Keyspace) -> Result<&'k Keyspace> {
        if !Arc::ptr_eq(&ks.tree.shared, &self.inner().shared) {
            return Err(Error::invalid(format!("keyspace {:?} belongs to another database", ks.tree.name)));
        }
        Ok(ks)
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
        self.own(ks)?.put(key, value)
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
        self.own(ks)?.delete(key)
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
        self.own(ks)?.delete_range(start, end)
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
        self.own(ks)?.merge(key, operand)
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
        self.own(ks)?.get(key)
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
        self.own(ks)?.get_opt(key, ro)
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
        keys.into_iter().map(|(ks, k)| self.own(ks).and_then(|ks| ks.get(k))).collect()
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
            Ok(ks) => ks.iter(),
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
            Ok(ks) => ks.prefix_iterator(prefix),
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
            Ok(ks) => ks.raw_iterator(),
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
        self.own(ks)?.flush()
    }

    /// Ingests the tables at `paths` into keyspace `ks` (rust-rocksdb
    /// `ingest_external_file_cf`; see [`Keyspace::ingest_external_file`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, IngestExternalFileOptions, Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// let mut w = SstFileWriter::create(dir.path().join("f.sst"), &Options::default())?;
    /// w.put("k", "v")?;
    /// let f = w.finish()?.path;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// db.ingest_external_file_cf(&ks, &[f], &IngestExternalFileOptions::default())?;
    /// assert_eq!(ks.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn ingest_external_file_cf<P: AsRef<std::path::Path>>(
        &self,
        ks: &Keyspace,
        paths: &[P],
        opts: &crate::IngestExternalFileOptions,
    ) -> Result<()> {
        self.own(ks)?.ingest_external_file(paths, opts)
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
        self.own(ks)?.compact_range(start, end)
    }
}
