//! Snapshots pin a sequence number; compaction keeps every version a live
//! snapshot can still see.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::RangeBounds;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{DbInner, DbIterator, DbRawIterator};
use crate::compaction::snapshots::SnapshotBounds;
use crate::error::Result;
use crate::key::SeqNum;
use crate::pinned::PinnedValue;

/// Live snapshots: sequence number -> how many handles hold it.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNum, usize>>,
}

impl SnapshotList {
    /// Registers a snapshot at the current visible sequence. Reading the
    /// sequence under the list's lock makes it atomic with [`Self::oldest`].
    fn acquire(&self, visible: &AtomicU64) -> SeqNum {
        let mut live = self.live.lock();
        let seq = visible.load(Ordering::Acquire);
        *live.entry(seq).or_default() += 1;
        seq
    }

    fn release(&self, seq: SeqNum) {
        let mut live = self.live.lock();
        if let Some(n) = live.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seq);
            }
        }
    }

    /// Runs `f` if no snapshot is live, with none taken until it returns
    /// (`None`: one is live, `f` did not run).
    pub(crate) fn while_none<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let live = self.live.lock();
        live.is_empty().then(f)
    }

    /// Live snapshot handles (clones of one snapshot count once) and the
    /// oldest one's sequence.
    pub(crate) fn count_and_oldest(&self) -> (usize, Option<SeqNum>) {
        let live = self.live.lock();
        (live.values().sum(), live.keys().next().copied())
    }

    /// The oldest sequence any snapshot pins, or the visible sequence if none
    /// is live (versions shadowed at or below it are invisible to every
    /// reader), and the newest one pinned, if any (the compaction filter may
    /// touch only entries above it).
    pub(crate) fn bounds(&self, visible: &AtomicU64) -> SnapshotBounds {
        let live = self.live.lock();
        SnapshotBounds {
            oldest: live.keys().next().copied().unwrap_or_else(|| visible.load(Ordering::Acquire)),
            newest: live.keys().next_back().copied(),
        }
    }
}

struct Handle {
    db: Arc<DbInner>,
    seq: SeqNum,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.db.shared.snapshots.release(self.seq);
    }
}

/// A consistent read-only view of the database as of the moment it was taken
/// (RocksDB `Snapshot`). Cheap to clone; released when the last clone drops.
/// Compactions keep the versions a live snapshot can see.
///
/// # Examples
///
/// ```
/// use strata::{Db, Options};
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put("k", "old")?;
/// let snap = db.snapshot();
/// db.put("k", "new")?;
/// db.compact_range(None, None)?;
/// assert_eq!(snap.get("k")?, Some(b"old".to_vec()));
/// assert_eq!(db.get("k")?, Some(b"new".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone)]
pub struct Snapshot {
    handle: Arc<Handle>,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Snapshot(seq {})", self.handle.seq)
    }
}

impl Snapshot {
    pub(crate) fn new(db: Arc<DbInner>) -> Self {
        let seq = db.shared.snapshots.acquire(&db.shared.visible_seq);
        Snapshot { handle: Arc::new(Handle { db, seq }) }
    }

    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SeqNum {
        self.handle.seq
    }

    /// Reads a key as of this snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.handle.db.get_at(key.as_ref(), Some(self.handle.seq), &Default::default())
    }

    /// Reads a key as of this snapshot without copying it out of its table
    /// block ([`Db::get_pinned`](crate::Db::get_pinned) at this snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"old")?;
    /// db.flush()?;
    /// let snap = db.snapshot();
    /// db.put(b"k", b"new")?;
    /// let v = snap.get_pinned(b"k")?.expect("present");
    /// assert!(v.is_pinned() && v == &b"old"[..]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<PinnedValue>> {
        self.handle.db.get_pinned_at(key.as_ref(), Some(self.handle.seq), &Default::default())
    }

    /// Reads many keys as of this snapshot, one answer per key in input order
    /// ([`Db::multi_get`](crate::Db::multi_get) at this snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"a", b"1")?;
    /// let snap = db.snapshot();
    /// db.put(b"b", b"2")?;
    /// let got: Vec<_> = snap.multi_get([b"a", b"b"]).into_iter().collect::<Result<_, _>>()?;
    /// assert_eq!(got, [Some(b"1".to_vec()), None]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get<K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        super::into_vecs(self.multi_get_pinned(keys))
    }

    /// [`Snapshot::multi_get`] returning [`PinnedValue`]s
    /// ([`Db::multi_get_pinned`](crate::Db::multi_get_pinned) at this snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, Options};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"a", b"1")?;
    /// let snap = db.snapshot();
    /// db.delete(b"a")?;
    /// let got = snap.multi_get_pinned([b"a"]);
    /// assert_eq!(got[0].as_ref().ok().cloned().flatten().as_deref(), Some(&b"1"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get_pinned<K, I>(&self, keys: I) -> Vec<Result<Option<PinnedValue>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        let keys: Vec<K> = keys.into_iter().collect();
        let refs: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.handle.db.multi_get_at(&refs, Some(self.handle.seq), &Default::default())
    }

    /// Iterates a key range as of this snapshot.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        DbIterator::new(self.handle.db.clone(), Some(self.handle.seq), &range, &Default::default())
    }

    /// Iterates every key as of this snapshot.
    pub fn iter(&self) -> DbIterator {
        self.range::<&[u8], _>(..)
    }

    /// Iterates exactly the keys that start with `prefix` as of this snapshot
    /// (see [`Db::prefix_iterator`](crate::Db::prefix_iterator)).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("p1", "v")?;
    /// let snap = db.snapshot();
    /// db.put("p2", "v")?;
    /// let keys: Vec<_> = snap.prefix_iterator("p").map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"p1".to_vec()]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn prefix_iterator(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        DbIterator::prefix(
            self.handle.db.clone(),
            Some(self.handle.seq),
            prefix.as_ref(),
            &Default::default(),
        )
    }

    /// A seekable cursor as of this snapshot (rust-rocksdb's snapshot
    /// `raw_iterator`; see [`DbRawIterator`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// db.put("k", "old")?;
    /// let snap = db.snapshot();
    /// db.delete("k")?;
    /// let mut it = snap.raw_iterator();
    /// it.seek_to_first();
    /// assert_eq!(it.item(), Some((&b"k"[..], &b"old"[..])));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn raw_iterator(&self) -> DbRawIterator {
        DbRawIterator::new(self.handle.db.clone(), Some(self.handle.seq), &Default::default())
    }
}
