//! Tests of a table's range-deletion block.

use super::test_util::MemFile;
use super::*;
use crate::key::{make_internal_key, ValueKind};
use crate::range_del::RangeTombstone;

fn table_with_range_dels(points: bool) -> Vec<u8> {
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), TableBuilderOptions::default());
    if points {
        b.add(&make_internal_key(b"a", 1, ValueKind::Put), b"1").unwrap();
    }
    b.set_range_dels(vec![
        RangeTombstone { start: b"b".to_vec(), end: b"d".to_vec(), seq: 7 },
        RangeTombstone { start: b"c".to_vec(), end: b"f".to_vec(), seq: 9 },
    ]);
    b.finish().unwrap();
    file.bytes()
}

#[test]
fn range_deletions_are_read_back_and_a_table_may_hold_only_them() {
    for points in [true, false] {
        let bytes = table_with_range_dels(points);
        let len = bytes.len() as u64;
        let t = Table::open(MemFile::with(bytes), 1, len, None).unwrap();
        assert_eq!(t.properties().num_entries, u64::from(points));
        assert_eq!(t.range_dels().max_covering(b"c", 100), Some(9));
        assert_eq!(t.range_dels().max_covering(b"b", 100), Some(7));
        assert_eq!(t.range_dels().max_covering(b"f", 100), None);
    }
}

#[test]
fn a_damaged_range_deletion_block_is_corruption() {
    let bytes = table_with_range_dels(true);
    let len = bytes.len() as u64;
    let t = Table::open(MemFile::with(bytes.clone()), 1, len, None).unwrap();
    let h = t.properties().range_del.expect("a range-deletion block");
    // Every byte of the block and its trailer: a checksum failure, never a panic.
    for i in h.offset..h.end().unwrap() {
        let mut d = bytes.clone();
        d[i as usize] ^= 0x10;
        let e = Table::open(MemFile::with(d), 1, len, None).unwrap_err();
        assert!(e.is_corruption(), "byte {i}: {e}");
    }
}
