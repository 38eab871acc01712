//! Byte layouts shared by the table writer and reader: block handles, the block
//! trailer (compression type + masked CRC32C), block compression, the
//! properties block and the fixed-size footer. `docs/FORMAT.md` describes them.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::options::kinds::CompressionType;
use crate::util::coding::{put_fixed32, put_fixed64, put_varint64, Reader};
use crate::util::crc;
use crate::vfs::RandomAccessFile;

/// Magic number at the very end of every table file ("STRATSST" read as a LE u64).
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"STRATSST");
/// Version of the table layout described here.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes that follow every block payload: compression type + masked CRC32C.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Bytes of the footer at the end of the file.
pub const FOOTER_LEN: usize = 64;
/// Largest (decompressed) block payload a reader accepts; bounds allocations
/// driven by damaged length fields.
pub const MAX_BLOCK_LEN: usize = 1 << 30;

/// Compression type byte of a block stored as is.
const TYPE_NONE: u8 = 0;
/// Compression type byte of an LZ4 block (lz4_flex, u32 LE size prepended).
const TYPE_LZ4: u8 = 1;
/// Compression type byte of a zstd block (one frame carrying its content size).
const TYPE_ZSTD: u8 = 2;

/// Where a block lives in the file: `offset` of its payload and the payload's
/// stored `size` (excluding the 5-byte trailer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// File offset of the block payload.
    pub offset: u64,
    /// Stored payload length in bytes, trailer not included.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the handle as two varints (offset, size).
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes a handle that must fill `src` exactly.
    pub fn decode(src: &[u8]) -> Result<Self> {
        let mut r = Reader::new(src);
        let h = BlockHandle {
            offset: r.varint64().ok_or_else(bad_handle)?,
            size: r.varint64().ok_or_else(bad_handle)?,
        };
        if !r.is_empty() {
            return Err(bad_handle());
        }
        Ok(h)
    }

    /// Offset just past the block's trailer, or `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.size)?.checked_add(BLOCK_TRAILER_LEN as u64)
    }

    /// Corruption unless the block and its trailer lie inside `[0, limit)`.
    pub fn check_within(&self, limit: u64, what: &str) -> Result<()> {
        match self.end() {
            Some(end) if end <= limit && self.size <= MAX_BLOCK_LEN as u64 => Ok(()),
            _ => Err(Error::corruption(format!(
                "{what} block handle {}+{} outside table data (limit {limit})",
                self.offset, self.size
            ))),
        }
    }
}

fn bad_handle() -> Error {
    Error::corruption("malformed block handle")
}

/// Compresses `raw` as `compression` asks; returns the bytes to store and
/// their type byte. Falls back to storing `raw` uncompressed unless
/// compression saves at least 1/8 of it.
pub fn compress_block(raw: &[u8], compression: CompressionType) -> Result<(Option<Vec<u8>>, u8)> {
    let (out, ty) = match compression {
        CompressionType::None => return Ok((None, TYPE_NONE)),
        CompressionType::Lz4 => (lz4_flex::block::compress_prepend_size(raw), TYPE_LZ4),
        CompressionType::Zstd(level) => (zstd::bulk::compress(raw, level)?, TYPE_ZSTD),
    };
    if out.len() < raw.len() - raw.len() / 8 {
        Ok((Some(out), ty))
    } else {
        Ok((None, TYPE_NONE))
    }
}

/// The trailer of a stored payload with compression byte `ty`.
pub fn block_trailer(stored: &[u8], ty: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let crc = crc::mask(crc::crc32c_extend(crc::crc32c(stored), &[ty]));
    let mut t = [0u8; BLOCK_TRAILER_LEN];
    t[0] = ty;
    t[1..].copy_from_slice(&crc.to_le_bytes());
    t
}

/// Reads the block at `handle`, verifies its CRC if `verify`, and returns the
/// decompressed payload.
pub fn read_block_contents(
    file: &dyn RandomAccessFile,
    handle: BlockHandle,
    verify: bool,
) -> Result<Vec<u8>> {
    let buf = file.read_at(handle.offset, payload_len(handle)? + BLOCK_TRAILER_LEN)?;
    decode_block_contents(Cow::Owned(buf), handle, verify)
}

