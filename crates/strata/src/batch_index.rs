//! [`WriteBatchWithIndex`]: a [`WriteBatch`] that can be read before it is
//! written (RocksDB `WriteBatchWithIndex`): `get` from the batch alone or from
//! the batch over the database, and an iterator over the batch merged with a
//! database iterator (`NewIteratorWithBase`). Range deletes and merge operands
//! in the batch count, as the write will apply them.
//!
//! The index maps each (keyspace, key) to the offsets of its ops in the batch,
//! so values live once, in the batch's encoding.

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::batch::{BatchMark, WriteBatch};
use crate::db::read_options::ReadOptions;
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::merge_operator::{full_merge, MergeOperator};
use crate::{DbIterator, Keyspace};

/// What the batch alone says about a key ([`WriteBatchWithIndex::get_from_batch`];
/// RocksDB's `WBWIIteratorImpl::Result`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchLookup {
    /// The batch has no op on the key.
    NotFound,
    /// The batch deletes the key (a delete or a range delete after its last put).
    Deleted,
    /// The key's value once the batch is written, whatever the database holds.
    Found(Vec<u8>),
    /// The batch only merges into the key: the value depends on the database.
    MergeInProgress,
}

/// A [`WriteBatch`] with an index of its keys, so it can be read before it is
/// written: read-your-own-writes for a transaction that is still being built.
///
/// Ops are added as to a `WriteBatch`; [`Self::into_batch`] gives the batch to
/// write. Reads see the batch as [`Db::write`](crate::Db::write) would apply
/// it: later ops on a key win, a range delete hides the keys written before it
/// in the batch and in the database, and merge operands fold over whatever
/// lies below them (with the keyspace's merge operator).
///
/// # Examples
///
/// ```
/// use strata::{Db, MemVfs, Options, ReadOptions, WriteBatchWithIndex};
///
/// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
/// db.put("a", "1")?;
/// db.put("b", "2")?;
/// let ks = db.default_keyspace();
/// let mut wb = WriteBatchWithIndex::new();
/// wb.put("c", "3");
/// wb.delete("a");
/// assert_eq!(wb.get_from_batch_and_db(&ks, "a", &ReadOptions::default())?, None);
/// assert_eq!(wb.get_from_batch_and_db(&ks, "b", &ReadOptions::default())?, Some(b"2".to_vec()));
/// let keys: Vec<_> = wb.iter_with_base(&ks, "a".., &ReadOptions::default()).map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
/// db.write(wb.into_batch())?;
/// assert_eq!((db.get("a")?, db.get("c")?), (None, Some(b"3".to_vec())));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct WriteBatchWithIndex {
    batch: WriteBatch,
    /// Keyspace id -> user key -> offsets in `batch` of its point ops, in order.
    keys: BTreeMap<u32, BTreeMap<Vec<u8>, Vec<usize>>>,
    /// Range deletes: (keyspace id, offset in `batch`), in order.
    range_dels: Vec<(u32, usize)>,
    /// Where the batch ended at each savepoint, oldest first.
    savepoints: Vec<BatchMark>,
}

