//! Sub-tasks of a merge (the pipelined-compaction paper's C-PPCP): the merge's
//! key range cut at input block boundaries into pieces of about
//! `compaction_subtask_bytes` of input, read, verified, decompressed and merged
//! by several threads at once, and handed to the output writer in key order.
//!
//! ```text
//!  read thread              K sub-task threads            task thread
//!  each run's next 2 MiB,   merge (lo_i, hi_i] with  -->  reorder by i; feed the
//!  cut into sub-task   -->  the drop rules      (i, kept  output writer (blocks
//!  i's byte ranges          (i, raw input)      entries)  -> compress -> write)
//!        ^                        ^                              |
//!        +---- at most 16 MiB ----+-- claims at most 2K ahead ---+
//! ```
//!
//! A sub-task covers the user keys in `(bound[i-1], bound[i]]`: bounds are
//! user keys, so all versions of a key are merged by one thread and the drop
//! rules see them together. The read thread reads each run in chunks of up to
//! 2 MiB (consecutive sub-tasks' ranges of a run follow each other in the
//! file; small direct reads were slow) and hands each sub-task its byte ranges;
//! a merging thread's iterators use them as their first readahead windows and
//! read any block outside them alone. Memory: at most 16 MiB (or `2K`
//! sub-tasks) of raw input read ahead, at most `2K` sub-tasks' kept entries
//! (each about its input uncompressed), and one chunk per run.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::unbounded;
use parking_lot::{Condvar, Mutex};

use super::filter::FilterRun;
use super::merge::DropRules;
use crate::cache::TableCache;
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator, RunIterator};
use crate::key::{make_internal_key, parse_internal_key, SeqNum, ValueKind};
use crate::sink::{OutputWriter, TableSink};
use crate::table::format::{BlockHandle, BLOCK_TRAILER_LEN};
use crate::table::BlockReadOptions;
use crate::version::FileMeta;

/// One data block of an input run, as its index describes it.
struct InputBlock {
    /// User key of its last entry.
    last: Vec<u8>,
    /// Position of its file in the run.
    file: usize,
    offset: u64,
    /// Bytes on disk, trailer included.
    bytes: u64,
}

/// Bytes of one input file a sub-task reads: (file position in its run,
/// offset, length).
type Range = (usize, u64, usize);

/// The pieces of one merge.
pub(crate) struct Subtasks {
    /// Inclusive upper user key of every sub-task but the last.
    bounds: Vec<Vec<u8>>,
    /// Per sub-task, per run: the byte ranges of that run's files it reads.
    reads: Vec<Vec<Vec<Range>>>,
}

impl Subtasks {
    /// Cuts the merge of `runs` (each sorted and disjoint) after about
    /// `target` input bytes, at the last user key of an input block. Reads
    /// only the inputs' index blocks (in memory with the open table).
    pub(crate) fn plan(runs: &[Vec<Arc<FileMeta>>], tables: &TableCache, target: usize) -> Result<Self> {
        let mut blocks: Vec<Vec<InputBlock>> = Vec::with_capacity(runs.len());
        // Blocks of DTables (several segments): they place the cuts, but the
        // read stage leaves them to the table's own reads.
        let mut unread: Vec<InputBlock> = Vec::new();
        for files in runs {
            let mut run = Vec::new();
            for (file, f) in files.iter().enumerate() {
                let table = f.table(tables)?;
                let into = if table.num_segments() == 1 { &mut run } else { &mut unread };
                for seg in table.segments() {
                    let mut it = seg.index.iter();
                    it.seek_to_first()?;
                    while it.valid() {
                        let handle = BlockHandle::decode(it.value())?;
                        let last = parse_internal_key(it.key())?.user_key.to_vec();
                        let bytes = handle.size + BLOCK_TRAILER_LEN as u64;
                        into.push(InputBlock { last, file, offset: handle.offset, bytes });
                        it.next()?;
                    }
                }
            }
            blocks.push(run);
        }
        let mut all: Vec<(&[u8], u64)> =
            blocks.iter().flatten().chain(&unread).map(|b| (b.last.as_slice(), b.bytes)).collect();
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
        let reads = (0..=bounds.len())
            .map(|i| {
                let lo = i.checked_sub(1).map(|j| bounds[j].as_slice());
                let hi = bounds.get(i).map(Vec::as_slice);
                blocks.iter().map(|run| ranges(run, lo, hi)).collect()
            })
            .collect();
        Ok(Subtasks { bounds, reads })
    }

