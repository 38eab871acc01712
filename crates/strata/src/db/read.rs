//! Point reads: memtables newest first, then each level's runs newest first,
//! consulting only the one file of a run whose key range covers the key, and,
//! for a run with a compaction buffer, the buffer first (LSbM Algorithm 3), or
//! the buffer alone when it is complete and the read asks for the dLSM
//! paper's dispatch (`ReadOptions::buffer_dispatch`).
//! `get` walks one key down the tree; `multi_get` (multi_get.rs) walks a
//! sorted batch run by run through the same per-file steps. A key whose
//! newest visible entry is a merge operand is read again by `merged_get`,
//! which collects its operands down to a put, a delete or the end.

use std::sync::atomic::Ordering;

use std::sync::Arc;

use super::read_memo::ReadMemo;
use super::read_options::ReadOptions;
use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::iter::{InternalIterator, MergingIterator, RunIterator};
use crate::key::{lookup_key, parse_internal_key, LookupKey, SeqNum, ValueKind};
use crate::merge_operator::NewestFirst;
use crate::pinned::PinnedValue;
use crate::stats::Counters;
use crate::table::filter::filter_hash;
use crate::table::{BlockReadOptions, CachedGet, Table};
use crate::version::{Buffer, BufferEntry, FileMeta, Level};

/// One key's point read below the memtables.
#[derive(Clone, Copy)]
pub(super) struct KeyRead<'k> {
    /// The user key.
    pub key: &'k [u8],
    /// Its lookup key at the read's sequence.
    pub lookup: &'k [u8],
    /// Its filter hash, computed once for every table's filter.
    pub hash: u64,
    pub bro: BlockReadOptions,
    /// `ReadOptions::use_compaction_buffer`.
    pub use_buffer: bool,
    /// `ReadOptions::buffer_dispatch`.
    pub dispatch: bool,
}

/// What a run's buffer said about a key.
enum BufferProbe {
    /// A buffer file holds a visible version: the run's newest.
    Found(ValueKind, PinnedValue),
    /// No table holds the key, and none said to ask the run: if the buffer
    /// is complete, the run does not hold it either.
    Exhausted,
    /// A removed entry covers the key, or (LSbM) the block that would answer
    /// is not cached: only the run can tell.
    AskRun,
}

/// What one key's walk down the tree counted: tables probed, and the seek
/// charge (LevelDB: a read that needs a second run's file charges the first, once).
pub(super) struct Walk<'a> {
    pub probes: u64,
    charge: bool,
    first: Option<&'a FileMeta>,
}

impl Walk<'_> {
    pub(super) fn new(counts_seeks: bool) -> Self {
        Walk { probes: 0, charge: counts_seeks, first: None }
    }
}

/// How a point read reads blocks.
pub(super) fn block_read_options(ro: &ReadOptions) -> BlockReadOptions {
    let (verify_checksums, verify_mapped) = ro.verify();
    BlockReadOptions {
        verify_checksums,
        verify_mapped,
        fill_cache: ro.fill_cache,
        readahead: 0,
        prefetch: false,
    }
}

/// The newest entry of `key` at `seq` in the memtables, newest first;
/// `None` when no memtable has the key.
pub(super) fn mem_get(sv: &SuperVersion, key: &[u8], seq: SeqNum) -> Option<(ValueKind, PinnedValue)> {
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        if let Some((kind, value)) = mem.get(key, seq) {
            return Some((kind, PinnedValue::owned(value)));
        }
    }
    None
}

impl DbInner {
    /// The super version to read and the sequence to read it at. Without a
    /// snapshot the sequence is read *after* the super version is loaded: any
    /// compaction that produced that version dropped only versions shadowed at
    /// or below the then-visible sequence, which is <= ours.
    pub(crate) fn read_view(&self, snapshot: Option<SeqNum>) -> (Arc<SuperVersion>, SeqNum) {
        let sv = self.sv.load_full();
        let seq = snapshot.unwrap_or_else(|| self.shared.visible_seq.load(Ordering::Acquire));
        (sv, seq)
    }

