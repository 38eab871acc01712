//! The segment appender of light-weight compaction: a sorted stream cut by
//! bounds into one new segment per target table, appended at the end of the
//! target's file (`compaction::append` runs the task).
//!
//! Durability: each segment is synced before the MANIFEST edit that lists it
//! (new length, segment ends, footer checksums) is written; until that edit
//! is durable the bytes past the recorded length are not part of the table,
//! and recovery cuts them off. A target is cut back to its recorded length
//! before the append, in case an earlier attempt failed after writing. A
//! target file with more than one name (hard-linked into a checkpoint or
//! backup) is first replaced by a private copy (`compaction::unshare`).

use std::sync::Arc;

use super::verify::read_back;
use super::{Env, TableSink};
use crate::compaction::unshare::unshare_table;
use crate::error::{Error, Result};
use crate::key::{compare_internal, user_key, SeqNum};
use crate::table::format::FOOTER_LEN;
use crate::table::{Expected, SegmentMeta, TableBuilder, TableBuilderOptions};
use crate::util::crc::crc32c;
use crate::version::{FileMeta, NewFile};
use crate::vfs::{RandomOpenOptions, WritableFile};

/// The segment being written: target index, builder, sequence bounds.
struct OpenSegment {
    target: usize,
    builder: TableBuilder,
    smallest_seq: SeqNum,
    largest_seq: SeqNum,
}

/// Appends one segment to each target that receives entries: target `j`
/// takes the user keys in `[bounds[j-1], bounds[j])`.
pub(crate) struct Appender<'e, 'a> {
    env: &'e Env<'a>,
    dests: &'e [Arc<FileMeta>],
    bounds: &'e [Vec<u8>],
    /// Filter bits of a target that did not record its own.
    level_bits: f64,
    open: Option<OpenSegment>,
    /// Each target appended to, as the edit will list it.
    grown: Vec<NewFile>,
}

impl<'e, 'a> Appender<'e, 'a> {
    pub(crate) fn new(
        env: &'e Env<'a>,
        dests: &'e [Arc<FileMeta>],
        bounds: &'e [Vec<u8>],
        level_bits: f64,
    ) -> Self {
        Appender { env, dests, bounds, level_bits, open: None, grown: Vec::new() }
    }

    /// Opens target `j` for append at its recorded length.
    fn start(&self, j: usize) -> Result<OpenSegment> {
        let meta = self.dests.get(j).ok_or_else(|| Error::invalid("append routed past its targets"))?;
        let env = self.env;
        let file = open_at_recorded_end(env, meta)?;
        let bits = meta.bloom_bits_per_key.unwrap_or(self.level_bits);
        let opts = TableBuilderOptions::for_write(env.opts, bits, env.pipeline);
        Ok(OpenSegment {
            target: j,
            builder: TableBuilder::new(file, opts),
            smallest_seq: SeqNum::MAX,
            largest_seq: 0,
        })
    }

    /// Finishes (and syncs) the open segment and reads the grown table back.
    fn finish_open(&mut self) -> Result<()> {
        let Some(o) = self.open.take() else { return Ok(()) };
        let meta = Arc::clone(&self.dests[o.target]);
        let s = o.builder.finish()?;
        let mut segments = meta.segments.clone();
        if segments.is_empty() {
            segments.push(SegmentMeta { end: meta.size, footer_crc: self.footer_crc(&meta)? });
        }
        segments.push(SegmentMeta { end: s.file_size, footer_crc: s.footer_crc });
        let smaller = |a: &[u8], b: &[u8]| compare_internal(a, b).is_lt();
        let nf = NewFile {
            id: meta.id,
            size: s.file_size,
            smallest: if smaller(&s.smallest, &meta.smallest) {
                s.smallest.clone()
            } else {
                meta.smallest.clone()
            },
            largest: if smaller(&meta.largest, &s.largest) {
                s.largest.clone()
            } else {
                meta.largest.clone()
            },
            num_entries: meta.num_entries + s.num_entries,
            num_deletions: meta.num_deletions + s.num_deletions,
            smallest_seq: meta.smallest_seq.min(o.smallest_seq),
            largest_seq: meta.largest_seq.max(o.largest_seq),
            bloom_bits_per_key: meta.bloom_bits_per_key,
            segments,
            num_range_dels: meta.num_range_dels,
        };
        self.grown.push(nf.clone());
        // The grown table opened as its next Version will (every segment's
        // footer, index, filter and properties), all of it with `paranoid_file_checks`.
        let expect = Expected { entries: Some(nf.num_entries), bounds: None };
        read_back(self.env, nf.id, nf.size, &nf.segments, &expect).map_err(|e| {
            Error::corruption(format!("table {:06}.sst failed verification after an append: {e}", nf.id))
        })
    }

    /// The checksum of a one-segment table's footer, which the MANIFEST lists
    /// once the table has two.
    fn footer_crc(&self, meta: &FileMeta) -> Result<u32> {
        let path = self.env.tables.paths().table(meta.id);
        let file = self.env.vfs.open_random(&path, RandomOpenOptions::default())?;
        let at =
            meta.size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| Error::corruption("table too short"))?;
        Ok(crc32c(&file.read_at(at, FOOTER_LEN)?))
    }
}

/// Opens the file of `meta` for append at its recorded length: the one way
/// bytes are added to an existing table (a segment, a filter patch). Never
/// into an inode a checkpoint or backup shares (the copy keeps only the
/// recorded bytes); bytes past the recorded length, left by an attempt that
/// failed after writing, are cut off first.
pub(super) fn open_at_recorded_end(env: &Env<'_>, meta: &FileMeta) -> Result<Box<dyn WritableFile>> {
    let path = env.tables.paths().table(meta.id);
    unshare_table(env.vfs, &path, meta.id, meta.size)?;
    if env.vfs.file_size(&path)? > meta.size {
        env.vfs.truncate(&path, meta.size)?;
    }
    let file = env.vfs.open_append(&path)?;
    if file.len() != meta.size {
        return Err(Error::corruption(format!(
            "table {:06}.sst is {} bytes, the MANIFEST recorded {}",
            meta.id,
            file.len(),
            meta.size
        )));
    }
    Ok(file)
}

impl TableSink for Appender<'_, '_> {
    fn add(&mut self, ikey: &[u8], value: &[u8], seq: SeqNum) -> Result<()> {
        let target = self.bounds.partition_point(|b| b.as_slice() <= user_key(ikey));
        if self.open.as_ref().is_some_and(|o| o.target != target) {
            self.finish_open()?;
        }
        if self.open.is_none() {
            self.open = Some(self.start(target)?);
        }
        if let Some(o) = &mut self.open {
            o.builder.add(ikey, value)?;
            o.smallest_seq = o.smallest_seq.min(seq);
            o.largest_seq = o.largest_seq.max(seq);
        }
        Ok(())
    }

    /// Finishes the last segment; every grown table is synced and read back.
    fn finish(mut self) -> Result<Vec<NewFile>> {
        self.finish_open()?;
        Ok(std::mem::take(&mut self.grown))
    }
}

impl Drop for Appender<'_, '_> {
    /// An abandoned append (error path): handles opened on the new lengths
    /// describe segments no Version lists.
    fn drop(&mut self) {
        for nf in &self.grown {
            self.env.tables.evict(nf.id);
        }
    }
}
