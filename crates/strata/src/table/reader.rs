//! An open table: footer, index, filter and properties held in memory; data
//! blocks read on demand through the block cache.

use crossbeam_channel::{bounded, Receiver};
use std::cell::Cell;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::cache::{BlockCache, MapSlot};
use crate::error::{Error, Result};
use crate::key::{compare_internal, parse_internal_key, user_key, ValueKind};
use crate::pinned::PinnedValue;
use crate::prefix::PrefixProbe;
use crate::range_del::Fragments;
use crate::table::block::Block;
use crate::table::filter::filter_hash;
use crate::table::format::{
    decode_block_contents, read_block_contents, uncompressed_payload, BlockHandle, TableProperties,
    BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use crate::table::memo::BlockMemo;
use crate::table::segment::{check_segment_list, Segment, SegmentMeta};
use crate::vfs::{FileMap, RandomAccessFile};

/// How data blocks are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockReadOptions {
    /// Verify each block's CRC when it enters memory: read from the file
    /// (`pread`) or decompressed.
    pub verify_checksums: bool,
    /// Verify the CRC of an uncompressed block served in place from a
    /// memory-mapped table too, on every read (such a block is never cached).
    /// LevelDB's rule: only when the reader asks for it.
    pub verify_mapped: bool,
    /// Insert blocks read from the file into the block cache.
    pub fill_cache: bool,
    /// Bytes a forward-moving table iterator reads at once when it misses the
    /// cache (0: one block per read). Compactions use it: with `O_DIRECT` every
    /// block read is otherwise a device round trip.
    pub readahead: usize,
    /// With `readahead`: while a window is consumed, the next one is read on
    /// its own thread (the read stage of a pipelined compaction).
    pub prefetch: bool,
}

impl BlockReadOptions {
    /// Every block verified, mapped or not, and none cached: what compactions
    /// (a corrupt input must not be rewritten under a fresh checksum),
    /// verification, repair and dumps read with.
    pub const fn verified() -> Self {
        BlockReadOptions {
            verify_checksums: true,
            verify_mapped: true,
            fill_cache: false,
            readahead: 0,
            prefetch: false,
        }
    }
}

impl Default for BlockReadOptions {
    fn default() -> Self {
        BlockReadOptions {
            verify_checksums: true,
            verify_mapped: false,
            fill_cache: true,
            readahead: 0,
            prefetch: false,
        }
    }
}

/// A table iterator's readahead window: file bytes from `offset`, and with
/// `prefetch` the window after it, being read on a read thread.
#[derive(Debug, Default)]
pub(crate) struct Readahead {
    offset: u64,
    data: Vec<u8>,
    next: Option<Prefetch>,
}

/// The bytes from `offset` on, read by another thread (with the time and
/// the CPU the read took).
#[derive(Debug)]
struct Prefetch {
    offset: u64,
    bytes: Receiver<(Result<Vec<u8>>, u64, u64)>,
}

thread_local! {
    /// Time spent in readahead reads on behalf of this thread: its own, and
    /// those of read threads whose window it took (busy ns), waiting for a
    /// read thread (wait ns), and those read threads' CPU (this thread's own
    /// is its thread's). Compactions read the difference around a merge for
    /// their read-stage statistics.
    static READ_TIME: Cell<ReadTime> = const { Cell::new(ReadTime { busy: 0, wait: 0, cpu: 0 }) };
}

/// Readahead nanoseconds on behalf of one thread ([`read_time`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReadTime {
    pub(crate) busy: u64,
    pub(crate) wait: u64,
    /// CPU of read threads whose windows this thread took.
    pub(crate) cpu: u64,
}

/// This thread's readahead nanoseconds so far.
pub(crate) fn read_time() -> ReadTime {
    READ_TIME.with(Cell::get)
}

fn add_read_time(busy: u64, wait: u64, cpu: u64) {
    READ_TIME.with(|c| {
        let t = c.get();
        c.set(ReadTime {
            busy: t.busy.saturating_add(busy),
            wait: t.wait.saturating_add(wait),
            cpu: t.cpu.saturating_add(cpu),
        });
    });
}

