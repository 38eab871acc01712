//! What a policy asks for: a [`CompactionTask`], with the buffer changes,
//! cursor and state that go into the same MANIFEST edit ([`PickResult`]).

use super::view::FileRef;

/// Where a task's output goes inside a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunTarget {
    /// An existing run of the target level.
    Existing(u64),
    /// A new run; the engine allocates its id and makes it the newest run of the level.
    New,
}

/// What a policy asks the executor to do.
#[derive(Clone, Debug, PartialEq)]
pub enum CompactionTask {
    /// Merge-sort inputs into new files cut at target_file_size, written to (output_level,
    /// output_run); inputs are removed from their runs.
    Merge {
        /// Files to merge.
        inputs: Vec<FileRef>,
        /// Level receiving the output.
        output_level: usize,
        /// Run receiving the output.
        output_run: RunTarget,
        /// Cut output files at this many bytes.
        target_file_size: u64,
        /// Why the policy chose this (for logs and stats).
        reason: &'static str,
    },
    /// Re-link a file into another level/run without rewriting it (trivial move).
    Move {
        /// The file to move.
        file: FileRef,
        /// Destination level.
        to_level: usize,
        /// Destination run.
        to_run: RunTarget,
    },
    /// Remove files from runs without reading them (e.g. data wholly obsolete).
    Drop {
        /// Files to unlink.
        files: Vec<FileRef>,
    },
    /// Change only the policy's persistent state (e.g. a bLSM merge round
    /// turning over: `C_i` becomes `C'_i`), no file moves.
    UpdateState {
        /// Why the policy chose this (for logs and stats).
        reason: &'static str,
    },
    /// Light-weight compaction (LWC-tree): merge `inputs` (the victims, all
    /// above `output_level`) and append the stream, divided by `bounds`, as one
    /// new sorted segment to each of `targets` — every file of one run of
    /// `output_level` that the inputs' key range overlaps, in key order. Only
    /// the victims are read and only what they hold is written; the inputs are
    /// removed. Target `j` receives the user keys in `[bounds[j-1], bounds[j])`
    /// (the first target everything below `bounds[0]`, the last everything
    /// from its bound up), so its range may grow into the gap next to it; a
    /// target that receives nothing is left as it is. Tombstones are kept: an
    /// older segment of the target may hold what they delete.
    Append {
        /// The victims, merged.
        inputs: Vec<FileRef>,
        /// Files receiving a segment, in key order.
        targets: Vec<FileRef>,
        /// `targets.len() - 1` user keys: `bounds[j - 1]` is the first key
        /// routed to `targets[j]`; it lies after `targets[j - 1]`'s largest key
        /// and at or before `targets[j]`'s smallest (which neighbour takes the
        /// gap between them is the policy's balance decision).
        bounds: Vec<Vec<u8>>,
        /// Level of the targets.
        output_level: usize,
        /// Why the policy chose this (for logs and stats).
        reason: &'static str,
    },
    /// Rebuild one table's bloom filter at `bits_per_key`, its data untouched
    /// (a filter patch appended to the file; Monkey's bits following the
    /// tree). The file keeps its place; only its filter and length change.
    Refilter {
        /// The table, of one segment, with a filter.
        file: FileRef,
        /// Bits per key of the new filter (finite, positive).
        bits_per_key: f64,
    },
}

impl CompactionTask {
    /// Short name of the task kind ("merge", "move", "drop", "state",
    /// "append", "refilter").
    pub fn kind(&self) -> &'static str {
        match self {
            CompactionTask::Merge { .. } => "merge",
            CompactionTask::Move { .. } => "move",
            CompactionTask::Drop { .. } => "drop",
            CompactionTask::UpdateState { .. } => "state",
            CompactionTask::Append { .. } => "append",
            CompactionTask::Refilter { .. } => "refilter",
        }
    }
}

/// A change to a compaction buffer that a policy asks for along with a task.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferAction {
    /// Add `file` — an input of the task, the same physical file, no I/O — to
    /// table `table` of the buffer of the task's output run (created as the
    /// newest table if missing). `level` and `run` must be the task's output.
    Append {
        /// The source file (a task input).
        file: FileRef,
        /// The task's output level.
        level: usize,
        /// The task's output run.
        run: RunTarget,
        /// Buffer table id.
        table: u64,
    },
    /// Remove a present file from a buffer table (its range stays as a mark).
    RemoveFile {
        /// Level of the buffer.
        level: usize,
        /// The data run the buffer belongs to.
        run: u64,
        /// Buffer table id.
        table: u64,
        /// File id.
        file: u64,
    },
    /// Drop a whole buffer table.
    DropTable {
        /// Level of the buffer.
        level: usize,
        /// The data run the buffer belongs to.
        run: u64,
        /// Buffer table id.
        table: u64,
    },
}

/// A policy's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct PickResult {
    /// The task to run.
    pub task: CompactionTask,
    /// New round-robin cursor `(level, user key)` to persist once the task is installed.
    pub compact_pointer: Option<(usize, Vec<u8>)>,
    /// Score of the level that triggered the task.
    pub score: f64,
    /// New policy state to persist in the same MANIFEST edit as the task
    /// (`None` keeps the current state).
    pub policy_state: Option<Vec<u8>>,
    /// Compaction-buffer changes installed in the same edit (LSbM; empty otherwise).
    pub buffer: Vec<BufferAction>,
}

impl PickResult {
    /// A pick with no cursor, state or buffer change.
    pub fn task(task: CompactionTask, score: f64) -> Self {
        PickResult { task, compact_pointer: None, score, policy_state: None, buffer: Vec::new() }
    }
}
