//! Segments: a table file is one or more self-contained sorted segments laid
//! end to end, each with its own data blocks, filter, properties, index and
//! footer. A file written once has one; light-weight compaction (the `lwc`
//! policy) appends more. Block offsets are absolute file offsets, so an
//! append never moves a block and the block cache's (file, offset) keys stay
//! valid. Which segments belong to the table is recorded in the MANIFEST
//! ([`SegmentMeta`]), not found in the file: bytes past the recorded end are
//! an append that never committed.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::prefix::PrefixProbe;
use crate::range_del::{decode_block, RangeTombstone};
use crate::table::block::Block;
use crate::table::filter::BloomFilter;
use crate::table::filter_patch::{FilterPatch, PATCH_MAGIC};
use crate::table::format::{read_block_contents, BlockHandle, Footer, TableProperties, FOOTER_LEN};
use crate::util::crc::crc32c;
use crate::vfs::RandomAccessFile;

/// Where one segment ends and the checksum of its footer, as the MANIFEST
/// records them for a table of two or more segments. The segment starts where
/// the previous one ends (the first at offset 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentMeta {
    /// File offset one past the segment's footer.
    pub end: u64,
    /// CRC32C of the segment's 64 footer bytes.
    pub footer_crc: u32,
}

/// Checks a MANIFEST segment list against the table size: empty (one segment
/// spanning the file), or at least two segments, ends strictly increasing
/// with room for a footer each, the last at `size`.
pub fn check_segment_list(segments: &[SegmentMeta], size: u64) -> std::result::Result<(), String> {
    check_segment_ends(segments, size, FOOTER_LEN as u64)
}

/// [`check_segment_list`] with segments of at least `min_len` bytes (the
/// version builder checks the list's shape only: the simulator's tables are
/// sizes without bytes).
pub(crate) fn check_segment_ends(
    segments: &[SegmentMeta],
    size: u64,
    min_len: u64,
) -> std::result::Result<(), String> {
    if segments.is_empty() {
        return Ok(());
    }
    if segments.len() == 1 {
        return Err("a one-segment table lists no segments".into());
    }
    let mut start = 0u64;
    for s in segments {
        if s.end < start.saturating_add(min_len.max(1)) {
            return Err(format!("segment ending at {} is shorter than {} bytes", s.end, min_len.max(1)));
        }
        start = s.end;
    }
    if start != size {
        return Err(format!("last segment ends at {start}, the table is {size} bytes"));
    }
    Ok(())
}

/// One open segment: its index, filter and properties in memory.
pub(crate) struct Segment {
    /// File offset of the segment's first block.
    pub(crate) start: u64,
    /// End of its data blocks (its meta blocks follow).
    pub(crate) data_end: u64,
    /// One past its footer (a filter patch may follow).
    pub(crate) end: u64,
    pub(crate) index: Arc<Block>,
    pub(crate) filter: Option<BloomFilter>,
    pub(crate) props: TableProperties,
    /// The range-deletion block's tombstones (empty without one).
    pub(crate) range_dels: Vec<RangeTombstone>,
}

impl Segment {
    /// Opens the segment `[start, end)` of `file`: reads and verifies its footer
    /// (against `footer_crc` when the MANIFEST gave one), index, filter and
    /// properties, and checks that every meta block lies inside the segment.
    /// A segment that ends in a filter patch (`filter_patch.rs`) is the
    /// segment ending at the patch's `table_end`, with the patch's filter;
    /// `footer_crc` is then the patch footer's.
    pub(crate) fn open(
        file: &dyn RandomAccessFile,
        file_id: u64,
        start: u64,
        end: u64,
        footer_crc: Option<u32>,
    ) -> Result<Segment> {
        let bad = |what: String| Error::corruption(format!("table {file_id} segment at {start}: {what}"));
        let tail = file.read_at(footer_at(file_id, start, end)?, FOOTER_LEN)?;
        if let Some(want) = footer_crc {
            if crc32c(&tail) != want {
                return Err(bad("footer is not the one the MANIFEST records".into()));
            }
        }
        if !FilterPatch::is_patch(&tail) {
            return Self::from_footer(file, file_id, start, end, &tail);
        }
        let patch = FilterPatch::decode(&tail, end).map_err(|e| bad(e.to_string()))?;
        let table_end = patch.table_end;
        let footer_bytes = file.read_at(footer_at(file_id, start, table_end)?, FOOTER_LEN)?;
        // `from_footer` refuses a patch footer here: patches do not nest.
        let mut seg = Self::from_footer(file, file_id, start, table_end, &footer_bytes)?;
        seg.apply_patch(file, file_id, &patch)?;
        Ok(seg)
    }

