//! The compaction iterator's rules: which versions a merge keeps. The newest
//! version of each user key stays, and so does every version a live snapshot
//! can still see; a tombstone goes once no snapshot needs it and no older run
//! can hold the key it deletes. The compaction filter's decisions are applied
//! here too, so every path that rewrites entries applies them alike.

use std::cmp::Ordering;
use std::collections::HashSet;

use super::filter::{Decision, FilterRun};
use super::output::OutputWriter;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key, ParsedKey, SeqNum, ValueKind};
use crate::version::{Run, Version};

/// Runs that hold data older than the output of a merge into
/// (`level`, `out_run`): every run of deeper levels, and runs of the output
/// level other than the output run, unless every file in them is an input.
pub(crate) fn older_runs<'v>(
    version: &'v Version,
    level: usize,
    out_run: u64,
    inputs: &HashSet<u64>,
) -> Vec<&'v Run> {
    let mut v = Vec::new();
    for (l, lvl) in version.levels.iter().enumerate().skip(level) {
        for run in &lvl.runs {
            if l == level && (run.id == out_run || run.files.iter().all(|f| inputs.contains(&f.id))) {
                continue;
            }
            v.push(run);
        }
    }
    v
}

/// The snapshots a compaction task runs under, read together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SnapshotBounds {
    /// The oldest live snapshot's sequence, or the visible sequence if none
    /// is live: versions shadowed at or below it are invisible to every reader.
    pub oldest: SeqNum,
    /// The newest live snapshot's sequence, if any: an entry above it is seen
    /// by no snapshot, only by reads of the newest state, so the compaction
    /// filter may change it.
    pub newest: Option<SeqNum>,
}

/// What a merge writes for one input entry.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing.
    Drop,
    /// The entry as it is.
    Keep,
    /// A tombstone at the entry's sequence (the filter removed the key, and
    /// an older version may exist below the output).
    Tombstone,
    /// The entry with the filter's new value.
    Value(Vec<u8>),
}

/// The drop rules over one merged stream, one entry at a time: the newest
/// version of each user key stays, and every version a live snapshot can still
/// see; a tombstone goes once no snapshot needs it and `is_base(user_key)`
/// says no older data exists. The compaction filter, if any, decides about
/// the newest version of each key when no snapshot sees it. They look at one
/// user key's versions together, so a stream may be cut into pieces
/// (sub-tasks) only between user keys.
pub(crate) struct DropRules {
    smallest_snapshot: SeqNum,
    current_user: Vec<u8>,
    have_current: bool,
    /// The sequence of the key's newest put or delete so far: a merge
    /// operand hides nothing, it needs what is below it.
    last_base_seq_for_key: SeqNum,
}

impl DropRules {
    pub(crate) fn new(smallest_snapshot: SeqNum) -> Self {
        DropRules {
            smallest_snapshot,
            current_user: Vec::new(),
            have_current: false,
            last_base_seq_for_key: SeqNum::MAX,
        }
    }

    /// What to write for the entry `k` with `value` (the next in
    /// internal-key order).
    pub(crate) fn decide(
        &mut self,
        k: &ParsedKey<'_>,
        value: &[u8],
        is_base: impl Fn(&[u8]) -> bool,
        filter: Option<&FilterRun<'_>>,
    ) -> Result<Verdict> {
        let first = !self.have_current || k.user_key.cmp(self.current_user.as_slice()) != Ordering::Equal;
        if first {
            self.current_user.clear();
            self.current_user.extend_from_slice(k.user_key);
            self.have_current = true;
            self.last_base_seq_for_key = SeqNum::MAX;
        }
        // A newer put or delete of this key is visible to every snapshot.
        let shadowed = self.last_base_seq_for_key <= self.smallest_snapshot;
        if k.kind != ValueKind::Merge {
            self.last_base_seq_for_key = k.seq;
        }
        if shadowed {
            return Ok(Verdict::Drop);
        }
        let droppable_tombstone = || k.seq <= self.smallest_snapshot && is_base(k.user_key);
        if k.kind == ValueKind::Delete {
            return Ok(if droppable_tombstone() { Verdict::Drop } else { Verdict::Keep });
        }
        Ok(match filter.map(|f| f.decide(first, k, value)).transpose()?.flatten() {
            None | Some(Decision::Keep) => Verdict::Keep,
            Some(Decision::ChangeValue(v)) => Verdict::Value(v),
            // Dropping the entry outright would uncover an older version below.
            Some(Decision::Remove) if droppable_tombstone() => Verdict::Drop,
            Some(Decision::Remove) => Verdict::Tombstone,
        })
    }
}

