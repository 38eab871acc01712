//! The user-facing iterator: merges every source, hides versions newer than
//! the read sequence, shadowed versions and tombstones, and honours bounds.
//! Forward and backward ends are separate cursors that stop where they meet,
//! which keeps each direction simple and makes the iterator double-ended.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::bounds::{narrow_lower, narrow_upper, owned};
use super::iter_view::IterView;
use super::iter_view::ViewIter;
use super::read_options::ReadOptions;
use super::DbInner;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{
    make_internal_key, parse_internal_key, user_key, SeqNum, ValueKind, KIND_FOR_SEEK, MAX_SEQ,
};
use crate::merge_operator::{NewestFirst, OldestFirst};

/// A key-value pair yielded by [`DbIterator`].
pub type KvPair = (Vec<u8>, Vec<u8>);

/// An ordered, double-ended iterator over a consistent view of the database:
/// its range, narrowed by `ReadOptions`' iterate bounds when it was made with
/// them. It pins the files it reads until dropped. For seeks, use
/// [`DbRawIterator`](crate::DbRawIterator).
///
/// # Examples
///
/// ```
/// use strata::{Db, Options};
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
///     db.put(k, v)?;
/// }
/// let forward: Vec<_> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(forward, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
/// // Double-ended: the last key of a range, read from the back.
/// let (k, v) = db.range(&b"b"[..]..).next_back().transpose()?.unwrap();
/// assert_eq!((k, v), (b"c".to_vec(), b"3".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
pub struct DbIterator {
    view: IterView,
    front: Option<ViewIter>,
    back: Option<ViewIter>,
    front_last: Option<Vec<u8>>,
    back_last: Option<Vec<u8>>,
    front_done: bool,
    back_done: bool,
    /// Yielded (once, by either end) before anything else: the iterator was
    /// made on a keyspace that can no longer be read.
    error: Option<crate::error::Error>,
}

impl DbIterator {
    /// Iterates `range` narrowed by `ro`'s iterate bounds.
    pub(crate) fn new<K: AsRef<[u8]>, R: RangeBounds<K>>(
        db: Arc<DbInner>,
        snapshot: Option<SeqNum>,
        range: &R,
        ro: &ReadOptions,
    ) -> Self {
        let lower = narrow_lower(owned(range.start_bound()), ro.iterate_lower_bound.as_deref());
        let upper = narrow_upper(owned(range.end_bound()), ro.iterate_upper_bound.as_deref());
        DbIterator {
            view: IterView::new(db, snapshot, lower, upper, ro),
            front: None,
            back: None,
            front_last: None,
            back_last: None,
            front_done: false,
            back_done: false,
            error: None,
        }
    }

    /// Iterates exactly the keys starting with `prefix` (narrowed by `ro`'s
    /// iterate bounds), skipping tables whose prefix filter rules it out.
    pub(crate) fn prefix(
        db: Arc<DbInner>,
        snapshot: Option<SeqNum>,
        prefix: &[u8],
        ro: &ReadOptions,
    ) -> Self {
        let mut it = Self::new(db, snapshot, &super::bounds::prefix_range(prefix), ro);
        it.view.set_scan_prefix(prefix);
        it
    }

    /// An iterator that yields `e` and ends.
    pub(crate) fn with_error(mut self, e: crate::error::Error) -> Self {
        self.error = Some(e);
        self
    }

    /// The pending error, ending both directions.
    fn take_error(&mut self) -> Option<crate::error::Error> {
        let e = self.error.take()?;
        self.front_done = true;
        self.back_done = true;
        Some(e)
    }

    fn step_forward(&mut self) -> Result<Option<KvPair>> {
        let mut it = match self.front.take() {
            Some(it) => it,
            None => {
                let mut it = self.view.build();
                self.view.record_seek(Some(self.view.key_range().0), true);
                match &self.view.lower {
                    Bound::Included(k) | Bound::Excluded(k) => {
                        it.seek(&make_internal_key(k, MAX_SEQ, KIND_FOR_SEEK))?
                    }
                    Bound::Unbounded => it.seek_to_first()?,
                }
                it
            }
        };
        let r = self.scan_forward(&mut it);
        self.front = Some(it);
        r
    }

    fn scan_forward(&mut self, it: &mut ViewIter) -> Result<Option<KvPair>> {
        while it.valid() {
            let k = parse_internal_key(it.key())?;
            let uk = k.user_key.to_vec();
            if !self.view.below_upper(&uk) || self.back_last.as_ref().is_some_and(|b| uk >= *b) {
                return Ok(None);
            }
            // The first visible entry of a user key decides it (with the
            // operands down to a put or delete, if it is one); skip the rest.
            let mut versions = NewestFirst::default();
            let mut decided = false;
            while it.valid() && user_key(it.key()) == uk.as_slice() {
                if !decided {
                    let e = parse_internal_key(it.key())?;
                    if e.seq <= self.view.seq {
                        decided = versions.push(e.kind, it.value());
                    }
                }
                it.next()?;
            }
            if !self.view.above_lower(&uk) {
                continue;
            }
            if let Some(v) = self.view.finish(versions, &uk)? {
                self.view.account_read(&uk, v.len());
                self.front_last = Some(uk.clone());
                return Ok(Some((uk, v)));
            }
        }
        Ok(None)
    }

    fn step_backward(&mut self) -> Result<Option<KvPair>> {
        let mut it = match self.back.take() {
            Some(it) => it,
            None => {
                let mut it = self.view.build();
                self.view.record_seek(self.view.key_range().1, false);
                match &self.view.upper {
                    Bound::Included(k) | Bound::Excluded(k) => {
                        it.seek_for_prev(&make_internal_key(k, 0, ValueKind::Delete))?
                    }
                    Bound::Unbounded => it.seek_to_last()?,
                }
                it
            }
        };
        let r = self.scan_backward(&mut it);
        self.back = Some(it);
        r
    }

    fn scan_backward(&mut self, it: &mut ViewIter) -> Result<Option<KvPair>> {
        while it.valid() {
            let uk = user_key(it.key()).to_vec();
            if !self.view.above_lower(&uk) || self.front_last.as_ref().is_some_and(|f| uk <= *f) {
                return Ok(None);
            }
            // Walking backwards meets versions oldest first: the last visible
            // put or delete wins, merged with the operands after it.
            let mut versions = OldestFirst::default();
            while it.valid() && user_key(it.key()) == uk.as_slice() {
                let e = parse_internal_key(it.key())?;
                if e.seq <= self.view.seq {
                    versions.push(e.kind, it.value());
                }
                it.prev()?;
            }
            if !self.view.below_upper(&uk) {
                continue;
            }
            if let Some(v) = self.view.finish_backward(versions, &uk)? {
                self.view.account_read(&uk, v.len());
                self.back_last = Some(uk.clone());
                return Ok(Some((uk, v)));
            }
        }
        Ok(None)
    }
}

impl Iterator for DbIterator {
    type Item = Result<KvPair>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.take_error() {
            return Some(Err(e));
        }
        if self.front_done {
            return None;
        }
        match self.step_forward() {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => {
                self.front_done = true;
                None
            }
            Err(e) => {
                self.front_done = true;
                Some(Err(e))
            }
        }
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.take_error() {
            return Some(Err(e));
        }
        if self.back_done {
            return None;
        }
        match self.step_backward() {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => {
                self.back_done = true;
                None
            }
            Err(e) => {
                self.back_done = true;
                Some(Err(e))
            }
        }
    }
}
