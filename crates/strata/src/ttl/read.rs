//! Reads of a [`crate::ttl::TtlDb`] beyond `get`: its iterator and snapshot,
//! both returning the user's values and hiding expired ones.

use std::fmt;
use std::ops::RangeBounds;
use std::sync::Arc;

use super::value::Expiry;
use crate::db::read_options::ReadOptions;
use crate::db::{DbIterator, Keyspace, Snapshot};
use crate::error::Result;
use crate::key::SeqNum;

/// An ordered, double-ended iterator over a [`crate::ttl::TtlDb`]: the keys
/// of [`DbIterator`] with the user's values, skipping values expired when the
/// iterator was made (so one iterator's view stays consistent as the clock
/// moves). It pins the files it reads until dropped.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use strata::ttl::{ManualClock, TtlDb};
/// use strata::Options;
///
/// let dir = tempfile::tempdir()?;
/// let clock = Arc::new(ManualClock::new(0));
/// let db = TtlDb::open_with_clock(dir.path(), Options::default(), Duration::from_secs(10), clock.clone())?;
/// db.put(b"a", b"old")?;
/// clock.advance(Duration::from_secs(8));
/// db.put(b"b", b"new")?;
/// clock.advance(Duration::from_secs(5));
/// let live: Vec<(Vec<u8>, Vec<u8>)> = db.iter().collect::<Result<_, _>>()?;
/// assert_eq!(live, vec![(b"b".to_vec(), b"new".to_vec())]);
/// # Ok::<(), strata::Error>(())
/// ```
pub struct TtlIterator {
    inner: DbIterator,
    expiry: Arc<Expiry>,
    now: u64,
}

impl fmt::Debug for TtlIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TtlIterator(at {} ms)", self.now)
    }
}

impl TtlIterator {
    pub(crate) fn new(inner: DbIterator, expiry: Arc<Expiry>) -> Self {
        let now = expiry.now();
        TtlIterator { inner, expiry, now }
    }

    /// `item` as the user sees it: the value stripped, `None` if expired.
    fn live(&self, item: Result<(Vec<u8>, Vec<u8>)>) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        match item {
            Err(e) => Some(Err(e)),
            Ok((k, stored)) => match self.expiry.live(&stored, self.now) {
                Err(e) => Some(Err(e)),
                Ok(None) => None,
                Ok(Some(v)) => Some(Ok((k, v.to_vec()))),
            },
        }
    }
}

impl Iterator for TtlIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let item = self.inner.next()?;
            if let Some(r) = self.live(item) {
                return Some(r);
            }
        }
    }
}

impl DoubleEndedIterator for TtlIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            let item = self.inner.next_back()?;
            if let Some(r) = self.live(item) {
                return Some(r);
            }
        }
    }
}

/// A consistent view of a [`crate::ttl::TtlDb`] as of the moment it was
/// taken (RocksDB `Snapshot` through DBWithTTL). Which versions it reads is
/// fixed; whether they have expired is judged at each read, by the clock
/// then, as every TTL read is. Cheap to clone; released when the last clone drops.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use strata::ttl::{ManualClock, TtlDb};
/// use strata::Options;
///
/// let dir = tempfile::tempdir()?;
/// let clock = Arc::new(ManualClock::new(0));
/// let db = TtlDb::open_with_clock(dir.path(), Options::default(), Duration::from_secs(10), clock.clone())?;
/// db.put(b"k", b"v1")?;
/// let snap = db.snapshot();
/// db.put(b"k", b"v2")?;
/// assert_eq!(snap.get(b"k")?.as_deref(), Some(&b"v1"[..]));
/// assert_eq!(db.get_opt(b"k", &snap.read_options())?.as_deref(), Some(&b"v1"[..]));
/// assert_eq!(snap.iter().count(), 1);
/// clock.advance(Duration::from_secs(11));
/// assert_eq!(snap.get(b"k")?, None, "expired since");
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone)]
pub struct TtlSnapshot {
    snap: Snapshot,
    /// The keyspace it reads (snapshots are database-wide).
    ks: Keyspace,
    expiry: Arc<Expiry>,
}

impl fmt::Debug for TtlSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TtlSnapshot(seq {})", self.snap.sequence())
    }
}

impl TtlSnapshot {
    pub(crate) fn new(snap: Snapshot, ks: Keyspace, expiry: Arc<Expiry>) -> Self {
        TtlSnapshot { snap, ks, expiry }
    }

    /// The sequence number this snapshot reads at.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// let snap = db.snapshot();
    /// db.put(b"k", b"w")?;
    /// assert!(db.snapshot().sequence() > snap.sequence());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn sequence(&self) -> SeqNum {
        self.snap.sequence()
    }

    /// Reads a key as of this snapshot; `None` if it was absent or its value has expired.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// let snap = db.snapshot();
    /// db.delete(b"k")?;
    /// assert_eq!(snap.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        match self.ks.get_opt(key, &self.read_options())? {
            None => Ok(None),
            Some(stored) => Ok(self.expiry.live(&stored, self.expiry.now())?.map(<[u8]>::to_vec)),
        }
    }

    /// Iterates a key range as of this snapshot.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"a", b"1")?;
    /// db.put(b"b", b"2")?;
    /// let snap = db.snapshot();
    /// db.delete(b"b")?;
    /// assert_eq!(snap.range(&b"b"[..]..).count(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> TtlIterator {
        TtlIterator::new(self.ks.range_opt(range, &self.read_options()), self.expiry.clone())
    }

    /// Iterates every key as of this snapshot.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"a", b"1")?;
    /// let snap = db.snapshot();
    /// db.put(b"b", b"2")?;
    /// assert_eq!(snap.iter().count(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn iter(&self) -> TtlIterator {
        self.range::<&[u8], _>(..)
    }

    /// Read options that read at this snapshot, for [`crate::ttl::TtlDb::get_opt`]
    /// and [`crate::ttl::TtlDb::range_opt`] (or a [`crate::ttl::TtlKeyspace`]'s).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::TtlDb::open(dir.path(), strata::Options::default(), std::time::Duration::from_secs(60))?;
    /// db.put(b"k", b"v")?;
    /// let snap = db.snapshot();
    /// db.put(b"k", b"w")?;
    /// assert_eq!(db.get_opt(b"k", &snap.read_options())?.as_deref(), Some(&b"v"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions::new().with_snapshot(&self.snap)
    }
}
