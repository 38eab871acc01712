//! Sub-tasks of a merge (the pipelined-compaction paper's C-PPCP): the merge's
//! key range cut at input block boundaries into pieces of about
//! `compaction_subtask_bytes` of input, read, verified, decompressed and merged
//! by several threads at once, and handed to the output writer in key order.
//!
//! ```text
//!  K sub-task threads                         task thread
//!  claim i, seek each input run,   (i, entries)   reorder by i; feed the
//!  merge (lo_i, hi_i] with the   ------------->   output writer (blocks ->
//!  drop rules                                     compress threads -> writer)
//!        ^                                               |
//!        +---- claims: at most 2K ahead of the consumer -+
//! ```
//!
//! A sub-task covers the user keys in `(bound[i-1], bound[i]]`: bounds are
//! user keys, so all versions of a key are merged by one thread and the drop
//! rules see them together. Memory: at most `2K` sub-tasks' kept entries are
//! held at once (claimed and not yet consumed), each about the sub-task's
//! input size uncompressed, plus each thread's readahead, which is cut to the
//! bytes the sub-task needs from each run.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::unbounded;
use parking_lot::{Condvar, Mutex};

use super::merge::DropRules;
use super::output::OutputWriter;
use crate::cache::TableCache;
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator, RunIterator};
use crate::key::{make_internal_key, parse_internal_key, SeqNum, ValueKind};
use crate::table::format::{BlockHandle, BLOCK_TRAILER_LEN};
use crate::table::BlockReadOptions;
use crate::version::FileMeta;

/// Most bytes the sub-task threads' readahead windows hold together.
const READAHEAD_BUDGET: usize = 16 << 20;

/// The pieces of one merge.
pub(crate) struct Subtasks {
    /// Inclusive upper user key of every sub-task but the last.
    bounds: Vec<Vec<u8>>,
    /// Per sub-task, per run: bytes of that run's blocks the sub-task reads.
    extents: Vec<Vec<usize>>,
}

impl Subtasks {
    /// Cuts the merge of `runs` (each sorted and disjoint) after about
    /// `target` input bytes, at the last user key of an input block. Reads
    /// only the inputs' index blocks (in memory with the open table).
    pub(crate) fn plan(runs: &[Vec<Arc<FileMeta>>], tables: &TableCache, target: usize) -> Result<Self> {
        // Per run, its data blocks in order: (last user key, bytes on disk).
        let mut blocks: Vec<Vec<(Vec<u8>, u64)>> = Vec::with_capacity(runs.len());
        for files in runs {
            let mut run = Vec::new();
            for f in files {
                let table = tables.get(f.id, f.size)?;
                let mut it = table.index_block().iter();
                it.seek_to_first()?;
                while it.valid() {
                    let handle = BlockHandle::decode(it.value())?;
                    let uk = parse_internal_key(it.key())?.user_key.to_vec();
                    run.push((uk, handle.size + BLOCK_TRAILER_LEN as u64));
                    it.next()?;
                }
            }
            blocks.push(run);
        }
        let mut all: Vec<(&[u8], u64)> = blocks.iter().flatten().map(|(k, n)| (k.as_slice(), *n)).collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        let largest = all.last().map(|(k, _)| *k);
        let mut bounds: Vec<Vec<u8>> = Vec::new();
        let mut acc = 0u64;
        for (k, n) in &all {
            acc += n;
            if acc >= target as u64 && Some(*k) != largest && bounds.last().is_none_or(|b| b.as_slice() < *k)
            {
                bounds.push(k.to_vec());
                acc = 0;
            }
        }
        let extents = (0..=bounds.len())
            .map(|i| {
                let lo = i.checked_sub(1).map(|j| bounds[j].as_slice());
                let hi = bounds.get(i).map(Vec::as_slice);
                blocks.iter().map(|run| extent(run, lo, hi)).collect()
            })
            .collect();
        Ok(Subtasks { bounds, extents })
    }

    /// Number of sub-tasks.
    pub(crate) fn len(&self) -> usize {
        self.bounds.len() + 1
    }
}

