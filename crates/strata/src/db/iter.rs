//! The user-facing iterator: merges every source, hides versions newer than
//! the read sequence, shadowed versions and tombstones, and honours bounds.
//! Forward and backward ends are separate cursors that stop where they meet,
//! which keeps each direction simple and makes the iterator double-ended.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::iter::{InternalIterator, MergingIterator, RunIterator};
use crate::key::{make_internal_key, parse_internal_key, user_key, SeqNum, ValueKind, MAX_SEQ};
use crate::options::ReadOptions;
use crate::stats::Counters;
use crate::table::BlockReadOptions;
use crate::version::FileMeta;

/// A key-value pair yielded by [`DbIterator`].
pub type KvPair = (Vec<u8>, Vec<u8>);

/// An ordered, double-ended iterator over a consistent view of the database.
/// It pins the files it reads until dropped.
pub struct DbIterator {
    db: Arc<DbInner>,
    sv: Arc<SuperVersion>,
    seq: SeqNum,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    bro: BlockReadOptions,
    /// Range reads may use complete compaction buffers (Algorithm 4).
    use_buffer: bool,
    front: Option<MergingIterator>,
    back: Option<MergingIterator>,
    front_last: Option<Vec<u8>>,
    back_last: Option<Vec<u8>>,
    front_done: bool,
    back_done: bool,
    /// Bytes to return before the next seek-accounting sample; `None` when
    /// seeks are not counted.
    until_sample: Option<u64>,
}

/// True if a file of the run intersects `[lo, hi]` (`None`: unbounded).
fn run_overlaps(files: &[Arc<FileMeta>], lo: &[u8], hi: Option<&[u8]>) -> bool {
    let i = files.partition_point(|f| f.largest_user_key() < lo);
    files.get(i).is_some_and(|f| hi.is_none_or(|hi| f.smallest_user_key() <= hi))
}

