//! Output of flushes, compactions and WAL replay: tables cut by the output
//! splitter, each read back before anything names it.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::verify::read_back;
use super::{Env, TableSink, WriteTarget};
use crate::compaction::monkey::table_bits;
use crate::compaction::policy::LsmView;
use crate::compaction::warmup::Warmup;
use crate::error::{Error, Result};
use crate::key::{compare_internal, make_internal_key, user_key, SeqNum, ValueKind, KIND_FOR_SEEK, MAX_SEQ};
use crate::options::kinds::CompactionPipeline;
use crate::range_del::{inclusive_end, successor, Fragments};
use crate::table::pipeline::Progress;
use crate::table::{Expected, TableBuilder, TableBuilderOptions, TableSummary};
use crate::version::NewFile;

/// Where output is cut into files: once the open file reaches the target size,
/// but never between two versions of one user key, so runs stay disjoint in
/// user keys (and a merge's drop rules, which see a key's versions together,
/// are never split across files).
pub(crate) struct OutputSplitter {
    target_size: u64,
    pub(crate) last_user_key: Option<Vec<u8>>,
}

impl OutputSplitter {
    pub(crate) fn new(target_size: u64) -> Self {
        OutputSplitter { target_size, last_user_key: None }
    }

    /// True if an entry of `user_key` must start a new file; `open` is the
    /// estimated size of the file being written, if one is.
    pub(crate) fn should_cut(&self, open: Option<u64>, user_key: &[u8]) -> bool {
        open.is_some_and(|size| size >= self.target_size)
            && self.last_user_key.as_deref().is_some_and(|last| last != user_key)
    }

    /// Records that an entry of `user_key` went into the open file.
    pub(crate) fn added(&mut self, user_key: &[u8]) {
        let last = self.last_user_key.get_or_insert_with(Vec::new);
        last.clear();
        last.extend_from_slice(user_key);
    }
}

/// A table whose last blocks, meta blocks and sync are being written, and
/// what its `NewFile` needs besides the builder's summary.
struct Sealed {
    id: u64,
    seqs: (SeqNum, SeqNum),
    /// The range tombstones' key bounds, which widen the file's.
    bounds: Option<(Vec<u8>, Vec<u8>)>,
    num_range_dels: u64,
}

/// Writes a sorted stream into tables, cut where the [`OutputSplitter`] says.
///
/// A pipelined output finishes a full table (its last blocks, its meta
/// blocks, its sync) on a thread of its own while the next table fills, so
/// the merge does not stop for the device's sync (part of the pipeline's
/// write stage). With several data paths (the pipelined-compaction paper's
/// S-PPCP) up to one table per other path finishes at once, so each device
/// writes at once. Tables are read back and named in key order.
pub(crate) struct OutputWriter<'a> {
    env: &'a Env<'a>,
    builder_opts: TableBuilderOptions,
    splitter: OutputSplitter,
    current: Option<(u64, TableBuilder, SeqNum, SeqNum)>,
    /// Tables finishing on their own threads, oldest (first in key order) first.
    /// INVARIANT: at most `stripes - 1` long; every table in it comes before
    /// `current` and after `outputs`.
    finishing: VecDeque<(Sealed, JoinHandle<Result<TableSummary>>)>,
    /// Tables in flight at once: 1 (sequential), else the data paths (at least 2).
    stripes: usize,
    outputs: Vec<NewFile>,
    created: Vec<u64>,
    warmup: Option<Arc<Warmup>>,
    progress: Arc<Progress>,
    /// Range tombstones of the whole output, shared out to its files.
    range_dels: Fragments,
    /// The first key the next file's tombstones may cover: the successor of
    /// the previous file's last key (see [`Self::finish_current`]).
    range_dels_from: Option<Vec<u8>>,
}

impl<'a> OutputWriter<'a> {
    /// A writer of tables for `target` in the tree `view`. Their filters are
    /// sized by the options' bloom allocation from the tree's shape, then by
    /// the policy, which sees that as its default (so a policy's own sizing,
    /// like dLSM's, applies on top of Monkey's).
    pub(crate) fn new(env: &'a Env<'a>, view: &LsmView, target: &WriteTarget<'_>, target_size: u64) -> Self {
        let bits = table_bits(env.opts, env.policy, view, target);
        let builder_opts = TableBuilderOptions::for_write(env.opts, bits, env.pipeline);
        let stripes = match env.pipeline {
            CompactionPipeline::Sequential => 1,
            _ => env.tables.paths().data_path_count().max(2),
        };
        OutputWriter {
            env,
            builder_opts,
            splitter: OutputSplitter::new(target_size),
            current: None,
            finishing: VecDeque::new(),
            stripes,
            outputs: Vec::new(),
            created: Vec::new(),
            warmup: None,
            progress: Arc::default(),
            range_dels: Fragments::default(),
            range_dels_from: None,
        }
    }