/// The payload length `handle` names, if it is a sane block size.
fn payload_len(handle: BlockHandle) -> Result<usize> {
    usize::try_from(handle.size)
        .ok()
        .filter(|&s| s <= MAX_BLOCK_LEN)
        .ok_or_else(|| Error::corruption("block too large"))
}

/// Checks and decompresses a stored block (`handle.size` payload bytes and the
/// trailer, as read from the file). A borrowed block is copied only if it is
/// stored uncompressed.
pub fn decode_block_contents(buf: Cow<'_, [u8]>, handle: BlockHandle, verify: bool) -> Result<Vec<u8>> {
    let size = payload_len(handle)?;
    let ty = check_stored_block(&buf, handle, verify)?;
    let payload = match buf {
        Cow::Owned(mut v) => {
            v.truncate(size);
            Cow::Owned(v)
        }
        Cow::Borrowed(b) => Cow::Borrowed(&b[..size]),
    };
    decompress(payload, ty)
}

/// Checks the length of a stored block (`handle.size` payload bytes and the
/// trailer) and, with `verify`, its checksum; returns its compression type byte.
fn check_stored_block(buf: &[u8], handle: BlockHandle, verify: bool) -> Result<u8> {
    let size = payload_len(handle)?;
    if buf.len() != size + BLOCK_TRAILER_LEN {
        return Err(Error::corruption("short block read"));
    }
    if verify {
        let stored = u32::from_le_bytes([buf[size + 1], buf[size + 2], buf[size + 3], buf[size + 4]]);
        // Payload and type byte are contiguous in `buf`, so one pass covers both.
        let actual = crc::crc32c(&buf[..=size]);
        if crc::unmask(stored) != actual {
            return Err(Error::corruption(format!("block checksum mismatch at offset {}", handle.offset)));
        }
    }
    Ok(buf[size])
}

/// The payload of a stored block that is not compressed (served in place
/// from a memory map), or `None` for a compressed one (decoded as usual);
/// with `verify` the uncompressed block's checksum is checked.
pub(crate) fn uncompressed_payload(buf: &[u8], handle: BlockHandle, verify: bool) -> Result<Option<&[u8]>> {
    let size = payload_len(handle)?;
    if check_stored_block(buf, handle, false)? != TYPE_NONE {
        return Ok(None);
    }
    check_stored_block(buf, handle, verify)?;
    Ok(Some(&buf[..size]))
}

/// Turns a stored payload with type byte `ty` back into the block payload.
fn decompress(stored: Cow<'_, [u8]>, ty: u8) -> Result<Vec<u8>> {
    match ty {
        TYPE_NONE => Ok(stored.into_owned()),
        TYPE_LZ4 => {
            let (len, body) = lz4_flex::block::uncompressed_size(&stored)
                .map_err(|e| Error::corruption(format!("lz4 block: {e}")))?;
            // LZ4 cannot expand more than 255x; a larger claim is a damaged header.
            if len > MAX_BLOCK_LEN || len > body.len().saturating_mul(255).saturating_add(16) {
                return Err(Error::corruption("lz4 block claims an impossible size"));
            }
            let mut out = vec![0u8; len];
            match lz4_flex::block::decompress_into(body, &mut out) {
                Ok(n) if n == len => Ok(out),
                Ok(_) => Err(Error::corruption("lz4 block shorter than its header says")),
                Err(e) => Err(Error::corruption(format!("lz4 block: {e}"))),
            }
        }
        TYPE_ZSTD => {
            let len = match zstd::zstd_safe::get_frame_content_size(&stored) {
                Ok(Some(n)) if n <= MAX_BLOCK_LEN as u64 => n as usize,
                _ => return Err(Error::corruption("zstd block without a sane content size")),
            };
            let out = zstd::bulk::decompress(&stored, len)
                .map_err(|e| Error::corruption(format!("zstd block: {e}")))?;
            if out.len() != len {
                return Err(Error::corruption("zstd block shorter than its header says"));
            }
            Ok(out)
        }
        other => Err(Error::corruption(format!("unknown block compression type {other}"))),
    }
}

