//! Runs flushes and compaction tasks: merges inputs, drops what no snapshot can
//! see, writes output tables, and records the result in the MANIFEST.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::apply::{find_file, resolve_run, task_edit};
use super::monkey::{table_bits, WriteTarget};
use super::policy::{CompactionTask, FileRef, LsmView, PickResult};
use super::warmup::Warmup;
use super::CompactionPolicy;
use crate::cache::TableCache;
use crate::error::{Error, Result};
use crate::filename::table_path;
use crate::iter::{InternalIterator, MergingIterator, RunIterator};
use crate::key::{compare_internal, parse_internal_key, user_key, SeqNum, ValueKind};
use crate::options::Options;
use crate::stats::CompactionRecord;
use crate::table::builder::effective_bloom_bits;
use crate::table::{BlockReadOptions, TableBuilder, TableBuilderOptions, TableSummary};
use crate::version::{FileMeta, NewFile, Run, Version, VersionSet};
use crate::vfs::Vfs;

/// What a task needs from the engine.
pub(crate) struct Env<'a> {
    pub dir: &'a Path,
    pub vfs: &'a dyn Vfs,
    pub versions: &'a VersionSet,
    pub tables: &'a Arc<TableCache>,
    pub opts: &'a Options,
    pub policy: &'a dyn CompactionPolicy,
}

/// Writes a sorted stream into tables cut at a target size, never splitting one
/// user key across two files (so runs stay disjoint in user keys).
pub(crate) struct OutputWriter<'a> {
    env: &'a Env<'a>,
    builder_opts: TableBuilderOptions,
    target_size: u64,
    current: Option<(u64, TableBuilder, SeqNum, SeqNum)>,
    last_user_key: Vec<u8>,
    outputs: Vec<NewFile>,
    created: Vec<u64>,
    warmup: Option<Arc<Warmup>>,
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
        };
        OutputWriter {
            env,
            builder_opts,
            target_size,
            current: None,
            last_user_key: Vec::new(),
            outputs: Vec::new(),
            created: Vec::new(),
            warmup: None,
        }
    }

    /// Warms the block cache with the new blocks `warmup` asks for.
    pub(crate) fn with_warmup(mut self, warmup: Option<Arc<Warmup>>) -> Self {
        self.warmup = warmup;
        self
    }

    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8], seq: SeqNum) -> Result<()> {
        let uk = user_key(ikey);
        let cut = match &self.current {
            Some((_, b, _, _)) => {
                b.estimated_file_size() >= self.target_size && uk != self.last_user_key.as_slice()
            }
            None => false,
        };
        if cut {
            self.finish_current()?;
        }
        if self.current.is_none() {
            let id = self.env.versions.new_file_number();
            self.created.push(id);
            let file = self.env.vfs.create(&table_path(self.env.dir, id))?;
            let mut builder = TableBuilder::new(file, self.builder_opts.clone());
            if let Some(w) = &self.warmup {
                builder.set_observer(w.observer(id));
            }
            self.current = Some((id, builder, seq, seq));
        }
        if let Some((_, b, lo, hi)) = &mut self.current {
            b.add(ikey, value)?;
            *lo = (*lo).min(seq);
            *hi = (*hi).max(seq);
        }
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(uk);
        Ok(())
    }

    fn finish_current(&mut self) -> Result<()> {
        if let Some((id, b, lo, hi)) = self.current.take() {
            let s = b.finish()?;
            self.verify(id, &s)?;
            self.outputs.push(NewFile {
                id,
                size: s.file_size,
                smallest: s.smallest,
                largest: s.largest,
                num_entries: s.num_entries,
                num_deletions: s.num_deletions,
                smallest_seq: lo,
                largest_seq: hi,
                bloom_bits_per_key: Some(self.builder_opts.bloom_bits_per_key),
            });
        }
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
        let on_disk = self.env.vfs.file_size(&table_path(self.env.dir, id))?;
        if on_disk != s.file_size {
            return Err(Error::corruption(format!("{on_disk} bytes on disk, {} written", s.file_size)));
        }
        let table = self.env.tables.get(id, s.file_size)?;
        if table.properties().num_entries != s.num_entries {
            return Err(Error::corruption("entry count in properties differs from what was written"));
        }
        if !self.env.opts.paranoid_file_checks {
            return Ok(());
        }
        // Past the block cache: warmed blocks are in it, and the check is of the file.
        let table = Arc::new(self.env.tables.open_uncached(id, s.file_size)?);
        let opts = BlockReadOptions { verify_checksums: true, fill_cache: false, readahead: 1 << 20 };
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
        if n != s.num_entries || first.as_deref() != Some(&s.smallest[..]) || last != s.largest {
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
        let r = self.finish_current().and_then(|_| self.env.vfs.sync_dir(self.env.dir));
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
            let _ = self.env.vfs.remove_file(&table_path(self.env.dir, id));
        }
    }
}

