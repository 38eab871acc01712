//! The seekable user iterator (rust-rocksdb's `DBRawIterator`, RocksDB's
//! `DBIter`): one cursor over the merged sources that shows, at its sequence,
//! the newest visible version of each key and hides tombstones.
//!
//! Moving forward it rests on that version's entry in the merge, so `key` and
//! `value` borrow from the source. Moving backward the merge meets a key's
//! versions oldest first and has passed the newest visible one when it knows
//! which that is, so the key and value are copied into buffers the iterator
//! reuses. Changing direction re-seeks the merge around the current key.
//! A key whose newest visible entry is a merge operand is folded with its
//! older operands into a buffered value either way; moving forward, the merge
//! is then already past the key.

use std::ops::Bound;
use std::sync::Arc;

use super::bounds;
use super::iter_view::IterView;
use super::iter_view::ViewIter;
use super::read_options::ReadOptions;
use super::DbInner;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{
    append_internal_key, parse_internal_key, user_key, SeqNum, ValueKind, KIND_FOR_SEEK, MAX_SEQ,
};
use crate::merge_operator::{NewestFirst, OldestFirst};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Forward,
    Reverse,
}

/// A cursor over a consistent view of the database that can seek both ways
/// (rust-rocksdb `DBRawIterator`). Create it with [`Db::raw_iterator`],
/// [`Db::raw_iterator_opt`] or [`Snapshot::raw_iterator`]; it starts
/// unpositioned. It sees the database as of its snapshot, or as of its
/// creation, and pins the memtables and files it reads until dropped.
///
/// Movement does not return errors: the first error a move meets makes the
/// iterator invalid for good, and [`Self::status`] reports it. Calling
/// [`Self::next`] or [`Self::prev`] while not [`Self::valid`] is such an error
/// too ([`Error::InvalidArgument`]). `ReadOptions`' iterate bounds are
/// honoured: seeks outside them are clamped into them, and movement stops at them.
///
/// [`Db::raw_iterator`]: crate::Db::raw_iterator
/// [`Db::raw_iterator_opt`]: crate::Db::raw_iterator_opt
/// [`Snapshot::raw_iterator`]: crate::Snapshot::raw_iterator
///
/// # Examples
///
/// ```
/// use strata::{Db, MemVfs, Options};
///
/// let db = Db::open("/db", Options::default().with_vfs(std::sync::Arc::new(MemVfs::new())))?;
/// for (k, v) in [("a", "1"), ("c", "3"), ("e", "5")] {
///     db.put(k, v)?;
/// }
/// let mut it = db.raw_iterator();
/// it.seek("b");
/// assert_eq!(it.item(), Some((&b"c"[..], &b"3"[..])));
/// it.next();
/// assert_eq!(it.key(), Some(&b"e"[..]));
/// it.prev();
/// it.prev();
/// assert_eq!(it.value(), Some(&b"1"[..]));
/// it.prev(); // before the first key
/// assert!(!it.valid());
/// it.status()?;
/// # Ok::<(), strata::Error>(())
/// ```
pub struct DbRawIterator {
    view: IterView,
    it: ViewIter,
    dir: Direction,
    valid: bool,
    /// The first error met; once set nothing moves.
    status: Option<Error>,
    /// Reverse: the current user key. Forward: the key being skipped.
    key: Vec<u8>,
    /// Reverse, or a merged value: the current value.
    value: Vec<u8>,
    /// Forward: the current key and value are a merge result held in `key`
    /// and `value`, and the merge is past the key's versions.
    merged: bool,
    /// Reverse: the current key's versions, reused from key to key.
    versions: OldestFirst,
    /// The internal key of the last seek.
    target: Vec<u8>,
    /// `ReadOptions::prefix_same_as_start`, with the iterate bounds it narrows.
    prefix_same_as_start: bool,
    user_lower: Option<Vec<u8>>,
    user_upper: Option<Vec<u8>>,
    /// The prefix the merge is confined to (by the last seek), if any.
    scope: Option<Vec<u8>>,
}

impl DbRawIterator {
    pub(crate) fn new(db: Arc<DbInner>, snapshot: Option<SeqNum>, ro: &ReadOptions) -> Self {
        let lower = ro.iterate_lower_bound.clone().map_or(Bound::Unbounded, Bound::Included);
        let upper = ro.iterate_upper_bound.clone().map_or(Bound::Unbounded, Bound::Excluded);
        let view = IterView::new(db, snapshot, lower, upper, ro);
        let it = view.build();
        DbRawIterator {
            view,
            it,
            dir: Direction::Forward,
            valid: false,
            status: None,
            key: Vec::new(),
            value: Vec::new(),
            merged: false,
            versions: OldestFirst::default(),
            target: Vec::new(),
            prefix_same_as_start: ro.prefix_same_as_start,
            user_lower: ro.iterate_lower_bound.clone(),
            user_upper: ro.iterate_upper_bound.clone(),
            scope: None,
        }
    }

