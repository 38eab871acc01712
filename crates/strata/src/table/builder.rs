//! Writes a table: data blocks, then the filter, properties and index blocks,
//! then the footer.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::key::{compare_internal, parse_internal_key, user_key, ValueKind};
use crate::options::kinds::{CompactionPipeline, CompressionType};
use crate::options::Options;
use crate::prefix::PrefixExtractor;
use crate::range_del::RangeTombstone;
use crate::table::block::BlockBuilder;
use crate::table::filter::FilterFeed;
use crate::table::format::{BlockHandle, Footer, TableProperties};
use crate::table::observer::DataBlockObserver;
use crate::table::pipeline::{BlockPipeline, DataWriter, Progress};
use crate::vfs::WritableFile;

/// Largest key + value a table accepts in one entry, so that any block stays
/// well below the reader's `MAX_BLOCK_LEN`. Writes check it up front
/// ([`crate::MAX_ENTRY_BYTES`]) so the WAL never holds an entry no table can take.
pub(crate) const MAX_ENTRY_LEN: usize = 512 << 20;
/// Largest target block size honoured (larger requests are clamped).
const MAX_TARGET_BLOCK_SIZE: usize = 256 << 20;

/// The bits per key a table built with `bloom_bits_per_key` really gets: 0
/// (no filter) unless it is a positive finite number.
pub fn effective_bloom_bits(bloom_bits_per_key: f64) -> f64 {
    if bloom_bits_per_key > 0.0 && bloom_bits_per_key.is_finite() {
        bloom_bits_per_key
    } else {
        0.0
    }
}

/// How a table is laid out.
#[derive(Debug, Clone, PartialEq)]
pub struct TableBuilderOptions {
    /// Prefixes the filter also holds (RocksDB `prefix_extractor`); its name
    /// goes into the table's properties.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Whether the filter holds whole user keys (RocksDB `whole_key_filtering`).
    pub whole_key_filtering: bool,
    /// Target uncompressed size of a data block; a block is cut once it reaches this.
    pub block_size: usize,
    /// Entries between restart points in data blocks (0 acts as 1).
    pub block_restart_interval: usize,
    /// Bloom filter bits per distinct user key; 0 (or negative) writes no filter.
    pub bloom_bits_per_key: f64,
    /// Compression of data and index blocks.
    pub compression: CompressionType,
    /// Which threads compress, checksum and write the data blocks.
    pub pipeline: CompactionPipeline,
}

impl Default for TableBuilderOptions {
    fn default() -> Self {
        TableBuilderOptions {
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10.0,
            compression: CompressionType::None,
            pipeline: CompactionPipeline::Sequential,
            prefix_extractor: None,
            whole_key_filtering: true,
        }
    }
}

impl TableBuilderOptions {
    /// The layout every table the engine writes gets from `opts` (flushes,
    /// merges, appended segments, WAL replay and repair alike): only the
    /// filter's bits per key and the output pipeline differ between writes.
    pub(crate) fn for_write(opts: &Options, bloom_bits_per_key: f64, pipeline: CompactionPipeline) -> Self {
        TableBuilderOptions {
            block_size: opts.block_size,
            block_restart_interval: opts.block_restart_interval,
            bloom_bits_per_key: effective_bloom_bits(bloom_bits_per_key),
            compression: opts.compression,
            pipeline,
            prefix_extractor: opts.prefix_extractor.clone(),
            whole_key_filtering: opts.whole_key_filtering,
        }
    }
}

/// What a finished table holds; `smallest`/`largest` are internal keys (empty
/// for a table without entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSummary {
    /// Total bytes written, footer included.
    pub file_size: u64,
    /// Entries (puts and deletes).
    pub num_entries: u64,
    /// Delete entries.
    pub num_deletions: u64,
    /// Data blocks written.
    pub num_data_blocks: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Where the table's blocks start in the file: 0, or the old length of a
    /// file this table was appended to as a new segment.
    pub segment_start: u64,
    /// CRC32C of the 64 footer bytes, which the MANIFEST records for an
    /// appended segment so a reader trusts exactly the footer that was written.
    pub footer_crc: u32,
}

/// Where finished data blocks go: written on this thread, or handed to the
/// seal and write threads (started at the first data block, so an observer
/// set before it travels with the file).
enum BlockOut {
    Inline(DataWriter),
    Pipelined(BlockPipeline),
    /// The pipeline failed and was joined; the table cannot be finished.
    Failed,
}

