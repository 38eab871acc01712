//! The compaction iterator's rules: which versions a merge keeps. The newest
//! version of each user key stays, and so does every version a live snapshot
//! can still see; a tombstone goes once no snapshot needs it and no older run
//! can hold the key it deletes. The compaction filter's decisions are applied
//! here too, so every path that rewrites entries applies them alike, and so
//! is the combining of merge operands (see [`DropRules::add`]).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::filter::{Decision, FilterRun};
use crate::cache::TableCache;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key, ParsedKey, SeqNum, ValueKind};
use crate::merge_operator::MergeOperator;
use crate::range_del::{inclusive_end, Fragments};
use crate::sink::TableSink;
use crate::version::{FileMeta, Run, Version};

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

/// The range tombstones of a merge's input files, fragmented.
pub(crate) fn input_range_dels(tables: &TableCache, metas: &[Arc<FileMeta>]) -> Result<Fragments> {
    let mut tombs: Vec<(Vec<u8>, Vec<u8>, SeqNum)> = Vec::new();
    for m in metas.iter().filter(|m| m.num_range_dels > 0) {
        let t = m.table(tables)?;
        for f in t.range_dels().fragments() {
            tombs.extend(f.seqs.iter().map(|&s| (f.start.clone(), f.end.clone(), s)));
        }
    }
    Ok(Fragments::new(tombs.iter().map(|(s, e, q)| (s.as_slice(), e.as_slice(), *q))))
}

/// What a merge writes of its inputs' range tombstones `frags`: per
/// fragment, the sequences above the oldest snapshot and the newest at or
/// below it, which goes too when no run older than the output (`older`)
/// has a file overlapping the fragment: the merge drops every entry it
/// covers (see [`RangeDelSkip`](crate::range_del::RangeDelSkip)), and
/// nothing else can be under it. Returns them and how many were dropped.
pub(crate) fn output_range_dels(frags: &Fragments, oldest: SeqNum, older: &[&Run]) -> (Fragments, u64) {
    frags.collapse(oldest, |start, end| {
        let last = inclusive_end(end);
        older.iter().all(|r| r.overlapping(start, last).is_empty())
    })
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
pub(crate) struct DropRules<'o> {
    smallest_snapshot: SeqNum,
    merge_operator: Option<&'o Arc<dyn MergeOperator>>,
    /// Operands of the current key at or below `smallest_snapshot`, newest
    /// first, held back by [`Self::add`] until what lies below them is known.
    held: Vec<(SeqNum, Vec<u8>)>,
    current_user: Vec<u8>,
    have_current: bool,
    /// The sequence of the key's newest put or delete so far: a merge
    /// operand hides nothing, it needs what is below it.
    last_base_seq_for_key: SeqNum,
}

/// Where [`DropRules::add`] writes: internal key, value, sequence.
pub(crate) type Sink<'s> = dyn FnMut(&[u8], &[u8], SeqNum) -> Result<()> + 's;

impl<'o> DropRules<'o> {
    pub(crate) fn new(smallest_snapshot: SeqNum) -> Self {
        DropRules {
            smallest_snapshot,
            merge_operator: None,
            held: Vec::new(),
            current_user: Vec::new(),
            have_current: false,
            last_base_seq_for_key: SeqNum::MAX,
        }
    }

    /// Combines merge operands with `op` in [`Self::add`] (without one they
    /// are all kept).
    pub(crate) fn with_merge_operator(mut self, op: Option<&'o Arc<dyn MergeOperator>>) -> Self {
        self.merge_operator = op;
        self
    }

    /// Decides about the entry (`ikey`, `value`), the next in internal-key
    /// order, and writes what stays to `out`, combining merge operands where
    /// every reader sees them alike, that is at or below the oldest snapshot
    /// (so never across a snapshot's boundary): over a put or delete below
    /// them they become one put (the full merge, at the newest operand's
    /// sequence); with nothing older anywhere (`is_base`) one put of a merge
    /// with no existing value; otherwise adjacent ones are partially merged
    /// when the operator can. A merge the operator fails is left as it was,
    /// for reads to report. Call [`Self::finish`] after the last entry.
    pub(crate) fn add(
        &mut self,
        ikey: &[u8],
        value: &[u8],
        is_base: &dyn Fn(&[u8]) -> bool,
        filter: Option<&FilterRun<'_>>,
        out: &mut Sink<'_>,
    ) -> Result<()> {
        let k = parse_internal_key(ikey)?;
        if self.have_current && k.user_key != self.current_user.as_slice() {
            self.flush_held(is_base, out)?;
        }
        let verdict = self.decide(&k, value, is_base, filter)?;
        if !self.held.is_empty() {
            // Older than the held operands, so at or below the oldest snapshot too.
            let base = match (k.kind, &verdict) {
                (ValueKind::Merge, Verdict::Keep) => {
                    self.held.push((k.seq, value.to_vec()));
                    return Ok(());
                }
                (ValueKind::Put, Verdict::Keep) => Some(Some(value)),
                (ValueKind::Put, Verdict::Value(v)) => Some(Some(v.as_slice())),
                (ValueKind::Delete, _) => Some(None),
                _ => None,
            };
            if let Some(existing) = base {
                if self.full_merge_held(existing, out)? {
                    // The put replaces the entry, which hid everything below it.
                    return Ok(());
                }
            }
            self.write_held(out)?;
        } else if k.kind == ValueKind::Merge
            && verdict == Verdict::Keep
            && k.seq <= self.smallest_snapshot
            && self.merge_operator.is_some()
        {
            self.held.push((k.seq, value.to_vec()));
            return Ok(());
        }
        emit(verdict, ikey, value, |key, v| out(key, v, k.seq))
    }

