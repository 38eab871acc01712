//! What a user iterator reads, shared by [`super::DbIterator`] and
//! [`super::DbRawIterator`]: the pinned SuperVersion and read sequence, the key
//! bounds, the sources merged for them (with LSbM's compaction-buffer rule for
//! ranges), and the seek-compaction accounting of reads and seeks.

use std::ops::Bound;
use std::sync::Arc;

use super::range_read::FailingIter;
use super::read_options::ReadOptions;
use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::iter::{
    InternalIterator, MergingIterator, Pieces, PrefixSkip, RunIterator, SeekPastCovered, UpperBound,
};
use crate::key::SeqNum;
use crate::merge_operator::{NewestFirst, OldestFirst};
use crate::prefix::PrefixProbe;
use crate::range_del::Fragments;
use crate::stats::Counters;
use crate::table::BlockReadOptions;
use crate::version::FileMeta;

/// A consistent view for one iterator; it pins the memtables and files it reads.
pub(crate) struct IterView {
    pub db: Arc<DbInner>,
    pub sv: Arc<SuperVersion>,
    pub seq: SeqNum,
    pub lower: Bound<Vec<u8>>,
    pub upper: Bound<Vec<u8>>,
    bro: BlockReadOptions,
    /// Range reads may use complete compaction buffers (Algorithm 4).
    use_buffer: bool,
    /// Bytes to return before the next seek-accounting sample; `None` when
    /// seeks are not counted.
    until_sample: Option<u64>,
    /// `ReadOptions::total_order_seek`: ask no prefix filter.
    total_order_seek: bool,
    /// A prefix scan's filter probe for the tables (memtables are always read).
    prefix: Option<PrefixSkip>,
    /// Counts a table opened to be read (`Stats::iter_tables_opened`), one
    /// closure shared by every run's cursor.
    count_open: Arc<dyn Fn() + Send + Sync>,
    /// The view's range tombstones visible at `seq` within the bounds, or
    /// the error met loading them (reported by every positioning).
    range_dels: std::result::Result<Arc<Fragments>, crate::error::Error>,
}

/// The merged sources of a view, each without the entries its range
/// tombstones hide (see [`SeekPastCovered`]).
pub(crate) type ViewIter = MergingIterator;

/// The user-key range of bounds as inclusive-ish bounds for choosing files.
fn key_range<'a>(lower: &'a Bound<Vec<u8>>, upper: &'a Bound<Vec<u8>>) -> (&'a [u8], Option<&'a [u8]>) {
    let lo = match lower {
        Bound::Included(k) | Bound::Excluded(k) => k.as_slice(),
        Bound::Unbounded => &[],
    };
    let hi = match upper {
        Bound::Included(k) | Bound::Excluded(k) => Some(k.as_slice()),
        Bound::Unbounded => None,
    };
    (lo, hi)
}

/// True if a file of the run intersects `[lo, hi]` (`None`: unbounded).
fn run_overlaps(files: &[Arc<FileMeta>], lo: &[u8], hi: Option<&[u8]>) -> bool {
    let i = files.partition_point(|f| f.largest_user_key() < lo);
    files.get(i).is_some_and(|f| hi.is_none_or(|hi| f.smallest_user_key() <= hi))
}

impl IterView {
    /// Loads the current view at `snapshot` (or the latest state) for keys
    /// within `lower..upper`.
    pub fn new(
        db: Arc<DbInner>,
        snapshot: Option<SeqNum>,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
        ro: &ReadOptions,
    ) -> Self {
        let (sv, seq) = db.read_view(snapshot);
        // Not with a merge operator: a buffer may still hold copies of
        // operands that left its run for a deeper one, which this merge of
        // sources would count twice.
        let use_buffer =
            ro.use_compaction_buffer && db.policy.buffer_serves_ranges() && db.opts.merge_operator.is_none();
        let until_sample = db.counts_seeks().then(super::seek::next_sample_gap);
        let (lo, hi) = key_range(&lower, &upper);
        let range_dels = db.view_range_dels(&sv, seq, lo, hi);
        let counted = Arc::clone(&db);
        IterView {
            count_open: Arc::new(move || Counters::add(&counted.counters.iter_tables_opened, 1)),
            db,
            sv,
            seq,
            lower,
            upper,
            bro: BlockReadOptions {
                verify_checksums: ro.verify().0,
                verify_mapped: ro.verify().1,
                fill_cache: ro.fill_cache,
                readahead: ro.readahead_size,
                prefetch: false,
            },
            use_buffer,
            until_sample,
            total_order_seek: ro.total_order_seek,
            prefix: None,
            range_dels,
        }
    }

    /// Makes this the view of a scan of exactly the keys starting with
    /// `scan_prefix`: with a prefix extractor whose domain holds it (and no
    /// `total_order_seek`), tables whose prefix filter rules it out are skipped.
    pub fn set_scan_prefix(&mut self, scan_prefix: &[u8]) {
        let Some(extractor) = self.db.opts.prefix_extractor.as_deref() else { return };
        if self.total_order_seek {
            return;
        }
        let Some(probe) = PrefixProbe::for_scan(extractor, scan_prefix) else { return };
        let db = Arc::clone(&self.db);
        self.prefix = Some(PrefixSkip {
            probe: Arc::new(probe),
            record: Arc::new(move |checked, skipped| {
                Counters::add(&db.counters.prefix_filter_checks, checked);
                Counters::add(&db.counters.prefix_filter_skips, skipped);
            }),
        });
    }