/// Streams sorted entries into a table file.
pub struct TableBuilder {
    opts: TableBuilderOptions,
    out: BlockOut,
    data_block: BlockBuilder,
    filter: Option<FilterFeed>,
    props: TableProperties,
    /// Range tombstones for the range-deletion block (see `range_del.rs`).
    range_dels: Vec<RangeTombstone>,
    /// First key of the data block being filled (the warm-up observer's).
    first_key: Vec<u8>,
}

impl TableBuilder {
    /// Starts a table at the current end of `file`: a new, empty file, or a
    /// table file opened for append, which receives a new segment (block
    /// offsets are absolute, so the blocks already there never move).
    pub fn new(file: Box<dyn WritableFile>, mut opts: TableBuilderOptions) -> Self {
        opts.block_size = opts.block_size.min(MAX_TARGET_BLOCK_SIZE);
        let bits = effective_bloom_bits(opts.bloom_bits_per_key);
        let data_block = BlockBuilder::new(opts.block_restart_interval);
        let compression = opts.compression;
        let writer = DataWriter::new(file);
        let segment_start = writer.offset;
        // A filter that would hold nothing is not written.
        let has_filter = bits > 0.0 && (opts.whole_key_filtering || opts.prefix_extractor.is_some());
        let prefix_extractor =
            opts.prefix_extractor.as_ref().filter(|_| has_filter).map(|p| p.name().to_owned());
        let whole_key_filtering = has_filter && opts.whole_key_filtering;
        let filter =
            has_filter.then(|| FilterFeed::new(bits, whole_key_filtering, opts.prefix_extractor.clone()));
        TableBuilder {
            out: BlockOut::Inline(writer),
            opts,
            data_block,
            filter,
            props: TableProperties {
                num_entries: 0,
                num_deletions: 0,
                num_data_blocks: 0,
                raw_key_bytes: 0,
                raw_value_bytes: 0,
                bloom_bits_per_key: bits,
                compression,
                smallest: Vec::new(),
                largest: Vec::new(),
                segment_start,
                prefix_extractor,
                whole_key_filtering,
                range_del: None,
            },
            range_dels: Vec::new(),
            first_key: Vec::new(),
        }
    }

    /// Shows every data block written from now on to `observer`.
    pub(crate) fn set_observer(&mut self, observer: Box<dyn DataBlockObserver>) {
        if let BlockOut::Inline(w) = &mut self.out {
            w.observer = Some(observer);
        }
    }

