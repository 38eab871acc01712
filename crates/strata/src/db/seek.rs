//! Seek-triggered compaction (LevelDB's `allowed_seeks`): reads charge the
//! table they read in vain, and a table that used up its budget is compacted
//! into the next level by the policy's manual-compaction pick once the policy
//! has nothing else to do. The read side costs one relaxed atomic per charge on
//! the table's own metadata; only a table running out takes a lock, once.

use std::sync::atomic::{AtomicU64, Ordering};

use super::DbInner;
use crate::compaction::{FileView, LsmView, PickResult};
use crate::stats::Counters;
use crate::version::{FileMeta, Version};

/// Candidates kept at most; older ones are dropped (their tables keep a spent
/// budget, like a LevelDB table that lost the single `file_to_compact_` slot).
const MAX_CANDIDATES: usize = 256;

/// Mean bytes an iterator returns between two read samples (LevelDB's
/// `kReadBytesPeriod`).
const READ_BYTES_PERIOD: u64 = 1 << 20;

impl DbInner {
    /// True if reads charge seeks: the option is on and something will act on
    /// a candidate (no background compaction on a read-only handle or with auto
    /// compactions off).
    #[inline]
    pub(crate) fn counts_seeks(&self) -> bool {
        self.opts.seek_compaction && !self.shared.read_only && !self.opts.disable_auto_compactions
    }

    /// Charges one wasted seek to `file`; queues it when its budget runs out.
    pub(crate) fn charge_seek(&self, file: &FileMeta) {
        self.charge_seeks(file, 1);
    }

    /// Charges `n` wasted seeks to `file` at once.
    pub(crate) fn charge_seeks(&self, file: &FileMeta, n: i64) {
        if file.charge_seeks(n) {
            {
                let mut q = self.seek_candidates.lock();
                if q.len() >= MAX_CANDIDATES {
                    q.remove(0);
                }
                q.push(file.id);
            }
            Counters::add(&self.counters.seek_candidates, 1);
            self.bg_cv.notify_all();
        }
    }

    /// An iterator's read sample (LevelDB's `RecordReadSample`): if a point read
    /// of `user_key` would look in two or more runs, the first is charged.
    pub(crate) fn record_read_sample(&self, version: &Version, user_key: &[u8]) {
        let mut runs = version.levels.iter().flat_map(|l| &l.runs).filter_map(|r| r.find_file(user_key));
        if let (Some(first), Some(_)) = (runs.next(), runs.next()) {
            self.charge_seek(first);
        }
    }

    /// An iterator's seek to `user_key` (forward: the first entry at or after
    /// it; backward: the last at or before it) positions a cursor in every
    /// segment of the table it lands in at each run: a DTable of `n` segments
    /// costs `n - 1` block reads a one-segment table would not, charged to it
    /// as wasted seeks so a table scans keep paying for gets rewritten into
    /// one segment (the policy's [`CompactionPolicy::seek_triggered`] pick).
    ///
    /// [`CompactionPolicy::seek_triggered`]: crate::compaction::CompactionPolicy::seek_triggered
    pub(crate) fn record_iterator_seek(&self, version: &Version, user_key: &[u8], forward: bool) {
        for run in version.levels.iter().flat_map(|l| &l.runs) {
            let file = if forward {
                let i = run.files.partition_point(|f| f.largest_user_key() < user_key);
                run.files.get(i)
            } else {
                let i = run.files.partition_point(|f| f.smallest_user_key() <= user_key);
                i.checked_sub(1).and_then(|i| run.files.get(i))
            };
            if let Some(f) = file.filter(|f| f.num_segments() > 1) {
                self.charge_seeks(f, f.num_segments() as i64 - 1);
            }
        }
    }

    pub(crate) fn has_seek_candidates(&self) -> bool {
        !self.seek_candidates.lock().is_empty()
    }

