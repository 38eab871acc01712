//! Output of flushes, compactions and WAL replay: tables cut by the output
//! splitter, each read back before anything names it.

use std::sync::Arc;

use super::env::Env;
use super::monkey::{table_bits, WriteTarget};
use super::policy::LsmView;
use super::warmup::Warmup;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{compare_internal, make_internal_key, user_key, SeqNum, ValueKind, KIND_FOR_SEEK, MAX_SEQ};
use crate::range_del::{inclusive_end, successor, Fragments};
use crate::table::builder::effective_bloom_bits;
use crate::table::pipeline::Progress;
use crate::table::{BlockReadOptions, TableBuilder, TableBuilderOptions, TableSummary};
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

/// Writes a sorted stream into tables, cut where the [`OutputSplitter`] says.
pub(crate) struct OutputWriter<'a> {
    env: &'a Env<'a>,
    builder_opts: TableBuilderOptions,
    splitter: OutputSplitter,
    current: Option<(u64, TableBuilder, SeqNum, SeqNum)>,
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
        let o = env.opts;
        let bits = table_bits(o, env.policy, view, target);
        let builder_opts = TableBuilderOptions {
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            bloom_bits_per_key: effective_bloom_bits(bits),
            compression: o.compression,
            pipeline: env.pipeline,
            prefix_extractor: o.prefix_extractor.clone(),
            whole_key_filtering: o.whole_key_filtering,
        };
        OutputWriter {
            env,
            builder_opts,
            splitter: OutputSplitter::new(target_size),
            current: None,
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

    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8], seq: SeqNum) -> Result<()> {
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
        let s = b.finish()?;
        self.verify(id, &s)?;
        let (mut smallest, mut largest) = (s.smallest, s.largest);
        if let Some((t_lo, t_hi)) = bounds {
            if smallest.is_empty() || compare_internal(&t_lo, &smallest).is_lt() {
                smallest = t_lo;
            }
            if largest.is_empty() || compare_internal(&t_hi, &largest).is_gt() {
                largest = t_hi;
            }
        }
        self.outputs.push(NewFile {
            id,
            size: s.file_size,
            smallest,
            largest,
            num_entries: s.num_entries,
            num_deletions: s.num_deletions,
            smallest_seq: lo,
            largest_seq: hi,
            bloom_bits_per_key: Some(self.builder_opts.bloom_bits_per_key),
            segments: Vec::new(),
            num_range_dels,
        });
        Ok(())
    }

    /// Reads a finished table back before anything names it (LevelDB's "verify
    /// that the table is usable"): its size on disk must be what was written,
    /// and its footer, index, filter and properties must pass their checksums;
    /// with `paranoid_file_checks`, every block and entry too. A file system that
    /// acknowledged bytes it never stored fails the flush or compaction here,
    /// instead of installing a table that would fail every later open.
    fn verify(&self, id: u64, s: &TableSummary) -> Result<()> {
        let r = self.read_back(id, s);
        if r.is_err() {
            self.env.tables.evict(id);
        }
        r.map_err(|e| {
            Error::corruption(format!("new table {id:06}.sst failed verification after writing: {e}"))
        })
    }

    fn read_back(&self, id: u64, s: &TableSummary) -> Result<()> {
        let on_disk = self.env.vfs.file_size(&self.env.tables.paths().table(id))?;
        if on_disk != s.file_size {
            return Err(Error::corruption(format!("{on_disk} bytes on disk, {} written", s.file_size)));
        }
        let table = self.env.tables.get(id, s.file_size, &[])?;
        if table.properties().num_entries != s.num_entries {
            return Err(Error::corruption("entry count in properties differs from what was written"));
        }
        if !self.env.opts.paranoid_file_checks {
            return Ok(());
        }
        // Past the block cache: warmed blocks are in it, and the check is of the file.
        let table = Arc::new(self.env.tables.open_uncached(id, s.file_size, &[])?);
        let opts = BlockReadOptions {
            verify_checksums: true,
            fill_cache: false,
            readahead: 1 << 20,
            prefetch: false,
        };
        let mut it = table.iter(opts);
        it.seek_to_first()?;
        let (mut n, mut first, mut last) = (0u64, None, Vec::new());
        while it.valid() {
            n += 1;
            if first.is_none() {
                first = Some(it.key().to_vec());
            }
            last.clear();
            last.extend_from_slice(it.key());
            it.next()?;
        }
        if n != s.num_entries || first.unwrap_or_default() != s.smallest || last != s.largest {
            return Err(Error::corruption(format!(
                "read back {n} entries, {} written, or the key bounds differ",
                s.num_entries
            )));
        }
        Ok(())
    }

    /// Finishes the last table and syncs the directory, so that the files are
    /// durable before a MANIFEST edit names them.
    pub(crate) fn finish(mut self) -> Result<Vec<NewFile>> {
        let tombs_left = !self.range_dels.clipped(self.range_dels_from.as_deref(), None).is_empty();
        if self.current.is_none() && tombs_left {
            // Tombstones past the last file (or an output of tombstones only).
            let seq =
                self.range_dels.fragments().iter().flat_map(|f| f.seqs.iter().copied()).min().unwrap_or(0);
            self.open_file(seq)?;
        }
        let r = self.finish_current(true).and_then(|_| {
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