impl WriteBatchWithIndex {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a put in the default keyspace.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let at = self.batch.end_offset();
        self.batch.put(key.as_ref(), value);
        self.index_point(0, key.as_ref(), at);
    }

    /// Adds a delete in the default keyspace.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        let at = self.batch.end_offset();
        self.batch.delete(key.as_ref());
        self.index_point(0, key.as_ref(), at);
    }

    /// Adds a merge operand in the default keyspace.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        let at = self.batch.end_offset();
        self.batch.merge(key.as_ref(), operand);
        self.index_point(0, key.as_ref(), at);
    }

    /// Adds a delete of `[start, end)` in the default keyspace.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        let at = self.batch.end_offset();
        self.batch.delete_range(start, end);
        self.range_dels.push((0, at));
    }

    /// Adds a put in keyspace `ks`.
    pub fn put_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let at = self.batch.end_offset();
        self.batch.put_cf(ks, key.as_ref(), value);
        self.index_point(ks.id(), key.as_ref(), at);
    }

    /// Adds a delete in keyspace `ks`.
    pub fn delete_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) {
        let at = self.batch.end_offset();
        self.batch.delete_cf(ks, key.as_ref());
        self.index_point(ks.id(), key.as_ref(), at);
    }

    /// Adds a merge operand in keyspace `ks`.
    pub fn merge_cf(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        let at = self.batch.end_offset();
        self.batch.merge_cf(ks, key.as_ref(), operand);
        self.index_point(ks.id(), key.as_ref(), at);
    }

    /// Adds a delete of `[start, end)` in keyspace `ks`.
    pub fn delete_range_cf(&mut self, ks: &Keyspace, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        let at = self.batch.end_offset();
        self.batch.delete_range_cf(ks, start, end);
        self.range_dels.push((ks.id(), at));
    }

    fn index_point(&mut self, keyspace: u32, key: &[u8], at: usize) {
        self.keys.entry(keyspace).or_default().entry(key.to_vec()).or_default().push(at);
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// True if the batch has no op.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Removes every op.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Marks the batch's current end, to come back to with
    /// [`Self::rollback_to_savepoint`] (RocksDB `SetSavePoint`). Savepoints nest.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BatchLookup, Db, MemVfs, Options, WriteBatchWithIndex};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.default_keyspace();
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.put("a", "1");
    /// wb.set_savepoint();
    /// wb.put("a", "2");
    /// wb.put("b", "2");
    /// wb.rollback_to_savepoint()?;
    /// assert_eq!(wb.get_from_batch(&ks, "a")?, BatchLookup::Found(b"1".to_vec()));
    /// assert_eq!((wb.get_from_batch(&ks, "b")?, wb.len()), (BatchLookup::NotFound, 1));
    /// assert!(wb.rollback_to_savepoint().is_err(), "no savepoint is left");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn set_savepoint(&mut self) {
        self.savepoints.push(self.batch.mark());
    }

    /// Drops every op added since the newest savepoint, and that savepoint
    /// (RocksDB `RollbackToSavePoint`). Fails with
    /// [`Error::InvalidArgument`] if no savepoint is set.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        let mark = self.savepoints.pop().ok_or_else(no_savepoint)?;
        self.batch.truncate(mark);
        let cut = mark.len;
        self.range_dels.retain(|&(_, at)| at < cut);
        for keys in self.keys.values_mut() {
            keys.retain(|_, offsets| {
                offsets.retain(|&at| at < cut);
                !offsets.is_empty()
            });
        }
        self.keys.retain(|_, keys| !keys.is_empty());
        Ok(())
    }

    /// Forgets the newest savepoint, keeping the ops added since (RocksDB
    /// `PopSavePoint`). Fails with [`Error::InvalidArgument`] if none is set.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wb = strata::WriteBatchWithIndex::new();
    /// wb.set_savepoint();
    /// wb.put("a", "1");
    /// wb.pop_savepoint()?;
    /// assert_eq!(wb.len(), 1);
    /// assert!(wb.pop_savepoint().is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn pop_savepoint(&mut self) -> Result<()> {
        self.savepoints.pop().map(drop).ok_or_else(no_savepoint)
    }

    /// The batch, to read or copy.
    pub fn batch(&self) -> &WriteBatch {
        &self.batch
    }

    /// The batch, to write ([`Db::write`](crate::Db::write)).
    pub fn into_batch(self) -> WriteBatch {
        self.batch
    }

    /// What the batch alone makes of `key` in keyspace `ks` (whose merge
    /// operator folds operands written after a put or delete in the batch).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{BatchLookup, Db, MemVfs, Options, WriteBatchWithIndex};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// let ks = db.default_keyspace();
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.put("a", "1");
    /// wb.delete_range("a", "b");
    /// wb.put("c", "3");
    /// assert_eq!(wb.get_from_batch(&ks, "a")?, BatchLookup::Deleted);
    /// assert_eq!(wb.get_from_batch(&ks, "c")?, BatchLookup::Found(b"3".to_vec()));
    /// assert_eq!(wb.get_from_batch(&ks, "d")?, BatchLookup::NotFound);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn get_from_batch(&self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<BatchLookup> {
        let key = key.as_ref();
        let fold = self.fold(ks, key)?;
        Ok(match fold.base {
            None if fold.operands.is_empty() => BatchLookup::NotFound,
            None => BatchLookup::MergeInProgress,
            Some(base) => match fold.finish(ks.merge_operator(), key, base)? {
                Some(v) => BatchLookup::Found(v),
                None => BatchLookup::Deleted,
            },
        })
    }

    /// The value of `key` in keyspace `ks` once this batch is written over the
    /// database as `ro` reads it (its snapshot, if any): RocksDB's
    /// `GetFromBatchAndDB`. The database is read only when the batch does not
    /// settle the key alone.
    pub fn get_from_batch_and_db(
        &self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        let fold = self.fold(ks, key)?;
        match fold.base {
            Some(set) => fold.finish(ks.merge_operator(), key, set),
            None => {
                let below = ks.get_opt(key, ro)?;
                fold.finish(ks.merge_operator(), key, below)
            }
        }
    }

    /// The keys of `range` in keyspace `ks` as they will be once this batch is
    /// written over the database as `ro` reads it: a database iterator merged
    /// with the batch (RocksDB `NewIteratorWithBase`). `ro`'s snapshot applies
    /// to the database, its iterate bounds to both. Double-ended, like
    /// [`DbIterator`]. The batch is borrowed: add no ops while iterating.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{Db, MemVfs, Options, ReadOptions, WriteBatchWithIndex};
    ///
    /// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "db")?;
    /// }
    /// let ks = db.default_keyspace();
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.delete_range("b", "d");
    /// wb.put("c", "batch");
    /// let got: Vec<_> = wb.iter_with_base(&ks, "a".., &ReadOptions::default()).rev().collect::<Result<_, _>>()?;
    /// let want = [("d", "db"), ("c", "batch"), ("a", "db")];
    /// assert_eq!(got, want.map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn iter_with_base<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        ks: &Keyspace,
        range: R,
        ro: &ReadOptions,
    ) -> BatchWithBaseIter<'_> {
        let id = ks.id();
        let bounds = (range.start_bound().map(AsRef::as_ref), range.end_bound().map(AsRef::as_ref));
        let empty = match bounds {
            (Bound::Excluded(l), Bound::Excluded(u)) => l >= u,
            (Bound::Included(l) | Bound::Excluded(l), Bound::Included(u) | Bound::Excluded(u)) => l > u,
            _ => false,
        };
        // BTreeMap::range panics on an empty range.
        let batch_keys = self.keys.get(&id).filter(|_| !empty).map(|m| m.range::<[u8], _>(bounds));
        let range_dels = self.batch.check_owner(ks.db_instance()).and_then(|()| self.range_dels_of(id));
        BatchWithBaseIter {
            wb: self,
            merge_op: ks.merge_operator().cloned(),
            range_dels,
            db: Ends::new(ks.range_opt(range, ro)),
            batch: Ends::new(batch_keys.into_iter().flatten()),
            iterate_bounds: (ro.iterate_lower_bound.clone(), ro.iterate_upper_bound.clone()),
            failed: false,
        }
    }

    /// The range deletes of keyspace `id`, in batch order.
    fn range_dels_of(&self, id: u32) -> Result<Vec<RangeDel<'_>>> {
        let mut out = Vec::new();
        for &(ks, at) in &self.range_dels {
            if ks == id {
                let op = self.batch.op_at(at)?;
                out.push(RangeDel { start: op.key, end: op.value, at });
            }
        }
        Ok(out)
    }

    /// The batch's ops on `key` of keyspace `ks`, folded. A handle of
    /// another database than the batch's handles is refused: keyspace ids
    /// repeat across databases.
    fn fold(&self, ks: &Keyspace, key: &[u8]) -> Result<Fold<'_>> {
        self.batch.check_owner(ks.db_instance())?;
        let dels = self.range_dels_of(ks.id())?;
        let offsets = self.keys.get(&ks.id()).and_then(|m| m.get(key));
        self.fold_ops(offsets.map_or(&[][..], Vec::as_slice), &dels, key)
    }

    /// Folds the point ops at `offsets` (of `key`, in order) with the range
    /// deletes `dels` covering it.
    fn fold_ops(&self, offsets: &[usize], dels: &[RangeDel<'_>], key: &[u8]) -> Result<Fold<'_>> {
        // The newest range delete covering the key hides everything before it.
        let cut = dels.iter().filter(|d| d.covers(key)).map(|d| d.at).max();
        let mut fold = Fold { base: cut.map(|_| None), operands: Vec::new() };
        for &at in offsets.iter().filter(|&&at| cut.is_none_or(|c| at > c)) {
            let op = self.batch.op_at(at)?;
            match op.kind {
                ValueKind::Put => fold = Fold { base: Some(Some(op.value)), operands: Vec::new() },
                ValueKind::Delete => fold = Fold { base: Some(None), operands: Vec::new() },
                ValueKind::Merge => fold.operands.push(op.value),
                ValueKind::RangeDelete => {
                    return Err(Error::corruption("a range delete indexed as a point op"))
                }
            }
        }
        Ok(fold)
    }
}

fn no_savepoint() -> Error {
    Error::invalid("no savepoint is set")
}

/// A range delete of the batch: `[start, end)`, its record at offset `at`.
struct RangeDel<'a> {
    start: &'a [u8],
    end: &'a [u8],
    at: usize,
}

