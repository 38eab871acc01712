//! [`Keyspace`], the handle on one keyspace (RocksDB column family, fjall
//! partition): its own LSM tree with its own policy and options, sharing the
//! database's WAL, sequence and snapshot list. Every read and write of the
//! public API is here once; `Db` forwards to its default keyspace.

use std::fmt;
use std::ops::RangeBounds;
use std::sync::Arc;

use super::read_options::ReadOptions;
use super::write_options::WriteOptions;
use super::{into_vecs, DbInner, DbIterator, DbRawIterator, Snapshot};
use crate::batch::WriteBatch;
use crate::error::Result;
use crate::key::ValueKind;
use crate::options::KeyspaceOptions;
use crate::pinned::PinnedValue;
use crate::stats::Stats;

/// The name of the keyspace the single-keyspace API works on.
pub(crate) const DEFAULT_KEYSPACE: &str = "default";

/// A handle on one keyspace of a [`Db`](crate::Db) (rust-rocksdb `ColumnFamily`, fjall
/// `Keyspace`): its own LSM tree, with its own compaction policy, memtables
/// and levels. Writes through it go to the database's one WAL, and a
/// [`WriteBatch`] may hold ops of several keyspaces and is applied
/// atomically. Snapshots are database-wide: a [`Snapshot`] of the `Db`
/// reads any keyspace at the same point. Cheap to clone. After
/// [`Db::drop_keyspace`](crate::Db::drop_keyspace), every operation through a handle of it fails with
/// [`Error::KeyspaceNotFound`](crate::Error::KeyspaceNotFound).
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
    pub(super) tree: Arc<DbInner>,
}