    /// Number of sub-tasks.
    pub(crate) fn len(&self) -> usize {
        self.bounds.len() + 1
    }
}

/// The blocks of `run` holding user keys in `(lo, hi]`, from the first block
/// ending after `lo` through the first ending at or after `hi`, as one byte
/// range per file.
fn ranges(run: &[InputBlock], lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<Range> {
    let start = lo.map_or(0, |lo| run.partition_point(|b| b.last.as_slice() <= lo));
    let end = hi.map_or(run.len(), |hi| (run.partition_point(|b| b.last.as_slice() < hi) + 1).min(run.len()));
    let mut out: Vec<Range> = Vec::new();
    for b in run.get(start..end).unwrap_or_default() {
        match out.last_mut() {
            // Blocks of one file are contiguous.
            Some((file, offset, len)) if *file == b.file && *offset + *len as u64 == b.offset => {
                *len += b.bytes as usize;
            }
            _ => out.push((b.file, b.offset, b.bytes as usize)),
        }
    }
    out
}

/// What the sub-task threads share.
pub(crate) struct SubtaskInputs<'a> {
    pub runs: &'a [Vec<Arc<FileMeta>>],
    pub tables: &'a Arc<TableCache>,
    pub read: BlockReadOptions,
    pub smallest_snapshot: SeqNum,
    pub filter: Option<&'a FilterRun<'a>>,
    pub merge_operator: Option<&'a Arc<dyn crate::MergeOperator>>,
    /// The inputs' range tombstones: entries they hide are not merged.
    pub range_dels: &'a Arc<crate::range_del::Fragments>,
}

/// Most input bytes the read stage holds ahead of the merging threads.
const READ_AHEAD_BYTES: usize = 16 << 20;

/// Input read ahead for one sub-task: per run, file id -> (offset, bytes).
type Windows = Vec<HashMap<u64, (u64, Vec<u8>)>>;

/// What the stages share: claims handed out to sub-task threads and the read
/// stage's progress, both bounded by what the consumer took.
struct Claims {
    next: usize,
    consumed: usize,
    /// Read-ahead input of sub-tasks not yet claimed by a merging thread.
    slots: HashMap<usize, Result<Windows>>,
    abort: bool,
}