fn nanos(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl Readahead {
    /// A window already holding the file's bytes from `offset` on (read by
    /// a compaction's read stage).
    pub(crate) fn seeded(offset: u64, data: Vec<u8>) -> Self {
        Readahead { offset, data, next: None }
    }

    /// True if the window holds any bytes.
    pub(crate) fn is_seeded(&self) -> bool {
        !self.data.is_empty()
    }

    /// Starts reading `len` bytes at `offset` on a read thread. If no thread
    /// can be started the window is simply read when it is needed.
    fn prefetch(&mut self, file: &Arc<dyn RandomAccessFile>, offset: u64, len: usize) {
        let (tx, rx) = bounded(1);
        let file = Arc::clone(file);
        let started = std::thread::Builder::new().name("strata-read".into()).spawn(move || {
            // The receiver may be gone (the iterator dropped); nothing to do then.
            let t = Instant::now();
            let cpu = crate::util::cpu_time::thread_cpu_ns();
            let r = file.read_at(offset, len);
            let _ = tx.send((r, nanos(t), crate::util::cpu_time::thread_cpu_ns_since(cpu)));
        });
        self.next = started.is_ok().then_some(Prefetch { offset, bytes: rx });
    }

    /// Takes the prefetched window if the block at `[offset, offset + len)`
    /// starts in the current window or the prefetched one and ends in the
    /// prefetched one; the part of the current window from `offset` on is
    /// kept in front of it.
    fn take_prefetched(&mut self, offset: u64, len: usize) -> Result<bool> {
        let Some(p) = self.next.take() else { return Ok(false) };
        let end = self.offset + self.data.len() as u64;
        let starts_here = offset >= self.offset && offset <= end && end == p.offset;
        if !(starts_here || offset == p.offset) {
            return Ok(false);
        }
        let t = Instant::now();
        let (bytes, busy, cpu) =
            p.bytes.recv().map_err(|_| Error::Io(std::io::Error::other("read thread stopped")))?;
        add_read_time(busy, nanos(t), cpu);
        let bytes = bytes?;
        let mut data = match usize::try_from(offset.saturating_sub(self.offset)) {
            Ok(from) if starts_here && from < self.data.len() => self.data.split_off(from),
            _ => Vec::new(),
        };
        data.extend_from_slice(&bytes);
        self.offset = offset.min(p.offset);
        self.data = data;
        Ok(self.slice(offset, len).is_some())
    }

    /// The stored block `[offset, offset + len)` if the window holds all of it.
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset.checked_sub(self.offset)?).ok()?;
        self.data.get(start..start.checked_add(len)?)
    }
}

/// Keys larger than this do not keep their scratch buffer alive between gets.
const MAX_RETAINED_KEY_BUF: usize = 64 * 1024;

thread_local! {
    /// Reused key buffer for point lookups, so `get` allocates only the value.
    static KEY_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// What [`Table::get_if_cached`] found; the read path's own form holds a
/// [`PinnedValue`] instead of a copy.
#[derive(Debug, PartialEq, Eq)]
pub enum CachedGet<V = Vec<u8>> {
    /// The newest entry of the key in this table (a delete has an empty value).
    Found(ValueKind, V),
    /// The table certainly holds no entry of the key.
    Absent,
    /// The block that would answer is not in the block cache.
    NotCached,
}

/// Where [`Table::get_if_cached_in`] stopped at a block that was not
/// resident: the segment and the data block its index named. The read that
/// follows (the LSbM run's, after its buffer) starts there instead of
/// searching the index again. Valid only for the table that made it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Resume {
    /// Index into the table's segments (oldest first).
    seg: usize,
    handle: BlockHandle,
}

impl CachedGet<PinnedValue> {
    /// The answer with its value copied out.
    fn into_vec(self) -> CachedGet {
        match self {
            CachedGet::Found(kind, value) => CachedGet::Found(kind, value.into_vec()),
            CachedGet::Absent => CachedGet::Absent,
            CachedGet::NotCached => CachedGet::NotCached,
        }
    }
}

thread_local! {
    /// Segments whose index this thread searched in point reads (a table of
    /// one segment counts one per probe that passed its filter). The read
    /// path reads the difference around a get for the statistics.
    static SEGMENT_PROBES: Cell<u64> = const { Cell::new(0) };
}

/// This thread's segment probes so far (see `SEGMENT_PROBES`).
pub(crate) fn segment_probes() -> u64 {
    SEGMENT_PROBES.with(Cell::get)
}

fn count_probe() {
    SEGMENT_PROBES.with(|c| c.set(c.get().wrapping_add(1)));
}

