//! Batched point reads (RocksDB `MultiGet`): one super version and sequence
//! for the whole batch, keys sorted and deduplicated, then walked down the
//! tree run by run. The keys of a run that fall in one file share its table
//! handle, and sorted keys that fall in one data block share its lookup and
//! decoding (the memo). Each key's probe is `get`'s own (read.rs), so filter,
//! row-cache, compaction-buffer and seek rules and counters are the same.

use super::read::{block_read_options, mem_get, KeyRead, Walk};
use super::read_memo::ReadMemo;
use super::read_options::ReadOptions;
use super::DbInner;
use crate::error::Result;
use crate::key::{append_internal_key, SeqNum, KIND_FOR_SEEK, TRAILER_LEN};
use crate::pinned::PinnedValue;
use crate::stats::Counters;
use crate::table::filter::filter_hash;

/// One key's answer: `None` while the walk goes on.
type Answer = Option<Result<Option<PinnedValue>>>;

impl DbInner {
    /// The values of `keys` at `snapshot` (or now), in input order; an error
    /// (a damaged block, an unreadable file) is the answer of the keys that
    /// needed it, and the others are still answered.
    pub(crate) fn multi_get_at(
        &self,
        keys: &[&[u8]],
        snapshot: Option<SeqNum>,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<PinnedValue>>> {
        // The distinct keys in order, and each input key's place among them.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_unstable_by(|&a, &b| keys[a].cmp(keys[b]));
        let mut distinct: Vec<&[u8]> = Vec::with_capacity(keys.len());
        let mut slot = vec![0; keys.len()];
        for &i in &order {
            if distinct.last() != Some(&keys[i]) {
                distinct.push(keys[i]);
            }
            slot[i] = distinct.len() - 1;
        }
        Counters::add(&self.counters.multi_gets, 1);
        Counters::add(&self.counters.multi_get_keys, keys.len() as u64);
        Counters::add(&self.counters.gets, distinct.len() as u64);

        let (sv, seq) = self.read_view(snapshot);
        let mut answers: Vec<Answer> = distinct
            .iter()
            .map(|k| match self.max_range_del(&sv, k, seq) {
                Err(e) => Some(Err(e)),
                // Under a range tombstone: get's own read of a covered key.
                Ok(Some(t)) => {
                    Some(self.merged_get(&sv, k, seq, ro, Some(t)).map(|v| v.map(PinnedValue::owned)))
                }
                Ok(None) => {
                    mem_get(&sv, k, seq).map(|(kind, value)| self.settle(&sv, k, seq, ro, kind, value))
                }
            })
            .collect();
        let pending: Vec<usize> = (0..distinct.len()).filter(|&u| answers[u].is_none()).collect();
        if !pending.is_empty() {
            self.walk_tables(&sv, seq, ro, &distinct, &mut answers, pending);
        }

        // Each answer goes to every input position of its key: copies (cheap
        // unless owned) to all but the last, which takes it.
        let mut uses = vec![0usize; distinct.len()];
        for &u in &slot {
            uses[u] += 1;
        }
        slot.iter()
            .map(|&u| {
                uses[u] -= 1;
                let answer = &mut answers[u];
                let copy = if uses[u] == 0 { answer.take() } else { answer.as_ref().map(duplicate) };
                copy.unwrap_or(Ok(None))
            })
            .collect()
    }

    /// Walks the sorted `keys` at indices `pending` (not answered by a
    /// memtable) down the tree, run by run, filling `answers`.
    fn walk_tables(
        &self,
        sv: &super::SuperVersion,
        seq: SeqNum,
        ro: &ReadOptions,
        keys: &[&[u8]],
        answers: &mut [Answer],
        mut pending: Vec<usize>,
    ) {
        let version = &sv.version;
        let bro = block_read_options(ro);
        let (use_buffer, dispatch) = (ro.use_compaction_buffer, ro.buffer_dispatch);
        let lookups = Lookups::new(keys, &pending, seq);
        let hashes: Vec<u64> =
            (0..keys.len()).map(|u| if answers[u].is_none() { filter_hash(keys[u]) } else { 0 }).collect();
        let segments_before = crate::table::reader::segment_probes();
        let counts_seeks = self.counts_seeks();
        let mut walks: Vec<Walk<'_>> = (0..keys.len()).map(|_| Walk::new(counts_seeks)).collect();
        let mut memo = ReadMemo::default();
        'levels: for (l, level) in version.levels.iter().enumerate() {
            for run in &level.runs {
                let mut i = 0;
                while i < pending.len() {
                    let Some(f) = run.find_file(keys[pending[i]]) else {
                        i += 1;
                        continue;
                    };
                    // The sorted keys from here on that this file covers too.
                    let end = i + pending[i..].partition_point(|&u| keys[u] <= f.largest_user_key());
                    match self.table_of(f, Some(&mut memo)) {
                        Err(e) => {
                            for &u in &pending[i..end] {
                                answers[u] = Some(Err(e.duplicate()));
                            }
                        }
                        Ok(table) => {
                            let group = &pending[i..end];
                            if group.len() > 1 {
                                // Every key's filter lines first, so their
                                // fetches overlap instead of one per key.
                                for &u in group {
                                    table.prefetch_filter(hashes[u]);
                                }
                            }
                            for &u in group {
                                let read = KeyRead {
                                    key: keys[u],
                                    lookup: lookups.get(u),
                                    hash: hashes[u],
                                    bro,
                                    use_buffer,
                                    dispatch,
                                };
                                let walk = &mut walks[u];
                                match self.probe_file(
                                    l,
                                    level,
                                    run.id,
                                    f,
                                    &table,
                                    &read,
                                    walk,
                                    Some(&mut memo),
                                ) {
                                    Ok(None) => {}
                                    Ok(Some((kind, value))) => {
                                        answers[u] = Some(self.settle(sv, keys[u], seq, ro, kind, value));
                                    }
                                    Err(e) => answers[u] = Some(Err(e)),
                                }
                            }
                        }
                    }
                    i = end;
                }
                pending.retain(|&u| answers[u].is_none());
                if pending.is_empty() {
                    break 'levels;
                }
            }
        }
        self.count_probes(walks.iter().map(|w| w.probes).sum(), segments_before);
    }
}

/// The lookup keys of a batch's pending keys at its sequence, in one buffer
/// (one allocation for the batch, not one per key).
struct Lookups {
    bytes: Vec<u8>,
    /// Key index -> its lookup key's range in `bytes` (empty if not pending).
    at: Vec<(usize, usize)>,
}

impl Lookups {
    fn new(keys: &[&[u8]], pending: &[usize], seq: SeqNum) -> Self {
        let len = pending.iter().map(|&u| keys[u].len() + TRAILER_LEN).sum();
        let mut bytes = Vec::with_capacity(len);
        let mut at = vec![(0, 0); keys.len()];
        for &u in pending {
            let start = bytes.len();
            append_internal_key(&mut bytes, keys[u], seq, KIND_FOR_SEEK);
            at[u] = (start, bytes.len());
        }
        Lookups { bytes, at }
    }

    fn get(&self, u: usize) -> &[u8] {
        let (start, end) = self.at[u];
        &self.bytes[start..end]
    }
}

/// A copy of an answer for a duplicate key.
fn duplicate(answer: &Result<Option<PinnedValue>>) -> Result<Option<PinnedValue>> {
    match answer {
        Ok(v) => Ok(v.clone()),
        Err(e) => Err(e.duplicate()),
    }
}