    /// Appends an entry; internal keys must be strictly increasing.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let parsed =
            parse_internal_key(ikey).map_err(|_| Error::invalid("table key is not an internal key"))?;
        if ikey.len().saturating_add(value.len()) > MAX_ENTRY_LEN {
            return Err(Error::invalid("table entry larger than 512 MiB"));
        }
        let first = self.props.num_entries == 0;
        if !first && compare_internal(&self.props.largest, ikey) != Ordering::Less {
            return Err(Error::invalid("table keys must be added in strictly increasing order"));
        }
        if let Some(f) = &mut self.filter {
            if first || user_key(&self.props.largest) != parsed.user_key {
                f.add(parsed.user_key);
            }
        }
        if first {
            self.props.smallest = ikey.to_vec();
        }
        self.props.largest.clear();
        self.props.largest.extend_from_slice(ikey);
        self.props.num_entries += 1;
        self.props.num_deletions += u64::from(parsed.kind == ValueKind::Delete);
        self.props.raw_key_bytes += ikey.len() as u64;
        self.props.raw_value_bytes += value.len() as u64;
        if self.data_block.is_empty() {
            self.first_key.clear();
            self.first_key.extend_from_slice(ikey);
        }
        self.data_block.add(ikey, value);
        if self.data_block.estimated_size() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the size of the block being filled (with a
    /// pipeline, blocks still in flight count at the compression ratio so far).
    pub fn estimated_file_size(&self) -> u64 {
        let pending = if self.data_block.is_empty() { 0 } else { self.data_block.estimated_size() };
        let out = match &self.out {
            BlockOut::Inline(w) => w.offset,
            BlockOut::Pipelined(p) => p.estimated_size(),
            BlockOut::Failed => 0,
        };
        out + pending as u64
    }

    /// The file size to cut on once it may have reached `target`: the estimate
    /// while it is below, and with a pipeline the exact size above it (blocks
    /// in flight are written first), so files are not cut short on a
    /// compression ratio that was guessed.
    pub(crate) fn size_for_cut(&mut self, target: u64) -> Result<u64> {
        let estimate = self.estimated_file_size();
        if estimate < target {
            return Ok(estimate);
        }
        let pending = if self.data_block.is_empty() { 0 } else { self.data_block.estimated_size() as u64 };
        match &mut self.out {
            BlockOut::Pipelined(p) => match p.settle() {
                Ok(written) => Ok(written + pending),
                Err(e) => {
                    let BlockOut::Pipelined(p) = std::mem::replace(&mut self.out, BlockOut::Failed) else {
                        return Err(e);
                    };
                    Err(p.finish().err().unwrap_or(e))
                }
            },
            _ => Ok(estimate),
        }
    }

    /// Adds this table's stage times to `progress` (set before the first block).
    pub(crate) fn set_progress(&mut self, progress: Arc<Progress>) {
        if let BlockOut::Inline(w) = &mut self.out {
            w.progress = progress;
        }
    }

    /// Writes the pending data block and its index entry, or hands it to the pipeline.
    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let threads = self.opts.pipeline.compute_threads();
        if threads > 0 && matches!(self.out, BlockOut::Inline(_)) {
            let BlockOut::Inline(w) = std::mem::replace(&mut self.out, BlockOut::Failed) else {
                return Err(Error::invalid("table builder state"));
            };
            self.out = BlockOut::Pipelined(BlockPipeline::start(w, self.opts.compression, threads)?);
        }
        match &mut self.out {
            BlockOut::Inline(w) => {
                let raw = self.data_block.finish();
                let handle = w.write_data_block(raw, self.opts.compression)?;
                // The block's last key is the last key added.
                w.data_block_written(handle, &self.first_key, &self.props.largest, raw);
            }
            BlockOut::Pipelined(p) => {
                let raw = self.data_block.finish().to_vec();
                let first = std::mem::take(&mut self.first_key);
                if let Err(e) = p.submit(raw, first, self.props.largest.clone()) {
                    // Report the stage's own error, not the hand-over's.
                    let BlockOut::Pipelined(p) = std::mem::replace(&mut self.out, BlockOut::Failed) else {
                        return Err(e);
                    };
                    return Err(p.finish().err().unwrap_or(e));
                }
            }
            BlockOut::Failed => return Err(Error::invalid("table builder used after a failed write")),
        }
        self.data_block.reset();
        self.props.num_data_blocks += 1;
        Ok(())
    }

    /// Range tombstones to store in the table's range-deletion block.
    pub(crate) fn set_range_dels(&mut self, tombs: Vec<RangeTombstone>) {
        self.range_dels = tombs;
    }

    /// Writes the remaining data, the filter, properties and index blocks and
    /// the footer, then syncs the file.
    pub fn finish(mut self) -> Result<TableSummary> {
        self.flush_data_block()?;
        let mut w = match std::mem::replace(&mut self.out, BlockOut::Failed) {
            BlockOut::Inline(w) => w,
            BlockOut::Pipelined(p) => p.finish()?,
            BlockOut::Failed => return Err(Error::invalid("table builder used after a failed write")),
        };
        if w.num_data_blocks != self.props.num_data_blocks {
            return Err(Error::Io(std::io::Error::other("table pipeline lost a data block")));
        }
        let filter_block = self.filter.as_ref().map(|f| f.finish());
        // The table's tail and its sync are the write stage's work too (the
        // paper's S7 ends when the table is durable), on whichever thread
        // finishes the table.
        let tail = std::time::Instant::now();
        let filter = match &filter_block {
            Some(f) => w.write_block(f, CompressionType::None)?,
            None => BlockHandle::default(),
        };
        if !self.range_dels.is_empty() {
            let block = crate::range_del::encode_block(&self.range_dels);
            self.props.range_del = Some(w.write_block(&block, CompressionType::None)?);
        }
        let properties = w.write_block(&self.props.encode(), CompressionType::None)?;
        let index_raw = w.index_block.finish().to_vec();
        let index = w.write_block(&index_raw, self.opts.compression)?;
        let footer = Footer { filter, properties, index }.encode();
        w.file.append(&footer)?;
        w.offset += crate::table::format::FOOTER_LEN as u64;
        w.file.sync()?;
        w.progress.add_write(tail.elapsed());
        let p = self.props;
        Ok(TableSummary {
            file_size: w.offset,
            num_entries: p.num_entries,
            num_deletions: p.num_deletions,
            num_data_blocks: p.num_data_blocks,
            smallest: p.smallest,
            largest: p.largest,
            segment_start: p.segment_start,
            footer_crc: crate::util::crc::crc32c(&footer),
        })
    }
}