/// Merges every sub-task of `plan` on `threads` threads and feeds the kept
/// entries to `out` in key order; a read thread reads each sub-task's input
/// ahead of them. The first error (in any thread, or in the output writer)
/// stops every thread; all are joined before it is returned.
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
    // The read stage may run further ahead: its buffers are raw input, and
    // device latency comes in bursts. At most READ_AHEAD_BYTES of them.
    let per_subtask =
        (0..n).map(|i| plan.reads[i].iter().flatten().map(|r| r.2).sum::<usize>()).max().unwrap_or(1);
    let read_window = (READ_AHEAD_BYTES / per_subtask.max(1)).max(window);
    let claims = Mutex::new(Claims { next: 0, consumed: 0, slots: HashMap::new(), abort: false });
    let changed = Condvar::new();
    let (tx, rx) = unbounded::<(usize, Result<Vec<u8>>)>();
    let progress = out.progress();
    std::thread::scope(|scope| {
        // The read stage (S1): sub-tasks' input bytes, in order, at most
        // `read_window` sub-tasks ahead of the consumer.
        {
            let (claims, changed, progress) = (&claims, &changed, &progress);
            scope.spawn(move || {
                progress.counting_cpu(|| {
                    let mut chunks: Vec<Chunk> = vec![None; inputs.runs.len()];
                    for j in 0..n {
                        {
                            let mut c = claims.lock();
                            while !c.abort && j >= c.consumed + read_window {
                                changed.wait(&mut c);
                            }
                            if c.abort {
                                return;
                            }
                        }
                        let t = Instant::now();
                        let r = read_inputs(plan, inputs, j, &mut chunks);
                        progress.read_ns.fetch_add(nanos(t), AtomicOrdering::Relaxed);
                        let failed = r.is_err();
                        claims.lock().slots.insert(j, r);
                        changed.notify_all();
                        if failed {
                            return;
                        }
                    }
                })
            });
        }
        for _ in 0..threads {
            let tx = tx.clone();
            let (claims, changed, progress) = (&claims, &changed, &progress);
            scope.spawn(move || {
                progress.counting_cpu(|| loop {
                    let (i, windows) = {
                        let mut c = claims.lock();
                        while !c.abort && c.next < n && c.next >= c.consumed + window {
                            changed.wait(&mut c);
                        }
                        if c.abort || c.next >= n {
                            return;
                        }
                        c.next += 1;
                        let i = c.next - 1;
                        let t = Instant::now();
                        let windows = loop {
                            if c.abort {
                                return;
                            }
                            if let Some(w) = c.slots.remove(&i) {
                                break w;
                            }
                            changed.wait(&mut c);
                        };
                        progress.read_wait_ns.fetch_add(nanos(t), AtomicOrdering::Relaxed);
                        (i, windows)
                    };
                    let t = Instant::now();
                    let read_before = crate::table::reader::read_time();
                    let r = windows.and_then(|w| merge_one(plan, inputs, i, w, is_base));
                    progress.add_read_since(read_before);
                    progress.subtask_ns.fetch_add(nanos(t), AtomicOrdering::Relaxed);
                    progress.subtasks.fetch_add(1, AtomicOrdering::Relaxed);
                    let failed = r.is_err();
                    if tx.send((i, r)).is_err() || failed {
                        return;
                    }
                })
            });
        }
        drop(tx);
        let r = consume(n, &rx, out, &claims, &changed, &progress);
        // Whatever happened, no thread reads or claims another sub-task.
        claims.lock().abort = true;
        changed.notify_all();
        r
    })
}