/// Hands what `verdict` keeps of the entry (`ikey`, `value`) to `out`.
pub(crate) fn emit(
    verdict: Verdict,
    ikey: &[u8],
    value: &[u8],
    mut out: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    match verdict {
        Verdict::Drop => Ok(()),
        Verdict::Keep => out(ikey, value),
        Verdict::Value(v) => out(ikey, &v),
        Verdict::Tombstone => {
            let k = parse_internal_key(ikey)?;
            out(&make_internal_key(k.user_key, k.seq, ValueKind::Delete), &[])
        }
    }
}

/// The merge loop shared by compactions: [`DropRules`] over the whole input.
pub(crate) fn merge_into(
    input: &mut dyn InternalIterator,
    out: &mut OutputWriter<'_>,
    smallest_snapshot: SeqNum,
    is_base: impl Fn(&[u8]) -> bool,
    filter: Option<&FilterRun<'_>>,
) -> Result<()> {
    input.seek_to_first()?;
    let mut rules = DropRules::new(smallest_snapshot);
    while input.valid() {
        let k = parse_internal_key(input.key())?;
        let seq = k.seq;
        let verdict = rules.decide(&k, input.value(), &is_base, filter)?;
        emit(verdict, input.key(), input.value(), |key, value| out.add(key, value, seq))?;
        input.next()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(seq: SeqNum) -> ParsedKey<'static> {
        ParsedKey { user_key: b"k", seq, kind: ValueKind::Put }
    }

    /// Verdicts for versions 9 and 5 of one key (newest first).
    fn verdicts(smallest: SeqNum, newest: Option<SeqNum>, base: bool) -> (Verdict, Verdict) {
        let remove = |_: usize, _: &[u8], _: &[u8]| Decision::Remove;
        let run = FilterRun::new(Some(&remove), 1, newest);
        let mut rules = DropRules::new(smallest);
        let a = rules.decide(&put(9), b"new", |_| base, run.as_ref()).unwrap();
        let b = rules.decide(&put(5), b"old", |_| base, run.as_ref()).unwrap();
        (a, b)
    }

    #[test]
    fn a_removed_entry_over_older_data_becomes_a_tombstone() {
        assert_eq!(verdicts(20, None, false), (Verdict::Tombstone, Verdict::Drop), "older data below");
        assert_eq!(verdicts(20, None, true), (Verdict::Drop, Verdict::Drop), "nothing older anywhere");
        // A snapshot at 6 sees version 5: it stays, under the tombstone.
        assert_eq!(verdicts(6, Some(6), true), (Verdict::Tombstone, Verdict::Keep));
        // A snapshot at 9 sees the newest version: the filter may not touch it.
        assert_eq!(verdicts(9, Some(9), true), (Verdict::Keep, Verdict::Drop));
    }

    #[test]
    fn emit_writes_the_tombstone_at_the_entry_sequence() {
        let ikey = make_internal_key(b"k", 7, ValueKind::Put);
        let mut got = Vec::new();
        let mut collect = |k: &[u8], v: &[u8]| {
            got.push((k.to_vec(), v.to_vec()));
            Ok(())
        };
        emit(Verdict::Tombstone, &ikey, b"v", &mut collect).unwrap();
        emit(Verdict::Value(b"w".to_vec()), &ikey, b"v", &mut collect).unwrap();
        emit(Verdict::Drop, &ikey, b"v", &mut collect).unwrap();
        assert_eq!(
            got,
            vec![(make_internal_key(b"k", 7, ValueKind::Delete), Vec::new()), (ikey.clone(), b"w".to_vec())]
        );
    }
}
