//! The compaction iterator's rules: which versions a merge keeps. The newest
//! version of each user key stays, and so does every version a live snapshot
//! can still see; a tombstone goes once no snapshot needs it and no older run
//! can hold the key it deletes.

use std::cmp::Ordering;
use std::collections::HashSet;

use super::output::OutputWriter;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{parse_internal_key, SeqNum, ValueKind};
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

/// The merge loop shared by compactions: keeps the newest version of each user
/// key plus every version a live snapshot can still see, and drops a tombstone
/// once no snapshot needs it and `is_base(user_key)` says no older data exists.
pub(crate) fn merge_into(
    input: &mut dyn InternalIterator,
    out: &mut OutputWriter<'_>,
    smallest_snapshot: SeqNum,
    is_base: impl Fn(&[u8]) -> bool,
) -> Result<()> {
    input.seek_to_first()?;
    let mut current_user: Vec<u8> = Vec::new();
    let mut have_current = false;
    let mut last_seq_for_key = SeqNum::MAX;
    while input.valid() {
        let k = parse_internal_key(input.key())?;
        if !have_current || k.user_key.cmp(current_user.as_slice()) != Ordering::Equal {
            current_user.clear();
            current_user.extend_from_slice(k.user_key);
            have_current = true;
            last_seq_for_key = SeqNum::MAX;
        }
        let drop = if last_seq_for_key <= smallest_snapshot {
            // A newer version of this key is visible to every snapshot.
            true
        } else {
            k.kind == ValueKind::Delete && k.seq <= smallest_snapshot && is_base(k.user_key)
        };
        last_seq_for_key = k.seq;
        if !drop {
            out.add(input.key(), input.value(), k.seq)?;
        }
        input.next()?;
    }
    Ok(())
}
