//! Prefix filters in tables and DTable segments: an absent prefix is ruled
//! out (nearly always), a present one never; tables of another extractor or
//! none are never ruled out; point reads use only whole-key filters.

use std::sync::Arc;

use super::test_util::MemFile;
use super::*;
use crate::iter::InternalIterator;
use crate::key::{make_internal_key, user_key, ValueKind};
use crate::prefix::{FixedPrefix, PrefixExtractor, PrefixProbe};

/// Sorted (internal key, value) pairs of one segment.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Keys `g<group:04>/<item:03>` for the given groups, `items` per group.
fn entries(groups: impl Iterator<Item = u32>, items: u32, seq_base: u64) -> Entries {
    let mut out = Vec::new();
    for g in groups {
        for i in 0..items {
            let user = format!("g{g:04}/{i:03}").into_bytes();
            out.push((
                make_internal_key(&user, seq_base + u64::from(g * 100 + i), ValueKind::Put),
                user.clone(),
            ));
        }
    }
    out
}

fn opts(extractor: Option<&str>, whole: bool) -> TableBuilderOptions {
    let prefix_extractor = extractor.map(|e| -> Arc<dyn PrefixExtractor> {
        match e {
            "fixed5" => Arc::new(FixedPrefix::new(5)),
            _ => Arc::new(FixedPrefix::new(3)),
        }
    });
    TableBuilderOptions {
        block_size: 256,
        prefix_extractor,
        whole_key_filtering: whole,
        ..Default::default()
    }
}

/// Appends one segment per (entries, options) to one file; the open table.
fn build(parts: &[(Entries, TableBuilderOptions)]) -> Arc<Table> {
    let file = MemFile::default();
    let mut metas = Vec::new();
    for (entries, o) in parts {
        let mut b = TableBuilder::new(Box::new(file.clone()), o.clone());
        for (k, v) in entries {
            b.add(k, v).unwrap();
        }
        let s = b.finish().unwrap();
        metas.push(SegmentMeta { end: s.file_size, footer_crc: s.footer_crc });
    }
    let size = metas.last().unwrap().end;
    let list = if metas.len() == 1 { Vec::new() } else { metas };
    Arc::new(Table::open_segments(Arc::new(file), 3, size, &list, None).unwrap())
}

fn probe(group: u32) -> PrefixProbe {
    PrefixProbe::for_scan(&FixedPrefix::new(5), format!("g{group:04}").as_bytes()).unwrap()
}

/// The user keys a table's iterator over `segs` returns that start with `prefix`.
fn scan(table: &Arc<Table>, segs: &[usize], prefix: &[u8]) -> Vec<Vec<u8>> {
    let mut it = TableIter::over_segments(Arc::clone(table), BlockReadOptions::default(), segs);
    it.seek(&make_internal_key(prefix, crate::key::MAX_SEQ, ValueKind::Put)).unwrap();
    let mut out = Vec::new();
    while it.valid() && user_key(it.key()).starts_with(prefix) {
        out.push(user_key(it.key()).to_vec());
        it.next().unwrap();
    }
    out
}

#[test]
fn a_prefix_filter_rules_out_absent_prefixes_and_never_a_present_one() {
    for whole in [true, false] {
        let table = build(&[(entries((0..2000).step_by(2), 3, 1), opts(Some("fixed5"), whole))]);
        let p = table.properties();
        assert_eq!(
            (p.prefix_extractor.as_deref(), p.whole_key_filtering),
            (Some("strata.FixedPrefix.5"), whole)
        );
        for g in (0..2000).step_by(2) {
            assert_eq!(table.prefix_segments(&probe(g)), (vec![0], 1), "present group {g}");
        }
        let skipped = (1..2000).step_by(2).filter(|&g| table.prefix_segments(&probe(g)).0.is_empty()).count();
        assert!(skipped > 950, "only {skipped} of 1000 absent prefixes ruled out");
        // Point reads ask the filter only when it holds whole keys.
        assert_eq!(table.filter_check(b"g0000/000"), whole.then_some(true));
        let absent_keys =
            (0..1000).filter(|i| !table.may_contain(format!("g0000/{i:03}x").as_bytes())).count();
        assert_eq!(absent_keys > 950, whole, "whole {whole}: {absent_keys} absent keys ruled out");
        assert!(table.may_contain(b"g0002/001"));
    }
}

