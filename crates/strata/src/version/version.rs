//! `Version`: an immutable snapshot of the tree — levels of sorted runs of files.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::key::{compare_internal, parse_internal_key};

use super::buffer::Buffer;
use super::fences::Fences;
use super::file_meta::FileMeta;

/// A sorted run: files ordered by key whose user-key ranges are disjoint.
#[derive(Debug, Clone)]
pub struct Run {
    /// Stable id (allocated from the file-number counter); newer runs have larger ids.
    /// INVARIANT: unique within the tree; a run keeps its id while it exists.
    pub id: u64,
    /// Files in key order.
    /// INVARIANT: non-empty; user-key ranges sorted and disjoint (no user key
    /// is split across two files), checked by `check_invariants`; never
    /// changed once the run is built (a Version is immutable), since
    /// `fences` is built from it.
    pub files: Vec<Arc<FileMeta>>,
    /// The files' largest user keys side by side, so a point read's binary
    /// search touches one small array instead of a `FileMeta` (and its key's
    /// allocation) per step: LevelDB's and RocksDB's `LevelFilesBrief`.
    fences: Fences,
}

impl Run {
    /// A run of `files` (in key order, disjoint, non-empty).
    pub fn new(id: u64, files: Vec<Arc<FileMeta>>) -> Self {
        let fences = Fences::new(files.iter().map(|f| f.largest_user_key()));
        Run { id, files, fences }
    }

    /// The file whose user-key range contains `user_key`, if any (binary search).
    pub fn find_file(&self, user_key: &[u8]) -> Option<&Arc<FileMeta>> {
        debug_assert_eq!(self.fences.len(), self.files.len(), "a run's files changed after it was built");
        let i = self.fences.first_at_least(user_key);
        self.files.get(i).filter(|f| f.smallest_user_key() <= user_key)
    }

    /// The contiguous files that overlap the user-key range `lo..=hi`.
    pub fn overlapping(&self, lo_user: &[u8], hi_user: &[u8]) -> &[Arc<FileMeta>] {
        let start = self.files.partition_point(|f| f.largest_user_key() < lo_user);
        let end = self.files.partition_point(|f| f.smallest_user_key() <= hi_user);
        self.files.get(start..end).unwrap_or(&[])
    }

    /// Total size of the run's files.
    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// One level: sorted runs, newest (largest run id) first, and the compaction
/// buffers attached to them (LSbM; empty under other policies).
#[derive(Debug, Clone, Default)]
pub struct Level {
    /// Runs, newest first.
    /// INVARIANT: run ids strictly descend; for any user key, a newer run
    /// (and a shallower level) holds newer versions than an older one.
    pub runs: Vec<Run>,
    /// Buffers, each attached to a run of this level.
    /// INVARIANT: each names a run of `runs`, at most one buffer per run.
    pub buffers: Vec<Buffer>,
}

impl Level {
    /// The buffer attached to run `run`, if it has any table.
    pub fn buffer_of(&self, run: u64) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.run == run && !b.tables.is_empty())
    }

    /// Bytes of the files present in the level's buffers.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffers.iter().map(Buffer::bytes).sum()
    }

    /// Sum of the sizes of all runs (a file listed in two runs counts twice).
    pub fn size_bytes(&self) -> u64 {
        self.runs.iter().map(Run::size_bytes).sum()
    }

    /// Number of file entries in all runs (a file listed in two runs counts twice).
    pub fn num_files(&self) -> usize {
        self.runs.iter().map(|r| r.files.len()).sum()
    }
}

/// An immutable snapshot of the tree's files. Holding an `Arc<Version>` keeps
/// every file it lists on disk.
#[derive(Debug, Clone, Default)]
pub struct Version {
    /// Levels `0..num_levels`.
    /// INVARIANT: never mutated once published (a change is a new Version);
    /// every file listed is on disk while the Version is alive.
    pub levels: Vec<Level>,
}

impl Version {
    /// Number of levels (empty ones included).
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Bytes in level `l` (0 for a level out of range).
    pub fn level_bytes(&self, l: usize) -> u64 {
        self.levels.get(l).map_or(0, Level::size_bytes)
    }

    /// File entries in level `l` (0 for a level out of range).
    pub fn level_files(&self, l: usize) -> usize {
        self.levels.get(l).map_or(0, Level::num_files)
    }

    /// Every file listing in a run or a buffer (a shared file appears once per listing).
    fn listed_files(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        let runs = self.levels.iter().flat_map(|l| &l.runs).flat_map(|r| &r.files);
        let buffers =
            self.levels.iter().flat_map(|l| &l.buffers).flat_map(|b| &b.tables).flat_map(|t| t.present());
        runs.chain(buffers)
    }

