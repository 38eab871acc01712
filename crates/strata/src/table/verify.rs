//! Reading a table back whole: every block with its checksum checked, past
//! the block cache (the check is of the file, not of what a cache holds).
//! New tables are read back this way before anything names them (with
//! `paranoid_file_checks`), and `strata verify` reads every live table so.

use std::sync::Arc;

use super::reader::{BlockReadOptions, Table};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;

/// What a read-back compares with: what was written, where known.
#[derive(Clone, Copy, Debug, Default)]
pub struct Expected<'a> {
    /// Entries the table holds.
    pub entries: Option<u64>,
    /// Its first and last internal keys (empty for a table without entries).
    pub bounds: Option<(&'a [u8], &'a [u8])>,
}

/// Reads every entry of `table` (opened without a block cache) with block
/// checksums verified, and compares the count and key bounds with `expect`.
///
/// # Errors
///
/// `Corruption` for a damaged block or a table that differs from `expect`;
/// I/O errors as the reads return them.
pub fn verify_table(table: &Arc<Table>, expect: &Expected<'_>) -> Result<()> {
    let opts = BlockReadOptions { readahead: 1 << 20, ..BlockReadOptions::verified() };
    let mut it = table.iter(opts);
    it.seek_to_first()?;
    let (mut n, mut first, mut last) = (0u64, None, Vec::new());
    while it.valid() {
        n += 1;
        if expect.bounds.is_some() {
            if first.is_none() {
                first = Some(it.key().to_vec());
            }
            last.clear();
            last.extend_from_slice(it.key());
        }
        it.next()?;
    }
    let want = expect.entries.unwrap_or(n);
    let bounds_differ =
        (expect.bounds).is_some_and(|(lo, hi)| first.as_deref().unwrap_or_default() != lo || last != hi);
    match expect.bounds {
        Some(_) if n != want || bounds_differ => {
            Err(Error::corruption(format!("read back {n} entries, {want} written, or the key bounds differ")))
        }
        None if n != want => Err(Error::corruption(format!("{n} entries read back, {want} expected"))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use crate::table::test_util::MemFile;
    use crate::table::{TableBuilder, TableBuilderOptions};

    fn table(bytes: Vec<u8>) -> Result<Arc<Table>> {
        let len = bytes.len() as u64;
        Table::open(MemFile::with(bytes), 1, len, None).map(Arc::new)
    }

    #[test]
    fn a_read_back_checks_every_block_and_what_was_written() {
        let file = MemFile::default();
        let opts = TableBuilderOptions { block_size: 64, ..TableBuilderOptions::default() };
        let mut b = TableBuilder::new(Box::new(file.clone()), opts);
        for i in 0..100u32 {
            b.add(&make_internal_key(format!("k{i:03}").as_bytes(), 1, ValueKind::Put), &[b'v'; 20]).unwrap();
        }
        let s = b.finish().unwrap();
        let bytes = file.bytes();
        let good = table(bytes.clone()).unwrap();
        let whole = Expected { entries: Some(100), bounds: Some((&s.smallest, &s.largest)) };
        verify_table(&good, &whole).unwrap();
        verify_table(&good, &Expected::default()).unwrap();
        let e = verify_table(&good, &Expected { entries: Some(99), bounds: None }).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        let e =
            verify_table(&good, &Expected { bounds: Some((&s.largest, &s.largest)), ..whole }).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        // A flipped bit in the first data block: the footer and index still open.
        let mut bad = bytes;
        bad[10] ^= 0x08;
        let e = verify_table(&table(bad).unwrap(), &Expected::default()).unwrap_err();
        assert!(e.is_corruption(), "{e}");
    }
}
