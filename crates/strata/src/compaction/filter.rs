//! Compaction filters (RocksDB `CompactionFilter`): user code that removes or
//! rewrites values while compactions rewrite them, and what one compaction
//! task runs it with (`FilterRun`).

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::key::{ParsedKey, SeqNum, ValueKind};

/// What a [`CompactionFilter`] does with one entry (RocksDB
/// `CompactionFilter::Decision`, rust-rocksdb `compaction_filter::Decision`).
///
/// # Examples
///
/// ```
/// use strata::Decision;
///
/// let d = Decision::ChangeValue(b"redacted".to_vec());
/// assert_ne!(d, Decision::Keep);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The entry stays as it is.
    Keep,
    /// The key is deleted: the entry becomes a tombstone at its sequence
    /// number, which hides any older version of the key deeper in the tree
    /// and is dropped by the usual rules once nothing older can exist
    /// (RocksDB turns `kRemove` into a deletion the same way).
    Remove,
    /// The entry keeps its key and sequence number with this value instead.
    ChangeValue(Vec<u8>),
}

/// Removes or rewrites values while compactions rewrite them (RocksDB
/// `CompactionFilter`, rust-rocksdb `Options::set_compaction_filter`, fjall's
/// compaction filter); set with [`crate::Options::with_compaction_filter`].
///
/// When it runs: in every compaction that rewrites entries — merges of every
/// policy (split into sub-tasks or not, whatever the output pipeline), the
/// `lwc` policy's appends and table rewrites, manual compactions. Not in
/// trivial moves (nothing is read) and not in flushes (RocksDB's default), so
/// a value stays as written until a compaction first rewrites it.
///
/// What it sees: only the newest version of a key in the task's input, only
/// values (tombstones and merge operands are never passed, nor the value a
/// compaction makes of a key's operands; a key whose newest version is an
/// operand is left alone, unlike RocksDB's `FilterMergeOperand`), and only entries no live snapshot
/// can see (sequence above the newest snapshot, as in RocksDB), so a
/// snapshot keeps reading what it read. A snapshot taken while a compaction
/// runs reads the newest state and may see the filter's result once the
/// compaction is installed, as in RocksDB. The filter is shared by
/// concurrent compactions and sub-task threads, hence `Send + Sync`. A
/// filter that panics fails its compaction with [`Error::InvalidArgument`].
///
/// Its [`name`](Self::name) is not recorded anywhere yet: reopening with
/// another filter (or none) is not detected.
///
/// # Examples
///
/// ```
/// use strata::{CompactionFilter, Decision};
///
/// /// Drops every key under `tmp/`.
/// struct DropTemp;
///
/// impl CompactionFilter for DropTemp {
///     fn name(&self) -> &str {
///         "drop-temp"
///     }
///     fn filter(&self, _level: usize, key: &[u8], _value: &[u8]) -> Decision {
///         if key.starts_with(b"tmp/") { Decision::Remove } else { Decision::Keep }
///     }
/// }
///
/// assert_eq!(DropTemp.filter(1, b"tmp/a", b"x"), Decision::Remove);
/// assert_eq!(DropTemp.name(), "drop-temp");
/// ```
pub trait CompactionFilter: Send + Sync {
    /// The filter's name (RocksDB `CompactionFilter::Name`).
    fn name(&self) -> &str;

    /// Decides about one entry: `level` is the level the compaction writes
    /// it to, `key` the user key, `value` the stored value.
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision;
}

/// Any `Fn(level, key, value) -> Decision` closure is a filter named `closure`
/// (implement the trait on a type of your own for another name).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::{CompactionFilter, Decision, Options};
///
/// let upper = |_level: usize, _key: &[u8], value: &[u8]| {
///     Decision::ChangeValue(value.to_ascii_uppercase())
/// };
/// assert_eq!(upper.filter(1, b"k", b"abc"), Decision::ChangeValue(b"ABC".to_vec()));
/// assert_eq!(upper.name(), "closure");
/// let _opts = Options::default().with_compaction_filter(Arc::new(upper));
/// ```
impl<F> CompactionFilter for F
where
    F: Fn(usize, &[u8], &[u8]) -> Decision + Send + Sync,
{
    fn name(&self) -> &str {
        "closure"
    }

    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision {
        self(level, key, value)
    }
}

