//! Replaceable filters: a table's bloom filter rebuilt without rewriting its
//! data, so Monkey's bits can follow the tree as it grows (a table keeps the
//! data it was written with, not the bits it was given then).
//!
//! The new filter block and a 64-byte *patch footer* are appended after the
//! table; the MANIFEST's new length for the file names the newest patch, and
//! bytes past the recorded length are an append that never committed (as for
//! a DTable's segments). A reader that finds a patch footer at the recorded
//! end opens the table that ends at the patch's `table_end` and uses the
//! patch's filter in place of the one it was written with. Only a table of
//! one segment that has a filter is patched, and the new filter holds what
//! the old one held (whole keys and/or the same extractor's prefixes).
//! `docs/FORMAT.md`, "Filter patches".

use crate::error::{Error, Result};
use crate::options::kinds::CompressionType;
use crate::table::format::{block_trailer, compress_block, BlockHandle, FOOTER_LEN, FORMAT_VERSION};
use crate::util::coding::{put_fixed32, put_fixed64, Reader};
use crate::util::crc;
use crate::vfs::WritableFile;

/// Last eight bytes of a patch footer (a table footer ends in `STRATSST`).
pub const PATCH_MAGIC: u64 = u64::from_le_bytes(*b"STRAFPAT");
const FLAG_WHOLE_KEYS: u64 = 1;
const FLAG_PREFIXES: u64 = 2;

/// A replacement filter, as its patch footer records it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FilterPatch {
    /// Where the table ends (one past its own footer).
    /// INVARIANT: `FOOTER_LEN <= table_end <= filter.offset`.
    pub table_end: u64,
    /// The replacement filter block (payload and trailer, uncompressed).
    pub filter: BlockHandle,
    /// Bits per key the replacement was built with.
    /// INVARIANT: finite and positive.
    pub bits_per_key: f64,
    /// The replacement holds the table's prefixes (of the extractor its
    /// properties name) besides its whole keys. Without this flag it holds
    /// whole keys only, and the table answers no prefix probe by its filter.
    pub has_prefixes: bool,
}

impl FilterPatch {
    /// The 64-byte patch footer: `table_end`, the filter handle, the bits
    /// (IEEE 754), flags (bit 0: whole keys, always set; bit 1: prefixes), 8
    /// zero bytes, format version, masked CRC32C of the
    /// preceding 52 bytes, magic. Laid out like a table footer, so a reader
    /// tells the two apart by the magic alone.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        let flags = FLAG_WHOLE_KEYS | if self.has_prefixes { FLAG_PREFIXES } else { 0 };
        for v in [self.table_end, self.filter.offset, self.filter.size, self.bits_per_key.to_bits(), flags, 0]
        {
            put_fixed64(&mut b, v);
        }
        put_fixed32(&mut b, FORMAT_VERSION);
        let crc = crc::mask(crc::crc32c(&b));
        put_fixed32(&mut b, crc);
        put_fixed64(&mut b, PATCH_MAGIC);
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&b);
        out
    }

    /// True if `tail` (a file's last 64 bytes) ends in a patch footer's magic;
    /// [`Self::decode`] checks the rest.
    pub fn is_patch(tail: &[u8]) -> bool {
        tail.len() == FOOTER_LEN && tail[FOOTER_LEN - 8..] == PATCH_MAGIC.to_le_bytes()
    }

    /// Decodes and validates a patch footer read from the end of `file_size`
    /// bytes: magic, checksum, version, and a filter block between the table's
    /// end and the patch footer.
    pub fn decode(tail: &[u8], file_size: u64) -> Result<Self> {
        let bad = |what: &str| Error::corruption(format!("filter patch: {what}"));
        if !Self::is_patch(tail) {
            return Err(bad("bad magic number"));
        }
        let mut r = Reader::new(tail);
        let mut f = [0u64; 6];
        for v in f.iter_mut() {
            *v = r.fixed64().ok_or_else(|| bad("truncated"))?;
        }
        let version = r.fixed32().ok_or_else(|| bad("truncated"))?;
        let stored_crc = r.fixed32().ok_or_else(|| bad("truncated"))?;
        if crc::unmask(stored_crc) != crc::crc32c(&tail[..52]) {
            return Err(bad("checksum mismatch"));
        }
        if version != FORMAT_VERSION {
            return Err(bad(&format!("unsupported format version {version}")));
        }
        let patch = FilterPatch {
            table_end: f[0],
            filter: BlockHandle { offset: f[1], size: f[2] },
            bits_per_key: f64::from_bits(f[3]),
            has_prefixes: f[4] & FLAG_PREFIXES != 0,
        };
        if f[4] & !(FLAG_WHOLE_KEYS | FLAG_PREFIXES) != 0 || f[4] & FLAG_WHOLE_KEYS == 0 || f[5] != 0 {
            return Err(bad(&format!("unknown flags {:#x}", f[4])));
        }
        if patch.table_end < FOOTER_LEN as u64 || patch.table_end > patch.filter.offset {
            return Err(bad(&format!("table end {} outside the file", patch.table_end)));
        }
        if !(patch.bits_per_key > 0.0 && patch.bits_per_key.is_finite()) {
            return Err(bad(&format!("bits per key {}", patch.bits_per_key)));
        }
        let limit =
            file_size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| bad("file shorter than a footer"))?;
        patch.filter.check_within(limit, "patched filter")?;
        Ok(patch)
    }
}