    /// A cursor that is never valid and whose status is `e`.
    pub(crate) fn with_error(mut self, e: crate::error::Error) -> Self {
        self.valid = false;
        self.status = Some(e);
        self
    }

    /// With `prefix_same_as_start`, confines the merge to the keys with the
    /// prefix of a seek's `target` (in the extractor's domain), so tables
    /// whose prefix filter rules it out are skipped; other seeks get the
    /// iterate bounds alone. The merge is rebuilt when the scope changes: it
    /// must never be trusted outside the bounds it was built for.
    fn rescope(&mut self, target: Option<&[u8]>) {
        if !self.prefix_same_as_start {
            return;
        }
        let extractor = self.view.db.opts.prefix_extractor.clone();
        let want = match (target, extractor) {
            (Some(k), Some(e)) if e.in_domain(k) => Some(e.transform(k).to_vec()),
            _ => None,
        };
        if want == self.scope {
            return;
        }
        let (lower, upper) = match &want {
            Some(p) => bounds::prefix_range(p),
            None => (Bound::Unbounded, Bound::Unbounded),
        };
        self.view.lower = bounds::narrow_lower(lower, self.user_lower.as_deref());
        self.view.upper = bounds::narrow_upper(upper, self.user_upper.as_deref());
        match &want {
            Some(p) => self.view.set_scan_prefix(p),
            None => self.view.clear_scan_prefix(),
        }
        self.it = self.view.build();
        self.valid = false;
        self.scope = want;
    }