    /// Undoes [`Self::set_scan_prefix`]: every table is read again.
    pub fn clear_scan_prefix(&mut self) {
        self.prefix = None;
    }

    /// A cursor over one run's (or buffer's) files, with the scan's prefix
    /// skip and upper bound (files wholly past it are not opened).
    fn run_iter(
        &self,
        files: Vec<Arc<FileMeta>>,
        frags: &Arc<Fragments>,
        upper: &Option<UpperBound>,
    ) -> Box<dyn InternalIterator> {
        let it = RunIterator::new(files, self.db.tables.clone(), self.bro)
            .with_upper_bound(upper.clone())
            .counting_opens(Arc::clone(&self.count_open));
        self.source(
            match &self.prefix {
                Some(skip) => it.with_prefix_skip(skip.clone()),
                None => it,
            },
            frags,
        )
    }

    /// A source of the merge, without what `frags` hides at the view's
    /// sequence (with no fragments, as it is).
    fn source<I: Pieces + 'static>(&self, it: I, frags: &Arc<Fragments>) -> Box<dyn InternalIterator> {
        if frags.is_empty() {
            Box::new(it)
        } else {
            Box::new(SeekPastCovered::new(it, Arc::clone(frags), self.seq))
        }
    }

    /// LevelDB's read sampling: about once per MiB returned, the current key
    /// charges a seek if a point read of it would need more than one run.
    pub fn account_read(&mut self, uk: &[u8], value_len: usize) {
        let Some(left) = self.until_sample.as_mut() else { return };
        let bytes = (uk.len() + value_len) as u64;
        while *left < bytes {
            *left += super::seek::next_sample_gap();
            self.db.record_read_sample(&self.sv.version, uk);
        }
        *left -= bytes;
    }

    /// Counts a positioning (`Stats::iter_seeks`) and, when seeks are
    /// counted, charges it to `user_key` (see `record_iterator_seek`; `None`:
    /// a seek to the last key, which charges nothing).
    pub fn record_seek(&self, user_key: Option<&[u8]>, forward: bool) {
        Counters::add(&self.db.counters.iter_seeks, 1);
        if let (Some(k), Some(_)) = (user_key, self.until_sample) {
            self.db.record_iterator_seek(&self.sv.version, k, forward);
        }
    }

    /// A merge of every source that may hold keys within the bounds. The
    /// result must never be trusted outside them: a compaction buffer stands
    /// in for its run only over the bounds' range.
    pub fn build(&self) -> ViewIter {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let frags = match &self.range_dels {
            Ok(f) => Arc::clone(f),
            Err(e) => {
                children.push(Box::new(FailingIter::new(e)));
                Arc::default()
            }
        };
        children.push(self.source(self.sv.mem.iter(), &frags));
        for m in &self.sv.imms {
            children.push(self.source(m.iter(), &frags));
        }
        let (lo, hi) = self.key_range();
        let upper = UpperBound::new(&self.upper);
        for level in &self.sv.version.levels {
            for run in &level.runs {
                let from_buffer = (level.buffer_of(run.id))
                    .filter(|_| self.use_buffer && run_overlaps(&run.files, lo, hi))
                    .and_then(|b| b.range_files(lo, hi));
                let Some(tables) = from_buffer else {
                    children.push(self.run_iter(run.files.clone(), &frags, &upper));
                    continue;
                };
                // Algorithm 4: the buffer holds a copy of all the run's data
                // in the range (and only older copies of data that left it),
                // so its tables replace the run; they are the files the trim
                // kept because their blocks are cached.
                Counters::add(&self.db.counters.buffer_range_reads, 1);
                for files in tables {
                    children.push(self.run_iter(files, &frags, &upper));
                }
            }
        }
        MergingIterator::new(children)
    }

    /// The user-key range as inclusive-ish bounds for choosing files:
    /// excluded bounds widen to included, which only adds files.
    pub fn key_range(&self) -> (&[u8], Option<&[u8]>) {
        key_range(&self.lower, &self.upper)
    }

    /// The value of `key` from its visible versions fed newest first (see
    /// [`NewestFirst`]), merged by the database's operator if it has operands.
    pub fn finish(&self, versions: NewestFirst, key: &[u8]) -> Result<Option<Vec<u8>>> {
        versions.finish(self.db.opts.merge_operator.as_ref(), key)
    }

    /// [`Self::finish`] for versions fed oldest first.
    pub fn finish_backward(&self, versions: OldestFirst, key: &[u8]) -> Result<Option<Vec<u8>>> {
        versions.finish(self.db.opts.merge_operator.as_ref(), key)
    }

    /// [`OldestFirst::resolve`] with the database's operator.
    pub fn resolve_backward(&self, versions: &mut OldestFirst, key: &[u8]) -> Result<bool> {
        versions.resolve(self.db.opts.merge_operator.as_ref(), key)
    }

    pub fn below_upper(&self, uk: &[u8]) -> bool {
        match &self.upper {
            Bound::Included(u) => uk <= u.as_slice(),
            Bound::Excluded(u) => uk < u.as_slice(),
            Bound::Unbounded => true,
        }
    }

    pub fn above_lower(&self, uk: &[u8]) -> bool {
        match &self.lower {
            Bound::Included(l) => uk >= l.as_slice(),
            Bound::Excluded(l) => uk > l.as_slice(),
            Bound::Unbounded => true,
        }
    }
}