/// An open table file: one segment, or a DTable of several appended ones
/// (oldest first). A handle sees exactly the segments it was opened with; a
/// segment appended later needs a new handle (see [`SegmentMeta`]).
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    file_id: u64,
    file_size: u64,
    cache: Option<Arc<BlockCache>>,
    segs: Vec<Segment>,
    /// The segments' properties summed (bounds and counts over all of them).
    props: TableProperties,
    /// Every segment's range tombstones, fragmented (shared with readers).
    range_dels: Arc<Fragments>,
    /// The file's path, when the opener knows it: a corruption found in a
    /// block later names the file an operator must look at.
    path: Option<Arc<Path>>,
    /// The file mapped read-only, when the table cache could (`mmap_reads`).
    /// INVARIANT: maps exactly the table's `file_size` bytes (the committed
    /// segments, never an uncommitted append), so no truncation Strata
    /// makes can reach a mapped page.
    map: Option<TableMap>,
}

/// A table file's map and its place in the database's bound on mapped files.
struct TableMap {
    bytes: Arc<FileMap>,
    _slot: MapSlot,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("file_id", &self.file_id)
            .field("file_size", &self.file_size)
            .field("segments", &self.segs.len())
            .field("num_entries", &self.props.num_entries)
            .field("num_data_blocks", &self.props.num_data_blocks)
            .finish_non_exhaustive()
    }
}

impl Table {
    /// Opens a table of `file_size` bytes written once (one segment): reads and
    /// verifies (always, whatever the read options) the footer, index, filter
    /// and properties blocks.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_id: u64,
        file_size: u64,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Table> {
        Self::open_segments(file, file_id, file_size, &[], cache)
    }

    /// Opens a table whose segments the MANIFEST lists (`segments` empty: one
    /// segment of `file_size` bytes). Bytes of the file past `file_size` are
    /// ignored: they are an append that never committed.
    pub fn open_segments(
        file: Arc<dyn RandomAccessFile>,
        file_id: u64,
        file_size: u64,
        segments: &[SegmentMeta],
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Table> {
        if file_size < FOOTER_LEN as u64 || file.len() < file_size {
            return Err(Error::corruption(format!(
                "table {file_id}: file is {} bytes, expected {file_size} (at least a footer)",
                file.len()
            )));
        }
        check_segment_list(segments, file_size)
            .map_err(|e| Error::corruption(format!("table {file_id}: {e}")))?;
        let segs = if segments.is_empty() {
            vec![Segment::open(&*file, file_id, 0, file_size, None)?]
        } else {
            let mut start = 0;
            let mut segs = Vec::with_capacity(segments.len());
            for m in segments {
                segs.push(Segment::open(&*file, file_id, start, m.end, Some(m.footer_crc))?);
                start = m.end;
            }
            segs
        };
        let props = sum_properties(&segs);
        let range_dels = Arc::new(Fragments::new(
            segs.iter().flat_map(|s| &s.range_dels).map(|t| (t.start.as_slice(), t.end.as_slice(), t.seq)),
        ));
        Ok(Table { file, file_id, file_size, cache, segs, props, range_dels, path: None, map: None })
    }

    /// Names the file this table was opened from in the corruption errors of
    /// its block reads.
    pub(crate) fn with_path(mut self, path: &Path) -> Table {
        self.path = Some(Arc::from(path));
        self
    }

    /// Serves the uncompressed data blocks of this table from `map` (of the
    /// table's file) instead of reading them; a map of another length than
    /// the table's is not used.
    pub(crate) fn with_map(mut self, map: FileMap, slot: MapSlot) -> Table {
        if map.bytes().len() as u64 == self.file_size {
            self.map = Some(TableMap { bytes: Arc::new(map), _slot: slot });
        }
        self
    }

    /// True if the table reads through a memory map.
    pub fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    /// `e` with this table's file named, if it is a corruption.
    fn locate(&self, e: Error) -> Error {
        match (e, &self.path) {
            (Error::Corruption(msg), Some(path)) => {
                Error::Corruption(format!("{} (table {}): {msg}", path.display(), self.file_id))
            }
            (Error::Corruption(msg), None) => Error::Corruption(format!("table {}: {msg}", self.file_id)),
            (e, _) => e,
        }
    }

    /// False only if the table certainly holds no entry for `user_key`.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(filter_hash(user_key))
    }

