//! Writes a table: data blocks, then the filter, properties and index blocks,
//! then the footer.

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::key::{compare_internal, parse_internal_key, user_key, ValueKind};
use crate::options::CompressionType;
use crate::table::block::BlockBuilder;
use crate::table::filter::FilterBuilder;
use crate::table::format::{block_trailer, compress_block, BlockHandle, Footer, TableProperties};
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
    /// Target uncompressed size of a data block; a block is cut once it reaches this.
    pub block_size: usize,
    /// Entries between restart points in data blocks (0 acts as 1).
    pub block_restart_interval: usize,
    /// Bloom filter bits per distinct user key; 0 (or negative) writes no filter.
    pub bloom_bits_per_key: f64,
    /// Compression of data and index blocks.
    pub compression: CompressionType,
}

impl Default for TableBuilderOptions {
    fn default() -> Self {
        TableBuilderOptions {
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10.0,
            compression: CompressionType::None,
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
}

/// Sees each data block as a [`TableBuilder`] writes it (the compaction
/// warm-up of the block cache).
pub(crate) trait DataBlockObserver: Send + Sync {
    /// A data block was written at `handle`; `raw` is its uncompressed payload
    /// (what a read decodes), `first` and `last` its first and last internal keys.
    fn data_block(&mut self, handle: BlockHandle, first: &[u8], last: &[u8], raw: &[u8]);
}

/// Streams sorted entries into a table file.
pub struct TableBuilder {
    file: Box<dyn WritableFile>,
    opts: TableBuilderOptions,
    offset: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    filter: Option<FilterBuilder>,
    props: TableProperties,
    handle_buf: Vec<u8>,
    observer: Option<Box<dyn DataBlockObserver>>,
    /// First key of the data block being filled, kept only for the observer.
    first_key: Vec<u8>,
}

impl TableBuilder {
    /// Starts a table at the current end of `file` (normally a new, empty file).
    pub fn new(file: Box<dyn WritableFile>, mut opts: TableBuilderOptions) -> Self {
        opts.block_size = opts.block_size.min(MAX_TARGET_BLOCK_SIZE);
        let bits = effective_bloom_bits(opts.bloom_bits_per_key);
        let offset = file.len();
        let data_block = BlockBuilder::new(opts.block_restart_interval);
        let compression = opts.compression;
        TableBuilder {
            file,
            opts,
            offset,
            data_block,
            index_block: BlockBuilder::new(1),
            filter: (bits > 0.0).then(|| FilterBuilder::new(bits)),
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
            },
            handle_buf: Vec::with_capacity(20),
            observer: None,
            first_key: Vec::new(),
        }
    }

    /// Shows every data block written from now on to `observer`.
    pub(crate) fn set_observer(&mut self, observer: Box<dyn DataBlockObserver>) {
        self.observer = Some(observer);
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
        if self.observer.is_some() && self.data_block.is_empty() {
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

    /// Bytes written so far plus the size of the block being filled.
    pub fn estimated_file_size(&self) -> u64 {
        let pending = if self.data_block.is_empty() { 0 } else { self.data_block.estimated_size() };
        self.offset + pending as u64
    }

    /// Writes the pending data block and its index entry.
    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish();
        let handle = write_block(&mut *self.file, &mut self.offset, raw, self.opts.compression)?;
        if let Some(o) = &mut self.observer {
            // The block's last key is the last key added.
            o.data_block(handle, &self.first_key, &self.props.largest, raw);
        }
        self.handle_buf.clear();
        handle.encode_to(&mut self.handle_buf);
        self.index_block.add(self.data_block.last_key(), &self.handle_buf);
        self.data_block.reset();
        self.props.num_data_blocks += 1;
        Ok(())
    }

    /// Writes the remaining data, the filter, properties and index blocks and
    /// the footer, then syncs the file.
    pub fn finish(mut self) -> Result<TableSummary> {
        self.flush_data_block()?;
        let filter = match &self.filter {
            Some(f) => write_block(&mut *self.file, &mut self.offset, &f.finish(), CompressionType::None)?,
            None => BlockHandle::default(),
        };
        let properties =
            write_block(&mut *self.file, &mut self.offset, &self.props.encode(), CompressionType::None)?;
        let index =
            write_block(&mut *self.file, &mut self.offset, self.index_block.finish(), self.opts.compression)?;
        self.file.append(&Footer { filter, properties, index }.encode())?;
        self.offset += crate::table::format::FOOTER_LEN as u64;
        self.file.sync()?;
        let p = self.props;
        Ok(TableSummary {
            file_size: self.offset,
            num_entries: p.num_entries,
            num_deletions: p.num_deletions,
            num_data_blocks: p.num_data_blocks,
            smallest: p.smallest,
            largest: p.largest,
        })
    }
}

/// Compresses (if worthwhile) and appends one block with its trailer.
fn write_block(
    file: &mut dyn WritableFile,
    offset: &mut u64,
    raw: &[u8],
    compression: CompressionType,
) -> Result<BlockHandle> {
    let (compressed, ty) = compress_block(raw, compression)?;
    let stored = compressed.as_deref().unwrap_or(raw);
    file.append(stored)?;
    file.append(&block_trailer(stored, ty))?;
    let handle = BlockHandle { offset: *offset, size: stored.len() as u64 };
    *offset += (stored.len() + crate::table::format::BLOCK_TRAILER_LEN) as u64;
    Ok(handle)
}