impl RangeDel<'_> {
    fn covers(&self, key: &[u8]) -> bool {
        self.start <= key && key < self.end
    }
}

/// A key's ops in a batch, folded: what the batch sets (`base`: `Some(None)`
/// for a delete, `None` when the batch sets nothing and the database's value
/// lies below) and the merge operands after it, oldest first.
struct Fold<'a> {
    base: Option<Option<&'a [u8]>>,
    operands: Vec<&'a [u8]>,
}

impl Fold<'_> {
    /// The key's value with `base` below the operands.
    fn finish<B: AsRef<[u8]>>(
        self,
        op: Option<&Arc<dyn MergeOperator>>,
        key: &[u8],
        base: Option<B>,
    ) -> Result<Option<Vec<u8>>> {
        if self.operands.is_empty() {
            return Ok(base.map(|b| b.as_ref().to_vec()));
        }
        full_merge(op, key, base.as_ref().map(AsRef::as_ref), &self.operands).map(Some)
    }
}

/// An iterator with two ends over a sorted source: each end holds the item it
/// looked at, and when the source is spent an end takes the other's, so the
/// two ends never pass each other.
struct Ends<I: DoubleEndedIterator> {
    inner: I,
    front: Option<I::Item>,
    back: Option<I::Item>,
}

impl<I: DoubleEndedIterator> Ends<I> {
    fn new(inner: I) -> Self {
        Ends { inner, front: None, back: None }
    }

