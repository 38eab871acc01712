//! Merge operators (RocksDB `MergeOperator`): a merge entry stores an operand
//! instead of a value, and reads combine a key's operands with the newest
//! put or delete below them. This module holds the public trait and the
//! folding that reads and compactions share.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::key::ValueKind;

/// Combines merge operands into a value (RocksDB `MergeOperator`, rust-rocksdb
/// `Options::set_merge_operator`). Set it with
/// [`Options::with_merge_operator`](crate::Options::with_merge_operator); write
/// operands with [`Db::merge`](crate::Db::merge) or
/// [`WriteBatch::merge`](crate::WriteBatch::merge).
///
/// Operands are not given to the [`CompactionFilter`](crate::CompactionFilter).
/// A compaction combines a key's operands only where every reader sees them
/// alike (below the oldest live snapshot): into a put when a put or delete lies
/// below them in the same compaction, with `existing = None` when nothing older
/// exists anywhere, else pairwise with [`Self::partial_merge`] when it can.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::{Db, MemVfs, MergeOperator, Options};
///
/// /// Adds little-endian u64 counters.
/// struct Add;
/// impl MergeOperator for Add {
///     fn name(&self) -> &str {
///         "add"
///     }
///     fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
///         let mut sum = existing.map_or(Some(0), |e| Some(u64::from_le_bytes(e.try_into().ok()?)))?;
///         for op in operands {
///             sum += u64::from_le_bytes((*op).try_into().ok()?);
///         }
///         Some(sum.to_le_bytes().to_vec())
///     }
/// }
///
/// let opts = Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(Arc::new(Add));
/// let db = Db::open("/db", opts)?;
/// db.merge("hits", 2u64.to_le_bytes())?;
/// db.merge("hits", 3u64.to_le_bytes())?;
/// assert_eq!(db.get("hits")?, Some(5u64.to_le_bytes().to_vec()));
/// db.merge("hits", b"bad")?; // an operand the operator rejects
/// assert!(db.get("hits").unwrap_err().is_corruption());
/// # Ok::<(), strata::Error>(())
/// ```
pub trait MergeOperator: Send + Sync {
    /// The operator's name (RocksDB `MergeOperator::Name`), shown in errors.
    fn name(&self) -> &str;

    /// The value of `key` given its newest put (`existing`; `None` after a
    /// delete or when the key has no older version) and the operands written
    /// after it, oldest first (RocksDB `FullMergeV2`). `None` means the merge
    /// failed: a read of the key then fails with [`Error::Corruption`].
    fn full_merge(&self, key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>>;

    /// One operand equivalent to applying `left` and then `right` (the newer),
    /// when the operator can tell without the existing value (RocksDB
    /// `PartialMerge`). The default cannot (`None`), and compactions keep
    /// both operands.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::MergeOperator;
    ///
    /// struct Max;
    /// impl MergeOperator for Max {
    ///     fn name(&self) -> &str {
    ///         "max"
    ///     }
    ///     fn full_merge(&self, _k: &[u8], existing: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
    ///         existing.into_iter().chain(ops.iter().copied()).max().map(<[u8]>::to_vec)
    ///     }
    /// }
    /// assert_eq!(Max.partial_merge(b"k", b"1", b"2"), None, "the default cannot");
    /// ```
    fn partial_merge(&self, key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        let _ = (key, left, right);
        None
    }

    /// `Some` only for [`unmerged_stand_in`](crate::merge_operators::unmerged_stand_in):
    /// what a read returns instead of calling [`Self::full_merge`] (the
    /// operands unmerged, encoded).
    #[doc(hidden)]
    fn unmerged(&self, existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let _ = (existing, operands);
        None
    }
}

impl fmt::Debug for dyn MergeOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MergeOperator({})", self.name())
    }
}

/// A [`MergeOperator`] made of one function `f(key, existing, operand)` folded
/// over the operands oldest first (rust-rocksdb `set_merge_operator_associative`,
/// RocksDB `AssociativeMergeOperator`). The same function partially merges two
/// operands (`f(key, Some(left), right)`), so it must be associative. `None`
/// from `f` is a failed merge.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::{associative_merge_operator, Db, MemVfs, Options};
///
/// let append = associative_merge_operator("append", |_key, existing, operand| {
///     let mut v = existing.unwrap_or_default().to_vec();
///     v.extend_from_slice(operand);
///     Some(v)
/// });
/// let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(append))?;
/// db.put("log", "a")?;
/// db.merge("log", "b")?;
/// assert_eq!(db.get("log")?, Some(b"ab".to_vec()));
/// # Ok::<(), strata::Error>(())
/// ```
pub fn associative_merge_operator<F>(name: impl Into<String>, f: F) -> Arc<dyn MergeOperator>
where
    F: Fn(&[u8], Option<&[u8]>, &[u8]) -> Option<Vec<u8>> + Send + Sync + 'static,
{
    Arc::new(Associative { name: name.into(), f })
}

