//! The tree as a policy sees it: pure metadata (levels of sorted runs, their
//! compaction buffers, the policy's own state), built by the engine from its
//! current Version (`compaction/view.rs`) or by hand in tests and simulators.

/// Metadata of one table file as the policy sees it.
#[derive(Clone, Debug)]
pub struct FileView {
    /// File number.
    pub id: u64,
    /// File size in bytes.
    pub size: u64,
    /// Smallest user key in the file (inclusive).
    pub smallest: Vec<u8>,
    /// Largest user key in the file (inclusive).
    pub largest: Vec<u8>,
    /// Number of entries (all kinds).
    pub num_entries: u64,
    /// Number of deletion tombstones.
    pub num_deletions: u64,
    /// True while a running compaction uses this file as an input.
    pub being_compacted: bool,
    /// Bloom bits per key the file was built with (0: no filter; `None`: not
    /// recorded by an older version). A file moved down keeps the filter sized
    /// for the level it was written to.
    pub bloom_bits_per_key: Option<f64>,
    /// Sorted segments the table holds: 1, or more for a DTable that light-
    /// weight compactions appended to.
    pub segments: usize,
    /// Number of range tombstones the file holds (`Db::delete_range`).
    pub num_range_dels: u64,
}

impl FileView {
    /// True if the file's user-key range intersects the inclusive range `[lo, hi]`.
    pub fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest.as_slice() <= hi && self.largest.as_slice() >= lo
    }
}

/// One sorted run: files sorted by key with disjoint user-key ranges.
#[derive(Clone, Debug)]
pub struct RunView {
    /// Run id, unique within the tree.
    pub id: u64,
    /// Files in key order.
    pub files: Vec<FileView>,
}

impl RunView {
    /// Total bytes of the run's files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The file with this id, if the run holds it.
    pub fn file(&self, id: u64) -> Option<&FileView> {
        self.files.iter().find(|f| f.id == id)
    }

    /// The contiguous slice of files whose ranges intersect `[lo, hi]` (binary search; relies on
    /// the run being sorted and disjoint).
    pub fn overlapping(&self, lo: &[u8], hi: &[u8]) -> &[FileView] {
        let start = self.files.partition_point(|f| f.largest.as_slice() < lo);
        let rest = self.files.get(start..).unwrap_or_default();
        let len = rest.partition_point(|f| f.smallest.as_slice() <= hi);
        rest.get(..len).unwrap_or_default()
    }
}

/// One entry of a compaction-buffer table as the policy sees it.
#[derive(Clone, Debug)]
pub struct BufferEntryView {
    /// The file id, or `None` for a removed entry (only its range is left).
    pub file: Option<u64>,
    /// File size in bytes (0 when removed).
    pub size: u64,
    /// Smallest user key (inclusive).
    pub smallest: Vec<u8>,
    /// Largest user key (inclusive).
    pub largest: Vec<u8>,
    /// Fraction of the file's data blocks resident in the block cache, when the
    /// engine measured it (the trim's input); `None` otherwise.
    pub cached_fraction: Option<f64>,
}

/// One table of a compaction buffer.
#[derive(Clone, Debug)]
pub struct BufferTableView {
    /// Table id.
    pub id: u64,
    /// Entries in key order.
    pub entries: Vec<BufferEntryView>,
}

impl BufferTableView {
    /// Bytes of the present files.
    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.size).sum()
    }
}

/// The compaction buffer attached to one run of a level, newest table first.
#[derive(Clone, Debug)]
pub struct BufferView {
    /// The data run it buffers.
    pub run: u64,
    /// Tables, newest first.
    pub tables: Vec<BufferTableView>,
}

impl BufferView {
    /// Bytes of the present files.
    pub fn bytes(&self) -> u64 {
        self.tables.iter().map(BufferTableView::bytes).sum()
    }
}

/// One level: its sorted runs, newest first, and the buffers attached to them.
#[derive(Clone, Debug, Default)]
pub struct LevelView {
    /// Runs of the level, newest first.
    pub runs: Vec<RunView>,
    /// Compaction buffers (LSbM), each attached to one of `runs`.
    pub buffers: Vec<BufferView>,
}

impl LevelView {
    /// Total bytes of all runs.
    pub fn bytes(&self) -> u64 {
        self.runs.iter().map(RunView::bytes).sum()
    }

    /// Number of files over all runs (a file linked into two runs counts twice).
    pub fn num_files(&self) -> usize {
        self.runs.iter().map(|r| r.files.len()).sum()
    }

    /// The buffer attached to run `run`, if any.
    pub fn buffer_of(&self, run: u64) -> Option<&BufferView> {
        self.buffers.iter().find(|b| b.run == run)
    }

    /// The run with this id, if the level holds it.
    pub fn run(&self, id: u64) -> Option<&RunView> {
        self.runs.iter().find(|r| r.id == id)
    }