    fn peek_front(&mut self) -> Option<&I::Item> {
        if self.front.is_none() {
            self.front = self.inner.next().or_else(|| self.back.take());
        }
        self.front.as_ref()
    }

    fn peek_back(&mut self) -> Option<&I::Item> {
        if self.back.is_none() {
            self.back = self.inner.next_back().or_else(|| self.front.take());
        }
        self.back.as_ref()
    }
}

/// One keyspace's batch keys in a range (none when the batch has no op there).
type BatchKeys<'a> =
    std::iter::Flatten<std::option::IntoIter<std::collections::btree_map::Range<'a, Vec<u8>, Vec<usize>>>>;

/// The iterator of [`WriteBatchWithIndex::iter_with_base`]: (key, value) pairs
/// in key order, from either end; stops after the first error.
pub struct BatchWithBaseIter<'a> {
    wb: &'a WriteBatchWithIndex,
    merge_op: Option<Arc<dyn MergeOperator>>,
    /// The keyspace's range deletes in the batch (or the error decoding them).
    range_dels: Result<Vec<RangeDel<'a>>>,
    db: Ends<DbIterator>,
    batch: Ends<BatchKeys<'a>>,
    /// `ReadOptions`' iterate bounds (inclusive lower, exclusive upper), which
    /// narrow the database side; batch keys outside them are passed over too.
    iterate_bounds: (Option<Vec<u8>>, Option<Vec<u8>>),
    failed: bool,
}