fn nanos(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Bytes the read stage reads from a run at once (less when many runs share
/// [`READ_AHEAD_BYTES`]): sub-tasks' ranges of one run follow each other in
/// the file, so one large read serves several (on the SSD measured, 128 KiB
/// direct reads ran at a sixteenth of 2 MiB ones).
const READ_CHUNK: usize = 2 << 20;

/// One run's last chunk read: (file position, offset, bytes).
type Chunk = Option<(usize, u64, Vec<u8>)>;

/// The read stage's work for sub-task `j`: its byte ranges of every input
/// file, cut from chunks of up to [`READ_CHUNK`] per run.
fn read_inputs(
    plan: &Subtasks,
    inputs: &SubtaskInputs<'_>,
    j: usize,
    chunks: &mut [Chunk],
) -> Result<Windows> {
    plan.reads[j]
        .iter()
        .zip(inputs.runs)
        .zip(chunks.iter_mut())
        .map(|((ranges, files), chunk)| {
            let mut windows = HashMap::new();
            for &(pos, offset, len) in ranges {
                let f =
                    files.get(pos).ok_or_else(|| Error::corruption("sub-task plan names no such file"))?;
                let held = chunk.as_ref().and_then(|(p, o, data)| {
                    let from = usize::try_from(offset.checked_sub(*o)?).ok()?;
                    (*p == pos).then(|| data.get(from..from.checked_add(len)?)).flatten()
                });
                let bytes = match held {
                    Some(b) => b.to_vec(),
                    None => {
                        let table = f.table(inputs.tables)?;
                        // Many input runs share the read-ahead budget.
                        let size = READ_CHUNK.min(READ_AHEAD_BYTES / inputs.runs.len().max(1)).max(len);
                        let data_end =
                            table.data_end().ok_or_else(|| Error::invalid("read stage over a DTable"))?;
                        let want = (size as u64).min(data_end.saturating_sub(offset));
                        let data = table.read_data_range(offset, want as usize)?;
                        let bytes = data.get(..len).ok_or_else(|| Error::corruption("short read"))?.to_vec();
                        *chunk = Some((pos, offset, data));
                        bytes
                    }
                };
                windows.insert(f.id, (offset, bytes));
            }
            Ok(windows)
        })
        .collect()
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

/// Merges sub-task `i` from the input its read stage read (`windows`),
/// returning its kept entries encoded.
fn merge_one(
    plan: &Subtasks,
    inputs: &SubtaskInputs<'_>,
    i: usize,
    windows: Windows,
    is_base: &(dyn Fn(&[u8]) -> bool + Sync),
) -> Result<Vec<u8>> {
    let lo = i.checked_sub(1).map(|j| plan.bounds[j].as_slice());
    let hi = plan.bounds.get(i).map(Vec::as_slice);
    // Readahead 0: a block outside the read-ahead bytes (the one after the
    // range, seen only to learn the range ended) is read alone.
    let opts = BlockReadOptions { readahead: 0, prefetch: false, ..inputs.read };
    let children = inputs
        .runs
        .iter()
        .zip(windows)
        .map(|(files, w)| {
            Box::new(RunIterator::new(files.clone(), Arc::clone(inputs.tables), opts).with_windows(w))
                as Box<dyn InternalIterator>
        })
        .collect();
    let mut it = crate::range_del::RangeDelSkip::new(
        MergingIterator::new(children),
        Arc::clone(inputs.range_dels),
        inputs.smallest_snapshot,
    );
    match lo {
        // The last internal key of `lo` (sequence 0, the lowest kind).
        Some(lo) => it.seek(&make_internal_key(lo, 0, ValueKind::Delete))?,
        None => it.seek_to_first()?,
    }
    let mut rules = DropRules::new(inputs.smallest_snapshot).with_merge_operator(inputs.merge_operator);
    let mut buf = Vec::new();
    let mut sink = |key: &[u8], value: &[u8], _seq: SeqNum| {
        encode_entry(&mut buf, key, value);
        Ok(())
    };
    while it.valid() {
        let k = parse_internal_key(it.key())?;
        if lo.is_some_and(|lo| k.user_key <= lo) {
            it.next()?;
            continue;
        }
        if hi.is_some_and(|hi| k.user_key > hi) {
            break;
        }
        rules.add(it.key(), it.value(), is_base, inputs.filter, &mut sink)?;
        it.next()?;
    }
    rules.finish(is_base, &mut sink)?;
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

    /// Blocks of 100 bytes ending at `keys`, two per file.
    fn run(keys: &[&str]) -> Vec<InputBlock> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| InputBlock {
                last: k.as_bytes().to_vec(),
                file: i / 2,
                offset: (i % 2) as u64 * 100,
                bytes: 100,
            })
            .collect()
    }

    #[test]
    fn ranges_cover_the_blocks_a_range_can_touch() {
        let r = run(&["b", "d", "f", "h"]);
        assert_eq!(ranges(&r, None, Some(b"c")), vec![(0, 0, 200)], "b, then d which may hold c");
        assert_eq!(
            ranges(&r, Some(b"d"), Some(b"f")),
            vec![(1, 0, 100)],
            "only f: d ends at the lower bound"
        );
        assert_eq!(
            ranges(&r, Some(b"c"), Some(b"g")),
            vec![(0, 100, 100), (1, 0, 200)],
            "d, f, h: one range per file"
        );
        assert!(ranges(&r, Some(b"h"), None).is_empty(), "nothing after h");
        assert_eq!(ranges(&r, Some(b"a"), None), vec![(0, 0, 200), (1, 0, 200)]);
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