#[test]
fn tables_of_another_extractor_or_none_are_never_ruled_out() {
    for o in [opts(None, true), opts(Some("fixed3"), true), opts(Some("fixed3"), false)] {
        let table = build(&[(entries([4].into_iter(), 3, 1), o.clone())]);
        for g in 0..200 {
            assert_eq!(table.prefix_segments(&probe(g)), (vec![0], 0), "{:?}, group {g}", o.prefix_extractor);
        }
    }
    // Without whole keys and without an extractor there is nothing to filter.
    let table = build(&[(entries([4].into_iter(), 3, 1), opts(None, false))]);
    assert_eq!(table.filter_check(b"zzz"), None);
    assert_eq!(
        (table.properties().prefix_extractor.as_deref(), table.properties().whole_key_filtering),
        (None, false)
    );
}

#[test]
fn dtable_segments_are_ruled_out_one_by_one() {
    // Segment 0: even groups, segment 1: groups 1..100 (no extractor),
    // segment 2: multiples of 3 (other extractor), segment 3: odd groups.
    let table = build(&[
        (entries((0..400).step_by(2), 2, 1), opts(Some("fixed5"), true)),
        (entries(1..100, 2, 100_000), opts(None, true)),
        (entries((0..400).step_by(3), 2, 200_000), opts(Some("fixed3"), true)),
        (entries((1..400).step_by(2), 2, 300_000), opts(Some("fixed5"), false)),
    ]);
    assert_eq!(table.num_segments(), 4);
    let all: Vec<usize> = (0..4).collect();
    let mut skipped = 0;
    for g in 0..400u32 {
        let (keep, checked) = table.prefix_segments(&probe(g));
        assert_eq!(checked, 2, "segments 0 and 3 have this extractor's filter");
        assert!(keep.contains(&1) && keep.contains(&2), "group {g}: foreign segments kept");
        let holder = if g % 2 == 0 { 0 } else { 3 };
        assert!(keep.contains(&holder), "group {g}: its segment {holder} was ruled out");
        skipped += 4 - keep.len();
        // Reading only the kept segments finds every key of the prefix.
        let prefix = format!("g{g:04}");
        assert_eq!(
            scan(&table, &keep, prefix.as_bytes()),
            scan(&table, &all, prefix.as_bytes()),
            "group {g}"
        );
    }
    assert!(skipped > 380, "only {skipped} segments ruled out in 400 scans");
    assert!(scan(&table, &[], b"g0002").is_empty(), "no segments: nothing");
}

/// The hashed checks a read makes once per key for every table (and the
/// filter prefetch a batch makes first) answer exactly what the per-key
/// checks answer: whole-key filters, prefix-only ones, none, and a DTable
/// mixing them.
#[test]
fn hashed_filter_checks_answer_what_key_checks_answer() {
    let tables = [
        build(&[(entries((0..300).step_by(2), 3, 1), opts(Some("fixed5"), true))]),
        build(&[(entries((0..300).step_by(2), 3, 1), opts(Some("fixed5"), false))]),
        build(&[(entries((0..300).step_by(2), 3, 1), opts(None, false))]),
        build(&[
            (entries((0..300).step_by(2), 3, 1), opts(Some("fixed5"), false)),
            (entries((1..300).step_by(4), 3, 100_000), opts(None, true)),
            (entries((3..300).step_by(4), 3, 200_000), opts(Some("fixed3"), true)),
        ]),
        build(&[
            (entries((0..300).step_by(2), 3, 1), opts(Some("fixed5"), true)),
            (entries((1..300).step_by(4), 3, 100_000), opts(None, true)),
        ]),
    ];
    // Whether the table has a whole-key filter, and whether it can rule a
    // key out (not when a segment has no whole-key filter).
    let expect_filter = [Some(()), None, None, Some(()), Some(())];
    let expect_rules_out = [true, false, false, false, true];
    for (t, table) in tables.iter().enumerate() {
        let mut ruled_out = 0;
        for g in 0..300u32 {
            for i in 0..4u32 {
                let key = format!("g{g:04}/{i:03}").into_bytes();
                let h = filter::filter_hash(&key);
                table.prefetch_filter(h);
                assert_eq!(table.filter_check_hash(h), table.filter_check(&key), "table {t}, {key:?}");
                assert_eq!(table.may_contain_hash(h), table.may_contain(&key), "table {t}, {key:?}");
                ruled_out += usize::from(!table.may_contain_hash(h));
            }
        }
        assert_eq!(table.filter_check(b"g0000/000").map(|_| ()), expect_filter[t], "table {t}");
        assert_eq!(ruled_out > 0, expect_rules_out[t], "table {t}: {ruled_out} keys ruled out");
    }
}