/// Bytes of `run`'s blocks holding user keys in `(lo, hi]`: from the first
/// block ending after `lo` through the first ending at or after `hi`.
fn extent(run: &[(Vec<u8>, u64)], lo: Option<&[u8]>, hi: Option<&[u8]>) -> usize {
    let start = lo.map_or(0, |lo| run.partition_point(|(k, _)| k.as_slice() <= lo));
    let end = hi.map_or(run.len(), |hi| (run.partition_point(|(k, _)| k.as_slice() < hi) + 1).min(run.len()));
    run.get(start..end).map_or(0, |b| b.iter().map(|(_, n)| *n as usize).sum())
}

/// What the sub-task threads share.
pub(crate) struct SubtaskInputs<'a> {
    pub runs: &'a [Vec<Arc<FileMeta>>],
    pub tables: &'a Arc<TableCache>,
    pub read: BlockReadOptions,
    pub smallest_snapshot: SeqNum,
}

/// Claims handed out to sub-task threads, bounded by what the consumer took.
struct Claims {
    next: usize,
    consumed: usize,
    abort: bool,
}

/// Merges every sub-task of `plan` on `threads` threads and feeds the kept
/// entries to `out` in key order. The first error (in any thread, or in the
/// output writer) stops every thread; all are joined before it is returned.
pub(crate) fn merge_subtasks(
    plan: &Subtasks,
    inputs: &SubtaskInputs<'_>,
    threads: usize,
    out: &mut OutputWriter<'_>,
    is_base: &(dyn Fn(&[u8]) -> bool + Sync),
) -> Result<()> {
    let n = plan.len();
    let threads = threads.clamp(1, n);
    let window = 2 * threads;
    let claims = Mutex::new(Claims { next: 0, consumed: 0, abort: false });
    let claimed = Condvar::new();
    let (tx, rx) = unbounded::<(usize, Result<Vec<u8>>)>();
    let progress = out.progress();
    let budget = READAHEAD_BUDGET / (threads * inputs.runs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (claims, claimed, progress) = (&claims, &claimed, &progress);
            scope.spawn(move || loop {
                let i = {
                    let mut c = claims.lock();
                    while !c.abort && c.next < n && c.next >= c.consumed + window {
                        claimed.wait(&mut c);
                    }
                    if c.abort || c.next >= n {
                        return;
                    }
                    c.next += 1;
                    c.next - 1
                };
                let t = Instant::now();
                let read_before = crate::table::reader::read_time();
                let r = merge_one(plan, inputs, i, budget, is_base);
                progress.add_read_since(read_before);
                let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
                progress.subtask_ns.fetch_add(ns, AtomicOrdering::Relaxed);
                progress.subtasks.fetch_add(1, AtomicOrdering::Relaxed);
                let failed = r.is_err();
                if tx.send((i, r)).is_err() || failed {
                    return;
                }
            });
        }
        drop(tx);
        let r = consume(n, &rx, out, &claims, &claimed, &progress);
        // Whatever happened, no thread claims another sub-task.
        claims.lock().abort = true;
        claimed.notify_all();
        r
    })
}

/// The task thread's side: takes sub-tasks' entries in order.
fn consume(
    n: usize,
    rx: &crossbeam_channel::Receiver<(usize, Result<Vec<u8>>)>,
    out: &mut OutputWriter<'_>,
    claims: &Mutex<Claims>,
    claimed: &Condvar,
    progress: &crate::table::pipeline::Progress,
) -> Result<()> {
    let mut pending = BTreeMap::new();
    for next in 0..n {
        let entries = loop {
            if let Some(e) = pending.remove(&next) {
                break e;
            }
            let t = Instant::now();
            let (i, r) =
                rx.recv().map_err(|_| Error::corruption("a sub-task thread ended without a result"))?;
            let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
            progress.subtask_wait_ns.fetch_add(ns, AtomicOrdering::Relaxed);
            pending.insert(i, r?);
        };
        let mut rest = entries.as_slice();
        while !rest.is_empty() {
            let (key, value, tail) = decode_entry(rest)?;
            let seq = parse_internal_key(key)?.seq;
            out.add(key, value, seq)?;
            rest = tail;
        }
        claims.lock().consumed += 1;
        claimed.notify_all();
    }
    Ok(())
}