    /// The compaction of the oldest seek candidate still in the tree that the
    /// policy can move down; candidates that are gone or that the policy has
    /// no task for (the last level) are dropped. Callers hold
    /// `compaction_lock`, after the policy picked nothing, and count the task
    /// in `seek_compactions` when they run it.
    pub(super) fn seek_pick(&self, view: &LsmView) -> Option<PickResult> {
        loop {
            let id = {
                let mut q = self.seek_candidates.lock();
                (!q.is_empty()).then(|| q.remove(0))
            }?;
            let Some((level, file)) = find_in_view(view, id) else { continue };
            if let Some(pick) = self.policy.seek_triggered(view, level, file) {
                return Some(pick);
            }
        }
    }
}

/// The shallowest level listing file `id` in a run, and the file.
fn find_in_view(view: &LsmView, id: u64) -> Option<(usize, &FileView)> {
    view.levels
        .iter()
        .enumerate()
        .find_map(|(l, level)| Some((l, level.runs.iter().find_map(|r| r.file(id))?)))
}

/// Bytes until an iterator's next read sample: uniform in [0, 2 × period), so
/// samples are a period apart on average without a fixed stride.
pub(crate) fn next_sample_gap() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    // splitmix64 over a shared counter: cheap, and distinct per call.
    let mut z = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % (2 * READ_BYTES_PERIOD)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{Db, MemVfs, Options};

    fn open(seek: bool) -> Db {
        let opts = Options::default()
            .with_vfs(Arc::new(MemVfs::new()))
            .with_write_buffer_size(16 << 20)
            .with_compression(crate::CompressionType::None)
            .with_level0_file_num_compaction_trigger(8)
            .with_level0_slowdown_writes_trigger(16)
            .with_level0_stop_writes_trigger(24)
            .with_seek_compaction(seek);
        Db::open("/db", opts).unwrap()
    }

    /// Two overlapping L0 tables of 2 MiB each, the newer one first.
    fn two_tables(db: &Db) -> Vec<i64> {
        for parity in [0, 1] {
            for i in (parity..1000u32).step_by(2) {
                db.put(format!("k{i:05}"), vec![b'v'; 4096]).unwrap();
            }
            db.flush().unwrap();
        }
        budgets(db)
    }

    fn budgets(db: &Db) -> Vec<i64> {
        let v = db.inner().versions.current();
        v.levels[0].runs.iter().flat_map(|r| &r.files).map(|f| f.allowed_seeks()).collect()
    }

    #[test]
    fn iterators_sample_about_one_read_per_mib() {
        for on in [false, true] {
            let db = open(on);
            let fresh = two_tables(&db);
            assert!(fresh.iter().all(|&b| b > 120), "2 MiB tables, one seek per 16 KiB: {fresh:?}");
            // Each full scan returns ~4 MiB: ~4 samples, each charging the newer table.
            for _ in 0..3 {
                assert_eq!(db.iter().count(), 1000);
            }
            let left = budgets(&db);
            if on {
                let charged = fresh[0] - left[0];
                assert!((3..=40).contains(&charged), "{charged} samples over 12 MiB read");
                assert_eq!(left[1], fresh[1], "the older table is never read in vain");
            } else {
                assert_eq!(left, fresh);
            }
        }
    }

    #[test]
    fn raw_iterators_sample_reads_both_ways() {
        let db = open(true);
        let fresh = two_tables(&db);
        // Two passes each way return ~16 MiB: ~16 samples, each charging the newer table.
        for _ in 0..2 {
            let mut it = db.raw_iterator();
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                n += 1;
                it.next();
            }
            it.seek_to_last();
            while it.valid() {
                n += 1;
                it.prev();
            }
            it.status().unwrap();
            assert_eq!(n, 2000);
        }
        let left = budgets(&db);
        let charged = fresh[0] - left[0];
        assert!((4..=50).contains(&charged), "{charged} samples over 16 MiB read");
        assert_eq!(left[1], fresh[1], "the older table is never read in vain");
    }

    #[test]
    fn candidates_whose_table_is_gone_are_dropped() {
        let db = open(true);
        two_tables(&db);
        db.inner().seek_candidates.lock().extend([999_999, 999_998]);
        db.wait_for_compactions().unwrap();
        assert!(db.inner().seek_candidates.lock().is_empty());
        let s = db.stats();
        assert_eq!((s.seek_compactions, s.levels[0].files), (0, 2), "{s}");
    }
}