/// Which source holds the next key at one end.
enum Take {
    Db,
    Batch,
    Both,
}

impl BatchWithBaseIter<'_> {
    /// The next entry at the front (`forward`) or the back.
    fn step(&mut self, forward: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if self.failed {
            return None;
        }
        let out = self.step_inner(forward);
        if matches!(out, Some(Err(_))) {
            self.failed = true;
        }
        out
    }

    fn step_inner(&mut self, forward: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        let Self { wb, merge_op, range_dels, db, batch, iterate_bounds, .. } = self;
        if range_dels.is_err() {
            // Reported once: `step` stops the iterator after an error.
            return std::mem::replace(range_dels, Ok(Vec::new())).err().map(Err);
        }
        let dels = range_dels.as_deref().unwrap_or_default();
        loop {
            let (db_next, batch_next) = if forward {
                (db.peek_front(), batch.peek_front())
            } else {
                (db.peek_back(), batch.peek_back())
            };
            let take = match (db_next, batch_next) {
                (None, None) => return None,
                (Some(Err(_)), _) => Take::Db,
                (Some(Ok(_)), None) => Take::Db,
                (None, Some(_)) => Take::Batch,
                (Some(Ok((dk, _))), Some((bk, _))) => match dk.as_slice().cmp(bk.as_slice()) {
                    std::cmp::Ordering::Equal => Take::Both,
                    std::cmp::Ordering::Less if forward => Take::Db,
                    std::cmp::Ordering::Greater if !forward => Take::Db,
                    _ => Take::Batch,
                },
            };
            let db_item = match take {
                Take::Db | Take::Both => {
                    let item = if forward { db.front.take() } else { db.back.take() };
                    match item? {
                        Ok(kv) => Some(kv),
                        Err(e) => return Some(Err(e)),
                    }
                }
                Take::Batch => None,
            };
            let batch_item = match take {
                Take::Batch | Take::Both => {
                    if forward {
                        batch.front.take()
                    } else {
                        batch.back.take()
                    }
                }
                Take::Db => None,
            };
            match (db_item, batch_item) {
                (Some((k, v)), None) => {
                    // A database key the batch does not name: only a range
                    // delete of the batch can hide it.
                    if !dels.iter().any(|d| d.covers(&k)) {
                        return Some(Ok((k, v)));
                    }
                }
                (below, Some((key, offsets))) => {
                    let (lo, hi) = &*iterate_bounds;
                    if lo.as_ref().is_some_and(|l| key < l) || hi.as_ref().is_some_and(|h| key >= h) {
                        continue;
                    }
                    let base = below.map(|(_, v)| v);
                    let value = wb.fold_ops(offsets, dels, key).and_then(|fold| match fold.base {
                        Some(set) => fold.finish(merge_op.as_ref(), key, set),
                        None => fold.finish(merge_op.as_ref(), key, base),
                    });
                    match value {
                        Ok(Some(v)) => return Some(Ok((key.clone(), v))),
                        Ok(None) => {}
                        Err(e) => return Some(Err(e)),
                    }
                }
                (None, None) => return None,
            }
        }
    }
}

impl Iterator for BatchWithBaseIter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

impl DoubleEndedIterator for BatchWithBaseIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}