    /// True if some run of the level holds a file.
    pub fn holds_files(&self) -> bool {
        self.runs.iter().any(|r| !r.files.is_empty())
    }

    /// True if any file of the level is being compacted.
    pub fn any_busy(&self) -> bool {
        self.runs.iter().any(|r| r.files.iter().any(|f| f.being_compacted))
    }

    /// References to every file of the level (all runs) intersecting `[lo, hi]`.
    pub fn overlapping(&self, level: usize, lo: &[u8], hi: &[u8]) -> Vec<FileRef> {
        self.runs
            .iter()
            .flat_map(|r| r.overlapping(lo, hi).iter().map(move |f| FileRef { level, run: r.id, file: f.id }))
            .collect()
    }
}

/// The whole tree as the policy sees it.
#[derive(Clone, Debug, Default)]
pub struct LsmView {
    /// Levels, L0 first; the engine supplies one entry per level of the policy.
    pub levels: Vec<LevelView>,
    /// Per level: user key of the last compacted file's largest key (round-robin cursor).
    pub compact_pointers: Vec<Option<Vec<u8>>>,
    /// The policy's own persistent state (an opaque blob it last returned in
    /// [`PickResult::policy_state`](super::task::PickResult::policy_state)), as recorded in the MANIFEST.
    pub policy_state: Option<Vec<u8>>,
}

impl LsmView {
    /// An empty tree with `num_levels` levels and no compact pointers.
    pub fn new(num_levels: usize) -> Self {
        LsmView {
            levels: vec![LevelView::default(); num_levels],
            compact_pointers: vec![None; num_levels],
            policy_state: None,
        }
    }

    /// The level, if it exists.
    pub fn level(&self, level: usize) -> Option<&LevelView> {
        self.levels.get(level)
    }

    /// The levels idle compaction works between: the shallowest level holding
    /// a file above the deepest level holding one, and that deepest level;
    /// data only in L0 (overlapping flushed runs) goes to L1. `None` when the
    /// tree is settled: one level below L0 holds every file, or there are none.
    pub fn idle_levels(&self) -> Option<(usize, usize)> {
        let deepest = self.deepest_level()?;
        if deepest == 0 {
            return (self.levels.len() > 1).then_some((0, 1));
        }
        let from = self.levels[..deepest].iter().position(LevelView::holds_files)?;
        Some((from, deepest))
    }

    /// The deepest level holding a file (the tree's last level as it stands,
    /// which may be above the configured last one); `None` for an empty tree.
    pub fn deepest_level(&self) -> Option<usize> {
        self.levels.iter().rposition(LevelView::holds_files)
    }

    /// Total bytes of a level (0 for a missing level).
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.level(level).map_or(0, LevelView::bytes)
    }

    /// Number of files of a level (0 for a missing level).
    pub fn num_files(&self, level: usize) -> usize {
        self.level(level).map_or(0, LevelView::num_files)
    }

    /// Number of runs of a level (0 for a missing level).
    pub fn num_runs(&self, level: usize) -> usize {
        self.level(level).map_or(0, |l| l.runs.len())
    }

    /// The compact pointer of a level, if one is set.
    pub fn compact_pointer(&self, level: usize) -> Option<&[u8]> {
        self.compact_pointers.get(level).and_then(|p| p.as_deref())
    }

    /// The file a reference points at, if it exists in that level and run.
    pub fn file(&self, r: &FileRef) -> Option<&FileView> {
        self.level(r.level)?.run(r.run)?.file(r.file)
    }
}

/// Smallest and largest user key over a set of files; `None` for an empty set.
pub fn key_range<'a>(files: impl IntoIterator<Item = &'a FileView>) -> Option<(&'a [u8], &'a [u8])> {
    files.into_iter().fold(None, |acc, f| {
        let (s, l) = (f.smallest.as_slice(), f.largest.as_slice());
        Some(match acc {
            None => (s, l),
            Some((lo, hi)) => (lo.min(s), hi.max(l)),
        })
    })
}

/// Names one file in one run of one level (the same file id may appear in several runs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileRef {
    /// Level index.
    pub level: usize,
    /// Run id within the level.
    pub run: u64,
    /// File id.
    pub file: u64,
}

/// A user-key range, each end inclusive; `None` is unbounded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManualRange<'a> {
    /// Smallest user key (inclusive), or unbounded.
    pub start: Option<&'a [u8]>,
    /// Largest user key (inclusive), or unbounded.
    pub end: Option<&'a [u8]>,
}

impl ManualRange<'_> {
    /// True if `[lo, hi]` intersects the range.
    pub fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.start.is_none_or(|s| hi >= s) && self.end.is_none_or(|e| lo <= e)
    }
}