/// Statistics and bounds of a table, stored in its properties block.
#[derive(Debug, Clone, PartialEq)]
pub struct TableProperties {
    /// Number of entries (puts and deletes).
    pub num_entries: u64,
    /// Number of delete entries (tombstones).
    pub num_deletions: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Sum of the internal key lengths.
    pub raw_key_bytes: u64,
    /// Sum of the value lengths.
    pub raw_value_bytes: u64,
    /// Bloom filter bits per key the table was built with (0 = no filter).
    pub bloom_bits_per_key: f64,
    /// Compression the builder was asked for (blocks that did not shrink are stored raw).
    pub compression: CompressionType,
    /// Smallest internal key (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest: Vec<u8>,
    /// File offset where this segment's first block starts: 0 for a table's
    /// first segment, the previous segment's end for an appended one (so a
    /// file can be walked from its last footer back to its first without the
    /// MANIFEST, which is what repair does). Stored only when non-zero.
    pub segment_start: u64,
    /// Name of the prefix extractor whose prefixes the filter holds (`None`:
    /// no prefixes). Prefix scans ask the filter only when it is theirs.
    pub prefix_extractor: Option<String>,
    /// Whether the filter holds whole user keys (point reads ask it only then).
    pub whole_key_filtering: bool,
    /// The range-deletion block, if the table has range tombstones. Stored
    /// only then, so tables without any keep the format older readers know.
    pub range_del: Option<BlockHandle>,
}

impl TableProperties {
    /// Encodes the properties block payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.smallest.len() + self.largest.len());
        for v in [
            self.num_entries,
            self.num_deletions,
            self.num_data_blocks,
            self.raw_key_bytes,
            self.raw_value_bytes,
        ] {
            put_varint64(&mut b, v);
        }
        put_fixed64(&mut b, self.bloom_bits_per_key.to_bits());
        let (ty, level) = match self.compression {
            CompressionType::None => (TYPE_NONE, 0),
            CompressionType::Lz4 => (TYPE_LZ4, 0),
            CompressionType::Zstd(l) => (TYPE_ZSTD, l),
        };
        b.push(ty);
        put_fixed32(&mut b, level as u32);
        crate::util::coding::put_length_prefixed(&mut b, &self.smallest);
        crate::util::coding::put_length_prefixed(&mut b, &self.largest);
        // Optional trailing fields: each is written when it or a later one is
        // not the default.
        let filter_fields =
            self.prefix_extractor.is_some() || !self.whole_key_filtering || self.range_del.is_some();
        if self.segment_start != 0 || filter_fields {
            put_varint64(&mut b, self.segment_start);
        }
        // Written only when not the default (whole keys, no prefixes), so tables
        // without an extractor keep the format older readers know.
        if filter_fields {
            b.push(u8::from(self.whole_key_filtering));
            let name = self.prefix_extractor.as_deref().unwrap_or("");
            crate::util::coding::put_length_prefixed(&mut b, name.as_bytes());
        }
        if let Some(h) = self.range_del {
            h.encode_to(&mut b);
        }
        b
    }

    /// Decodes a properties block payload; anything malformed is `Corruption`.
    pub fn decode(src: &[u8]) -> Result<Self> {
        let bad = || Error::corruption("malformed table properties block");
        let mut r = Reader::new(src);
        let mut nums = [0u64; 5];
        for n in nums.iter_mut() {
            *n = r.varint64().ok_or_else(bad)?;
        }
        let bloom_bits_per_key = f64::from_bits(r.fixed64().ok_or_else(bad)?);
        let ty = r.u8().ok_or_else(bad)?;
        let level = r.fixed32().ok_or_else(bad)? as i32;
        let compression = match ty {
            TYPE_NONE => CompressionType::None,
            TYPE_LZ4 => CompressionType::Lz4,
            TYPE_ZSTD => CompressionType::Zstd(level),
            _ => return Err(bad()),
        };
        let smallest = r.length_prefixed().ok_or_else(bad)?.to_vec();
        let largest = r.length_prefixed().ok_or_else(bad)?.to_vec();
        let segment_start = if r.is_empty() { 0 } else { r.varint64().ok_or_else(bad)? };
        let (whole_key_filtering, prefix_extractor) = if r.is_empty() {
            (true, None)
        } else {
            let whole = match r.u8().ok_or_else(bad)? {
                0 => false,
                1 => true,
                _ => return Err(bad()),
            };
            let name = std::str::from_utf8(r.length_prefixed().ok_or_else(bad)?).map_err(|_| bad())?;
            (whole, (!name.is_empty()).then(|| name.to_owned()))
        };
        let range_del = if r.is_empty() {
            None
        } else {
            Some(BlockHandle { offset: r.varint64().ok_or_else(bad)?, size: r.varint64().ok_or_else(bad)? })
        };
        if !r.is_empty() || !bloom_bits_per_key.is_finite() {
            return Err(bad());
        }
        let [num_entries, num_deletions, num_data_blocks, raw_key_bytes, raw_value_bytes] = nums;
        Ok(TableProperties {
            num_entries,
            num_deletions,
            num_data_blocks,
            raw_key_bytes,
            raw_value_bytes,
            bloom_bits_per_key,
            compression,
            smallest,
            largest,
            segment_start,
            prefix_extractor,
            whole_key_filtering,
            range_del,
        })
    }
}