    /// The segment `[start, end)` whose table footer (`footer_bytes`, the 64
    /// bytes before `end`) has been read.
    fn from_footer(
        file: &dyn RandomAccessFile,
        file_id: u64,
        start: u64,
        end: u64,
        footer_bytes: &[u8],
    ) -> Result<Segment> {
        let bad = |what: String| Error::corruption(format!("table {file_id} segment at {start}: {what}"));
        let footer_at = footer_at(file_id, start, end)?;
        let footer = Footer::decode(footer_bytes, end)?;
        let handles = [footer.index, footer.properties]
            .into_iter()
            .chain((footer.filter.size != 0).then_some(footer.filter));
        for h in handles.clone() {
            if h.offset < start {
                return Err(bad(format!("meta block at {} before the segment", h.offset)));
            }
        }
        let index = Arc::new(Block::new(read_block_contents(file, footer.index, true)?)?);
        let props = TableProperties::decode(&read_block_contents(file, footer.properties, true)?)?;
        if props.segment_start != start {
            return Err(bad(format!("properties say the segment starts at {}", props.segment_start)));
        }
        let filter = if footer.filter.size == 0 {
            None
        } else {
            Some(BloomFilter::new(read_block_contents(file, footer.filter, true)?)?)
        };
        let range_dels = match props.range_del {
            None => Vec::new(),
            Some(h) => {
                if h.offset < start {
                    return Err(bad(format!("range-deletion block at {} before the segment", h.offset)));
                }
                h.check_within(footer_at, "range-deletion")?;
                decode_block(&read_block_contents(file, h, true)?).map_err(|e| bad(e.to_string()))?
            }
        };
        let data_end =
            handles.map(|h| h.offset).chain(props.range_del.map(|h| h.offset)).min().unwrap_or(footer_at);
        Ok(Segment { start, data_end, end, index, filter, props, range_dels })
    }

    /// Puts `patch`'s filter in place of the one the segment was written
    /// with: it holds every whole key, and the prefixes only if the patch
    /// says so. A patch only replaces a filter (a table written without one
    /// gets none later).
    fn apply_patch(&mut self, file: &dyn RandomAccessFile, file_id: u64, patch: &FilterPatch) -> Result<()> {
        if self.filter.is_none() {
            return Err(Error::corruption(format!(
                "table {file_id}: a filter patch replaces a filter the table does not have"
            )));
        }
        self.filter = Some(BloomFilter::new(read_block_contents(file, patch.filter, true)?)?);
        self.props.bloom_bits_per_key = patch.bits_per_key;
        self.props.whole_key_filtering = true;
        if !patch.has_prefixes {
            self.props.prefix_extractor = None;
        }
        Ok(())
    }

    /// Checks that a data block handle lies in this segment's data area.
    #[inline]
    pub(crate) fn check_data(&self, handle: BlockHandle) -> Result<()> {
        if handle.offset < self.start {
            return Err(Error::corruption(format!(
                "data block handle {}+{} before its segment (at {})",
                handle.offset, handle.size, self.start
            )));
        }
        handle.check_within(self.data_end, "data")
    }