    /// Per level, the bytes of the files its buffers list that no run lists
    /// and no shallower level's buffer does: the space the buffers add to
    /// the tree, each file counted once. A file moved down whole sits in the
    /// lower run and in its buffer at once, and may stay in the buffer it
    /// left too; `Level::buffer_bytes` counts it wherever it is listed.
    pub fn buffer_bytes_in_no_run(&self) -> Vec<u64> {
        let mut seen: HashSet<u64> =
            self.levels.iter().flat_map(|l| &l.runs).flat_map(|r| &r.files).map(|f| f.id).collect();
        (self.levels.iter())
            .map(|l| {
                (l.buffers.iter().flat_map(|b| &b.tables).flat_map(|t| t.present()))
                    .filter(|f| seen.insert(f.id))
                    .map(|f| f.size)
                    .sum()
            })
            .collect()
    }

    /// Ids of every file in any run or buffer.
    pub fn all_file_ids(&self) -> HashSet<u64> {
        self.listed_files().map(|f| f.id).collect()
    }

    /// Every distinct live file (runs and buffers), in id order.
    pub fn live_files(&self) -> Vec<Arc<FileMeta>> {
        let mut seen = HashSet::new();
        let mut files: Vec<_> = self.listed_files().filter(|f| seen.insert(f.id)).cloned().collect();
        files.sort_unstable_by_key(|f| f.id);
        files
    }

    /// Bytes of every distinct live file (runs and buffers; shared files once).
    pub fn live_bytes(&self) -> u64 {
        let mut seen = HashSet::new();
        self.listed_files().filter(|f| seen.insert(f.id)).map(|f| f.size).sum()
    }

