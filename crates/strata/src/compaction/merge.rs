//! The compaction iterator's rules: which versions a merge keeps. The newest
//! version of each user key stays, and so does every version a live snapshot
//! can still see; a tombstone goes once no snapshot needs it and no older run
//! can hold the key it deletes.

use std::cmp::Ordering;
use std::collections::HashSet;

use super::output::OutputWriter;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{parse_internal_key, ParsedKey, SeqNum, ValueKind};
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

/// The drop rules over one merged stream, one entry at a time: the newest
/// version of each user key stays, and every version a live snapshot can still
/// see; a tombstone goes once no snapshot needs it and `is_base(user_key)`
/// says no older data exists. They look at one user key's versions together,
/// so a stream may be cut into pieces (sub-tasks) only between user keys.
pub(crate) struct DropRules {
    smallest_snapshot: SeqNum,
    current_user: Vec<u8>,
    have_current: bool,
    last_seq_for_key: SeqNum,
}

impl DropRules {
    pub(crate) fn new(smallest_snapshot: SeqNum) -> Self {
        DropRules {
            smallest_snapshot,
            current_user: Vec::new(),
            have_current: false,
            last_seq_for_key: SeqNum::MAX,
        }
    }

    /// True if the entry `k` (the next in internal-key order) is kept.
    pub(crate) fn keep(&mut self, k: &ParsedKey<'_>, is_base: impl Fn(&[u8]) -> bool) -> bool {
        if !self.have_current || k.user_key.cmp(self.current_user.as_slice()) != Ordering::Equal {
            self.current_user.clear();
            self.current_user.extend_from_slice(k.user_key);
            self.have_current = true;
            self.last_seq_for_key = SeqNum::MAX;
        }
        let drop = if self.last_seq_for_key <= self.smallest_snapshot {
            // A newer version of this key is visible to every snapshot.
            true
        } else {
            k.kind == ValueKind::Delete && k.seq <= self.smallest_snapshot && is_base(k.user_key)
        };
        self.last_seq_for_key = k.seq;
        !drop
    }
}

/// The merge loop shared by compactions: [`DropRules`] over the whole input.
pub(crate) fn merge_into(
    input: &mut dyn InternalIterator,
    out: &mut OutputWriter<'_>,
    smallest_snapshot: SeqNum,
    is_base: impl Fn(&[u8]) -> bool,
) -> Result<()> {
    input.seek_to_first()?;
    let mut rules = DropRules::new(smallest_snapshot);
    while input.valid() {
        let k = parse_internal_key(input.key())?;
        if rules.keep(&k, &is_base) {
            out.add(input.key(), input.value(), k.seq)?;
        }
        input.next()?;
    }
    Ok(())
}