/// Appends a patch to `file` (open for append at the table's recorded length,
/// the table ending at `table_end`): the filter block `payload`, built with
/// `bits_per_key` over the whole keys (and the prefixes if `has_prefixes`),
/// then the patch footer; syncs. Returns the file's new
/// length, which the MANIFEST records once the edit naming it is written.
pub(crate) fn append_patch(
    file: &mut dyn WritableFile,
    table_end: u64,
    payload: &[u8],
    bits_per_key: f64,
    has_prefixes: bool,
) -> Result<u64> {
    let offset = file.len();
    let (compressed, ty) = compress_block(payload, CompressionType::None)?;
    let stored = compressed.as_deref().unwrap_or(payload);
    file.append(stored)?;
    file.append(&block_trailer(stored, ty))?;
    let filter = BlockHandle { offset, size: stored.len() as u64 };
    let footer = FilterPatch { table_end, filter, bits_per_key, has_prefixes }.encode();
    file.append(&footer)?;
    file.sync()?;
    Ok(file.len())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::key::{lookup_key, make_internal_key, ValueKind};
    use crate::table::filter::FilterFeed;
    use crate::table::test_util::MemFile;
    use crate::table::{
        discover_segments, BlockReadOptions, SegmentMeta, Table, TableBuilder, TableBuilderOptions,
    };

    const KEYS: u64 = 2000;

    fn user(i: u64) -> Vec<u8> {
        format!("k{i:06}").into_bytes()
    }

    /// A table of `KEYS` even keys at 10 bits, and the file with a 2-bit
    /// patch of the same keys after it: (file, table size, patched size).
    fn patched() -> (MemFile, u64, u64) {
        let file = MemFile::default();
        let opts = TableBuilderOptions { bloom_bits_per_key: 10.0, ..Default::default() };
        let mut b = TableBuilder::new(Box::new(file.clone()), opts);
        let mut feed = FilterFeed::new(2.0, true, None);
        for i in 0..KEYS {
            b.add(&make_internal_key(&user(2 * i), i + 1, ValueKind::Put), b"v").unwrap();
            feed.add(&user(2 * i));
        }
        let table_end = b.finish().unwrap().file_size;
        let size = append_patch(&mut file.clone(), table_end, &feed.finish(), 2.0, false).unwrap();
        assert_eq!(size, file.bytes().len() as u64);
        (file, table_end, size)
    }

    fn false_positives(t: &Table) -> usize {
        (0..KEYS).filter(|i| t.may_contain(&user(2 * i + 1))).count()
    }

    #[test]
    fn a_patched_table_answers_by_the_new_filter_and_at_its_old_size_by_the_old() {
        let (file, table_end, size) = patched();
        let open = |len| Table::open_segments(Arc::new(file.clone()), 7, len, &[], None).unwrap();
        let (old, new) = (open(table_end), open(size));
        assert_eq!(old.properties().bloom_bits_per_key, 10.0);
        assert_eq!(new.properties().bloom_bits_per_key, 2.0);
        assert_eq!(new.file_size(), size);
        for i in 0..KEYS {
            assert!(new.may_contain(&user(2 * i)), "a stored key fails the new filter");
            let got =
                new.get(&lookup_key(&user(2 * i), crate::key::MAX_SEQ), BlockReadOptions::default()).unwrap();
            assert_eq!(got.map(|(_, v)| v), Some(b"v".to_vec()));
        }
        // 10 bits: ~1 % false positives; 2 bits: ~39 %.
        let (fp_old, fp_new) = (false_positives(&old), false_positives(&new));
        assert!(fp_old < 60 && fp_new > 500, "false positives {fp_old} at 10 bits, {fp_new} at 2");
    }

    #[test]
    fn repair_finds_a_patched_table_and_skips_an_unfinished_patch() {
        let (file, table_end, size) = patched();
        assert_eq!(discover_segments(&file, 7, size).unwrap(), (vec![], size));
        // A second patch cut short: the first is what the walk back finds.
        let mut f = file.clone();
        f.append(&[0xa5; 77]).unwrap();
        f.append(&PATCH_MAGIC.to_le_bytes()).unwrap();
        let len = file.bytes().len() as u64;
        assert_eq!(discover_segments(&file, 7, len).unwrap(), (vec![], size));
        // A first patch cut short: the table alone.
        let cut = MemFile(Arc::new(parking_lot::Mutex::new(file.bytes()[..size as usize - 10].to_vec())));
        assert_eq!(discover_segments(&cut, 7, size - 10).unwrap(), (vec![], table_end));
    }

    /// A patched table that light-weight compaction appends to later: its
    /// first segment ends with the patch (the MANIFEST lists the patch
    /// footer's checksum for it), and keeps the patch's filter.
    #[test]
    fn a_segment_appended_after_a_patch_leaves_the_patch_in_force() {
        let (file, _, size) = patched();
        let patch_crc = crate::util::crc::crc32c(&file.bytes()[size as usize - FOOTER_LEN..]);
        let mut b = TableBuilder::new(Box::new(file.clone()), TableBuilderOptions::default());
        b.add(&make_internal_key(&user(2 * KEYS + 1), KEYS + 1, ValueKind::Put), b"w").unwrap();
        let s = b.finish().unwrap();
        let list = [
            SegmentMeta { end: size, footer_crc: patch_crc },
            SegmentMeta { end: s.file_size, footer_crc: s.footer_crc },
        ];
        let t = Table::open_segments(Arc::new(file.clone()), 7, s.file_size, &list, None).unwrap();
        assert_eq!(t.segments()[0].props.bloom_bits_per_key, 2.0);
        assert!(false_positives(&t) > 500, "the first segment answers by its 2-bit patch");
        let got = t.get(&lookup_key(&user(2 * KEYS + 1), crate::key::MAX_SEQ), BlockReadOptions::default());
        assert_eq!(got.unwrap().map(|(_, v)| v), Some(b"w".to_vec()));
        assert_eq!(discover_segments(&file, 7, s.file_size).unwrap(), (list.to_vec(), s.file_size));
        let bad = [SegmentMeta { footer_crc: patch_crc ^ 1, ..list[0] }, list[1]];
        assert!(Table::open_segments(Arc::new(file), 7, s.file_size, &bad, None).is_err());
    }

    #[test]
    fn a_patch_of_a_table_without_a_filter_is_refused() {
        let file = MemFile::default();
        let opts = TableBuilderOptions { bloom_bits_per_key: 0.0, ..Default::default() };
        let mut b = TableBuilder::new(Box::new(file.clone()), opts);
        b.add(&make_internal_key(b"a", 1, ValueKind::Put), b"v").unwrap();
        let table_end = b.finish().unwrap().file_size;
        let mut feed = FilterFeed::new(5.0, true, None);
        feed.add(b"a");
        let size = append_patch(&mut file.clone(), table_end, &feed.finish(), 5.0, false).unwrap();
        let e = Table::open_segments(Arc::new(file), 7, size, &[], None).unwrap_err();
        assert!(e.is_corruption(), "{e}");
    }

    #[test]
    fn patch_footer_round_trip_and_damage() {
        let p = FilterPatch {
            table_end: 4096,
            filter: BlockHandle { offset: 4096, size: 100 },
            bits_per_key: 7.5,
            has_prefixes: true,
        };
        let size = 4096 + 100 + 5 + FOOTER_LEN as u64;
        let enc = p.encode();
        assert!(FilterPatch::is_patch(&enc));
        assert_eq!(FilterPatch::decode(&enc, size).unwrap(), p);
        assert!(FilterPatch::decode(&enc, size - 1).is_err(), "filter block would overlap the footer");
        for i in 0..52 {
            let mut d = enc;
            d[i] ^= 1;
            assert!(FilterPatch::decode(&d, size).is_err(), "flip at byte {i} not caught");
        }
        let table_footer = crate::table::format::Footer {
            filter: BlockHandle::default(),
            properties: BlockHandle { offset: 0, size: 1 },
            index: BlockHandle { offset: 6, size: 1 },
        }
        .encode();
        assert!(!FilterPatch::is_patch(&table_footer), "a table footer is not a patch");
    }

    #[test]
    fn a_patch_must_not_claim_a_table_end_past_its_filter_or_no_bits() {
        let size = 4096 + 100 + 5 + FOOTER_LEN as u64;
        let bad_end = FilterPatch {
            table_end: 5000,
            filter: BlockHandle { offset: 4096, size: 100 },
            bits_per_key: 5.0,
            has_prefixes: false,
        };
        assert!(FilterPatch::decode(&bad_end.encode(), size).is_err());
        let no_bits = FilterPatch {
            table_end: 4096,
            filter: BlockHandle { offset: 4096, size: 100 },
            bits_per_key: 0.0,
            has_prefixes: false,
        };
        assert!(FilterPatch::decode(&no_bits.encode(), size).is_err());
        let mut unknown = FilterPatch { bits_per_key: 5.0, ..no_bits }.encode();
        unknown[32] = 4;
        let crc = crc::mask(crc::crc32c(&unknown[..52]));
        unknown[52..56].copy_from_slice(&crc.to_le_bytes());
        assert!(FilterPatch::decode(&unknown, size).is_err(), "a flag this version does not know");
    }
}