struct Associative<F> {
    name: String,
    f: F,
}

impl<F> MergeOperator for Associative<F>
where
    F: Fn(&[u8], Option<&[u8]>, &[u8]) -> Option<Vec<u8>> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(&self, key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let mut acc: Option<Vec<u8>> = existing.map(<[u8]>::to_vec);
        for op in operands {
            acc = Some((self.f)(key, acc.as_deref(), op)?);
        }
        acc.or_else(|| Some(Vec::new()))
    }

    fn partial_merge(&self, key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        (self.f)(key, Some(left), right)
    }
}

/// A key shown in an error: printable ASCII as is, other bytes escaped.
pub(crate) fn show_key(key: &[u8]) -> String {
    key.escape_ascii().to_string()
}

/// Runs `op`'s full merge, turning a missing operator into
/// [`Error::InvalidArgument`] and a failed merge into [`Error::Corruption`]
/// naming the key. `operands` are oldest first.
pub(crate) fn full_merge(
    op: Option<&Arc<dyn MergeOperator>>,
    key: &[u8],
    existing: Option<&[u8]>,
    operands: &[&[u8]],
) -> Result<Vec<u8>> {
    let op = op.ok_or_else(|| {
        Error::invalid(format!(
            "key '{}' has merge operands but no merge operator is set (Options::with_merge_operator)",
            show_key(key)
        ))
    })?;
    if let Some(listed) = op.unmerged(existing, operands) {
        return Ok(listed);
    }
    op.full_merge(key, existing, operands).ok_or_else(|| {
        Error::corruption(format!("merge operator '{}' failed to merge key '{}'", op.name(), show_key(key)))
    })
}

/// One key's visible versions fed newest first, until a put or delete (or
/// the caller runs out of versions) decides its value.
#[derive(Debug, Default)]
pub(crate) struct NewestFirst {
    /// Operands met so far, newest first.
    operands: Vec<Vec<u8>>,
    /// Set once a put (`Some(Some)`) or delete (`Some(None)`) was met.
    base: Option<Option<Vec<u8>>>,
}

impl NewestFirst {
    /// Feeds the next older version; true when no older version matters.
    pub(crate) fn push(&mut self, kind: ValueKind, value: &[u8]) -> bool {
        if self.base.is_some() {
            return true;
        }
        match kind {
            ValueKind::Merge => {
                self.operands.push(value.to_vec());
                return false;
            }
            ValueKind::Put => self.base = Some(Some(value.to_vec())),
            // (A range delete never reaches a fold; it would end it like a delete.)
            ValueKind::Delete | ValueKind::RangeDelete => self.base = Some(None),
        }
        true
    }

    /// The key's value: the put or delete met, merged with the operands above it.
    pub(crate) fn finish(self, op: Option<&Arc<dyn MergeOperator>>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let base = self.base.flatten();
        if self.operands.is_empty() {
            return Ok(base);
        }
        let operands: Vec<&[u8]> = self.operands.iter().rev().map(Vec::as_slice).collect();
        full_merge(op, key, base.as_deref(), &operands).map(Some)
    }
}

/// One key's visible versions fed oldest first (a backward scan): the newest
/// put or delete so far and the operands after it. Reusable from key to key
/// ([`Self::clear`]), so a scan without operands copies each value into one
/// buffer, as it did before merges existed.
#[derive(Debug, Default)]
pub(crate) struct OldestFirst {
    /// The newest put's value, when `has_base`; the answer after `resolve`.
    base: Vec<u8>,
    has_base: bool,
    /// Operands after the base, oldest first.
    operands: Vec<Vec<u8>>,
    /// The kind of the newest version fed.
    newest: Option<ValueKind>,
}