/// Reads and merges sub-task `i`, returning its kept entries encoded.
fn merge_one(
    plan: &Subtasks,
    inputs: &SubtaskInputs<'_>,
    i: usize,
    budget: usize,
    is_base: &(dyn Fn(&[u8]) -> bool + Sync),
) -> Result<Vec<u8>> {
    let lo = i.checked_sub(1).map(|j| plan.bounds[j].as_slice());
    let hi = plan.bounds.get(i).map(Vec::as_slice);
    let children = inputs
        .runs
        .iter()
        .zip(&plan.extents[i])
        .map(|(files, &bytes)| {
            // Read what this sub-task needs of the run, not a full window the
            // next sub-task (another thread) would read again.
            let opts = BlockReadOptions { readahead: bytes.min(budget), prefetch: false, ..inputs.read };
            Box::new(RunIterator::new(files.clone(), Arc::clone(inputs.tables), opts))
                as Box<dyn InternalIterator>
        })
        .collect();
    let mut it = MergingIterator::new(children);
    match lo {
        // The last internal key of `lo` (sequence 0, the lowest kind).
        Some(lo) => it.seek(&make_internal_key(lo, 0, ValueKind::Delete))?,
        None => it.seek_to_first()?,
    }
    let mut rules = DropRules::new(inputs.smallest_snapshot);
    let mut buf = Vec::new();
    while it.valid() {
        let k = parse_internal_key(it.key())?;
        if lo.is_some_and(|lo| k.user_key <= lo) {
            it.next()?;
            continue;
        }
        if hi.is_some_and(|hi| k.user_key > hi) {
            break;
        }
        if rules.keep(&k, is_base) {
            encode_entry(&mut buf, it.key(), it.value());
        }
        it.next()?;
    }
    Ok(buf)
}

fn encode_entry(buf: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
    buf.extend_from_slice(&(value.len() as u32).to_le_bytes());
    buf.extend_from_slice(key);
    buf.extend_from_slice(value);
}

fn decode_entry(buf: &[u8]) -> Result<(&[u8], &[u8], &[u8])> {
    let len = |b: &[u8]| b.try_into().map(u32::from_le_bytes).map(|n| n as usize);
    let bad = || Error::corruption("malformed sub-task entry");
    let k = len(buf.get(0..4).ok_or_else(bad)?).map_err(|_| bad())?;
    let v = len(buf.get(4..8).ok_or_else(bad)?).map_err(|_| bad())?;
    let key = buf.get(8..8 + k).ok_or_else(bad)?;
    let value = buf.get(8 + k..8 + k + v).ok_or_else(bad)?;
    Ok((key, value, &buf[8 + k + v..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(keys: &[&str]) -> Vec<(Vec<u8>, u64)> {
        keys.iter().map(|k| (k.as_bytes().to_vec(), 100)).collect()
    }

    #[test]
    fn extent_covers_the_blocks_a_range_can_touch() {
        let r = run(&["b", "d", "f", "h"]);
        assert_eq!(extent(&r, None, Some(b"c")), 200, "b, then d which may hold c");
        assert_eq!(extent(&r, Some(b"d"), Some(b"f")), 100, "only f: d ends at the lower bound");
        assert_eq!(extent(&r, Some(b"c"), Some(b"g")), 300, "d, f, h");
        assert_eq!(extent(&r, Some(b"h"), None), 0, "nothing after h");
        assert_eq!(extent(&r, Some(b"a"), None), 400);
    }

    #[test]
    fn entries_round_trip_and_truncation_is_an_error() {
        let mut buf = Vec::new();
        encode_entry(&mut buf, b"key1", b"value");
        encode_entry(&mut buf, b"k", b"");
        let (k, v, rest) = decode_entry(&buf).expect("first");
        assert_eq!((k, v), (&b"key1"[..], &b"value"[..]));
        let (k, v, rest) = decode_entry(rest).expect("second");
        assert_eq!((k, v, rest.len()), (&b"k"[..], &b""[..], 0));
        let (_, _, cut) = decode_entry(&buf[..buf.len() - 1]).expect("first, whole");
        assert!(decode_entry(cut).is_err(), "the second lost its last byte");
    }
}