    pub(crate) fn get_at(
        &self,
        key: &[u8],
        snapshot: Option<SeqNum>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        Ok(self.get_pinned_at(key, snapshot, ro)?.map(PinnedValue::into_vec))
    }

    /// `get` with the value left where it was found (see [`PinnedValue`]).
    pub(crate) fn get_pinned_at(
        &self,
        key: &[u8],
        snapshot: Option<SeqNum>,
        ro: &ReadOptions,
    ) -> Result<Option<PinnedValue>> {
        Counters::add(&self.counters.gets, 1);
        let (sv, seq) = self.read_view(snapshot);
        if let Some(t) = self.max_range_del(&sv, key, seq)? {
            return Ok(self.merged_get(&sv, key, seq, ro, Some(t))?.map(PinnedValue::owned));
        }
        if let Some((kind, value)) = mem_get(&sv, key, seq) {
            return self.settle(&sv, key, seq, ro, kind, value);
        }
        let lookup = LookupKey::new(key, seq);
        let read = KeyRead {
            key,
            lookup: lookup.as_slice(),
            hash: filter_hash(key),
            bro: block_read_options(ro),
            use_buffer: ro.use_compaction_buffer,
            dispatch: ro.buffer_dispatch,
        };
        let segments_before = crate::table::reader::segment_probes();
        let mut walk = Walk::new(self.counts_seeks());
        let mut found = None;
        'levels: for (l, level) in sv.version.levels.iter().enumerate() {
            for run in &level.runs {
                let Some(f) = run.find_file(key) else { continue };
                let table = self.table_of(f, None)?;
                if let Some((kind, value)) =
                    self.probe_file(l, level, run.id, f, &table, &read, &mut walk, None)?
                {
                    found = Some((kind, value));
                    break 'levels;
                }
            }
        }
        self.count_probes(walk.probes, segments_before);
        match found {
            Some((kind, value)) => self.settle(&sv, key, seq, ro, kind, value),
            None => Ok(None),
        }
    }

    /// A key's value from its newest visible entry: a put's value, nothing
    /// for a delete, and for a merge operand the merge of all its operands.
    pub(super) fn settle(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        seq: SeqNum,
        ro: &ReadOptions,
        kind: ValueKind,
        value: PinnedValue,
    ) -> Result<Option<PinnedValue>> {
        match kind {
            ValueKind::Put => Ok(Some(value)),
            ValueKind::Delete | ValueKind::RangeDelete => Ok(None),
            ValueKind::Merge => Ok(self.merged_get(sv, key, seq, ro, None)?.map(PinnedValue::owned)),
        }
    }

    /// The value of a key that has merge operands at `seq`: its visible
    /// versions newest first from every memtable and the file of every run
    /// that covers the key (through the table's own iterator, so lwc
    /// segments are read as a range read reads them), down to a put, a
    /// delete or the end, folded by the operator. Never from a compaction
    /// buffer: it may still hold copies of operands that left its run, which
    /// the deeper run holds too and a merge would count twice (a buffer's
    /// put or delete is a right answer, so the first probe may use it).
    /// Only keys with operands pay for it. A key a range tombstone at
    /// `deleted_at` covers is read here too: its versions older than the
    /// tombstone end the fold like a delete (no row cache, no buffer).
    pub(super) fn merged_get(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        seq: SeqNum,
        ro: &ReadOptions,
        deleted_at: Option<SeqNum>,
    ) -> Result<Option<Vec<u8>>> {
        let mut children: Vec<Box<dyn InternalIterator>> = vec![Box::new(sv.mem.iter())];
        for m in &sv.imms {
            children.push(Box::new(m.iter()));
        }
        let bro = block_read_options(ro);
        for run in sv.version.levels.iter().flat_map(|l| l.runs.iter()) {
            if let Some(f) = run.find_file(key) {
                children.push(Box::new(RunIterator::new(vec![Arc::clone(f)], self.tables.clone(), bro)));
            }
        }
        let mut it = MergingIterator::new(children);
        it.seek(&lookup_key(key, seq))?;
        let mut versions = NewestFirst::default();
        while it.valid() {
            let e = parse_internal_key(it.key())?;
            if e.user_key != key || deleted_at.is_some_and(|t| e.seq < t) || versions.push(e.kind, it.value())
            {
                break;
            }
            it.next()?;
        }
        versions.finish(self.opts.merge_operator.as_ref(), key)
    }

    /// Adds a read's table probes, and the segment probes this thread made
    /// since `segments_before`, to the counters.
    pub(super) fn count_probes(&self, probes: u64, segments_before: u64) {
        Counters::add(&self.counters.get_probes, probes);
        let segments = crate::table::reader::segment_probes().wrapping_sub(segments_before);
        Counters::add(&self.counters.segment_probes, segments);
    }

    /// The open table of `f`: from a batch's memo when it has it, else from
    /// the table cache (and then remembered).
    pub(super) fn table_of(&self, f: &FileMeta, memo: Option<&mut ReadMemo>) -> Result<Arc<Table>> {
        match memo {
            None => f.table(&self.tables),
            Some(m) => {
                if let Some(t) = m.table(f.id, f.size) {
                    return Ok(t);
                }
                let t = f.table(&self.tables)?;
                m.remember_table(&t);
                Ok(t)
            }
        }
    }

    /// Asks file `f` of run `run` at level `l` (the run's file covering the
    /// key, opened as `table`) for the key: counts the probe and the seek
    /// charge, asks the run's filter once and counts its answer for the level
    /// (a table without a filter always says maybe), then reads the run. With
    /// `ReadOptions::buffer_dispatch`, a complete buffer answers first, alone.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn probe_file<'a>(
        &self,
        l: usize,
        level: &Level,
        run: u64,
        f: &'a FileMeta,
        table: &Arc<Table>,
        read: &KeyRead<'_>,
        walk: &mut Walk<'a>,
        memo: Option<&mut ReadMemo>,
    ) -> Result<Option<(ValueKind, PinnedValue)>> {
        walk.probes += 1;
        if walk.charge {
            match walk.first {
                None => walk.first = Some(f),
                Some(wasted) => {
                    self.charge_seek(wasted);
                    walk.charge = false;
                }
            }
        }
        let mut memo = memo;
        // Only a dispatched read looks the buffer up here (not every probe of every get).
        let complete =
            (read.dispatch && read.use_buffer).then(|| level.buffer_of(run)).flatten().filter(|b| b.complete);
        if let Some(buffer) = complete {
            match self.probe_buffer(buffer, f.id, read, &mut walk.probes, memo.as_deref_mut())? {
                BufferProbe::Found(kind, value) => {
                    Counters::add(&self.counters.buffer_hits, 1);
                    return Ok(Some((kind, value)));
                }
                BufferProbe::Exhausted => return Ok(None),
                BufferProbe::AskRun => {}
            }
        }
        if !table.filter_check_hash(read.hash).unwrap_or(true) {
            self.counters.filter_probe(l, false, false);
            return Ok(None);
        }
        let hit = if complete.is_some() {
            // The buffer was asked already.
            self.table_get_unfiltered(table, f, read.lookup, read.bro, memo.map(ReadMemo::blocks), None)?
        } else {
            self.run_get(level, run, table, f, read, &mut walk.probes, memo)?
        };
        self.counters.filter_probe(l, true, hit.is_none());
        Ok(hit)
    }

    /// The newest entry of the key visible at its lookup's sequence in one run
    /// whose filter said it may hold the key: from the run's table, or its
    /// compaction buffer first (LSbM Algorithm 3).
    #[allow(clippy::too_many_arguments)]
    fn run_get(
        &self,
        level: &Level,
        run: u64,
        table: &Arc<Table>,
        f: &FileMeta,
        read: &KeyRead<'_>,
        probes: &mut u64,
        mut memo: Option<&mut ReadMemo>,
    ) -> Result<Option<(ValueKind, PinnedValue)>> {
        let mut resume = None;
        if let Some(buffer) = level.buffer_of(run).filter(|_| read.use_buffer) {
            if self.policy.buffer_reads_cached_only() {
                // LSbM: the run answers when its block is cached (it holds the
                // newest data, so this is always right, and a hot run costs no
                // buffer probe); the buffer is asked only to save a device read.
                // When it is not, the run's read below starts at the block its
                // index named (a batch keeps its memo's full path).
                let blocks = memo.as_deref_mut().map(ReadMemo::blocks);
                let batch = blocks.is_some();
                match table.get_if_cached_in(read.lookup, blocks)? {
                    (CachedGet::Found(kind, value), _) => return Ok(Some((kind, value))),
                    (CachedGet::Absent, _) => return Ok(None),
                    (CachedGet::NotCached, at) => resume = at.filter(|_| !batch),
                }
            }
            // Otherwise (Algorithm 3) the run's own filter, asked by the caller,
            // decided that the level can hold the key; the buffer holds a subset of it.
            if let BufferProbe::Found(kind, value) =
                self.probe_buffer(buffer, f.id, read, probes, memo.as_deref_mut())?
            {
                Counters::add(&self.counters.buffer_hits, 1);
                return Ok(Some((kind, value)));
            }
        }
        self.table_get_unfiltered(table, f, read.lookup, read.bro, memo.map(ReadMemo::blocks), resume)
    }

    /// Probes a run's buffer tables newest first: the first present file
    /// covering the key answers if it holds a version visible at the lookup's
    /// sequence; a removed entry ends the probe (a newer version may have
    /// arrived in the run since), and so does running out of tables.
    ///
    /// Under LSbM a buffer file serves only from blocks already in the block
    /// cache: when the block that would answer is not resident, the read goes
    /// to the run (always correct: the buffer holds copies). Reading the buffer
    /// file instead would cost the same device read and then cache the same
    /// data twice, once per file, which is how the buffer used to lose to
    /// bLSM. dLSM reads buffer files like any table.
    ///
    /// A buffer file that is the run's own file (`run_file`: a file moved
    /// into the run whole, until a compaction rewrites its range) holds
    /// nothing the run's read would not find: the probe ends there too.
    fn probe_buffer(
        &self,
        buffer: &Buffer,
        run_file: u64,
        read: &KeyRead<'_>,
        probes: &mut u64,
        mut memo: Option<&mut ReadMemo>,
    ) -> Result<BufferProbe> {
        for t in &buffer.tables {
            match t.entry_for(read.key) {
                None => continue,
                Some(BufferEntry::Removed { .. }) => return Ok(BufferProbe::AskRun),
                Some(BufferEntry::Present(f)) if f.id == run_file => {
                    Counters::add(&self.counters.buffer_same_file, 1);
                    return Ok(BufferProbe::AskRun);
                }
                Some(BufferEntry::Present(f)) => {
                    *probes += 1;
                    let table = self.table_of(f, memo.as_deref_mut())?;
                    let blocks = memo.as_deref_mut().map(ReadMemo::blocks);
                    let got = if self.policy.buffer_reads_cached_only() && !self.opts.buffer_read_misses {
                        if !table.may_contain_hash(read.hash) {
                            continue;
                        }
                        table.get_if_cached_in(read.lookup, blocks)?.0
                    } else {
                        self.table_get(&table, f, read.lookup, read.bro, blocks)?
                            .map_or(CachedGet::Absent, |(k, v)| CachedGet::Found(k, v))
                    };
                    match got {
                        CachedGet::Found(kind, value) => return Ok(BufferProbe::Found(kind, value)),
                        CachedGet::Absent => {}
                        CachedGet::NotCached => {
                            Counters::add(&self.counters.buffer_uncached, 1);
                            return Ok(BufferProbe::AskRun);
                        }
                    }
                }
            }
        }
        Ok(BufferProbe::Exhausted)
    }
}