    /// The newest entry with internal key `>= lookup` (from
    /// [`crate::key::lookup_key`]) whose user key equals `lookup`'s; a delete
    /// comes back as `(ValueKind::Delete, empty)`.
    pub fn get(&self, lookup: &[u8], opts: BlockReadOptions) -> Result<Option<(ValueKind, Vec<u8>)>> {
        if !self.may_contain(user_key(lookup)) {
            return Ok(None);
        }
        self.get_unfiltered(lookup, opts)
    }

    /// The filter's answer for `user_key`: `None` when no segment has a
    /// filter, else false only if the table certainly holds no entry of it.
    /// The read path asks once per table and counts the answers.
    pub fn filter_check(&self, user_key: &[u8]) -> Option<bool> {
        self.filter_check_hash(filter_hash(user_key))
    }

    /// [`Self::filter_check`] for a key whose
    /// [`filter_hash`](crate::table::filter::filter_hash) is `h`: every
    /// filter uses the same hash, so a read computes it once for all tables.
    pub(crate) fn filter_check_hash(&self, h: u64) -> Option<bool> {
        if self.segs.iter().all(|s| s.whole_key_filter().is_none()) {
            return None;
        }
        Some(self.may_contain_hash(h))
    }

    /// [`Self::may_contain`] for a key whose filter hash is `h`.
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        self.segs.iter().any(|s| s.may_contain_hash(h))
    }

    /// Prefetches the filter lines [`Self::filter_check_hash`] reads for `h`
    /// (a hint: a batch asks for every key's lines before testing any).
    pub(crate) fn prefetch_filter(&self, h: u64) {
        for f in self.segs.iter().filter_map(Segment::whole_key_filter) {
            f.prefetch_hash(h);
        }
    }

    /// [`Self::get`] without asking the filter (the caller did). The segments
    /// of a DTable are probed newest first, each behind its own filter: a
    /// segment appended later came from the level above, so its entries of a
    /// key are newer than any older segment's, and the first hit is the answer.
    pub fn get_unfiltered(
        &self,
        lookup: &[u8],
        opts: BlockReadOptions,
    ) -> Result<Option<(ValueKind, Vec<u8>)>> {
        Ok(self.get_unfiltered_in(lookup, opts, None, None)?.map(|(kind, value)| (kind, value.into_vec())))
    }

    /// [`Self::get_unfiltered`] with the value left in its block, and with a
    /// batch's memo of the blocks it read last (`None` for a single read).
    /// With `resume` (from [`Self::get_if_cached_in`] on this table, for the
    /// same `lookup`) the segments newer than where it stopped are skipped
    /// (they held no entry) and its block is read without an index search.
    pub(crate) fn get_unfiltered_in(
        &self,
        lookup: &[u8],
        opts: BlockReadOptions,
        mut memo: Option<&mut BlockMemo>,
        resume: Option<Resume>,
    ) -> Result<Option<(ValueKind, PinnedValue)>> {
        let target_user = user_key(lookup);
        let mut buf = KEY_BUF.with(Cell::take);
        let mut result = Ok(None);
        let single = self.segs.len() == 1;
        for (i, seg) in self.segs.iter().enumerate().rev() {
            let known = match resume {
                Some(r) if i > r.seg => continue,
                Some(r) if i == r.seg => Some(r.handle),
                _ => None,
            };
            if known.is_none() && !single && !seg.may_contain(target_user) {
                continue;
            }
            result = self.get_with(seg, lookup, target_user, opts, &mut buf, memo.as_deref_mut(), known);
            if !matches!(result, Ok(None)) {
                break;
            }
        }
        if buf.capacity() <= MAX_RETAINED_KEY_BUF {
            KEY_BUF.with(|c| c.set(buf));
        }
        result
    }

    /// One segment's answer; `known` is the data block a [`Resume`] named
    /// (no index search, and nothing to remember the block by in a memo).
    #[allow(clippy::too_many_arguments)]
    fn get_with(
        &self,
        seg: &Segment,
        lookup: &[u8],
        target_user: &[u8],
        opts: BlockReadOptions,
        buf: &mut Vec<u8>,
        memo: Option<&mut BlockMemo>,
        known: Option<BlockHandle>,
    ) -> Result<Option<(ValueKind, PinnedValue)>> {
        count_probe();
        let remembered = memo.as_deref().and_then(|m| m.find(self.file_id, seg.start, lookup)).cloned();
        let block = match (remembered, known) {
            (Some(block), _) => block,
            (None, Some(handle)) => self.read_block_ahead(seg, handle, opts, None)?,
            (None, None) => {
                let Some(handle) = seg.index.seek_ge(lookup, buf)? else {
                    return Ok(None);
                };
                let block = self.read_block_ahead(seg, BlockHandle::decode(handle)?, opts, None)?;
                if let Some(m) = memo {
                    m.remember(self.file_id, seg.start, lookup, buf, &block);
                }
                block
            }
        };
        self.entry_in(block, lookup, target_user, buf)
    }

    /// [`Self::get`] that reads nothing from the file: when the data block that
    /// would answer is not in the block cache (or there is no cache) the
    /// answer is [`CachedGet::NotCached`]. The compaction buffer's read rule:
    /// a buffer file serves only data whose blocks are hot.
    pub fn get_if_cached(&self, lookup: &[u8]) -> Result<CachedGet> {
        if !self.may_contain(user_key(lookup)) {
            return Ok(CachedGet::Absent);
        }
        self.get_if_cached_unfiltered(lookup)
    }

    /// [`Self::get_if_cached`] without asking the filter (the caller did).
    /// Newest segment first; a segment whose block is not cached makes the
    /// answer `NotCached` (an older segment cannot be trusted past it).
    pub fn get_if_cached_unfiltered(&self, lookup: &[u8]) -> Result<CachedGet> {
        Ok(self.get_if_cached_in(lookup, None)?.0.into_vec())
    }

    /// [`Self::get_if_cached_unfiltered`] with the value left in its block,
    /// and with a batch's memo of the blocks it used last. A `NotCached`
    /// answer from a data block that is not resident comes with where it
    /// stopped, for [`Self::get_unfiltered_in`] to read that block next.
    pub(crate) fn get_if_cached_in(
        &self,
        lookup: &[u8],
        mut memo: Option<&mut BlockMemo>,
    ) -> Result<(CachedGet<PinnedValue>, Option<Resume>)> {
        let target_user = user_key(lookup);
        let Some(cache) = &self.cache else { return Ok((CachedGet::NotCached, None)) };
        let mut buf = KEY_BUF.with(Cell::take);
        let single = self.segs.len() == 1;
        let mut result = Ok(CachedGet::Absent);
        let mut resume = None;
        for (i, seg) in self.segs.iter().enumerate().rev() {
            if !single && !seg.may_contain(target_user) {
                continue;
            }
            let memo = memo.as_deref_mut();
            let resume = &mut resume;
            result = (|| {
                let remembered =
                    memo.as_deref().and_then(|m| m.find(self.file_id, seg.start, lookup)).cloned();
                let block = match remembered {
                    Some(block) => block,
                    None => {
                        let Some(handle) = seg.index.seek_ge(lookup, &mut buf)? else {
                            return Ok(CachedGet::Absent);
                        };
                        let handle = BlockHandle::decode(handle)?;
                        seg.check_data(handle)?;
                        let Some(block) = cache.get_resident(self.file_id, handle.offset) else {
                            *resume = Some(Resume { seg: i, handle });
                            return Ok(CachedGet::NotCached);
                        };
                        if let Some(m) = memo {
                            m.remember(self.file_id, seg.start, lookup, &buf, &block);
                        }
                        block
                    }
                };
                Ok(match self.entry_in(block, lookup, target_user, &mut buf)? {
                    Some((kind, value)) => CachedGet::Found(kind, value),
                    None => CachedGet::Absent,
                })
            })();
            if !matches!(result, Ok(CachedGet::Absent)) {
                break;
            }
        }
        if buf.capacity() <= MAX_RETAINED_KEY_BUF {
            KEY_BUF.with(|c| c.set(buf));
        }
        result.map(|r| (r, resume))
    }

    /// The newest entry of `target_user` at or after `lookup` in a data block;
    /// a value stays in the block.
    fn entry_in(
        &self,
        block: Arc<Block>,
        lookup: &[u8],
        target_user: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<Option<(ValueKind, PinnedValue)>> {
        let corrupt = |what: &str| Error::corruption(format!("table {}: {what}", self.file_id));
        let Some((start, end)) = block.seek_ge_range(lookup, buf)? else {
            return Err(corrupt("index key beyond its data block"));
        };
        let parsed = parse_internal_key(buf)?;
        if parsed.user_key != target_user {
            return Ok(None);
        }
        Ok(Some(match parsed.kind {
            kind @ (ValueKind::Put | ValueKind::Merge) => (
                kind,
                PinnedValue::in_block(block, start, end).ok_or_else(|| corrupt("value outside its block"))?,
            ),
            ValueKind::Delete | ValueKind::RangeDelete => (ValueKind::Delete, PinnedValue::owned(Vec::new())),
        }))
    }

    /// The segments (indexes, oldest first) that may hold a key with the
    /// probe's prefix, and how many segments' filters were asked.
    pub(crate) fn prefix_segments(&self, probe: &PrefixProbe) -> (Vec<usize>, u64) {
        let mut checked = 0;
        let keep = (0..self.segs.len())
            .filter(|&i| {
                let answer = self.segs[i].prefix_check(probe);
                checked += u64::from(answer.is_some());
                answer != Some(false)
            })
            .collect();
        (keep, checked)
    }

    /// The segments, oldest first.
    pub(crate) fn segments(&self) -> &[Segment] {
        &self.segs
    }

    /// Approximate bytes of the data blocks holding keys before `user_key`
    /// (RocksDB `ApproximateOffsetOf`): per segment, the offset of the block
    /// where the key would be, from the index alone (no data block read).
    pub fn approximate_offset_of(&self, user_key: &[u8]) -> Result<u64> {
        let lookup = crate::key::lookup_key(user_key, crate::key::MAX_SEQ);
        let mut buf = Vec::new();
        let mut bytes = 0;
        for seg in &self.segs {
            let at = match seg.index.seek_ge(&lookup, &mut buf)? {
                Some(handle) => BlockHandle::decode(handle)?.offset,
                None => seg.data_end,
            };
            bytes += at.saturating_sub(seg.start);
        }
        Ok(bytes)
    }

    /// Number of segments (1 unless appended to).
    pub fn num_segments(&self) -> usize {
        self.segs.len()
    }

    /// The index block of a one-segment table (last key of each data block ->
    /// encoded [`BlockHandle`]); `None` for a DTable of several segments,
    /// whose indexes are per segment ([`Self::segments`]).
    pub(crate) fn index_block(&self) -> Option<&Arc<Block>> {
        match self.segs.as_slice() {
            [only] => Some(&only.index),
            _ => None,
        }
    }

    /// Returns the data block at `handle` (in whichever segment holds it), from
    /// the cache or the file.
    pub(crate) fn read_block(&self, handle: BlockHandle, opts: BlockReadOptions) -> Result<Arc<Block>> {
        let i = self.segs.partition_point(|s| s.start <= handle.offset).saturating_sub(1);
        self.read_block_ahead(&self.segs[i], handle, opts, None)
    }

    /// [`Self::read_block`] in segment `seg`; on a cache miss with `opts.readahead` and a window,
    /// the block comes from the window, refilled with one read of up to
    /// `opts.readahead` bytes (never past the data blocks) when it lacks it.
    pub(crate) fn read_block_ahead(
        &self,
        seg: &Segment,
        handle: BlockHandle,
        opts: BlockReadOptions,
        window: Option<&mut Readahead>,
    ) -> Result<Arc<Block>> {
        self.read_block_located(seg, handle, opts, window).map_err(|e| self.locate(e))
    }

    fn read_block_located(
        &self,
        seg: &Segment,
        handle: BlockHandle,
        opts: BlockReadOptions,
        window: Option<&mut Readahead>,
    ) -> Result<Arc<Block>> {
        seg.check_data(handle)?;
        let data_end = seg.data_end;
        // Windowed reads (compactions, long scans) keep one `pread` per
        // window; a mapped table serves the others in place.
        let mut mapped = None;
        if let (None, Some(map)) = (&window, &self.map) {
            let stored = stored_range(handle)
                .and_then(|r| map.bytes.bytes().get(r))
                .ok_or_else(|| Error::corruption("block outside the mapped file"))?;
            if let Some(payload) = uncompressed_payload(stored, handle, opts.verify_mapped)? {
                let start = handle.offset as usize;
                return Ok(Arc::new(Block::mapped(Arc::clone(&map.bytes), start, start + payload.len())?));
            }
            mapped = Some(stored);
        }
        if let Some(cache) = &self.cache {
            if let Some(block) = cache.get(self.file_id, handle.offset) {
                return Ok(block);
            }
        }
        let contents = match (window, mapped) {
            // A window with `readahead` 0 (a seeded one) refills with the block alone.
            (Some(w), _) => {
                // check_within bounds the size, so this cannot overflow.
                let len = handle.size as usize + BLOCK_TRAILER_LEN;
                if w.slice(handle.offset, len).is_none() {
                    if !(opts.prefetch && w.take_prefetched(handle.offset, len)?) {
                        let want = (opts.readahead as u64).max(len as u64).min(data_end - handle.offset);
                        let t = Instant::now();
                        w.data = self.file.read_at(handle.offset, want as usize)?;
                        add_read_time(nanos(t), 0, 0);
                        w.offset = handle.offset;
                    }
                    let next = w.offset + w.data.len() as u64;
                    if opts.prefetch && next < data_end {
                        let len = (opts.readahead as u64).min(data_end - next) as usize;
                        w.prefetch(&self.file, next, len);
                    }
                }
                let stored =
                    w.slice(handle.offset, len).ok_or_else(|| Error::corruption("short block read"))?;
                decode_block_contents(stored.into(), handle, opts.verify_checksums)?
            }
            // A compressed block of a mapped table: decompressed from the map.
            (None, Some(stored)) => decode_block_contents(stored.into(), handle, opts.verify_checksums)?,
            (None, None) => read_block_contents(&*self.file, handle, opts.verify_checksums)?,
        };
        let block = Arc::new(Block::new(contents)?);
        if opts.fill_cache {
            if let Some(cache) = &self.cache {
                cache.insert(self.file_id, handle.offset, Arc::clone(&block));
            }
        }
        Ok(block)
    }

    /// Where the data blocks of a one-segment table end (the meta blocks
    /// follow); `None` for a DTable of several segments.
    pub(crate) fn data_end(&self) -> Option<u64> {
        self.index_block().map(|_| self.segs[0].data_end)
    }

    /// `len` raw bytes of a one-segment table's data blocks from `offset` (a
    /// compaction's read stage; blocks are verified when an iterator decodes them).
    pub(crate) fn read_data_range(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let data_end = self.data_end().ok_or_else(|| Error::invalid("read stage over a DTable"))?;
        if offset.checked_add(len as u64).is_none_or(|end| end > data_end) {
            return Err(Error::corruption(format!(
                "table {}: data range {offset}+{len} past the data blocks ({data_end})",
                self.file_id
            )));
        }
        self.file.read_at(offset, len)
    }

    /// The file number this table was opened as.
    pub fn file_id(&self) -> u64 {
        self.file_id
    }

    /// The table's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Number of data blocks.
    pub fn num_data_blocks(&self) -> u64 {
        self.props.num_data_blocks
    }

    /// The table's range tombstones, fragmented.
    pub(crate) fn range_dels(&self) -> &Arc<Fragments> {
        &self.range_dels
    }

    /// The properties block (of a DTable: its segments' counts summed, their
    /// bounds combined, the first segment's filter bits and compression).
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// Bytes of index and filter held in memory.
    pub fn memory_usage(&self) -> usize {
        self.segs.iter().map(Segment::memory_usage).sum()
    }
}

/// Where the stored block `handle` (payload and trailer) lies in the file,
/// if the range fits in memory.
fn stored_range(handle: BlockHandle) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(handle.offset).ok()?;
    let len = usize::try_from(handle.size).ok()?.checked_add(BLOCK_TRAILER_LEN)?;
    Some(start..start.checked_add(len)?)
}

/// One set of properties for a table of `segs` (at least one).
fn sum_properties(segs: &[Segment]) -> TableProperties {
    let mut p = segs[0].props.clone();
    for s in &segs[1..] {
        let q = &s.props;
        p.num_entries += q.num_entries;
        p.num_deletions += q.num_deletions;
        p.num_data_blocks += q.num_data_blocks;
        p.raw_key_bytes += q.raw_key_bytes;
        p.raw_value_bytes += q.raw_value_bytes;
        if q.num_entries > 0 {
            if p.smallest.is_empty() || compare_internal(&q.smallest, &p.smallest).is_lt() {
                p.smallest = q.smallest.clone();
            }
            if p.largest.is_empty() || compare_internal(&q.largest, &p.largest).is_gt() {
                p.largest = q.largest.clone();
            }
        }
    }
    p.segment_start = 0;
    p
}