impl fmt::Debug for dyn CompactionFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CompactionFilter({})", self.name())
    }
}

/// The filter as one compaction task runs it: the level it writes to, the
/// newest snapshot it must not disturb, and what it did (counted from every
/// sub-task thread).
pub(crate) struct FilterRun<'a> {
    filter: &'a dyn CompactionFilter,
    level: usize,
    newest_snapshot: Option<SeqNum>,
    removed: AtomicU64,
    changed: AtomicU64,
}

impl<'a> FilterRun<'a> {
    /// `None` without a filter. `newest_snapshot` is the newest live
    /// snapshot's sequence, if any.
    pub(crate) fn new(
        filter: Option<&'a dyn CompactionFilter>,
        level: usize,
        newest_snapshot: Option<SeqNum>,
    ) -> Option<Self> {
        Some(FilterRun {
            filter: filter?,
            level,
            newest_snapshot,
            removed: AtomicU64::new(0),
            changed: AtomicU64::new(0),
        })
    }

    /// The filter's decision on `k`, or `None` when it may not see it: not
    /// the newest version of its key in the task (`first` false), a
    /// tombstone, or visible to a live snapshot.
    pub(crate) fn decide(&self, first: bool, k: &ParsedKey<'_>, value: &[u8]) -> Result<Option<Decision>> {
        if !first || k.kind != ValueKind::Put || self.newest_snapshot.is_some_and(|s| k.seq <= s) {
            return Ok(None);
        }
        let d = catch_unwind(AssertUnwindSafe(|| self.filter.filter(self.level, k.user_key, value)))
            .map_err(|_| Error::invalid(format!("compaction filter {:?} panicked", self.filter.name())))?;
        match &d {
            Decision::Keep => {}
            Decision::Remove => {
                self.removed.fetch_add(1, Ordering::Relaxed);
            }
            Decision::ChangeValue(v) => {
                if k.user_key.len().saturating_add(v.len()) > crate::MAX_ENTRY_BYTES {
                    return Err(Error::invalid(format!(
                        "compaction filter {:?} returned a value of {} bytes: key and value must fit in {} bytes",
                        self.filter.name(),
                        v.len(),
                        crate::MAX_ENTRY_BYTES
                    )));
                }
                self.changed.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(Some(d))
    }

    /// Entries the filter removed and values it changed so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.removed.load(Ordering::Relaxed), self.changed.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seq: SeqNum, kind: ValueKind) -> ParsedKey<'static> {
        ParsedKey { user_key: b"k", seq, kind }
    }

    #[test]
    fn only_the_newest_value_above_every_snapshot_is_filtered() {
        let remove = |_: usize, _: &[u8], _: &[u8]| Decision::Remove;
        let run = FilterRun::new(Some(&remove), 2, Some(10)).expect("a filter");
        assert_eq!(run.decide(true, &key(11, ValueKind::Put), b"v").unwrap(), Some(Decision::Remove));
        assert_eq!(run.decide(true, &key(10, ValueKind::Put), b"v").unwrap(), None, "the snapshot sees it");
        assert_eq!(run.decide(false, &key(12, ValueKind::Put), b"v").unwrap(), None, "an older version");
        assert_eq!(run.decide(true, &key(12, ValueKind::Delete), b"").unwrap(), None, "a tombstone");
        assert_eq!(run.counts(), (1, 0));
        assert!(FilterRun::new(None, 2, None).is_none());
    }

    #[test]
    fn a_panicking_filter_fails_the_task_and_changes_are_counted() {
        let panics = |_: usize, _: &[u8], _: &[u8]| -> Decision { panic!("filter bug") };
        let run = FilterRun::new(Some(&panics), 1, None).expect("a filter");
        assert!(matches!(run.decide(true, &key(1, ValueKind::Put), b"v"), Err(Error::InvalidArgument(_))));
        let level_in_value = |level: usize, _: &[u8], _: &[u8]| Decision::ChangeValue(vec![level as u8]);
        let run = FilterRun::new(Some(&level_in_value), 3, None).expect("a filter");
        assert_eq!(
            run.decide(true, &key(1, ValueKind::Put), b"v").unwrap(),
            Some(Decision::ChangeValue(vec![3]))
        );
        assert_eq!(run.counts(), (0, 1));
    }
}
