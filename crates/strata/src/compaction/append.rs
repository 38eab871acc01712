//! Runs a light-weight compaction ([`CompactionTask::Append`], the `lwc`
//! policy): the victims are merged by the usual drop rules (tombstones kept)
//! and the stream is cut by the task's bounds into one new segment per
//! target, appended at the end of the target's file. Only the victims are
//! read and only their entries are written; the targets' existing blocks are
//! never touched, so their block-cache entries stay valid.
//!
//! Durability: each segment is synced before the MANIFEST edit that lists it
//! (new length, segment ends, footer checksums) is written; until that edit
//! is durable the bytes past the recorded length are not part of the table,
//! and recovery cuts them off. A target is cut back to its recorded length
//! before the append, in case an earlier attempt failed after writing. A
//! target file with more than one name (hard-linked into a checkpoint or
//! backup) is first replaced by a private copy ([`super::unshare`]).

use std::sync::Arc;
use std::time::Instant;

use super::apply::{find_file, task_edit};
use super::env::{group_runs, record, run_iterators, Env};
use super::filter::FilterRun;
use super::merge::{DropRules, SnapshotBounds};
use super::monkey::{table_bits, WriteTarget};
use super::policy::{CompactionTask, LsmView, PickResult, RunTarget};
use super::unshare::unshare_table;
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{compare_internal, user_key, SeqNum};
use crate::options::kinds::CompactionPipeline;
use crate::stats::CompactionRecord;
use crate::table::builder::effective_bloom_bits;
use crate::table::format::FOOTER_LEN;
use crate::table::{BlockReadOptions, SegmentMeta, TableBuilder, TableBuilderOptions};
use crate::util::crc::crc32c;
use crate::version::{FileMeta, NewFile, Version, VersionEdit};
use crate::vfs::RandomOpenOptions;

/// Runs `pick`, an [`CompactionTask::Append`] picked from `version`.
pub(crate) fn execute_append(
    env: &Env<'_>,
    version: &Version,
    view: &LsmView,
    pick: &PickResult,
    snapshots: SnapshotBounds,
    install: &dyn Fn(VersionEdit) -> Result<()>,
) -> Result<CompactionRecord> {
    let start = Instant::now();
    let CompactionTask::Append { inputs, targets, bounds, output_level, reason } = &pick.task else {
        return Err(Error::invalid("not an append task"));
    };
    let victims = inputs.iter().map(|r| find_file(version, r)).collect::<Result<Vec<_>>>()?;
    let dests = targets.iter().map(|r| find_file(version, r)).collect::<Result<Vec<_>>>()?;
    let read_opts = BlockReadOptions {
        verify_checksums: true,
        fill_cache: false,
        readahead: env.opts.compaction_readahead_size,
        prefetch: env.pipeline != CompactionPipeline::Sequential,
    };
    let runs = group_runs(inputs, &victims);
    let mut input = MergingIterator::new(run_iterators(env, runs, read_opts));
    let entries = victims.iter().map(|m| m.num_entries).sum();
    let run = targets.first().ok_or_else(|| Error::invalid("append without targets"))?.run;
    let target = WriteTarget { level: *output_level, run: RunTarget::Existing(run), inputs, entries };
    let level_bits = table_bits(env.opts, env.policy, view, &target);
    let mut appender = Appender { env, dests: &dests, level_bits, open: None, grown: Vec::new() };
    let filter = FilterRun::new(env.opts.compaction_filter.as_deref(), *output_level, snapshots.newest);
    let rules = DropRules::new(snapshots.oldest).with_merge_operator(env.opts.merge_operator.as_ref());
    let r = append_stream(&mut input, &mut appender, bounds, rules, filter.as_ref());
    let r = r.and_then(|()| appender.finish_open());
    let grown = std::mem::take(&mut appender.grown);
    let installed = r.and_then(|()| {
        let written: u64 = grown.iter().map(|(old, nf)| nf.size - old.size).sum();
        let n = grown.len();
        let outputs = grown.iter().map(|(_, nf)| nf.clone()).collect();
        install(task_edit(version, pick, None, outputs)?)?;
        Ok((written, n))
    });
    let (written, n) = match installed {
        Ok(v) => v,
        Err(e) => {
            // Handles opened on the new lengths describe segments no Version lists.
            for (old, _) in &grown {
                env.tables.evict(old.id);
            }
            return Err(e);
        }
    };
    let read: u64 = victims.iter().map(|m| m.size).sum();
    let mut rec = record("append", reason, *output_level, victims.len(), n, read, written, start);
    rec.pipeline = env.pipeline;
    rec.bytes_moved_down = read;
    (rec.filter_removed, rec.filter_changed) = filter.map_or((0, 0), |f| f.counts());
    Ok(rec)
}

/// Merges the victims' stream and routes each kept entry to its target.
fn append_stream(
    input: &mut dyn InternalIterator,
    out: &mut Appender<'_, '_>,
    bounds: &[Vec<u8>],
    mut rules: DropRules<'_>,
    filter: Option<&FilterRun<'_>>,
) -> Result<()> {
    input.seek_to_first()?;
    // An older segment of the target, or a deeper level, may hold what a
    // tombstone deletes (one the filter wrote too), or what operands need.
    let is_base = |_: &[u8]| false;
    let mut sink = |key: &[u8], value: &[u8], seq: SeqNum| {
        let j = bounds.partition_point(|b| b.as_slice() <= user_key(key));
        out.add(j, key, value, seq)
    };
    while input.valid() {
        rules.add(input.key(), input.value(), &is_base, filter, &mut sink)?;
        input.next()?;
    }
    rules.finish(&is_base, &mut sink)
}