/// Runs a task picked from `version` and installs its result.
pub(crate) fn execute(
    env: &Env<'_>,
    version: &Version,
    view: &LsmView,
    pick: &PickResult,
    smallest_snapshot: SeqNum,
) -> Result<CompactionRecord> {
    let start = Instant::now();
    let fresh = || env.versions.new_file_number();
    let record = match &pick.task {
        CompactionTask::Move { file, to_level, to_run } => {
            let meta = find_file(version, file)?;
            let out = resolve_run(*to_run, fresh);
            env.versions.log_and_apply(task_edit(version, pick, Some(out), Vec::new())?)?;
            if *to_level != file.level {
                meta.reset_allowed_seeks();
            }
            record("move", "trivial move", *to_level, 1, 0, 0, 0, start)
        }
        CompactionTask::UpdateState { reason } => {
            env.versions.log_and_apply(task_edit(version, pick, None, Vec::new())?)?;
            record("state", reason, 0, 0, 0, 0, 0, start)
        }
        CompactionTask::Drop { files } => {
            env.versions.log_and_apply(task_edit(version, pick, None, Vec::new())?)?;
            record("drop", "obsolete files", 0, files.len(), 0, 0, 0, start)
        }
        CompactionTask::Merge { inputs, output_level, output_run, target_file_size, reason } => {
            let metas = inputs.iter().map(|r| find_file(version, r)).collect::<Result<Vec<_>>>()?;
            let out_run = resolve_run(*output_run, fresh);
            let input_ids: HashSet<u64> = metas.iter().map(|m| m.id).collect();
            let older = older_runs(version, *output_level, out_run, &input_ids);
            let read_opts = BlockReadOptions {
                verify_checksums: true,
                fill_cache: false,
                readahead: env.opts.compaction_readahead_size,
            };
            let mut input = MergingIterator::new(input_runs(env, inputs, &metas, read_opts));
            let warmup = Warmup::for_merge(env, &metas)?;
            let entries = metas.iter().map(|m| m.num_entries).sum();
            let target = WriteTarget { level: *output_level, run: *output_run, inputs, entries };
            let mut out =
                OutputWriter::new(env, view, &target, *target_file_size).with_warmup(warmup.clone());
            merge_into(&mut input, &mut out, smallest_snapshot, |uk| {
                !older.iter().any(|r| r.find_file(uk).is_some())
            })?;
            let outputs = out.finish()?;
            let written: u64 = outputs.iter().map(|o| o.size).sum();
            let n_out = outputs.len();
            env.versions.log_and_apply(task_edit(version, pick, Some(out_run), outputs)?)?;
            let read: u64 = metas.iter().map(|m| m.size).sum();
            let mut r = record("merge", reason, *output_level, metas.len(), n_out, read, written, start);
            r.warmup_blocks_inserted = warmup.map_or(0, |w| w.inserted());
            r
        }
    };
    Ok(record)
}

#[allow(clippy::too_many_arguments)]
fn record(
    kind: &'static str,
    reason: &'static str,
    output_level: usize,
    input_files: usize,
    output_files: usize,
    bytes_read: u64,
    bytes_written: u64,
    start: Instant,
) -> CompactionRecord {
    CompactionRecord {
        kind,
        reason,
        output_level,
        input_files,
        output_files,
        bytes_read,
        bytes_written,
        warmup_blocks_inserted: 0,
        duration: start.elapsed(),
    }
}

/// Runs that hold data older than the output of a merge into
/// (`level`, `out_run`): every run of deeper levels, and runs of the output level
/// with files that are not inputs (other than the output run itself).
/// Most bytes one compaction's readahead windows hold together, so a merge of
/// many L0 runs stays inside the memory budget (each run gets a share).
const READAHEAD_BUDGET: usize = 16 << 20;

/// One cursor per input run: a run's files are disjoint, so they are read one
/// after another (one open table and one readahead window per run, and a merge
/// heap as wide as the number of runs, not files).
fn input_runs(
    env: &Env<'_>,
    inputs: &[FileRef],
    metas: &[Arc<FileMeta>],
    mut opts: BlockReadOptions,
) -> Vec<Box<dyn InternalIterator>> {
    let mut runs = std::collections::BTreeMap::<_, Vec<Arc<FileMeta>>>::new();
    for (r, m) in inputs.iter().zip(metas) {
        runs.entry((r.level, r.run)).or_default().push(Arc::clone(m));
    }
    opts.readahead = opts.readahead.min(READAHEAD_BUDGET / runs.len().max(1));
    runs.into_values()
        .map(|mut files| {
            files.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
            Box::new(RunIterator::new(files, Arc::clone(env.tables), opts)) as Box<dyn InternalIterator>
        })
        .collect()
}

fn older_runs<'v>(version: &'v Version, level: usize, out_run: u64, inputs: &HashSet<u64>) -> Vec<&'v Run> {
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
