//! Metadata-only simulator: drives any [`CompactionPolicy`] over a modeled tree, with no I/O, and
//! reports write amplification.
//!
//! A file is modeled by its sorted `(key, seq)` entries (u64 keys as 8-byte big-endian user keys,
//! fixed entry size). Every `memtable_entries` writes become one L0 run; after each flush the policy
//! trims its buffers (if it has any) and runs until it returns None. Each pick is validated as the
//! engine validates it (task and buffer actions); a merge keeps the newest version of each key and
//! cuts outputs at the target size. The tree itself is the engine's: the edit comes from the same
//! function the executor uses (`compaction/apply.rs`, buffer ops included) and the next `Version`
//! from the same builder. At the end every written key is read back top-down (levels in order, runs
//! newest first, a run's compaction buffer before the run) and must return its newest version, so a
//! policy that loses data, buries newer data below older data or buffers a stale copy fails with
//! [`Error::Corruption`].

mod report;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::compaction::apply::{find_file, resolve_run, task_edit};
use crate::compaction::policy::{
    validate_buffer_actions, validate_task, CompactionPolicy, CompactionTask, FileRef, LsmView, PickResult,
};
use crate::compaction::view::view_of;
use crate::error::{Error, Result};
use crate::key::{compare_internal, make_internal_key, ValueKind};
use crate::table::format::{BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::table::SegmentMeta;
use crate::version::{
    Buffer, BufferEntry, Builder, FileMeta, NewFile, ObsoleteFiles, PolicyMeta, Version, VersionEdit,
};

pub use report::{LevelStats, SimConfig, SimReport, TaskCounts};

/// Upper bound on tasks after one flush, so a policy that never settles fails instead of hanging.
const MAX_TASKS_PER_FLUSH: u64 = 100_000;

/// Runs `cfg`'s workload through `policy` on a modeled tree and reports the cost.
pub fn simulate(policy: &dyn CompactionPolicy, cfg: &SimConfig) -> Result<SimReport> {
    let mut reports = simulate_growing(policy, cfg, &[])?;
    reports.pop().ok_or_else(|| Error::invalid("sim: no report"))
}

/// Like [`simulate`], with a report after each of `checkpoints` writes (the
/// memtable is flushed and the policy settled first), then one at the end: the
/// shape of a tree as its data grows, from one run.
pub fn simulate_growing(
    policy: &dyn CompactionPolicy,
    cfg: &SimConfig,
    checkpoints: &[u64],
) -> Result<Vec<SimReport>> {
    if cfg.key_space == 0 || cfg.entry_size == 0 || cfg.memtable_entries == 0 {
        return Err(Error::invalid("sim: key_space, entry_size and memtable_entries must be > 0"));
    }
    let mut sim = Sim::new(policy.num_levels(), cfg.entry_size)?;
    let mut rng = SplitMix64(cfg.seed);
    let mut latest: HashMap<u64, u64> = HashMap::new();
    let mut memtable: BTreeMap<u64, u64> = BTreeMap::new();
    let mut reports = Vec::new();
    let mut pending = 0;
    let mut flushes = 0u64;
    for seq in 0..cfg.num_ops {
        let key = if cfg.sequential { seq % cfg.key_space } else { rng.next() % cfg.key_space };
        memtable.insert(key, seq);
        latest.insert(key, seq);
        sim.user_bytes += cfg.entry_size;
        pending += 1;
        let checkpoint = checkpoints.contains(&(seq + 1));
        if pending == cfg.memtable_entries || (checkpoint && pending > 0) {
            sim.flush(std::mem::take(&mut memtable))?;
            sim.compact(policy)?;
            pending = 0;
            flushes += 1;
            if cfg.idle_every > 0 && flushes.is_multiple_of(cfg.idle_every) {
                sim.settle_idle(policy)?;
            }
        }
        if checkpoint {
            reports.push(sim.report(policy, latest.len() as u64));
        }
    }
    if !memtable.is_empty() {
        sim.flush(memtable)?;
        sim.compact(policy)?;
    }
    if cfg.idle_every > 0 {
        sim.settle_idle(policy)?;
    }
    sim.verify(&latest)?;
    reports.push(sim.report(policy, latest.len() as u64));
    Ok(reports)
}

/// splitmix64: tiny, deterministic, good enough to spread keys.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The modeled tree: a real [`Version`], changed only by the edits
/// [`task_edit`] makes from each task (the engine's own function) and built by
/// the engine's `Builder`, plus the `(key, seq)` entries of every file a run or
/// a buffer lists (sorted by key, one version per key).
struct Sim {
    version: Version,
    meta: PolicyMeta,
    queue: Arc<ObsoleteFiles>,
    entries: HashMap<u64, Vec<(u64, u64)>>,
    num_levels: usize,
    entry_size: u64,
    next_id: u64,
    user_bytes: u64,
    flush_bytes: u64,
    read_bytes: u64,
    write_bytes: u64,
    tasks: TaskCounts,
}

impl Sim {
    fn new(num_levels: usize, entry_size: u64) -> Result<Self> {
        let queue = Arc::new(ObsoleteFiles::new());
        Ok(Sim {
            version: Builder::new(num_levels, queue.clone()).build(num_levels)?,
            meta: PolicyMeta::new(num_levels),
            queue,
            entries: HashMap::new(),
            num_levels,
            entry_size,
            next_id: 1,
            user_bytes: 0,
            flush_bytes: 0,
            read_bytes: 0,
            write_bytes: 0,
            tasks: TaskCounts::default(),
        })
    }

    fn alloc_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn bytes(&self, entries: usize) -> u64 {
        entries as u64 * self.entry_size
    }

    /// Records `entries` (sorted, non-empty) as a new file and returns its metadata.
    fn new_file(&mut self, entries: Vec<(u64, u64)>) -> NewFile {
        let id = self.alloc_id();
        let ikey = |e: Option<&(u64, u64)>| {
            let (k, seq) = e.copied().unwrap_or_default();
            make_internal_key(&k.to_be_bytes(), seq, ValueKind::Put)
        };
        let nf = NewFile {
            id,
            size: self.bytes(entries.len()),
            smallest: ikey(entries.first()),
            largest: ikey(entries.last()),
            num_entries: entries.len() as u64,
            num_deletions: 0,
            smallest_seq: entries.iter().map(|e| e.1).min().unwrap_or(0),
            largest_seq: entries.iter().map(|e| e.1).max().unwrap_or(0),
            bloom_bits_per_key: None,
            segments: Vec::new(),
            num_range_dels: 0,
        };
        self.entries.insert(id, entries);
        nf
    }

    /// Builds the next version from `edit` (the engine's builder, plus the
    /// invariants a debug build checks) and forgets files nothing lists.
    fn install(&mut self, edit: &VersionEdit) -> Result<()> {
        let mut b = Builder::from_version(&self.version, self.queue.clone());
        let gone = b.apply(edit)?;
        let next = b.build(self.num_levels)?;
        next.check_invariants()?;
        self.meta.apply(edit)?;
        self.version = next;
        for f in gone {
            self.entries.remove(&f.id);
        }
        Ok(())
    }

    fn flush(&mut self, memtable: BTreeMap<u64, u64>) -> Result<()> {
        if memtable.is_empty() {
            return Ok(());
        }
        let entries: Vec<(u64, u64)> = memtable.into_iter().collect();
        self.flush_bytes += self.bytes(entries.len());
        let file = self.new_file(entries);
        let run = self.alloc_id();
        self.install(&VersionEdit { new_files: vec![(0, run, file)], ..Default::default() })
    }

    /// One trim (LSbM Algorithm 2) if the policy wants it, then the policy
    /// runs until it has nothing to do.
    fn compact(&mut self, policy: &dyn CompactionPolicy) -> Result<()> {
        if policy.wants_trim() {
            let view = self.view(&|f| Some(modeled_cached_fraction(f.id)));
            if let Some(pick) = policy.trim(&view) {
                self.run(&view, &pick)?;
            }
        }
        for _ in 0..MAX_TASKS_PER_FLUSH {
            let view = self.view(&|_| None);
            let Some(pick) = policy.pick(&view) else { return Ok(()) };
            self.run(&view, &pick)?;
        }
        Err(Error::invalid(format!(
            "policy {} did not settle after {MAX_TASKS_PER_FLUSH} tasks",
            policy.name()
        )))
    }

    /// Idle compaction with no writes coming: the policy's own picks first,
    /// then its idle picks, until it has neither; the tree must then be
    /// settled (`LsmView::idle_levels` finds nothing, no buffer table left).
    fn settle_idle(&mut self, policy: &dyn CompactionPolicy) -> Result<()> {
        for _ in 0..MAX_TASKS_PER_FLUSH {
            let view = self.view(&|_| None);
            let Some(pick) = policy.pick(&view).or_else(|| policy.idle_pick(&view)) else {
                let levels = view.idle_levels();
                let buffered = view.levels.iter().flat_map(|l| &l.buffers).any(|b| !b.tables.is_empty());
                if levels.is_some() || buffered {
                    return Err(Error::invalid(format!(
                        "policy {}: idle compaction stopped unsettled (data in levels {levels:?}, \
                         buffers left: {buffered})",
                        policy.name()
                    )));
                }
                return Ok(());
            };
            self.run(&view, &pick)?;
        }
        Err(Error::invalid(format!("policy {}: idle compaction did not settle", policy.name())))
    }

    fn view(&self, cached: &dyn Fn(&FileMeta) -> Option<f64>) -> LsmView {
        let (pointers, state) = (self.meta.compact_pointers.clone(), self.meta.policy_state.clone());
        view_of(&self.version, pointers, state, &HashSet::new(), cached)
    }

    /// Validates a pick as the engine does, runs it on the modeled entries
    /// and installs the edit the engine would write.
    fn run(&mut self, view: &LsmView, pick: &PickResult) -> Result<()> {
        validate_task(view, &pick.task)?;
        validate_buffer_actions(view, pick)?;
        let (out_run, outputs) = match &pick.task {
            CompactionTask::Merge { inputs, output_run, target_file_size, .. } => {
                self.tasks.merges += 1;
                let outputs = self.merge(inputs, *target_file_size)?;
                (Some(resolve_run(*output_run, || self.alloc_id())), outputs)
            }
            CompactionTask::Move { to_run, .. } => {
                self.tasks.moves += 1;
                (Some(resolve_run(*to_run, || self.alloc_id())), Vec::new())
            }
            CompactionTask::Drop { .. } => {
                self.tasks.drops += 1;
                (None, Vec::new())
            }
            CompactionTask::UpdateState { .. } => {
                self.tasks.state_updates += 1;
                (None, Vec::new())
            }
            CompactionTask::Append { inputs, targets, bounds, .. } => {
                self.tasks.appends += 1;
                (None, self.append(inputs, targets, bounds)?)
            }
            CompactionTask::Refilter { file, bits_per_key } => {
                self.tasks.refilters += 1;
                let old = find_file(&self.version, file)?;
                // The filter block, its trailer and the patch footer.
                let patch = (old.num_entries as f64 * bits_per_key / 8.0).ceil() as u64
                    + (BLOCK_TRAILER_LEN + FOOTER_LEN) as u64;
                self.write_bytes += patch;
                let grown = NewFile {
                    size: old.size + patch,
                    bloom_bits_per_key: Some(*bits_per_key),
                    ..old.to_new_file()
                };
                (None, vec![grown])
            }
        };
        let edit = task_edit(&self.version, pick, out_run, outputs)?;
        self.install(&edit)
    }

    /// A merge on the model: keeps the newest version of each key, cut at the target size.
    fn merge(&mut self, inputs: &[FileRef], target_file_size: u64) -> Result<Vec<NewFile>> {
        let mut merged = Vec::new();
        for r in inputs {
            let f = self.entries.get(&r.file).ok_or_else(|| missing(r))?;
            merged.extend_from_slice(f);
        }
        self.read_bytes += self.bytes(merged.len());
        // Newest version first within a key, then keep only it.
        merged.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        merged.dedup_by_key(|e| e.0);
        self.write_bytes += self.bytes(merged.len());
        let per_file = usize::try_from((target_file_size / self.entry_size).max(1)).unwrap_or(usize::MAX);
        Ok(merged.chunks(per_file).map(|c| self.new_file(c.to_vec())).collect())
    }

    /// An append on the model: the victims' newest versions, divided by
    /// `bounds`, join their targets (whose size grows by what they receive).
    fn append(
        &mut self,
        inputs: &[FileRef],
        targets: &[FileRef],
        bounds: &[Vec<u8>],
    ) -> Result<Vec<NewFile>> {
        let mut merged = Vec::new();
        for r in inputs {
            merged.extend_from_slice(self.entries.get(&r.file).ok_or_else(|| missing(r))?);
        }
        self.read_bytes += self.bytes(merged.len());
        merged.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        merged.dedup_by_key(|e| e.0);
        self.write_bytes += self.bytes(merged.len());
        let mut routed: Vec<Vec<(u64, u64)>> = vec![Vec::new(); targets.len()];
        for e in merged {
            let uk = e.0.to_be_bytes();
            routed[bounds.partition_point(|b| b.as_slice() <= uk.as_slice())].push(e);
        }
        let mut out = Vec::new();
        for (r, add) in targets.iter().zip(routed).filter(|(_, add)| !add.is_empty()) {
            let old = find_file(&self.version, r)?;
            let mut entries = self.entries.get(&r.file).ok_or_else(|| missing(r))?.clone();
            let grown = old.size + self.bytes(add.len());
            entries.extend_from_slice(&add);
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            entries.dedup_by_key(|e| e.0);
            let mut segments = old.segments.clone();
            if segments.is_empty() {
                segments.push(SegmentMeta { end: old.size, footer_crc: 0 });
            }
            segments.push(SegmentMeta { end: grown, footer_crc: 0 });
            let ikey = |e: Option<&(u64, u64)>| {
                let (k, seq) = e.copied().unwrap_or_default();
                make_internal_key(&k.to_be_bytes(), seq, ValueKind::Put)
            };
            let lo = ikey(entries.first());
            let hi = ikey(entries.last());
            out.push(NewFile {
                id: r.file,
                size: grown,
                smallest: if compare_internal(&lo, &old.smallest).is_lt() {
                    lo
                } else {
                    old.smallest.clone()
                },
                largest: if compare_internal(&old.largest, &hi).is_lt() { hi } else { old.largest.clone() },
                num_entries: old.num_entries + add.len() as u64,
                num_deletions: 0,
                smallest_seq: old.smallest_seq.min(add.iter().map(|e| e.1).min().unwrap_or(u64::MAX)),
                largest_seq: old.largest_seq.max(add.iter().map(|e| e.1).max().unwrap_or(0)),
                bloom_bits_per_key: old.bloom_bits_per_key,
                segments,
                num_range_dels: 0,
            });
            self.entries.insert(r.file, entries);
        }
        Ok(out)
    }

    /// Reads every written key back top-down and requires its newest version.
    /// A run's compaction buffer is read first wherever the run's own file
    /// covers the key (as a read does when that file's filter says "maybe"),
    /// every buffer file as if its blocks were cached: a buffer that serves an
    /// older version than its run holds fails here.
    fn verify(&self, latest: &HashMap<u64, u64>) -> Result<()> {
        self.version.check_invariants()?;
        for (&key, &seq) in latest {
            match self.get(key) {
                Some(found) if found == seq => {}
                Some(found) => {
                    return Err(Error::corruption(format!("key {key}: read seq {found}, newest is {seq}")));
                }
                None => return Err(Error::corruption(format!("key {key} (seq {seq}) lost"))),
            }
        }
        Ok(())
    }

    /// The sequence number a top-down read of `key` returns.
    fn get(&self, key: u64) -> Option<u64> {
        let uk = key.to_be_bytes();
        for level in &self.version.levels {
            for run in &level.runs {
                let Some(f) = run.find_file(&uk) else { continue };
                if let Some(seq) = level.buffer_of(run.id).and_then(|b| self.buffer_get(b, &uk, key)) {
                    return Some(seq);
                }
                if let Some(seq) = self.file_get(f.id, key) {
                    return Some(seq);
                }
            }
        }
        None
    }

    /// A buffer probe as `db/read.rs` does it: tables newest first; the first
    /// present file holding the key answers, a removed entry ends the probe.
    fn buffer_get(&self, buffer: &Buffer, uk: &[u8], key: u64) -> Option<u64> {
        for t in &buffer.tables {
            match t.entry_for(uk) {
                None => {}
                Some(BufferEntry::Removed { .. }) => return None,
                Some(BufferEntry::Present(f)) => {
                    if let Some(seq) = self.file_get(f.id, key) {
                        return Some(seq);
                    }
                }
            }
        }
        None
    }

    fn file_get(&self, id: u64, key: u64) -> Option<u64> {
        let entries = self.entries.get(&id)?;
        let pos = entries.binary_search_by_key(&key, |e| e.0).ok()?;
        entries.get(pos).map(|e| e.1)
    }

    fn report(&self, policy: &dyn CompactionPolicy, distinct_keys: u64) -> SimReport {
        let view = self.view(&|_| None);
        let in_no_run = self.version.buffer_bytes_in_no_run();
        let levels: Vec<LevelStats> = (self.version.levels.iter().enumerate())
            .map(|(i, level)| LevelStats {
                files: level.runs.iter().map(|r| r.files.len()).sum(),
                bytes: level.size_bytes(),
                runs: level.runs.len(),
                target_bytes: policy.level_target_bytes(&view, i),
                buffer_files: level.buffers.iter().map(Buffer::num_files).sum(),
                buffer_bytes: level.buffer_bytes(),
                buffer_bytes_in_no_run: in_no_run[i],
            })
            .collect();
        let levels_in_use = levels.iter().rposition(|l| l.bytes > 0).unwrap_or(0);
        let written = self.flush_bytes + self.write_bytes;
        SimReport {
            policy: policy.name().to_string(),
            user_bytes: self.user_bytes,
            distinct_keys,
            flush_bytes: self.flush_bytes,
            compaction_read_bytes: self.read_bytes,
            compaction_write_bytes: self.write_bytes,
            write_amplification: if self.user_bytes == 0 {
                0.0
            } else {
                written as f64 / self.user_bytes as f64
            },
            levels,
            levels_in_use,
            tasks: self.tasks.clone(),
        }
    }
}

/// The simulator has no block cache. For the LSbM trim it gives each buffer
/// file a fixed pseudo-random cached fraction (from its id), so the trim's
/// removals run through the same edits as in the engine.
fn modeled_cached_fraction(file: u64) -> f64 {
    let mut rng = SplitMix64(file);
    (rng.next() % 1000) as f64 / 1000.0
}

fn missing(r: &FileRef) -> Error {
    Error::invalid(format!("file {} not in level {} run {}", r.file, r.level, r.run))
}

#[cfg(test)]
mod tests;