    /// True when positioned on a key (RocksDB `Valid`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// let mut it = db.raw_iterator();
    /// assert!(!it.valid(), "unpositioned until a seek");
    /// it.seek_to_first();
    /// assert!(it.valid());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key, borrowed; `None` when not valid.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// let mut it = db.raw_iterator();
    /// assert_eq!(it.key(), None);
    /// it.seek("k");
    /// assert_eq!(it.key(), Some(&b"k"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn key(&self) -> Option<&[u8]> {
        if !self.valid {
            return None;
        }
        Some(match self.dir {
            Direction::Forward if !self.merged => user_key(self.it.key()),
            _ => self.key.as_slice(),
        })
    }

    /// The current value, borrowed; `None` when not valid.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// let mut it = db.raw_iterator();
    /// it.seek_to_last();
    /// assert_eq!(it.value(), Some(&b"v"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn value(&self) -> Option<&[u8]> {
        if !self.valid {
            return None;
        }
        Some(match self.dir {
            Direction::Forward if !self.merged => self.it.value(),
            _ => self.value.as_slice(),
        })
    }

    /// The current key and value, borrowed; `None` when not valid.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("k", "v")?;
    /// let mut it = db.raw_iterator();
    /// it.seek_for_prev("z");
    /// assert_eq!(it.item(), Some((&b"k"[..], &b"v"[..])));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        Some((self.key()?, self.value()?))
    }

    /// The first error a move met, or `Ok` (RocksDB `status`). Once it is an
    /// error the iterator stays invalid and every move does nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// let mut it = db.raw_iterator();
    /// it.seek_to_first();
    /// assert!(it.status().is_ok() && !it.valid(), "an empty database is not an error");
    /// it.next(); // not valid: wrong use
    /// assert!(matches!(it.status(), Err(strata::Error::InvalidArgument(_))));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    /// Positions at the first key at or after `key` (RocksDB `Seek`); a key
    /// below the iterate lower bound seeks to the bound.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("b", "2")?;
    /// let mut it = db.raw_iterator();
    /// it.seek("a");
    /// assert_eq!(it.key(), Some(&b"b"[..]));
    /// it.seek("c");
    /// assert!(!it.valid());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.rescope(Some(key));
        self.apply(|s| s.seek_forward(Some(key)));
    }

    /// Positions at the last key at or before `key` (RocksDB `SeekForPrev`);
    /// a key at or above the iterate upper bound seeks to the last key below it.
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("b", "2")?;
    /// let mut it = db.raw_iterator();
    /// it.seek_for_prev("c");
    /// assert_eq!(it.key(), Some(&b"b"[..]));
    /// it.seek_for_prev("a");
    /// assert!(!it.valid());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.rescope(Some(key));
        self.apply(|s| s.seek_backward(Some(key)));
    }

    /// Positions at the first key (at or after the iterate lower bound;
    /// RocksDB `SeekToFirst`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// db.put("b", "2")?;
    /// let mut it = db.raw_iterator();
    /// it.seek_to_first();
    /// assert_eq!(it.key(), Some(&b"a"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn seek_to_first(&mut self) {
        self.rescope(None);
        self.apply(|s| s.seek_forward(None));
    }

    /// Positions at the last key (below the iterate upper bound; RocksDB
    /// `SeekToLast`).
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// db.put("b", "2")?;
    /// let mut it = db.raw_iterator();
    /// it.seek_to_last();
    /// assert_eq!(it.key(), Some(&b"b"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn seek_to_last(&mut self) {
        self.rescope(None);
        self.apply(|s| s.seek_backward(None));
    }

    /// Moves to the next key (RocksDB `Next`); past the last key (or the
    /// iterate upper bound) the iterator becomes invalid. Requires
    /// [`Self::valid`]; otherwise the iterator fails with
    /// [`Error::InvalidArgument`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// db.put("b", "2")?;
    /// let mut it = db.raw_iterator();
    /// it.seek_to_first();
    /// let mut keys = Vec::new();
    /// while let Some(k) = it.key() {
    ///     keys.push(k.to_vec());
    ///     it.next();
    /// }
    /// it.status()?;
    /// assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn next(&mut self) {
        self.apply(|s| {
            s.require_valid("next")?;
            match s.dir {
                // A merged key's versions are already passed; `key` holds it.
                Direction::Forward if s.merged => {}
                Direction::Forward => {
                    s.key.clear();
                    s.key.extend_from_slice(user_key(s.it.key()));
                    s.it.next()?;
                }
                Direction::Reverse => {
                    // The merge sits before the current key: put it at the
                    // key's oldest possible version, then skip the key.
                    s.target.clear();
                    append_internal_key(&mut s.target, &s.key, 0, ValueKind::Delete);
                    s.it.seek(&s.target)?;
                    s.dir = Direction::Forward;
                }
            }
            s.find_next(true)
        });
    }

    /// Moves to the previous key (RocksDB `Prev`); before the first key (or
    /// the iterate lower bound) the iterator becomes invalid. Requires
    /// [`Self::valid`]; otherwise the iterator fails with
    /// [`Error::InvalidArgument`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let db = strata::Db::open("/db", strata::Options::default().with_vfs(std::sync::Arc::new(strata::MemVfs::new())))?;
    /// db.put("a", "1")?;
    /// db.put("b", "2")?;
    /// let mut it = db.raw_iterator();
    /// it.seek_to_last();
    /// it.prev();
    /// assert_eq!(it.key(), Some(&b"a"[..]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn prev(&mut self) {
        self.apply(|s| {
            s.require_valid("prev")?;
            let skip = s.dir == Direction::Forward;
            if skip {
                // Put the merge on the last entry before every version of the key.
                if !s.merged {
                    s.key.clear();
                    s.key.extend_from_slice(user_key(s.it.key()));
                }
                s.target.clear();
                append_internal_key(&mut s.target, &s.key, MAX_SEQ, KIND_FOR_SEEK);
                s.it.seek_for_prev(&s.target)?;
                s.dir = Direction::Reverse;
            }
            s.find_prev(skip)
        });
    }

    /// Runs a move unless the iterator already failed; an error invalidates it.
    fn apply(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) {
        if self.status.is_some() {
            return;
        }
        if let Err(e) = f(self) {
            self.valid = false;
            self.status = Some(e);
        }
    }

    fn require_valid(&self, op: &str) -> Result<()> {
        if self.valid {
            Ok(())
        } else {
            Err(Error::invalid(format!("DbRawIterator::{op} called on an iterator that is not valid")))
        }
    }

    /// Seeks to the first key at or after `key` (`None`: the first key),
    /// clamped to the lower bound.
    fn seek_forward(&mut self, key: Option<&[u8]>) -> Result<()> {
        let lower = match &self.view.lower {
            Bound::Included(l) | Bound::Excluded(l) => Some(l.as_slice()),
            Bound::Unbounded => None,
        };
        let target = match (key, lower) {
            (Some(k), Some(l)) => Some(k.max(l)),
            (k, l) => k.or(l),
        };
        self.view.record_seek(Some(target.unwrap_or_default()), true);
        match target {
            Some(t) => {
                self.target.clear();
                append_internal_key(&mut self.target, t, self.view.seq, KIND_FOR_SEEK);
                self.it.seek(&self.target)?;
            }
            None => self.it.seek_to_first()?,
        }
        self.dir = Direction::Forward;
        self.find_next(false)
    }

    /// Seeks to the last key at or before `key` (`None`: the last key),
    /// clamped below the upper bound.
    fn seek_backward(&mut self, key: Option<&[u8]>) -> Result<()> {
        // A key's largest internal key (sequence 0) is after all its versions;
        // clamped to an exclusive bound, the bound's smallest is before all of
        // them (and `find_prev` passes over an entry equal to it).
        let target = match (&self.view.upper, key) {
            (Bound::Excluded(u), k) if k.is_none_or(|k| k >= u.as_slice()) => {
                Some((u.as_slice(), MAX_SEQ, KIND_FOR_SEEK))
            }
            (Bound::Included(u), k) if k.is_none_or(|k| k > u.as_slice()) => {
                Some((u.as_slice(), 0, ValueKind::Delete))
            }
            (_, k) => k.map(|k| (k, 0, ValueKind::Delete)),
        };
        match target {
            Some((t, seq, kind)) => {
                self.view.record_seek(Some(t), false);
                self.target.clear();
                append_internal_key(&mut self.target, t, seq, kind);
                self.it.seek_for_prev(&self.target)?;
            }
            None => {
                self.view.record_seek(None, false);
                self.it.seek_to_last()?
            }
        }
        self.dir = Direction::Reverse;
        self.find_prev(false)
    }

    /// Moving forward from the merge's position, stops on the newest visible
    /// entry of the next user key that is a value. With `skip`, entries of
    /// `self.key` are passed over first.
    fn find_next(&mut self, mut skip: bool) -> Result<()> {
        self.merged = false;
        while self.it.valid() {
            let e = parse_internal_key(self.it.key())?;
            if !self.view.below_upper(e.user_key) {
                break;
            }
            let passed = (skip && e.user_key == self.key.as_slice())
                || e.seq > self.view.seq
                || !self.view.above_lower(e.user_key);
            if !passed {
                if e.kind == ValueKind::Put {
                    self.valid = true;
                    self.view.account_read(user_key(self.it.key()), self.it.value().len());
                    return Ok(());
                }
                if e.kind == ValueKind::Merge {
                    return self.merge_forward();
                }
                // A tombstone hides the older versions that follow it.
                self.key.clear();
                self.key.extend_from_slice(e.user_key);
                skip = true;
            }
            self.it.next()?;
        }
        self.valid = false;
        Ok(())
    }

    /// On the newest visible entry of a key, a merge operand: folds it with
    /// the key's older versions (all visible: they follow it) into `value`,
    /// leaving the merge past them.
    fn merge_forward(&mut self) -> Result<()> {
        self.key.clear();
        self.key.extend_from_slice(user_key(self.it.key()));
        let mut versions = NewestFirst::default();
        while self.it.valid() {
            let e = parse_internal_key(self.it.key())?;
            if e.user_key != self.key.as_slice() || versions.push(e.kind, self.it.value()) {
                break;
            }
            self.it.next()?;
        }
        let Some(v) = self.view.finish(versions, &self.key)? else {
            return Err(crate::Error::corruption("a merge of operands gave no value"));
        };
        self.value = v;
        self.merged = true;
        self.valid = true;
        self.view.account_read(&self.key, self.value.len());
        Ok(())
    }

    /// Moving backward from the merge's position, stops after the user key
    /// whose newest visible entry is a value, with that key and value copied.
    /// With `skip`, entries of `self.key` are passed over first.
    fn find_prev(&mut self, mut skip: bool) -> Result<()> {
        self.merged = false;
        while self.it.valid() {
            let uk = user_key(self.it.key());
            if (skip && uk == self.key.as_slice()) || !self.view.below_upper(uk) {
                self.it.prev()?;
                continue;
            }
            skip = false;
            if !self.view.above_lower(uk) {
                break;
            }
            self.key.clear();
            self.key.extend_from_slice(uk);
            // Versions come oldest first: the last visible put or delete
            // decides, merged with the operands after it.
            self.versions.clear();
            while self.it.valid() {
                let e = parse_internal_key(self.it.key())?;
                if e.user_key != self.key.as_slice() {
                    break;
                }
                if e.seq <= self.view.seq {
                    self.versions.push(e.kind, self.it.value());
                }
                self.it.prev()?;
            }
            if self.view.resolve_backward(&mut self.versions, &self.key)? {
                std::mem::swap(&mut self.value, self.versions.value_mut());
                self.valid = true;
                self.view.account_read(&self.key, self.value.len());
                return Ok(());
            }
        }
        self.valid = false;
        Ok(())
    }
}