fn owned(b: Bound<&impl AsRef<[u8]>>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl DbIterator {
    pub(crate) fn new<K: AsRef<[u8]>, R: RangeBounds<K>>(
        db: Arc<DbInner>,
        snapshot: Option<SeqNum>,
        range: &R,
        ro: &ReadOptions,
    ) -> Self {
        let (sv, seq) = db.read_view(snapshot);
        let use_buffer = ro.use_compaction_buffer && db.policy.buffer_serves_ranges();
        let until_sample = db.counts_seeks().then(super::seek::next_sample_gap);
        DbIterator {
            db,
            sv,
            seq,
            lower: owned(range.start_bound()),
            upper: owned(range.end_bound()),
            bro: BlockReadOptions {
                verify_checksums: ro.verify_checksums,
                fill_cache: ro.fill_cache,
                readahead: ro.readahead_size,
                prefetch: false,
            },
            use_buffer,
            front: None,
            back: None,
            front_last: None,
            back_last: None,
            front_done: false,
            back_done: false,
            until_sample,
        }
    }

    /// LevelDB's read sampling: about once per MiB returned, the current key
    /// charges a seek if a point read of it would need more than one run.
    fn account_read(&mut self, uk: &[u8], value_len: usize) {
        let Some(left) = self.until_sample.as_mut() else { return };
        let bytes = (uk.len() + value_len) as u64;
        while *left < bytes {
            *left += super::seek::next_sample_gap();
            self.db.record_read_sample(&self.sv.version, uk);
        }
        *left -= bytes;
    }

    fn build(&self) -> MergingIterator {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Box::new(self.sv.mem.iter()));
        for m in &self.sv.imms {
            children.push(Box::new(m.iter()));
        }
        for level in &self.sv.version.levels {
            for run in &level.runs {
                let (lo, hi) = self.key_range();
                let from_buffer = (level.buffer_of(run.id))
                    .filter(|_| self.use_buffer && run_overlaps(&run.files, lo, hi))
                    .and_then(|b| b.range_files(lo, hi));
                let Some(tables) = from_buffer else {
                    children.push(Box::new(RunIterator::new(
                        run.files.clone(),
                        self.db.tables.clone(),
                        self.bro,
                    )));
                    continue;
                };
                // Algorithm 4: the buffer holds a copy of all the run's data
                // in the range (and only older copies of data that left it),
                // so its tables replace the run; they are the files the trim
                // kept because their blocks are cached.
                Counters::add(&self.db.counters.buffer_range_reads, 1);
                for files in tables {
                    children.push(Box::new(RunIterator::new(files, self.db.tables.clone(), self.bro)));
                }
            }
        }
        MergingIterator::new(children)
    }

    /// The iterator's user-key range as inclusive-ish bounds for choosing
    /// files: excluded bounds widen to included, which only adds files.
    fn key_range(&self) -> (&[u8], Option<&[u8]>) {
        let lo = match &self.lower {
            Bound::Included(k) | Bound::Excluded(k) => k.as_slice(),
            Bound::Unbounded => &[],
        };
        let hi = match &self.upper {
            Bound::Included(k) | Bound::Excluded(k) => Some(k.as_slice()),
            Bound::Unbounded => None,
        };
        (lo, hi)
    }

    fn below_upper(&self, uk: &[u8]) -> bool {
        match &self.upper {
            Bound::Included(u) => uk <= u.as_slice(),
            Bound::Excluded(u) => uk < u.as_slice(),
            Bound::Unbounded => true,
        }
    }

    fn above_lower(&self, uk: &[u8]) -> bool {
        match &self.lower {
            Bound::Included(l) => uk >= l.as_slice(),
            Bound::Excluded(l) => uk > l.as_slice(),
            Bound::Unbounded => true,
        }
    }

    fn step_forward(&mut self) -> Result<Option<KvPair>> {
        let mut it = match self.front.take() {
            Some(it) => it,
            None => {
                let mut it = self.build();
                let (lo, _) = self.key_range();
                if self.until_sample.is_some() {
                    self.db.record_iterator_seek(&self.sv.version, lo, true);
                }
                match &self.lower {
                    Bound::Included(k) | Bound::Excluded(k) => {
                        it.seek(&make_internal_key(k, MAX_SEQ, ValueKind::Put))?
                    }
                    Bound::Unbounded => it.seek_to_first()?,
                }
                it
            }
        };
        let r = self.scan_forward(&mut it);
        self.front = Some(it);
        r
    }

    fn scan_forward(&mut self, it: &mut MergingIterator) -> Result<Option<KvPair>> {
        while it.valid() {
            let k = parse_internal_key(it.key())?;
            let uk = k.user_key.to_vec();
            if !self.below_upper(&uk) || self.back_last.as_ref().is_some_and(|b| uk >= *b) {
                return Ok(None);
            }
            // The first visible entry of a user key decides it; skip the rest.
            let mut decided: Option<Option<Vec<u8>>> = None;
            while it.valid() && user_key(it.key()) == uk.as_slice() {
                if decided.is_none() {
                    let e = parse_internal_key(it.key())?;
                    if e.seq <= self.seq {
                        decided = Some((e.kind == ValueKind::Put).then(|| it.value().to_vec()));
                    }
                }
                it.next()?;
            }
            if let Some(Some(v)) = decided {
                if self.above_lower(&uk) {
                    self.account_read(&uk, v.len());
                    self.front_last = Some(uk.clone());
                    return Ok(Some((uk, v)));
                }
            }
        }
        Ok(None)
    }

    fn step_backward(&mut self) -> Result<Option<KvPair>> {
        let mut it = match self.back.take() {
            Some(it) => it,
            None => {
                let mut it = self.build();
                if let (true, (_, Some(hi))) = (self.until_sample.is_some(), self.key_range()) {
                    self.db.record_iterator_seek(&self.sv.version, hi, false);
                }
                match &self.upper {
                    Bound::Included(k) | Bound::Excluded(k) => {
                        it.seek_for_prev(&make_internal_key(k, 0, ValueKind::Delete))?
                    }
                    Bound::Unbounded => it.seek_to_last()?,
                }
                it
            }
        };
        let r = self.scan_backward(&mut it);
        self.back = Some(it);
        r
    }

    fn scan_backward(&mut self, it: &mut MergingIterator) -> Result<Option<KvPair>> {
        while it.valid() {
            let uk = user_key(it.key()).to_vec();
            if !self.above_lower(&uk) || self.front_last.as_ref().is_some_and(|f| uk <= *f) {
                return Ok(None);
            }
            // Walking backwards meets versions oldest first: the last visible one wins.
            let mut newest: Option<(ValueKind, Vec<u8>)> = None;
            while it.valid() && user_key(it.key()) == uk.as_slice() {
                let e = parse_internal_key(it.key())?;
                if e.seq <= self.seq {
                    newest = Some((e.kind, it.value().to_vec()));
                }
                it.prev()?;
            }
            if let Some((ValueKind::Put, v)) = newest {
                if self.below_upper(&uk) {
                    self.account_read(&uk, v.len());
                    self.back_last = Some(uk.clone());
                    return Ok(Some((uk, v)));
                }
            }
        }
        Ok(None)
    }
}

impl Iterator for DbIterator {
    type Item = Result<KvPair>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.front_done {
            return None;
        }
        match self.step_forward() {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => {
                self.front_done = true;
                None
            }
            Err(e) => {
                self.front_done = true;
                Some(Err(e))
            }
        }
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.back_done {
            return None;
        }
        match self.step_backward() {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => {
                self.back_done = true;
                None
            }
            Err(e) => {
                self.back_done = true;
                Some(Err(e))
            }
        }
    }
}