impl fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Keyspace({:?}, id {})", self.tree.name, self.tree.id)
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

    /// The keyspace's merge operator, if it has one.
    pub(crate) fn merge_operator(&self) -> Option<&Arc<dyn crate::MergeOperator>> {
        self.tree.opts.merge_operator.as_ref()
    }

    /// The instance id of the database this handle belongs to.
    pub(crate) fn db_instance(&self) -> u64 {
        self.tree.shared.instance
    }

    /// The one write path of the public API (`Db`'s writes come here too):
    /// the database's group commit, with this tree counting the groups its
    /// writes lead.
    pub(crate) fn write_batch(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        self.tree.check_live()?;
        self.tree.shared.write(&self.tree, batch, wo)
    }

    /// [`Self::write_batch`] that commits only if no key of `check` changed
    /// after its sequence (an optimistic transaction's commit).
    pub(crate) fn write_checked(
        &self,
        batch: WriteBatch,
        wo: &WriteOptions,
        check: Vec<crate::db::conflict::TrackedKey>,
    ) -> Result<()> {
        self.tree.check_live()?;
        self.tree.shared.write_checked(&self.tree, batch, wo, check)
    }

    /// Fails with `Busy` if `key` changed after its sequence, `TryAgain` if
    /// the memtables cannot tell (a pessimistic transaction's snapshot check).
    pub(crate) fn check_unchanged(&self, key: &crate::db::conflict::TrackedKey) -> Result<()> {
        self.tree.check_unchanged(&[key])
    }

    /// Fails if the keyspace was dropped or the database closed.
    pub(crate) fn check_live(&self) -> Result<()> {
        self.tree.check_live()
    }

    /// The newest sequence every reader sees (a transaction's read point
    /// when it holds no snapshot).
    pub(crate) fn visible_sequence(&self) -> crate::key::SeqNum {
        self.tree.shared.visible_seq.load(std::sync::atomic::Ordering::Acquire)
    }

    fn write_one(&self, kind: ValueKind, key: &[u8], value: &[u8], wo: &WriteOptions) -> Result<()> {
        let mut b = WriteBatch::for_one_op(key, value);
        b.push_op(self.tree.id, kind, key, value);
        self.write_batch(b, wo)
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
    /// [`Db::delete_range`](crate::Db::delete_range).
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
        into_vecs(self.multi_get_pinned_opt(keys, ro))
    }

    /// [`Self::multi_get`] returning [`PinnedValue`]s: values found in table
    /// blocks are not copied.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let ks = db.create_keyspace("ks", strata::KeyspaceOptions::default())?;
    /// ks.put("a", "1")?;
    /// ks.flush()?;
    /// let got = ks.multi_get_pinned(["a", "b"]);
    /// assert!(got[0].as_ref().ok().cloned().flatten().is_some_and(|v| v.is_pinned() && v == &b"1"[..]));
    /// assert!(matches!(got[1], Ok(None)));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn multi_get_pinned<K, I>(&self, keys: I) -> Vec<Result<Option<PinnedValue>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        self.multi_get_pinned_opt(keys, &ReadOptions::default())
    }

    /// [`Self::multi_get_pinned`] with read options.
    pub fn multi_get_pinned_opt<K, I>(&self, keys: I, ro: &ReadOptions) -> Vec<Result<Option<PinnedValue>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        let keys: Vec<K> = keys.into_iter().collect();
        if let Err(e) = self.tree.check_live() {
            return keys.iter().map(|_| Err(e.duplicate())).collect();
        }
        let refs: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.tree.multi_get_at(&refs, ro.snapshot.as_ref().map(Snapshot::sequence), ro)
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

    /// Adds the tables at `paths` (written by
    /// [`SstFileWriter`](crate::SstFileWriter)) to this keyspace, atomically
    /// (RocksDB `IngestExternalFile`): after a crash all of them are in or
    /// none. Their keys must not overlap each other. The entries get one new
    /// sequence number, so they are newer than every earlier write and
    /// invisible to older snapshots; they go where this keyspace's policy
    /// would place a flush of the same keys, flushing the memtable first if
    /// it holds any of them. Files over keys the keyspace does not hold,
    /// with no snapshot live, join as they are (linked or copied);
    /// otherwise they are rewritten as tables of this keyspace, stamped with
    /// the new sequence. Writes wait meanwhile (and snapshots, while files
    /// join as they are). Ingestion takes no
    /// [`TransactionDb`](crate::TransactionDb) locks; an optimistic
    /// transaction that read before it gets
    /// [`Error::TryAgain`](crate::Error::TryAgain) at commit.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, IngestExternalFileOptions, KeyspaceOptions, Options, SstFileWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// let ks = db.create_keyspace("ks", KeyspaceOptions::default())?;
    /// let mut w = SstFileWriter::create(dir.path().join("a.sst"), &Options::default())?;
    /// w.put("k1", "v1")?;
    /// let a = w.finish()?;
    /// let mut w = SstFileWriter::create(dir.path().join("b.sst"), &Options::default())?;
    /// w.put("k2", "v2")?;
    /// let b = w.finish()?;
    /// ks.ingest_external_file(&[a.path, b.path], &IngestExternalFileOptions::default().with_move_files(true))?;
    /// assert_eq!(ks.get("k2")?, Some(b"v2".to_vec()));
    /// assert_eq!(ks.stats().ingested_files, 2);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn ingest_external_file<P: AsRef<std::path::Path>>(
        &self,
        paths: &[P],
        opts: &crate::IngestExternalFileOptions,
    ) -> Result<()> {
        let paths: Vec<std::path::PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        self.tree.ingest(&paths, opts)
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

    /// Runs this keyspace's compaction-buffer trim now; see
    /// [`Db::trim_compaction_buffer`](crate::Db::trim_compaction_buffer)(crate::Db::trim_compaction_buffer).
    pub fn trim_compaction_buffer(&self) -> Result<usize> {
        self.tree.check_live()?;
        self.tree.trim_buffers()
    }

    /// This keyspace's counters and tree shape. Write counters (groups, WAL
    /// bytes) count the write groups a write to this keyspace led. `cache`
    /// and `row_cache` are this keyspace's share of the database's caches: its
    /// lookups, inserts and invalidations, the evictions of its entries (by
    /// any keyspace's insert) and its resident entries and bytes;
    /// `capacity_bytes` is the whole shared capacity ([`Db::block_cache_stats`](crate::Db::block_cache_stats)
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

    /// [`Db::property`](crate::Db::property) for this keyspace.
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

    /// [`Db::property_names`](crate::Db::property_names) for this keyspace.
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

    /// [`Db::property_int`](crate::Db::property_int) for this keyspace.
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

    /// [`Db::approximate_sizes`](crate::Db::approximate_sizes) for this keyspace.
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
