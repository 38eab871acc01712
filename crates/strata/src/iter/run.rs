//! Concatenates the files of one sorted run (disjoint, ordered files) into one
//! cursor, opening each table lazily through the table cache.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use super::{InternalIterator, Piece, Pieces, UpperBound};
use crate::cache::TableCache;
use crate::error::Result;
use crate::key::compare_internal;
use crate::prefix::PrefixProbe;
use crate::table::reader::Readahead;
use crate::table::{BlockReadOptions, TableIter};
use crate::version::FileMeta;

/// A prefix scan's use of the tables' prefix filters: the probe, and where
/// to count (segments checked, segments skipped).
#[derive(Clone)]
pub(crate) struct PrefixSkip {
    pub(crate) probe: Arc<PrefixProbe>,
    pub(crate) record: Arc<dyn Fn(u64, u64) + Send + Sync>,
}

/// A cursor over all files of a run.
pub struct RunIterator {
    /// With a prefix scan, each table is opened over only the segments its
    /// filter does not rule out (none: the table is skipped unread).
    prefix: Option<PrefixSkip>,
    files: Vec<Arc<FileMeta>>,
    tables: Arc<TableCache>,
    opts: BlockReadOptions,
    index: usize,
    current: Option<TableIter>,
    /// Bytes already read per file id (offset, data), used as that file's
    /// first readahead window.
    windows: HashMap<u64, (u64, Vec<u8>)>,
    /// The scan's upper bound: a file wholly past it is not opened.
    upper: Option<UpperBound>,
    /// Key buffers of a table iterator dropped at the bound, for the next open.
    spare: Option<(Vec<u8>, Vec<u8>)>,
    /// Called for each table opened to be read (a user scan's count).
    on_open: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl RunIterator {
    /// Iterates `files` (sorted, disjoint) of one run.
    pub fn new(files: Vec<Arc<FileMeta>>, tables: Arc<TableCache>, opts: BlockReadOptions) -> Self {
        RunIterator {
            files,
            tables,
            opts,
            index: 0,
            current: None,
            windows: HashMap::new(),
            prefix: None,
            upper: None,
            spare: None,
            on_open: None,
        }
    }

    /// [`Self::new`] that calls `on_open` for each table it opens to read
    /// (not for one its prefix filter skips whole).
    pub(crate) fn counting_opens(mut self, on_open: Arc<dyn Fn() + Send + Sync>) -> Self {
        self.on_open = Some(on_open);
        self
    }

    /// [`Self::new`] for a scan bounded above by `upper`: forward moves stop
    /// before a file wholly past it, unopened and unread (see [`UpperBound`]).
    pub(crate) fn with_upper_bound(mut self, upper: Option<UpperBound>) -> Self {
        self.upper = upper;
        self
    }

    /// [`Self::new`] for a scan of one prefix: tables (and DTable segments)
    /// whose prefix filter rules it out are not read.
    pub(crate) fn with_prefix_skip(mut self, skip: PrefixSkip) -> Self {
        self.prefix = Some(skip);
        self
    }

    /// [`Self::new`] with bytes already read for some files: file id ->
    /// (offset, bytes), each the first window of that file's iterator.
    pub(crate) fn with_windows(mut self, windows: HashMap<u64, (u64, Vec<u8>)>) -> Self {
        self.windows = windows;
        self
    }

    /// True if file `index` lies wholly past the upper bound.
    fn past_upper(&self, index: usize) -> bool {
        match (&self.upper, self.files.get(index)) {
            (Some(u), Some(f)) => u.rules_out_from(f.smallest_user_key()),
            _ => false,
        }
    }

    /// Leaves the cursor invalid at file `index`, keeping the current table
    /// iterator's key buffers for the next open.
    fn stop_at(&mut self, index: usize) {
        self.index = index;
        if let Some(b) = self.current.take().and_then(TableIter::into_key_buffers) {
            self.spare = Some(b);
        }
    }

    fn open(&mut self, index: usize) -> Result<()> {
        self.index = index;
        let buffers = self.current.take().and_then(TableIter::into_key_buffers).or_else(|| self.spare.take());
        self.current = match self.files.get(index) {
            Some(f) => {
                let table = f.table(&self.tables)?;
                if let Some(skip) = &self.prefix {
                    let (keep, checked) = table.prefix_segments(&skip.probe);
                    let skipped = (table.num_segments() - keep.len()) as u64;
                    (skip.record)(checked, skipped);
                    if !keep.is_empty() {
                        self.count_open();
                    }
                    self.current = Some(TableIter::over_segments(table, self.opts, &keep).reusing(buffers));
                    return Ok(());
                }
                self.count_open();
                Some(
                    match self.windows.remove(&f.id) {
                        Some((offset, data)) => {
                            TableIter::with_window(table, self.opts, Readahead::seeded(offset, data))
                        }
                        None => table.iter(self.opts),
                    }
                    .reusing(buffers),
                )
            }
            None => None,
        };
        Ok(())
    }

    fn count_open(&self) {
        if let Some(f) = &self.on_open {
            f();
        }
    }

    fn skip_forward(&mut self) -> Result<()> {
        while let Some(it) = &self.current {
            if it.valid() {
                break;
            }
            if self.index + 1 >= self.files.len() {
                self.current = None;
                break;
            }
            if self.past_upper(self.index + 1) {
                self.stop_at(self.index + 1);
                break;
            }
            self.open(self.index + 1)?;
            if let Some(it) = &mut self.current {
                it.seek_to_first()?;
            }
        }
        Ok(())
    }

    fn skip_backward(&mut self) -> Result<()> {
        while let Some(it) = &self.current {
            if it.valid() {
                break;
            }
            if self.index == 0 {
                self.current = None;
                break;
            }
            self.open(self.index - 1)?;
            if let Some(it) = &mut self.current {
                it.seek_to_last()?;
            }
        }
        Ok(())
    }
}

impl InternalIterator for RunIterator {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        if self.past_upper(0) {
            self.stop_at(0);
            return Ok(());
        }
        self.open(0)?;
        if let Some(it) = &mut self.current {
            it.seek_to_first()?;
        }
        self.skip_forward()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        if self.files.is_empty() {
            self.current = None;
            return Ok(());
        }
        self.open(self.files.len() - 1)?;
        if let Some(it) = &mut self.current {
            it.seek_to_last()?;
        }
        self.skip_backward()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        // First file whose largest key is >= target.
        let i = self.files.partition_point(|f| compare_internal(&f.largest, target) == Ordering::Less);
        if self.past_upper(i) {
            self.stop_at(i);
            return Ok(());
        }
        self.open(i)?;
        if let Some(it) = &mut self.current {
            it.seek(target)?;
        }
        self.skip_forward()
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        // Last file whose smallest key is <= target.
        let i = self.files.partition_point(|f| compare_internal(&f.smallest, target) != Ordering::Greater);
        if i == 0 {
            self.current = None;
            return Ok(());
        }
        self.open(i - 1)?;
        if let Some(it) = &mut self.current {
            it.seek_for_prev(target)?;
        }
        self.skip_backward()
    }

    fn next(&mut self) -> Result<()> {
        if let Some(it) = &mut self.current {
            it.next()?;
        }
        self.skip_forward()
    }

    fn prev(&mut self) -> Result<()> {
        if let Some(it) = &mut self.current {
            it.prev()?;
        }
        self.skip_backward()
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map(|c| c.key()).unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map(|c| c.value()).unwrap_or(&[])
    }
}

impl Pieces for RunIterator {
    /// The current table: the run's files are disjoint, so its span holds
    /// every entry of the run there, and its largest sequence bounds them.
    fn piece(&self) -> Piece<'_> {
        match self.files.get(self.index) {
            Some(f) => Piece {
                max_seq: f.largest_seq,
                lo: Some(f.smallest_user_key()),
                hi: Some(f.largest_user_key()),
            },
            None => Piece { max_seq: crate::key::MAX_SEQ, lo: None, hi: None },
        }
    }
}