    /// Range tombstones to write with the output, cut among its files.
    pub(crate) fn with_range_dels(mut self, range_dels: Fragments) -> Self {
        self.range_dels = range_dels;
        self
    }

    /// Stage times of every table this writer writes (final once `finish` returns).
    pub(crate) fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// Warms the block cache with the new blocks `warmup` asks for.
    pub(crate) fn with_warmup(mut self, warmup: Option<Arc<Warmup>>) -> Self {
        self.warmup = warmup;
        self
    }

    fn open_file(&mut self, seq: SeqNum) -> Result<()> {
        let id = self.env.versions.new_file_number();
        self.created.push(id);
        let file = self.env.vfs.create(&self.env.tables.paths().table(id))?;
        let mut builder = TableBuilder::new(file, self.builder_opts.clone());
        builder.set_progress(Arc::clone(&self.progress));
        if let Some(w) = &self.warmup {
            builder.set_observer(w.observer(id));
        }
        self.current = Some((id, builder, seq, seq));
        Ok(())
    }

    /// Finishes the open file with its share of the range tombstones. A
    /// level's files must stay disjoint in user keys, so every file but the
    /// `last` covers tombstones only up to its last key L (clipped to end at
    /// L's successor, which keeps L its largest key), and the next file's
    /// share starts there (covering the gap between the two files). Only the
    /// last file may cover a tombstone past its last point key; its largest
    /// key is then the tombstone's end (see `range_del::inclusive_end`).
    fn finish_current(&mut self, last: bool) -> Result<()> {
        let Some((id, mut b, mut lo, mut hi)) = self.current.take() else { return Ok(()) };
        let upper = match (last, &self.splitter.last_user_key) {
            (false, Some(k)) => Some(successor(k)),
            _ => None,
        };
        let tombs = self.range_dels.clipped(self.range_dels_from.as_deref(), upper.as_deref());
        if let Some(u) = upper {
            self.range_dels_from = Some(u);
        }
        let num_range_dels = tombs.len() as u64;
        let mut bounds = None;
        if let (Some(first), Some(last_t)) = (tombs.first(), tombs.last()) {
            lo = tombs.iter().map(|t| t.seq).fold(lo, SeqNum::min);
            hi = tombs.iter().map(|t| t.seq).fold(hi, SeqNum::max);
            let end = tombs.iter().map(|t| t.end.as_slice()).max().unwrap_or(&last_t.end);
            bounds = Some((
                make_internal_key(&first.start, MAX_SEQ, KIND_FOR_SEEK),
                make_internal_key(inclusive_end(end), 0, ValueKind::Delete),
            ));
            b.set_range_dels(tombs);
        }
        let sealed = Sealed { id, seqs: (lo, hi), bounds, num_range_dels };
        if self.stripes == 1 {
            let s = b.finish()?;
            return self.complete(sealed, s);
        }
        while self.finishing.len() + 1 >= self.stripes {
            self.complete_oldest()?;
        }
        let progress = Arc::clone(&self.progress);
        let job = std::thread::Builder::new()
            .name("strata-finish".into())
            .spawn(move || progress.counting_cpu(|| b.finish()))?;
        self.finishing.push_back((sealed, job));
        self.progress.finished_apart.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Waits for the oldest table finishing on its own thread and names it.
    fn complete_oldest(&mut self) -> Result<()> {
        let Some((sealed, job)) = self.finishing.pop_front() else { return Ok(()) };
        let t = Instant::now();
        let s = job.join().map_err(|_| Error::Io(std::io::Error::other("table finish thread panicked")))?;
        let waited = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.progress.finish_wait_ns.fetch_add(waited, Ordering::Relaxed);
        self.complete(sealed, s?)
    }

    /// Reads a finished table back and adds it to the outputs.
    fn complete(&mut self, t: Sealed, s: TableSummary) -> Result<()> {
        self.verify(t.id, &s)?;
        let (mut smallest, mut largest) = (s.smallest, s.largest);
        if let Some((t_lo, t_hi)) = t.bounds {
            if smallest.is_empty() || compare_internal(&t_lo, &smallest).is_lt() {
                smallest = t_lo;
            }
            if largest.is_empty() || compare_internal(&t_hi, &largest).is_gt() {
                largest = t_hi;
            }
        }
        self.outputs.push(NewFile {
            id: t.id,
            size: s.file_size,
            smallest,
            largest,
            num_entries: s.num_entries,
            num_deletions: s.num_deletions,
            smallest_seq: t.seqs.0,
            largest_seq: t.seqs.1,
            bloom_bits_per_key: Some(self.builder_opts.bloom_bits_per_key),
            segments: Vec::new(),
            num_range_dels: t.num_range_dels,
        });
        Ok(())
    }

    /// Reads a finished table back before anything names it: its size on
    /// disk must be what was written, and it must open and read as written
    /// (`sink::verify`). A table that fails is never named.
    fn verify(&self, id: u64, s: &TableSummary) -> Result<()> {
        let r = self.check(id, s);
        if r.is_err() {
            self.env.tables.evict(id);
        }
        r.map_err(|e| {
            Error::corruption(format!("new table {id:06}.sst failed verification after writing: {e}"))
        })
    }

    fn check(&self, id: u64, s: &TableSummary) -> Result<()> {
        let on_disk = self.env.vfs.file_size(&self.env.tables.paths().table(id))?;
        if on_disk != s.file_size {
            return Err(Error::corruption(format!("{on_disk} bytes on disk, {} written", s.file_size)));
        }
        let expect = Expected { entries: Some(s.num_entries), bounds: Some((&s.smallest, &s.largest)) };
        read_back(self.env, id, s.file_size, &[], &expect)
    }
}

impl TableSink for OutputWriter<'_> {
    fn add(&mut self, ikey: &[u8], value: &[u8], seq: SeqNum) -> Result<()> {
        let uk = user_key(ikey);
        let target = self.splitter.target_size;
        let open = match &mut self.current {
            Some((_, b, _, _)) => Some(b.size_for_cut(target)?),
            None => None,
        };
        if self.splitter.should_cut(open, uk) {
            self.finish_current(false)?;
        }
        if self.current.is_none() {
            self.open_file(seq)?;
        }
        if let Some((_, b, lo, hi)) = &mut self.current {
            b.add(ikey, value)?;
            *lo = (*lo).min(seq);
            *hi = (*hi).max(seq);
        }
        self.splitter.added(uk);
        Ok(())
    }

