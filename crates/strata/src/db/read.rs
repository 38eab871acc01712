//! Point reads: memtables newest first, then each level's runs newest first,
//! consulting only the one file of a run whose key range covers the key, and,
//! for a run with a compaction buffer, the buffer first (LSbM Algorithm 3).

use std::sync::atomic::Ordering;

use std::sync::Arc;

use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::key::{lookup_key, SeqNum, ValueKind};
use crate::options::ReadOptions;
use crate::stats::Counters;
use crate::table::{BlockReadOptions, CachedGet, Table};
use crate::version::{Buffer, BufferEntry, FileMeta, Level};

impl DbInner {
    /// The super version to read and the sequence to read it at. Without a
    /// snapshot the sequence is read *after* the super version is loaded: any
    /// compaction that produced that version dropped only versions shadowed at
    /// or below the then-visible sequence, which is <= ours.
    pub(crate) fn read_view(&self, snapshot: Option<SeqNum>) -> (Arc<SuperVersion>, SeqNum) {
        let sv = self.sv.load_full();
        let seq = snapshot.unwrap_or_else(|| self.visible_seq.load(Ordering::Acquire));
        (sv, seq)
    }

    pub(crate) fn get_at(
        &self,
        key: &[u8],
        snapshot: Option<SeqNum>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        Counters::add(&self.counters.gets, 1);
        let (sv, seq) = self.read_view(snapshot);
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            if let Some((kind, value)) = mem.get(key, seq) {
                return Ok((kind == ValueKind::Put).then_some(value));
            }
        }
        let lookup = lookup_key(key, seq);
        let bro = BlockReadOptions {
            verify_checksums: ro.verify_checksums,
            fill_cache: ro.fill_cache,
            readahead: 0,
            prefetch: false,
        };
        let mut probes = 0;
        let mut found = None;
        let segments_before = crate::table::reader::segment_probes();
        // Seek accounting (LevelDB): a read that needs a second run's file
        // charges the first, once.
        let mut charge = self.counts_seeks();
        let mut first = None;
        'levels: for (l, level) in sv.version.levels.iter().enumerate() {
            for run in &level.runs {
                let Some(f) = run.find_file(key) else { continue };
                probes += 1;
                if charge {
                    match first {
                        None => first = Some(f),
                        Some(wasted) => {
                            self.charge_seek(wasted);
                            charge = false;
                        }
                    }
                }
                let table = self.tables.get(f.id, f.size, &f.segments)?;
                // The run's filter is asked once, here, and its answer counted
                // for the level; a table without a filter always says maybe.
                let maybe = table.filter_check(key).unwrap_or(true);
                if !maybe {
                    self.counters.filter_probe(l, false, false);
                    continue;
                }
                let hit = self.run_get(level, run.id, &table, f, key, &lookup, bro, ro, &mut probes)?;
                self.counters.filter_probe(l, true, hit.is_none());
                if let Some((kind, value)) = hit {
                    found = (kind == ValueKind::Put).then_some(value);
                    break 'levels;
                }
            }
        }
        Counters::add(&self.counters.get_probes, probes);
        let segments = crate::table::reader::segment_probes().wrapping_sub(segments_before);
        Counters::add(&self.counters.segment_probes, segments);
        Ok(found)
    }

    /// The newest entry of `key` visible at `lookup` in one run whose filter
    /// said it may hold the key: from the run's table, or its compaction
    /// buffer first (LSbM Algorithm 3).
    #[allow(clippy::too_many_arguments)]
    fn run_get(
        &self,
        level: &Level,
        run: u64,
        table: &Arc<Table>,
        f: &FileMeta,
        key: &[u8],
        lookup: &[u8],
        bro: BlockReadOptions,
        ro: &ReadOptions,
        probes: &mut u64,
    ) -> Result<Option<(ValueKind, Vec<u8>)>> {
        if let Some(buffer) = level.buffer_of(run).filter(|_| ro.use_compaction_buffer) {
            if self.policy.buffer_reads_cached_only() {
                // LSbM: the run answers when its block is cached (it holds the
                // newest data, so this is always right, and a hot run costs no
                // buffer probe); the buffer is asked only to save a device read.
                match table.get_if_cached_unfiltered(lookup)? {
                    CachedGet::Found(kind, value) => return Ok(Some((kind, value))),
                    CachedGet::Absent => return Ok(None),
                    CachedGet::NotCached => {}
                }
            }
            // Otherwise (Algorithm 3) the run's own filter, asked by the caller,
            // decided that the level can hold the key; the buffer holds a subset of it.
            if let Some(hit) = self.probe_buffer(buffer, key, lookup, bro, probes)? {
                Counters::add(&self.counters.buffer_hits, 1);
                return Ok(Some(hit));
            }
        }
        self.table_get_unfiltered(table, f, lookup, bro)
    }

    /// Probes a run's buffer tables newest first: the first present file
    /// covering the key answers if it holds a version visible at `lookup`'s
    /// sequence; a removed entry ends the probe (a newer version may have
    /// arrived in the run since), and so does running out of tables.
    ///
    /// Under LSbM a buffer file serves only from blocks already in the block
    /// cache: when the block that would answer is not resident, the read goes
    /// to the run (always correct: the buffer holds copies). Reading the buffer
    /// file instead would cost the same device read and then cache the same
    /// data twice, once per file, which is how the buffer used to lose to
    /// bLSM. dLSM reads buffer files like any table.
    fn probe_buffer(
        &self,
        buffer: &Buffer,
        key: &[u8],
        lookup: &[u8],
        bro: BlockReadOptions,
        probes: &mut u64,
    ) -> Result<Option<(ValueKind, Vec<u8>)>> {
        for t in &buffer.tables {
            match t.entry_for(key) {
                None => continue,
                Some(BufferEntry::Removed { .. }) => return Ok(None),
                Some(BufferEntry::Present(f)) => {
                    *probes += 1;
                    let table = self.tables.get(f.id, f.size, &f.segments)?;
                    let got = if self.policy.buffer_reads_cached_only() && !self.opts.buffer_read_misses {
                        table.get_if_cached(lookup)?
                    } else {
                        self.table_get(&table, f, lookup, bro)?
                            .map_or(CachedGet::Absent, |(k, v)| CachedGet::Found(k, v))
                    };
                    match got {
                        CachedGet::Found(kind, value) => return Ok(Some((kind, value))),
                        CachedGet::Absent => {}
                        CachedGet::NotCached => {
                            Counters::add(&self.counters.buffer_uncached, 1);
                            return Ok(None);
                        }
                    }
                }
            }
        }
        Ok(None)
    }
}