    /// Writes what [`Self::add`] holds back for the last key.
    pub(crate) fn finish(&mut self, is_base: &dyn Fn(&[u8]) -> bool, out: &mut Sink<'_>) -> Result<()> {
        self.flush_held(is_base, out)
    }

    /// The held operands of a key whose versions in the stream are all seen.
    fn flush_held(&mut self, is_base: &dyn Fn(&[u8]) -> bool, out: &mut Sink<'_>) -> Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        if is_base(&self.current_user) && self.full_merge_held(None, out)? {
            return Ok(());
        }
        self.partial_merge_held();
        self.write_held(out)
    }

    /// Writes the held operands merged onto `existing` as one put; false (and
    /// nothing written) if the operator fails.
    fn full_merge_held(&mut self, existing: Option<&[u8]>, out: &mut Sink<'_>) -> Result<bool> {
        let Some(op) = self.merge_operator else { return Ok(false) };
        let operands: Vec<&[u8]> = self.held.iter().rev().map(|(_, v)| v.as_slice()).collect();
        let Some(merged) = op.full_merge(&self.current_user, existing, &operands) else { return Ok(false) };
        let seq = self.held[0].0;
        self.held.clear();
        out(&make_internal_key(&self.current_user, seq, ValueKind::Put), &merged, seq).map(|()| true)
    }

    /// Replaces runs of adjacent held operands by their partial merges,
    /// each at the newest sequence of its run.
    fn partial_merge_held(&mut self) {
        let Some(op) = self.merge_operator else { return };
        let mut merged: Vec<(SeqNum, Vec<u8>)> = Vec::with_capacity(self.held.len());
        // Oldest first: each operand joins the newer end of the last run if it can.
        for (seq, operand) in self.held.drain(..).rev() {
            if let Some(last) = merged.last_mut() {
                if let Some(v) = op.partial_merge(&self.current_user, &last.1, &operand) {
                    *last = (seq, v);
                    continue;
                }
            }
            merged.push((seq, operand));
        }
        merged.reverse();
        self.held = merged;
    }

    /// Writes the held operands as they are, newest first.
    fn write_held(&mut self, out: &mut Sink<'_>) -> Result<()> {
        for (seq, operand) in self.held.drain(..) {
            out(&make_internal_key(&self.current_user, seq, ValueKind::Merge), &operand, seq)?;
        }
        Ok(())
    }

    /// What to write for the entry `k` with `value` (the next in
    /// internal-key order), merge operands aside.
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