    /// Finishes the last table and syncs the directory, so that the files are
    /// durable before a MANIFEST edit names them.
    fn finish(mut self) -> Result<Vec<NewFile>> {
        let tombs_left = !self.range_dels.clipped(self.range_dels_from.as_deref(), None).is_empty();
        if self.current.is_none() && tombs_left {
            // Tombstones past the last file (or an output of tombstones only).
            let seq =
                self.range_dels.fragments().iter().flat_map(|f| f.seqs.iter().copied()).min().unwrap_or(0);
            self.open_file(seq)?;
        }
        let r = self.finish_current(true).and_then(|_| {
            while !self.finishing.is_empty() {
                self.complete_oldest()?;
            }
            let ids: Vec<u64> = self.outputs.iter().map(|o| o.id).collect();
            self.env.tables.paths().sync_data_dirs(self.env.vfs, &ids)
        });
        match r {
            Ok(()) => {
                self.created.clear();
                Ok(std::mem::take(&mut self.outputs))
            }
            Err(e) => Err(e),
        }
    }
}

impl Drop for OutputWriter<'_> {
    /// An abandoned writer (error path) removes the files it created.
    fn drop(&mut self) {
        self.current = None;
        // The threads still writing tables let go of their files first.
        for (_, job) in self.finishing.drain(..) {
            let _ = job.join();
        }
        for id in self.created.drain(..) {
            self.env.tables.evict(id);
            if let Some(w) = &self.warmup {
                w.cache().invalidate_file(id);
            }
            let _ = self.env.vfs.remove_file(&self.env.tables.paths().table(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OutputSplitter;

    #[test]
    fn splitter_cuts_at_the_target_size_between_user_keys_only() {
        let mut s = OutputSplitter::new(100);
        assert!(!s.should_cut(None, b"a"), "no open file");
        s.added(b"a");
        assert!(!s.should_cut(Some(99), b"b"), "under the target");
        assert!(!s.should_cut(Some(100), b"a"), "a second version of the same user key");
        assert!(s.should_cut(Some(100), b"b"));
        s.added(b"b");
        assert!(!s.should_cut(Some(5000), b"b"), "however large, one key's versions stay together");
    }
}