    /// False only if the segment certainly holds no entry of `user_key`.
    #[inline]
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.whole_key_filter().is_none_or(|f| f.may_contain(user_key))
    }

    /// [`Self::may_contain`] for a key whose filter hash is `h`.
    #[inline]
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        self.whole_key_filter().is_none_or(|f| f.may_contain_hash(h))
    }

    /// The filter, if it holds whole keys (a prefix-only filter cannot answer
    /// for a key).
    #[inline]
    pub(crate) fn whole_key_filter(&self) -> Option<&BloomFilter> {
        self.filter.as_ref().filter(|_| self.props.whole_key_filtering)
    }

    /// The prefix filter's answer for the probe: `None` unless the filter
    /// holds the prefixes of that very extractor (any other segment may hold
    /// the prefix), else false only if no key of the segment has it.
    pub(crate) fn prefix_check(&self, probe: &PrefixProbe) -> Option<bool> {
        match (&self.filter, &self.props.prefix_extractor) {
            (Some(f), Some(name)) if *name == probe.extractor => Some(f.may_contain(&probe.prefix)),
            _ => None,
        }
    }

    pub(crate) fn memory_usage(&self) -> usize {
        self.index.memory_size() + self.filter.as_ref().map_or(0, BloomFilter::memory_size)
    }
}

/// Where the footer of the segment `[start, end)` starts, if it fits.
fn footer_at(file_id: u64, start: u64, end: u64) -> Result<u64> {
    end.checked_sub(FOOTER_LEN as u64).filter(|&f| f >= start).ok_or_else(|| {
        Error::corruption(format!("table {file_id} segment at {start}: no room for a footer before {end}"))
    })
}

/// Finds a table file's segments (and the length they cover) from its bytes
/// alone, newest last: from the
/// footer at `len` back along each segment's recorded start. Repair uses it
/// (the MANIFEST that lists the segments may be what was lost). A tail that
/// does not chain back to offset 0 (an append cut short) is skipped by
/// searching backwards for the last footer that does.
pub fn discover_segments(
    file: &dyn RandomAccessFile,
    file_id: u64,
    len: u64,
) -> Result<(Vec<SegmentMeta>, u64)> {
    let first = match chain_from(file, file_id, len) {
        Ok(segs) => return Ok((segs, len)),
        Err(e) => e,
    };
    let data = file.read_at(0, usize::try_from(len).map_err(|_| Error::corruption("file too large"))?)?;
    let magics = [crate::table::format::TABLE_MAGIC.to_le_bytes(), PATCH_MAGIC.to_le_bytes()];
    // Each candidate end is a footer's (or a filter patch's) last byte; false
    // matches fail their checksum.
    let mut upto = data.len().saturating_sub(1);
    while let Some(p) = data[..upto].windows(8).rposition(|w| magics.iter().any(|m| w == m)) {
        let end = (p + 8) as u64;
        if end >= FOOTER_LEN as u64 {
            if let Ok(segs) = chain_from(file, file_id, end) {
                return Ok((segs, end));
            }
        }
        upto = p + 7;
    }
    Err(first)
}

/// The segments ending at `end`, if its footer chains back to offset 0.
fn chain_from(file: &dyn RandomAccessFile, file_id: u64, end: u64) -> Result<Vec<SegmentMeta>> {
    let mut segs = Vec::new();
    let mut at = end;
    while at > 0 {
        let footer_at = at.checked_sub(FOOTER_LEN as u64).ok_or_else(|| Error::corruption("no footer"))?;
        let bytes = file.read_at(footer_at, FOOTER_LEN)?;
        // A segment that ends in a filter patch: its own footer is at the patch's table end.
        let (table_end, own) = if FilterPatch::is_patch(&bytes) {
            let table_end = FilterPatch::decode(&bytes, at)?.table_end;
            let own_at =
                table_end.checked_sub(FOOTER_LEN as u64).ok_or_else(|| Error::corruption("no footer"))?;
            (table_end, file.read_at(own_at, FOOTER_LEN)?)
        } else {
            (at, bytes.clone())
        };
        let footer = Footer::decode(&own, table_end)?;
        let props = TableProperties::decode(&read_block_contents(file, footer.properties, true)?)?;
        if props.segment_start >= table_end {
            return Err(Error::corruption(format!(
                "table {file_id}: segment start {} past its end",
                props.segment_start
            )));
        }
        segs.push(SegmentMeta { end: at, footer_crc: crc32c(&bytes) });
        at = props.segment_start;
    }
    segs.reverse();
    if segs.len() == 1 {
        segs.clear();
    }
    Ok(segs)
}