/// The segment being written: target index, builder, sequence bounds.
struct OpenSegment {
    target: usize,
    builder: TableBuilder,
    smallest_seq: SeqNum,
    largest_seq: SeqNum,
}

struct Appender<'e, 'a> {
    env: &'e Env<'a>,
    dests: &'e [Arc<FileMeta>],
    level_bits: f64,
    open: Option<OpenSegment>,
    /// Per target appended to: its state before, and after.
    grown: Vec<(Arc<FileMeta>, NewFile)>,
}

impl Appender<'_, '_> {
    fn add(&mut self, target: usize, ikey: &[u8], value: &[u8], seq: SeqNum) -> Result<()> {
        if self.open.as_ref().is_some_and(|o| o.target != target) {
            self.finish_open()?;
        }
        if self.open.is_none() {
            self.open = Some(self.start(target)?);
        }
        if let Some(o) = &mut self.open {
            o.builder.add(ikey, value)?;
            o.smallest_seq = o.smallest_seq.min(seq);
            o.largest_seq = o.largest_seq.max(seq);
        }
        Ok(())
    }

    /// Opens target `j` for append at its recorded length.
    fn start(&self, j: usize) -> Result<OpenSegment> {
        let meta = self.dests.get(j).ok_or_else(|| Error::invalid("append routed past its targets"))?;
        let env = self.env;
        let path = env.tables.paths().table(meta.id);
        // Never into an inode a checkpoint or backup shares (the copy keeps only the recorded bytes).
        unshare_table(env.vfs, &path, meta.id, meta.size)?;
        if env.vfs.file_size(&path)? > meta.size {
            env.vfs.truncate(&path, meta.size)?;
        }
        let file = env.vfs.open_append(&path)?;
        if file.len() != meta.size {
            return Err(Error::corruption(format!(
                "table {:06}.sst is {} bytes, the MANIFEST recorded {}",
                meta.id,
                file.len(),
                meta.size
            )));
        }
        let o = env.opts;
        let bits = meta.bloom_bits_per_key.unwrap_or(self.level_bits);
        let opts = TableBuilderOptions {
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            bloom_bits_per_key: effective_bloom_bits(bits),
            compression: o.compression,
            pipeline: env.pipeline,
            prefix_extractor: o.prefix_extractor.clone(),
            whole_key_filtering: o.whole_key_filtering,
        };
        Ok(OpenSegment {
            target: j,
            builder: TableBuilder::new(file, opts),
            smallest_seq: SeqNum::MAX,
            largest_seq: 0,
        })
    }

    /// Finishes (and syncs) the open segment and reads the grown table back.
    fn finish_open(&mut self) -> Result<()> {
        let Some(o) = self.open.take() else { return Ok(()) };
        let meta = Arc::clone(&self.dests[o.target]);
        let s = o.builder.finish()?;
        let mut segments = meta.segments.clone();
        if segments.is_empty() {
            segments.push(SegmentMeta { end: meta.size, footer_crc: self.footer_crc(&meta)? });
        }
        segments.push(SegmentMeta { end: s.file_size, footer_crc: s.footer_crc });
        let smaller = |a: &[u8], b: &[u8]| compare_internal(a, b).is_lt();
        let nf = NewFile {
            id: meta.id,
            size: s.file_size,
            smallest: if smaller(&s.smallest, &meta.smallest) {
                s.smallest.clone()
            } else {
                meta.smallest.clone()
            },
            largest: if smaller(&meta.largest, &s.largest) {
                s.largest.clone()
            } else {
                meta.largest.clone()
            },
            num_entries: meta.num_entries + s.num_entries,
            num_deletions: meta.num_deletions + s.num_deletions,
            smallest_seq: meta.smallest_seq.min(o.smallest_seq),
            largest_seq: meta.largest_seq.max(o.largest_seq),
            bloom_bits_per_key: meta.bloom_bits_per_key,
            segments,
            num_range_dels: meta.num_range_dels,
        };
        self.grown.push((Arc::clone(&meta), nf.clone()));
        self.verify(&nf).map_err(|e| {
            Error::corruption(format!("table {:06}.sst failed verification after an append: {e}", nf.id))
        })
    }

    /// The checksum of a one-segment table's footer, which the MANIFEST lists
    /// once the table has two.
    fn footer_crc(&self, meta: &FileMeta) -> Result<u32> {
        let path = self.env.tables.paths().table(meta.id);
        let file = self.env.vfs.open_random(&path, RandomOpenOptions::default())?;
        let at =
            meta.size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| Error::corruption("table too short"))?;
        Ok(crc32c(&file.read_at(at, FOOTER_LEN)?))
    }

    /// Opens the grown table as its next Version will (every segment's
    /// footer, index, filter and properties checked), and with
    /// `paranoid_file_checks` reads every entry.
    fn verify(&self, nf: &NewFile) -> Result<()> {
        let table = self.env.tables.get(nf.id, nf.size, &nf.segments)?;
        if table.properties().num_entries != nf.num_entries {
            return Err(Error::corruption("entry count in the segments differs from what was written"));
        }
        if !self.env.opts.paranoid_file_checks {
            return Ok(());
        }
        let table = Arc::new(self.env.tables.open_uncached(nf.id, nf.size, &nf.segments)?);
        let opts = BlockReadOptions {
            verify_checksums: true,
            fill_cache: false,
            readahead: 1 << 20,
            prefetch: false,
        };
        let mut it = table.iter(opts);
        it.seek_to_first()?;
        let mut n = 0u64;
        while it.valid() {
            n += 1;
            it.next()?;
        }
        if n != nf.num_entries {
            return Err(Error::corruption(format!("{n} entries read back, {} expected", nf.num_entries)));
        }
        Ok(())
    }
}