/// The fixed-size record at the end of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The filter block; `size == 0` means the table has no filter.
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
}

impl Footer {
    /// Encodes the 64-byte footer: six fixed64 handle fields, format version,
    /// masked CRC32C of the preceding 52 bytes, magic.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        for h in [self.filter, self.properties, self.index] {
            put_fixed64(&mut b, h.offset);
            put_fixed64(&mut b, h.size);
        }
        put_fixed32(&mut b, FORMAT_VERSION);
        let crc = crc::mask(crc::crc32c(&b));
        put_fixed32(&mut b, crc);
        put_fixed64(&mut b, TABLE_MAGIC);
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&b);
        out
    }

    /// Decodes and validates a footer read from the end of a file of
    /// `file_size` bytes: magic, version, checksum, and every handle inside the
    /// data area before the footer.
    pub fn decode(src: &[u8], file_size: u64) -> Result<Self> {
        let bad = |what: &str| Error::corruption(format!("table footer: {what}"));
        if src.len() != FOOTER_LEN {
            return Err(bad("wrong length"));
        }
        let mut r = Reader::new(src);
        let mut f = [0u64; 6];
        for v in f.iter_mut() {
            *v = r.fixed64().ok_or_else(|| bad("truncated"))?;
        }
        let version = r.fixed32().ok_or_else(|| bad("truncated"))?;
        let stored_crc = r.fixed32().ok_or_else(|| bad("truncated"))?;
        let magic = r.fixed64().ok_or_else(|| bad("truncated"))?;
        if magic != TABLE_MAGIC {
            return Err(bad("bad magic number (not a Strata table)"));
        }
        if crc::unmask(stored_crc) != crc::crc32c(&src[..52]) {
            return Err(bad("checksum mismatch"));
        }
        if version != FORMAT_VERSION {
            return Err(bad(&format!("unsupported format version {version}")));
        }
        let footer = Footer {
            filter: BlockHandle { offset: f[0], size: f[1] },
            properties: BlockHandle { offset: f[2], size: f[3] },
            index: BlockHandle { offset: f[4], size: f[5] },
        };
        let limit =
            file_size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| bad("file shorter than a footer"))?;
        if footer.filter.size != 0 {
            footer.filter.check_within(limit, "filter")?;
        }
        footer.properties.check_within(limit, "properties")?;
        footer.index.check_within(limit, "index")?;
        Ok(footer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_round_trip_and_garbage() {
        let h = BlockHandle { offset: 123_456_789, size: 4096 };
        let mut b = Vec::new();
        h.encode_to(&mut b);
        assert_eq!(BlockHandle::decode(&b).unwrap(), h);
        assert!(BlockHandle::decode(&b[..b.len() - 1]).unwrap_err().is_corruption());
        b.push(0);
        assert!(BlockHandle::decode(&b).unwrap_err().is_corruption());
        assert!(BlockHandle { offset: u64::MAX, size: 1 }.check_within(u64::MAX, "x").is_err());
        assert!(BlockHandle { offset: 10, size: 5 }.check_within(20, "x").is_ok());
        assert!(BlockHandle { offset: 10, size: 6 }.check_within(20, "x").is_err());
    }

    #[test]
    fn footer_round_trip_and_every_bit_flip_detected() {
        let f = Footer {
            filter: BlockHandle { offset: 100, size: 20 },
            properties: BlockHandle { offset: 125, size: 30 },
            index: BlockHandle { offset: 160, size: 40 },
        };
        let size = 205 + FOOTER_LEN as u64;
        let enc = f.encode();
        assert_eq!(Footer::decode(&enc, size).unwrap(), f);
        assert!(Footer::decode(&enc, size - 1).is_err());
        assert!(Footer::decode(&enc, 10).is_err());
        for i in 0..enc.len() * 8 {
            let mut e = enc;
            e[i / 8] ^= 1 << (i % 8);
            assert!(Footer::decode(&e, size).unwrap_err().is_corruption());
        }
    }

    #[test]
    fn properties_round_trip() {
        let p = TableProperties {
            num_entries: 10,
            num_deletions: 2,
            num_data_blocks: 3,
            raw_key_bytes: 99,
            raw_value_bytes: 1000,
            bloom_bits_per_key: 7.5,
            compression: CompressionType::Zstd(5),
            smallest: b"a\0\0\0\0\0\0\0\0".to_vec(),
            largest: b"zz\0\0\0\0\0\0\0\0".to_vec(),
            segment_start: 0,
            prefix_extractor: None,
            whole_key_filtering: true,
            range_del: None,
        };
        let enc = p.encode();
        assert_eq!(TableProperties::decode(&enc).unwrap(), p);
        for n in 0..enc.len() {
            assert!(TableProperties::decode(&enc[..n]).is_err());
        }
        // An appended segment records where it starts; dropping that field
        // reads as a first segment (the block checksum guards truncation).
        let seg = TableProperties { segment_start: 1 << 20, ..p.clone() };
        let enc2 = seg.encode();
        assert_eq!(TableProperties::decode(&enc2).unwrap(), seg);
        assert_eq!(TableProperties::decode(&enc2[..enc.len()]).unwrap(), p);
        for n in (0..enc2.len()).filter(|&n| n != enc.len()) {
            assert!(TableProperties::decode(&enc2[..n]).is_err());
        }
        // What the filter holds follows the segment start, also for a first segment.
        for (name, whole) in [(Some("strata.FixedPrefix.4"), true), (Some("x"), false), (None, false)] {
            let q = TableProperties {
                prefix_extractor: name.map(str::to_owned),
                whole_key_filtering: whole,
                ..p.clone()
            };
            let enc3 = q.encode();
            assert!(enc3.len() > enc.len());
            assert_eq!(TableProperties::decode(&enc3).unwrap(), q);
            let mut bad_flag = enc3.clone();
            bad_flag[enc.len() + 1] = 2;
            assert!(TableProperties::decode(&bad_flag).is_err());
        }
        // A range-deletion block's handle comes last, after the filter fields.
        let r = TableProperties { range_del: Some(BlockHandle { offset: 300, size: 40 }), ..p.clone() };
        let enc4 = r.encode();
        assert_eq!(TableProperties::decode(&enc4).unwrap(), r);
        // Cut before it, it reads as a table without one (the block checksum
        // guards truncation); cut inside it, it is an error.
        let mut handle = Vec::new();
        BlockHandle { offset: 300, size: 40 }.encode_to(&mut handle);
        let without = enc4.len() - handle.len();
        assert_eq!(
            TableProperties::decode(&enc4[..without]).unwrap(),
            TableProperties { range_del: None, ..r }
        );
        for n in without + 1..enc4.len() {
            assert!(TableProperties::decode(&enc4[..n]).is_err(), "cut at {n}");
        }
    }

    #[test]
    fn compression_round_trips_and_falls_back() {
        let compressible: Vec<u8> = (0..4000u32).map(|i| (i % 7) as u8).collect();
        let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(5);
        let random: Vec<u8> = (0..4000).map(|_| rand::Rng::gen(&mut rng)).collect();
        for c in [CompressionType::None, CompressionType::Lz4, CompressionType::Zstd(3)] {
            let (out, ty) = compress_block(&compressible, c).unwrap();
            let stored = out.unwrap_or_else(|| compressible.clone());
            assert_eq!(decompress(stored.into(), ty).unwrap(), compressible);
            let (out, ty) = compress_block(&random, c).unwrap();
            assert!(out.is_none() && ty == TYPE_NONE);
        }
        assert!(decompress(vec![1, 2, 3].into(), 9).unwrap_err().is_corruption());
        assert!(decompress(vec![0xff, 0xff, 0xff, 0x7f, 0].into(), TYPE_LZ4).unwrap_err().is_corruption());
        assert!(decompress(vec![1, 2, 3, 4, 5, 6].into(), TYPE_ZSTD).unwrap_err().is_corruption());
    }
}