impl OldestFirst {
    /// Forgets the versions fed, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.has_base = false;
        self.operands.clear();
        self.newest = None;
    }

    /// Feeds the next newer version.
    pub(crate) fn push(&mut self, kind: ValueKind, value: &[u8]) {
        self.newest = Some(kind);
        match kind {
            ValueKind::Merge => self.operands.push(value.to_vec()),
            ValueKind::Put => {
                self.operands.clear();
                self.base.clear();
                self.base.extend_from_slice(value);
                self.has_base = true;
            }
            ValueKind::Delete | ValueKind::RangeDelete => {
                self.operands.clear();
                self.has_base = false;
            }
        }
    }

    /// Whether the key has a value (none when no version was fed or the
    /// newest is a delete); if so, [`Self::value_mut`] holds it.
    pub(crate) fn resolve(&mut self, op: Option<&Arc<dyn MergeOperator>>, key: &[u8]) -> Result<bool> {
        match self.newest {
            None | Some(ValueKind::Delete | ValueKind::RangeDelete) => Ok(false),
            Some(ValueKind::Put) => Ok(true),
            Some(ValueKind::Merge) => {
                let operands: Vec<&[u8]> = self.operands.iter().map(Vec::as_slice).collect();
                let existing = self.has_base.then_some(self.base.as_slice());
                self.base = full_merge(op, key, existing, &operands)?;
                self.has_base = true;
                Ok(true)
            }
        }
    }

    /// The value [`Self::resolve`] found (a buffer the caller may swap out).
    pub(crate) fn value_mut(&mut self) -> &mut Vec<u8> {
        &mut self.base
    }

    /// The key's value: `None` when no version was fed or the newest is a delete.
    pub(crate) fn finish(
        mut self,
        op: Option<&Arc<dyn MergeOperator>>,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        Ok(self.resolve(op, key)?.then_some(self.base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concat() -> Arc<dyn MergeOperator> {
        associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()))
    }

    /// A key's versions newest first, as (kind, value).
    type Versions<'a> = &'a [(ValueKind, &'a str)];

    fn newest_first(versions: Versions<'_>) -> Result<Option<Vec<u8>>> {
        let mut c = NewestFirst::default();
        for (kind, v) in versions {
            if c.push(*kind, v.as_bytes()) {
                break;
            }
        }
        c.finish(Some(&concat()), b"k")
    }

    fn oldest_first(versions: Versions<'_>) -> Result<Option<Vec<u8>>> {
        let mut c = OldestFirst::default();
        for (kind, v) in versions.iter().rev() {
            c.push(*kind, v.as_bytes());
        }
        c.finish(Some(&concat()), b"k")
    }

    #[test]
    fn operands_fold_onto_the_newest_put_or_delete_in_both_directions() {
        use ValueKind::{Delete as D, Merge as M, Put as P};
        let cases: &[(Versions<'_>, Option<&str>)] = &[
            (&[], None),
            (&[(P, "v")], Some("v")),
            (&[(D, "")], None),
            (&[(M, "c"), (M, "b"), (P, "a"), (M, "x"), (P, "old")], Some("abc")),
            (&[(M, "c"), (D, ""), (P, "old")], Some("c")),
            (&[(M, "c"), (M, "b")], Some("bc")),
            (&[(P, "new"), (M, "b"), (P, "a")], Some("new")),
            (&[(D, ""), (M, "b"), (P, "a")], None),
        ];
        for (versions, want) in cases {
            let want = want.map(|w| w.as_bytes().to_vec());
            assert_eq!(newest_first(versions).unwrap(), want, "newest first {versions:?}");
            assert_eq!(oldest_first(versions).unwrap(), want, "oldest first {versions:?}");
        }
    }

    #[test]
    fn no_operator_is_invalid_argument_and_a_failed_merge_is_corruption() {
        let mut c = NewestFirst::default();
        c.push(ValueKind::Merge, b"x");
        assert!(matches!(c.finish(None, b"key"), Err(Error::InvalidArgument(_))));
        let mut c = NewestFirst::default();
        c.push(ValueKind::Put, b"v");
        assert_eq!(c.finish(None, b"key").unwrap(), Some(b"v".to_vec()), "no operands, no operator needed");
        let failing = associative_merge_operator("fails", |_, _, _| None);
        let err = full_merge(Some(&failing), b"key\x01", None, &[b"x"]).unwrap_err();
        assert!(err.is_corruption() && err.to_string().contains("key\\x01"), "{err}");
    }

    #[test]
    fn associative_operator_partially_merges_with_its_function() {
        let op = concat();
        assert_eq!(op.partial_merge(b"k", b"a", b"b"), Some(b"ab".to_vec()));
        assert_eq!(op.full_merge(b"k", None, &[]), Some(Vec::new()));
        assert_eq!(op.full_merge(b"k", Some(b"x"), &[b"y", b"z"]), Some(b"xyz".to_vec()));
    }
}