/// The merge loop shared by compactions (merges and appends alike):
/// [`DropRules`] over the whole input, into `out`.
pub(crate) fn merge_into(
    input: &mut dyn InternalIterator,
    out: &mut dyn TableSink,
    smallest_snapshot: SeqNum,
    is_base: impl Fn(&[u8]) -> bool,
    filter: Option<&FilterRun<'_>>,
    merge_operator: Option<&Arc<dyn MergeOperator>>,
) -> Result<()> {
    input.seek_to_first()?;
    let mut rules = DropRules::new(smallest_snapshot).with_merge_operator(merge_operator);
    let mut sink = |key: &[u8], value: &[u8], seq: SeqNum| out.add(key, value, seq);
    while input.valid() {
        rules.add(input.key(), input.value(), &is_base, filter, &mut sink)?;
        input.next()?;
    }
    rules.finish(&is_base, &mut sink)
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

    /// A merge operator that concatenates, with or without a partial merge.
    struct Concat {
        partial: bool,
    }

    impl MergeOperator for Concat {
        fn name(&self) -> &str {
            "concat"
        }
        fn full_merge(&self, _: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
            if operands.contains(&&b"bad"[..]) {
                return None;
            }
            Some(
                [existing.unwrap_or(b"_")]
                    .into_iter()
                    .chain(operands.iter().copied())
                    .collect::<Vec<_>>()
                    .concat(),
            )
        }
        fn partial_merge(&self, _: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
            self.partial.then(|| [left, right].concat())
        }
    }

    type Entry = (&'static [u8], SeqNum, ValueKind, &'static str);

    /// What `DropRules::add` writes for `entries` (in internal-key order).
    fn combine(
        entries: &[Entry],
        smallest: SeqNum,
        base: bool,
        op: Option<Concat>,
    ) -> Vec<(Vec<u8>, SeqNum, ValueKind, String)> {
        let op: Option<Arc<dyn MergeOperator>> = op.map(|o| Arc::new(o) as Arc<dyn MergeOperator>);
        let mut rules = DropRules::new(smallest).with_merge_operator(op.as_ref());
        let mut got = Vec::new();
        let mut sink = |k: &[u8], v: &[u8], seq: SeqNum| {
            let p = parse_internal_key(k)?;
            assert_eq!(p.seq, seq);
            got.push((p.user_key.to_vec(), seq, p.kind, String::from_utf8(v.to_vec()).unwrap()));
            Ok(())
        };
        let is_base = |_: &[u8]| base;
        for (user, seq, kind, v) in entries {
            rules
                .add(&make_internal_key(user, *seq, *kind), v.as_bytes(), &is_base, None, &mut sink)
                .unwrap();
        }
        rules.finish(&is_base, &mut sink).unwrap();
        got
    }

    fn out(entries: &[Entry]) -> Vec<(Vec<u8>, SeqNum, ValueKind, String)> {
        entries.iter().map(|(u, seq, kind, v)| (u.to_vec(), *seq, *kind, v.to_string())).collect()
    }

    #[test]
    fn operands_over_a_put_or_delete_become_one_put() {
        use ValueKind::{Delete as D, Merge as M, Put as P};
        let full = || Some(Concat { partial: false });
        let chain: &[Entry] = &[(b"k", 9, M, "9"), (b"k", 8, M, "8"), (b"k", 5, P, "p"), (b"k", 3, P, "old")];
        assert_eq!(combine(chain, 20, false, full()), out(&[(b"k", 9, P, "p89")]));
        let deleted: &[Entry] = &[(b"k", 9, M, "9"), (b"k", 5, D, ""), (b"k", 3, P, "old")];
        assert_eq!(combine(deleted, 20, false, full()), out(&[(b"k", 9, P, "_9")]));
        // A snapshot at 8: version 9 is above it and stays an operand; the
        // snapshot's own answer (p8) is what the rest becomes.
        assert_eq!(combine(chain, 8, false, full()), out(&[(b"k", 9, M, "9"), (b"k", 8, P, "p8")]));
        // A snapshot at 5 sees only the put; nothing is combined across it.
        assert_eq!(
            combine(chain, 5, false, full()),
            out(&[(b"k", 9, M, "9"), (b"k", 8, M, "8"), (b"k", 5, P, "p")])
        );
        // Without an operator, or when it fails, everything the reads need stays.
        assert_eq!(combine(chain, 20, false, None), out(&chain[..3]));
        let bad: &[Entry] = &[(b"k", 9, M, "bad"), (b"k", 5, P, "p"), (b"k", 3, P, "old")];
        assert_eq!(combine(bad, 20, false, full()), out(&bad[..2]));
        // The next key starts afresh.
        let two: &[Entry] = &[(b"a", 4, M, "a"), (b"a", 2, P, "x"), (b"b", 3, M, "b")];
        assert_eq!(combine(two, 20, false, full()), out(&[(b"a", 4, P, "xa"), (b"b", 3, M, "b")]));
    }

    #[test]
    fn bare_operands_merge_fully_at_the_bottom_and_partially_above_it() {
        use ValueKind::Merge as M;
        let ops: &[Entry] = &[(b"k", 9, M, "9"), (b"k", 8, M, "8"), (b"k", 7, M, "7")];
        let full_only = || Some(Concat { partial: false });
        let partial = || Some(Concat { partial: true });
        assert_eq!(combine(ops, 20, true, full_only()), out(&[(b"k", 9, ValueKind::Put, "_789")]));
        assert_eq!(combine(ops, 20, false, partial()), out(&[(b"k", 9, M, "789")]));
        assert_eq!(combine(ops, 20, false, full_only()), out(ops), "no partial merge: all kept");
        // Above the oldest snapshot nothing is combined, at the bottom or not.
        assert_eq!(
            combine(ops, 8, true, partial()),
            out(&[(b"k", 9, M, "9"), (b"k", 8, ValueKind::Put, "_78")])
        );
        assert_eq!(combine(ops, 6, true, partial()), out(ops));
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
