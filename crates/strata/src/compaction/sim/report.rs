//! What a simulation runs ([`SimConfig`]) and what it reports ([`SimReport`]).

use std::fmt;

/// Workload of a simulation.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Number of writes.
    pub num_ops: u64,
    /// Keys are drawn from `0..key_space`.
    pub key_space: u64,
    /// Bytes per entry (key + value + overhead).
    pub entry_size: u64,
    /// Writes per memtable (one flush each).
    pub memtable_entries: u64,
    /// PRNG seed for random keys.
    pub seed: u64,
    /// Write keys `0, 1, 2, ...` (mod key_space) instead of uniformly random ones.
    pub sequential: bool,
    /// Every this many flushes the writes pause and idle compaction
    /// ([`CompactionPolicy::idle_pick`](crate::compaction::CompactionPolicy::idle_pick))
    /// settles the tree, as does the end of the run; 0: never.
    pub idle_every: u64,
}

/// Shape of one level at the end of a simulation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Number of files over all runs.
    pub files: usize,
    /// Bytes over all runs.
    pub bytes: u64,
    /// Number of runs.
    pub runs: usize,
    /// The policy's capacity for this level in the final tree (None for L0).
    pub target_bytes: Option<u64>,
    /// Files the level's compaction buffers still list (LSbM/dLSM).
    pub buffer_files: usize,
    /// Bytes of those files (copies of data the runs hold; not in `bytes`,
    /// though a file moved down whole is in a run and a buffer at once).
    pub buffer_bytes: u64,
    /// Bytes of the buffers' files that no run lists and no shallower
    /// level's buffer does: the space the buffer adds to the tree.
    pub buffer_bytes_in_no_run: u64,
}

/// How many tasks of each kind ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskCounts {
    /// Merge tasks.
    pub merges: u64,
    /// Move (trivial move) tasks.
    pub moves: u64,
    /// Drop tasks.
    pub drops: u64,
    /// Policy-state-only tasks (e.g. bLSM round turnovers).
    pub state_updates: u64,
    /// Light-weight compactions (segments appended).
    pub appends: u64,
    /// Filters rebuilt in place (Monkey's refilter).
    pub refilters: u64,
}

/// Outcome of [`simulate`](super::simulate).
#[derive(Clone, Debug)]
pub struct SimReport {
    /// Name of the simulated policy.
    pub policy: String,
    /// Bytes written by the user (every write, shadowed or not).
    pub user_bytes: u64,
    /// Distinct keys written.
    pub distinct_keys: u64,
    /// Bytes written by flushes (a memtable keeps one version per key).
    pub flush_bytes: u64,
    /// Bytes read by merges.
    pub compaction_read_bytes: u64,
    /// Bytes written by merges.
    pub compaction_write_bytes: u64,
    /// (flush + compaction writes) / user bytes.
    pub write_amplification: f64,
    /// Per-level shape at the end, L0 first.
    pub levels: Vec<LevelStats>,
    /// Deepest level holding data (0 when only L0 does).
    pub levels_in_use: usize,
    /// Tasks by kind.
    pub tasks: TaskCounts,
}

impl fmt::Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        writeln!(
            f,
            "policy {}: user {:.2} MiB ({} distinct keys), write amplification {:.2}",
            self.policy,
            mib(self.user_bytes),
            self.distinct_keys,
            self.write_amplification
        )?;
        writeln!(
            f,
            "flush {:.2} MiB, compaction read {:.2} MiB, compaction write {:.2} MiB",
            mib(self.flush_bytes),
            mib(self.compaction_read_bytes),
            mib(self.compaction_write_bytes)
        )?;
        writeln!(
            f,
            "tasks: {} merges, {} moves, {} drops",
            self.tasks.merges, self.tasks.moves, self.tasks.drops
        )?;
        for (i, l) in self.levels.iter().enumerate() {
            write!(f, "L{i}: {} runs, {} files, {:.2} MiB", l.runs, l.files, mib(l.bytes))?;
            if let Some(t) = l.target_bytes {
                write!(f, " (target {:.2} MiB)", mib(t))?;
            }
            if l.buffer_files > 0 {
                write!(
                    f,
                    ", buffer {} files, {:.2} MiB ({:.2} MiB in no run)",
                    l.buffer_files,
                    mib(l.buffer_bytes),
                    mib(l.buffer_bytes_in_no_run)
                )?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