    /// Checks the structural invariants: in each level run ids strictly descend
    /// and no run is empty; in each run files are well-formed, sorted, and
    /// disjoint in user keys. A violation is `Corruption`.
    pub fn check_invariants(&self) -> Result<()> {
        for (l, level) in self.levels.iter().enumerate() {
            for pair in level.runs.windows(2) {
                if let [a, b] = pair {
                    if a.id <= b.id {
                        return Err(Error::corruption(format!(
                            "level {l}: run {} listed before run {}",
                            a.id, b.id
                        )));
                    }
                }
            }
            for run in &level.runs {
                if run.files.is_empty() {
                    return Err(Error::corruption(format!("level {l}: run {} is empty", run.id)));
                }
                check_run(&run.files)
                    .map_err(|e| Error::corruption(format!("level {l} run {}: {e}", run.id)))?;
            }
            for b in &level.buffers {
                if !level.runs.iter().any(|r| r.id == b.run) {
                    return Err(Error::corruption(format!("level {l}: buffer of missing run {}", b.run)));
                }
                for t in &b.tables {
                    for pair in t.entries().windows(2) {
                        if let [x, y] = pair {
                            if x.range().1 >= y.range().0 {
                                return Err(Error::corruption(format!(
                                    "level {l} run {} buffer table {}: entries overlap",
                                    b.run, t.id
                                )));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Checks that `files` are well-formed, sorted and disjoint in user keys;
/// returns a description of the first violation.
pub(crate) fn check_run(files: &[Arc<FileMeta>]) -> std::result::Result<(), String> {
    for f in files {
        check_file_keys(&f.smallest, &f.largest).map_err(|e| format!("file {}: {e}", f.id))?;
    }
    for pair in files.windows(2) {
        if let [a, b] = pair {
            if a.largest_user_key() >= b.smallest_user_key() {
                return Err(format!("files {} and {} overlap or are out of order", a.id, b.id));
            }
        }
    }
    Ok(())
}

/// Both bounds must be internal keys and `smallest <= largest`.
pub(crate) fn check_file_keys(smallest: &[u8], largest: &[u8]) -> std::result::Result<(), String> {
    parse_internal_key(smallest).map_err(|e| format!("smallest key: {e}"))?;
    parse_internal_key(largest).map_err(|e| format!("largest key: {e}"))?;
    if compare_internal(smallest, largest) == Ordering::Greater {
        return Err("smallest key is after largest key".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use crate::version::file_meta::{NewFile, ObsoleteFiles};

    fn file(id: u64, lo: &str, hi: &str) -> Arc<FileMeta> {
        let f = NewFile {
            id,
            size: 100,
            smallest: make_internal_key(lo.as_bytes(), 9, ValueKind::Put),
            largest: make_internal_key(hi.as_bytes(), 1, ValueKind::Put),
            ..NewFile::default()
        };
        Arc::new(FileMeta::new(f, Arc::new(ObsoleteFiles::new())))
    }

    fn run(id: u64, files: Vec<Arc<FileMeta>>) -> Run {
        Run::new(id, files)
    }

    #[test]
    fn find_and_overlapping() {
        let r = run(1, vec![file(1, "b", "d"), file(2, "f", "h"), file(3, "j", "l")]);
        assert_eq!(r.find_file(b"a").map(|f| f.id), None);
        assert_eq!(r.find_file(b"b").map(|f| f.id), Some(1));
        assert_eq!(r.find_file(b"d").map(|f| f.id), Some(1));
        assert_eq!(r.find_file(b"e").map(|f| f.id), None);
        assert_eq!(r.find_file(b"g").map(|f| f.id), Some(2));
        assert_eq!(r.find_file(b"l").map(|f| f.id), Some(3));
        assert_eq!(r.find_file(b"m").map(|f| f.id), None);
        let ids = |s: &[Arc<FileMeta>]| s.iter().map(|f| f.id).collect::<Vec<_>>();
        assert_eq!(ids(r.overlapping(b"a", b"z")), vec![1, 2, 3]);
        assert_eq!(ids(r.overlapping(b"d", b"f")), vec![1, 2]);
        assert_eq!(ids(r.overlapping(b"e", b"e")), Vec::<u64>::new());
        assert_eq!(ids(r.overlapping(b"h", b"h")), vec![2]);
        assert_eq!(ids(r.overlapping(b"z", b"a")), Vec::<u64>::new());
        assert_eq!(r.size_bytes(), 300);
        assert!(run(2, vec![]).find_file(b"a").is_none());
    }

    /// The fence array answers as a search over the files themselves, for
    /// keys of every length, prefixes of the bounds included.
    #[test]
    fn fences_find_what_the_files_say() {
        let bounds = ["a", "ab", "abc", "b", "ba", "bb", "c", "cab", "d", "dd", "e", "eee"];
        let files: Vec<_> = bounds.chunks(2).enumerate().map(|(i, c)| file(i as u64, c[0], c[1])).collect();
        let r = run(1, files.clone());
        let probes =
            ["", "a", "aa", "ab", "aba", "abc", "abd", "b", "b\0", "ba", "bab", "bb", "bc", "c", "ca"];
        for k in probes.iter().chain(&["cab", "cac", "d", "da", "dd", "dde", "e", "ee", "eee", "f", "\u{ff}"])
        {
            let i = files.partition_point(|f| f.largest_user_key() < k.as_bytes());
            let want = files.get(i).filter(|f| f.smallest_user_key() <= k.as_bytes()).map(|f| f.id);
            assert_eq!(r.find_file(k.as_bytes()).map(|f| f.id), want, "key {k:?}");
        }
    }

    #[test]
    fn invariants() {
        let shared = file(7, "x", "y");
        let good = Version {
            levels: vec![
                Level {
                    buffers: vec![],
                    runs: vec![run(9, vec![file(1, "a", "z")]), run(4, vec![file(2, "a", "z")])],
                },
                Level { buffers: vec![], runs: vec![run(5, vec![file(3, "a", "c"), shared.clone()])] },
                Level { buffers: vec![], runs: vec![run(6, vec![shared])] },
            ],
        };
        good.check_invariants().unwrap();
        assert_eq!(good.num_levels(), 3);
        assert_eq!(good.level_bytes(0), 200);
        assert_eq!(good.level_files(1), 2);
        assert_eq!(good.level_files(9), 0);
        assert_eq!(good.all_file_ids(), HashSet::from([1, 2, 3, 7]));

        let bad = |levels: Vec<Level>| Version { levels }.check_invariants().unwrap_err().is_corruption();
        // Overlap within a run, also when only the user keys touch.
        assert!(bad(vec![Level {
            buffers: vec![],
            runs: vec![run(1, vec![file(1, "a", "c"), file(2, "c", "d")])]
        }]));
        // Out of order.
        assert!(bad(vec![Level {
            buffers: vec![],
            runs: vec![run(1, vec![file(1, "e", "f"), file(2, "a", "b")])]
        }]));
        // Runs oldest first, duplicate run id, empty run.
        assert!(bad(vec![Level {
            buffers: vec![],
            runs: vec![run(1, vec![file(1, "a", "b")]), run(2, vec![file(2, "a", "b")])]
        }]));
        assert!(bad(vec![Level {
            buffers: vec![],
            runs: vec![run(1, vec![file(1, "a", "b")]), run(1, vec![file(2, "c", "d")])]
        }]));
        assert!(bad(vec![Level { buffers: vec![], runs: vec![run(1, vec![])] }]));
        // Inverted bounds.
        assert!(bad(vec![Level { buffers: vec![], runs: vec![run(1, vec![file(1, "b", "a")])] }]));
    }
}
