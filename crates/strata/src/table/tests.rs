//! Tests of single tables and of DTables (several segments in one file).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::test_util::MemFile;
use super::*;
use crate::cache::BlockCache;
use crate::iter::InternalIterator;
use crate::key::{compare_internal, lookup_key, make_internal_key, ValueKind};
use crate::options::CompressionType;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;
/// (seq, kind, value) of one version of a user key.
type Version = (u64, ValueKind, Vec<u8>);

fn build(entries: &Entries, opts: &TableBuilderOptions) -> (Vec<u8>, TableSummary) {
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts.clone());
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    assert_eq!(b.num_entries(), entries.len() as u64);
    let summary = b.finish().unwrap();
    let bytes = file.bytes();
    assert_eq!(summary.file_size, bytes.len() as u64);
    (bytes, summary)
}

fn open(bytes: Vec<u8>, cache: Option<Arc<BlockCache>>) -> Result<Arc<Table>, crate::Error> {
    let len = bytes.len() as u64;
    Table::open(MemFile::with(bytes), 1, len, cache).map(Arc::new)
}

/// Keys `k00000..` with up to 3 versions each (newest first), some deletes.
fn versioned_entries(rng: &mut SmallRng, users: usize) -> Entries {
    let mut out = Vec::new();
    for u in 0..users {
        let user = format!("k{:05}", u * 2).into_bytes();
        let versions = rng.gen_range(1..=3u64);
        for v in (0..versions).rev() {
            let seq = 10 * u as u64 + v + 1;
            let kind = if rng.gen_ratio(1, 5) { ValueKind::Delete } else { ValueKind::Put };
            let value =
                if kind == ValueKind::Put { vec![b'v' ^ (seq as u8); rng.gen_range(0..60)] } else { vec![] };
            out.push((make_internal_key(&user, seq, kind), value));
        }
    }
    out
}

fn scan_forward(it: &mut TableIter) -> Entries {
    let mut got = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    got
}

#[test]
fn handles_are_thread_safe() {
    fn check<T: Send + Sync + std::fmt::Debug>() {}
    check::<Table>();
    check::<BlockCache>();
    check::<crate::cache::TableCache>();
    fn send<T: Send>() {}
    send::<TableIter>();
}

#[test]
fn round_trip_with_each_compression() {
    let mut rng = SmallRng::seed_from_u64(1);
    let entries = versioned_entries(&mut rng, 2000);
    for compression in [CompressionType::None, CompressionType::Lz4, CompressionType::Zstd(3)] {
        let opts = TableBuilderOptions {
            block_size: 1024,
            block_restart_interval: 4,
            bloom_bits_per_key: 10.0,
            compression,
            ..Default::default()
        };
        let (bytes, summary) = build(&entries, &opts);
        assert_eq!(summary.smallest, entries[0].0);
        assert_eq!(summary.largest, entries.last().unwrap().0);
        assert!(summary.num_data_blocks > 10);
        let cache = Arc::new(BlockCache::new(1 << 20));
        let table = open(bytes, Some(cache.clone())).unwrap();
        let p = table.properties();
        assert_eq!(p.num_entries, entries.len() as u64);
        assert_eq!(p.num_deletions, entries.iter().filter(|(k, _)| k[k.len() - 8] == 0).count() as u64);
        assert_eq!(
            (p.compression, p.bloom_bits_per_key, table.num_data_blocks()),
            (compression, 10.0, summary.num_data_blocks)
        );
        assert!(table.memory_usage() > 0);
        let mut it = table.iter(BlockReadOptions::default());
        assert_eq!(scan_forward(&mut it), entries);
        // Backward.
        it.seek_to_last().unwrap();
        for (k, v) in entries.iter().rev() {
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.prev().unwrap();
        }
        assert!(!it.valid());
        // Random seeks in both directions, then steps.
        for _ in 0..300 {
            let target =
                lookup_key(format!("k{:05}", rng.gen_range(0..4100)).as_bytes(), rng.gen_range(0..25000));
            let ge = entries.iter().position(|(k, _)| compare_internal(k, &target) != Ordering::Less);
            it.seek(&target).unwrap();
            assert_eq!(it.valid().then(|| it.key().to_vec()), ge.map(|i| entries[i].0.clone()));
            if let Some(i) = ge.filter(|&i| i > 0) {
                it.prev().unwrap();
                assert_eq!(it.key(), &entries[i - 1].0[..]);
            }
            let le = entries.iter().rposition(|(k, _)| compare_internal(k, &target) != Ordering::Greater);
            it.seek_for_prev(&target).unwrap();
            assert_eq!(it.valid().then(|| it.key().to_vec()), le.map(|i| entries[i].0.clone()));
            if let Some(i) = le.filter(|&i| i + 1 < entries.len()) {
                it.next().unwrap();
                assert_eq!(it.key(), &entries[i + 1].0[..]);
            }
        }
        assert!(cache.stats().hits > 0);
    }
}

#[test]
fn readahead_reads_the_same_entries_in_every_direction_and_still_checks_blocks() {
    let mut rng = SmallRng::seed_from_u64(9);
    let entries = versioned_entries(&mut rng, 2000);
    let opts = TableBuilderOptions { block_size: 512, ..Default::default() };
    let (bytes, summary) = build(&entries, &opts);
    assert!(summary.num_data_blocks > 20);
    // Compressed blocks are decoded straight from the window.
    let lz4 = TableBuilderOptions { compression: CompressionType::Lz4, ..opts.clone() };
    let tables = [open(bytes.clone(), None).unwrap(), open(build(&entries, &lz4).0, None).unwrap()];
    // Windows smaller than a block, a few blocks, and the whole table.
    // With prefetch, the next window is read on a read thread and blocks
    // straddling two windows are joined from both.
    let cases = tables.iter().flat_map(|t| [1, 700, 4096, 1 << 20].map(|r| (t, r)));
    for ((table, readahead), prefetch) in cases.flat_map(|c| [(c, false), (c, true)]) {
        let ro = BlockReadOptions { readahead, prefetch, ..Default::default() };
        let mut it = table.iter(ro);
        assert_eq!(scan_forward(&mut it), entries, "readahead {readahead} prefetch {prefetch}");
        // Backward moves bypass the window; a later forward move refills it.
        it.seek_to_last().unwrap();
        for (k, _) in entries.iter().rev().take(300) {
            assert_eq!(it.key(), &k[..]);
            it.prev().unwrap();
        }
        for (k, _) in entries.iter().skip(entries.len() - 301) {
            assert_eq!(it.key(), &k[..]);
            it.next().unwrap();
        }
    }
    // A flipped byte in a data block is still Corruption through the window.
    let mut bad = bytes;
    bad[600] ^= 0x40;
    let table = open(bad, None).unwrap();
    for (readahead, prefetch) in [(1 << 20, false), (700, true)] {
        let mut it = table.iter(BlockReadOptions { readahead, prefetch, ..Default::default() });
        let mut result = it.seek_to_first();
        while result.is_ok() && it.valid() {
            result = it.next();
        }
        assert!(result.is_err_and(|e| e.is_corruption()), "prefetch {prefetch}");
    }
}

#[test]
fn get_sees_versions_deletes_and_snapshots() {
    let mut rng = SmallRng::seed_from_u64(2);
    let entries = versioned_entries(&mut rng, 500);
    let opts = TableBuilderOptions { block_size: 256, block_restart_interval: 3, ..Default::default() };
    let table = open(build(&entries, &opts).0, None).unwrap();
    // Model: user key -> versions (seq, kind, value), newest first.
    let mut model: BTreeMap<Vec<u8>, Vec<Version>> = BTreeMap::new();
    for (k, v) in &entries {
        let p = crate::key::parse_internal_key(k).unwrap();
        model.entry(p.user_key.to_vec()).or_default().push((p.seq, p.kind, v.clone()));
    }
    let ro = BlockReadOptions::default();
    for (user, versions) in &model {
        assert!(table.may_contain(user));
        for snapshot in
            [crate::key::MAX_SEQ, versions[0].0, versions.last().unwrap().0, versions.last().unwrap().0 - 1]
        {
            let want = versions.iter().find(|(s, _, _)| *s <= snapshot).map(|(_, k, v)| (*k, v.clone()));
            assert_eq!(table.get(&lookup_key(user, snapshot), ro).unwrap(), want, "{user:?}@{snapshot}");
        }
    }
    // Absent keys: between, before and after the stored ones.
    for absent in ["k00001", "a", "k99999", "k00499x", ""] {
        assert_eq!(table.get(&lookup_key(absent.as_bytes(), crate::key::MAX_SEQ), ro).unwrap(), None);
    }
}

#[test]
fn builder_rejects_bad_input_and_handles_edges() {
    let mut b = TableBuilder::new(Box::new(MemFile::default()), TableBuilderOptions::default());
    let k = |u: &str, s| make_internal_key(u.as_bytes(), s, ValueKind::Put);
    b.add(&k("b", 5), b"x").unwrap();
    assert!(matches!(b.add(&k("b", 5), b"x"), Err(crate::Error::InvalidArgument(_))));
    assert!(matches!(b.add(&k("b", 6), b"x"), Err(crate::Error::InvalidArgument(_))));
    assert!(matches!(b.add(&k("a", 1), b"x"), Err(crate::Error::InvalidArgument(_))));
    assert!(matches!(b.add(b"short", b"x"), Err(crate::Error::InvalidArgument(_))));
    b.add(&k("b", 4), b"y").unwrap();
    assert!(b.estimated_file_size() > 0);
    // Empty table, no filter, block size 0 and restart interval 0.
    for opts in [
        TableBuilderOptions { bloom_bits_per_key: 0.0, ..Default::default() },
        TableBuilderOptions {
            block_size: 0,
            block_restart_interval: 0,
            bloom_bits_per_key: 0.7,
            ..Default::default()
        },
    ] {
        let (bytes, s) = build(&vec![], &opts);
        assert_eq!((s.num_entries, s.num_data_blocks, s.smallest.len()), (0, 0, 0));
        let t = open(bytes, None).unwrap();
        assert_eq!(scan_forward(&mut t.iter(BlockReadOptions::default())), vec![]);
        assert_eq!(t.get(&lookup_key(b"a", 9), BlockReadOptions::default()).unwrap(), None);
        let entries: Entries = (0..50).map(|i| (k(&format!("u{i:03}"), 1), vec![i as u8; i])).collect();
        let (bytes, s) = build(&entries, &opts);
        let t = open(bytes, None).unwrap();
        assert_eq!(scan_forward(&mut t.iter(BlockReadOptions::default())), entries);
        if opts.bloom_bits_per_key == 0.0 {
            assert!(t.may_contain(b"nope"));
        }
        if opts.block_size == 0 {
            assert_eq!(s.num_data_blocks, 50);
        }
    }
}

/// Every data block is shown to the observer with its handle, first and
/// last keys, and the payload a read of it decodes.
#[test]
fn observer_sees_each_data_block_as_a_read_decodes_it() {
    type Seen = Arc<parking_lot::Mutex<Vec<(format::BlockHandle, Vec<u8>, Vec<u8>, Vec<u8>)>>>;
    struct Collect(Seen);
    impl crate::table::observer::DataBlockObserver for Collect {
        fn data_block(&mut self, h: format::BlockHandle, first: &[u8], last: &[u8], raw: &[u8]) {
            self.0.lock().push((h, first.to_vec(), last.to_vec(), raw.to_vec()));
        }
    }
    let mut rng = SmallRng::seed_from_u64(4);
    let entries = versioned_entries(&mut rng, 400);
    let opts =
        TableBuilderOptions { block_size: 300, compression: CompressionType::Lz4, ..Default::default() };
    let file = MemFile::default();
    let seen: Seen = Default::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts);
    b.set_observer(Box::new(Collect(seen.clone())));
    for (k, v) in &entries {
        b.add(k, v).unwrap();
    }
    let summary = b.finish().unwrap();
    let table = open(file.bytes(), None).unwrap();
    let seen = seen.lock();
    assert_eq!(seen.len() as u64, summary.num_data_blocks);
    let mut next = 0;
    for (handle, first, last, raw) in seen.iter() {
        let read = table.read_block(*handle, BlockReadOptions::default()).unwrap();
        let ours = Arc::new(Block::new(raw.clone()).unwrap());
        let (mut a, mut b) = (read.iter(), ours.iter());
        a.seek_to_first().unwrap();
        b.seek_to_first().unwrap();
        assert_eq!(a.key(), &first[..]);
        while a.valid() {
            assert!(b.valid());
            assert_eq!((a.key(), a.value()), (b.key(), b.value()));
            assert_eq!((a.key(), a.value()), (&entries[next].0[..], &entries[next].1[..]));
            let key = a.key().to_vec();
            next += 1;
            a.next().unwrap();
            b.next().unwrap();
            if !a.valid() {
                assert_eq!(key, *last);
            }
        }
        assert!(!b.valid());
    }
    assert_eq!(next, entries.len());
}

#[test]
fn fill_cache_and_verify_flags() {
    let mut rng = SmallRng::seed_from_u64(3);
    let entries = versioned_entries(&mut rng, 300);
    let opts = TableBuilderOptions { block_size: 512, ..Default::default() };
    let (bytes, _) = build(&entries, &opts);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let table = open(bytes, Some(cache.clone())).unwrap();
    let no_fill = BlockReadOptions {
        verify_checksums: false,
        verify_mapped: false,
        fill_cache: false,
        readahead: 0,
        prefetch: false,
    };
    assert_eq!(scan_forward(&mut table.iter(no_fill)), entries);
    assert_eq!(cache.resident_blocks(1), 0);
    assert_eq!(scan_forward(&mut table.iter(BlockReadOptions::default())), entries);
    assert_eq!(cache.resident_blocks(1), table.num_data_blocks());
}

/// The compaction buffer's probe reads nothing: a key whose block is not
/// resident is `NotCached` (and counts no miss), one whose block is answers
/// exactly as `get`.
#[test]
fn get_if_cached_never_reads_the_file() {
    let mut rng = SmallRng::seed_from_u64(4);
    let entries = versioned_entries(&mut rng, 300);
    let opts = TableBuilderOptions { block_size: 512, ..Default::default() };
    let (bytes, _) = build(&entries, &opts);
    let users: Vec<Vec<u8>> =
        entries.iter().map(|(k, _)| crate::key::parse_internal_key(k).unwrap().user_key.to_vec()).collect();
    let no_cache = open(bytes.clone(), None).unwrap();
    assert_eq!(
        no_cache.get_if_cached(&lookup_key(&users[0], crate::key::MAX_SEQ)).unwrap(),
        CachedGet::NotCached
    );
    let cache = Arc::new(BlockCache::new(1 << 20));
    let table = open(bytes, Some(cache.clone())).unwrap();
    for u in &users {
        let l = lookup_key(u, crate::key::MAX_SEQ);
        assert_eq!(table.get_if_cached(&l).unwrap(), CachedGet::NotCached);
    }
    assert_eq!((cache.resident_blocks(1), cache.stats().misses), (0, 0), "nothing read, no miss");
    let ro = BlockReadOptions::default();
    for u in users.iter().step_by(2) {
        let l = lookup_key(u, crate::key::MAX_SEQ);
        let want = table.get(&l, ro).unwrap().unwrap();
        assert_eq!(table.get_if_cached(&l).unwrap(), CachedGet::Found(want.0, want.1));
    }
    assert_eq!(table.get_if_cached(&lookup_key(b"k00001", crate::key::MAX_SEQ)).unwrap(), CachedGet::Absent);
}

/// Flips one bit of every byte of a small table (a different bit position
/// per byte): opening, reading and iterating never panic, and with checksums
/// on never return a value that was not written.
#[test]
fn a_bit_flip_in_every_byte_is_detected_or_harmless() {
    let entries: Entries = (0..40u32)
        .map(|i| {
            let kind = if i % 7 == 3 { ValueKind::Delete } else { ValueKind::Put };
            (
                make_internal_key(format!("key{i:03}").as_bytes(), 100 - i as u64, kind),
                format!("val{i}").into_bytes(),
            )
        })
        .collect();
    for compression in [CompressionType::None, CompressionType::Lz4, CompressionType::Zstd(1)] {
        let opts = TableBuilderOptions {
            block_size: 128,
            block_restart_interval: 2,
            bloom_bits_per_key: 8.0,
            compression,
            ..Default::default()
        };
        let (good, _) = build(&entries, &opts);
        for bit in (0..good.len()).map(|byte| byte * 8 + byte % 8) {
            let mut bytes = good.clone();
            bytes[bit / 8] ^= 1 << (bit % 8);
            let table = match open(bytes, None) {
                Ok(t) => t,
                Err(e) => {
                    assert!(e.is_corruption(), "bit {bit}: {e}");
                    continue;
                }
            };
            let ro = BlockReadOptions::default();
            for (i, (k, v)) in entries.iter().enumerate() {
                let p = crate::key::parse_internal_key(k).unwrap();
                match table.get(&lookup_key(p.user_key, crate::key::MAX_SEQ), ro) {
                    Ok(Some((kind, got))) => {
                        assert_eq!(kind, p.kind, "bit {bit} entry {i}");
                        let want: &[u8] = if kind == ValueKind::Put { v } else { &[] };
                        assert_eq!(got, want, "bit {bit}");
                    }
                    // A lost key: flips in the filter must fail its checksum at open instead.
                    Ok(None) => panic!("bit {bit}: key {i} lost"),
                    Err(e) => assert!(e.is_corruption(), "bit {bit}: {e}"),
                }
            }
            let mut it = table.iter(ro);
            let mut got = Vec::new();
            let mut res = it.seek_to_first();
            while res.is_ok() && it.valid() {
                got.push((it.key().to_vec(), it.value().to_vec()));
                res = it.next();
            }
            match res {
                Ok(()) => assert_eq!(got, entries, "bit {bit}"),
                Err(e) => {
                    assert!(e.is_corruption(), "bit {bit}: {e}");
                    assert_eq!(got[..], entries[..got.len()], "bit {bit}");
                }
            }
            // Without checksum verification: anything but a panic.
            let raw = BlockReadOptions {
                verify_checksums: false,
                verify_mapped: false,
                fill_cache: false,
                readahead: 0,
                prefetch: false,
            };
            let mut it = table.iter(raw);
            let mut steps = 0;
            let mut res = it.seek_to_last();
            while res.is_ok() && it.valid() && steps < 100 {
                res = it.prev();
                steps += 1;
            }
            let _ = table.get(&lookup_key(b"key010", 1000), raw);
        }
        // Truncations are corruption too.
        for cut in [1, 10, 63, 64, 65, good.len() - 1] {
            let short = good[..good.len() - cut].to_vec();
            let len = short.len() as u64;
            assert!(open(short, None).unwrap_err().is_corruption());
            assert!(Table::open(MemFile::with(good.clone()), 1, len, None).unwrap_err().is_corruption());
        }
    }
}

// ---- DTables: several segments appended to one file ----

/// Segment `s` of a DTable (oldest first): a random half of the user keys
/// `k00000..` (even numbers), one or two versions each, every version newer
/// than any of an older segment (as an append from the level above is).
/// Key `k00000` is put in segment 0 and deleted in segment 1; `k00002` is
/// put in segment 0 only.
fn segment_entries(rng: &mut SmallRng, s: u64, users: u64) -> Entries {
    let mut out = Vec::new();
    for u in 0..users {
        let forced = match (u, s) {
            (0, 0) | (1, 0) => Some(ValueKind::Put),
            (0, 1) => Some(ValueKind::Delete),
            (0 | 1, _) => continue,
            _ => None,
        };
        if forced.is_none() && !rng.gen_bool(0.5) {
            continue;
        }
        let user = format!("k{:05}", u * 2).into_bytes();
        for v in (0..rng.gen_range(1..=2u64)).rev() {
            let seq = 100_000 * (s + 1) + 10 * u + v;
            let kind =
                forced.unwrap_or_else(
                    || {
                        if rng.gen_ratio(1, 5) {
                            ValueKind::Delete
                        } else {
                            ValueKind::Put
                        }
                    },
                );
            let value = match kind {
                ValueKind::Put | ValueKind::Merge => {
                    vec![b'a' + (s as u8) * 3 + (v as u8); rng.gen_range(1..40)]
                }
                ValueKind::Delete | ValueKind::RangeDelete => vec![],
            };
            out.push((make_internal_key(&user, seq, kind), value));
        }
    }
    out
}

/// Appends each of `segments` to one file as its own table (the builder
/// starts at the file's current length) and returns the file and the list
/// the MANIFEST would record.
fn build_segments(segments: &[Entries], opts: &[TableBuilderOptions]) -> (MemFile, Vec<SegmentMeta>) {
    let file = MemFile::default();
    let mut metas = Vec::new();
    for (i, entries) in segments.iter().enumerate() {
        let start = file.bytes().len() as u64;
        let mut b = TableBuilder::new(Box::new(file.clone()), opts[i % opts.len()].clone());
        for (k, v) in entries {
            b.add(k, v).unwrap();
        }
        let s = b.finish().unwrap();
        assert_eq!((s.segment_start, s.file_size), (start, file.bytes().len() as u64));
        let footer = &file.bytes()[s.file_size as usize - format::FOOTER_LEN..];
        assert_eq!(s.footer_crc, crate::util::crc::crc32c(footer));
        metas.push(SegmentMeta { end: s.file_size, footer_crc: s.footer_crc });
    }
    (file, metas)
}

fn open_dtable(
    file: &MemFile,
    metas: &[SegmentMeta],
    cache: Option<Arc<BlockCache>>,
) -> Result<Arc<Table>, crate::Error> {
    let size = metas.last().map_or(file.bytes().len() as u64, |m| m.end);
    let list = if metas.len() == 1 { &[][..] } else { metas };
    Table::open_segments(Arc::new(file.clone()), 7, size, list, cache).map(Arc::new)
}

/// The model of a DTable: every segment's entries in one sorted list.
fn merged(segments: &[Entries]) -> Entries {
    let mut all: Entries = segments.iter().flatten().cloned().collect();
    all.sort_by(|a, b| compare_internal(&a.0, &b.0));
    all
}

/// Three segments with different block options (one without a filter).
fn three_segments(seed: u64) -> (Vec<Entries>, MemFile, Vec<SegmentMeta>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let segments: Vec<Entries> = (0..3).map(|s| segment_entries(&mut rng, s, 600)).collect();
    let opts = [
        TableBuilderOptions { block_size: 256, block_restart_interval: 3, ..Default::default() },
        TableBuilderOptions {
            block_size: 300,
            bloom_bits_per_key: 0.0,
            compression: CompressionType::Lz4,
            ..Default::default()
        },
        TableBuilderOptions { block_size: 200, bloom_bits_per_key: 6.0, ..Default::default() },
    ];
    let (file, metas) = build_segments(&segments, &opts);
    (segments, file, metas)
}

/// What a get at `lookup` must return from the merged entries.
fn model_get(all: &Entries, lookup: &[u8]) -> Option<(ValueKind, Vec<u8>)> {
    let i = all.partition_point(|(k, _)| compare_internal(k, lookup) == Ordering::Less);
    let (k, v) = all.get(i)?;
    let p = crate::key::parse_internal_key(k).unwrap();
    (p.user_key == crate::key::user_key(lookup)).then(|| (p.kind, v.clone()))
}

#[test]
fn a_dtable_reads_as_the_merge_of_its_segments() {
    let (segments, file, metas) = three_segments(21);
    let all = merged(&segments);
    let table = open_dtable(&file, &metas, Some(Arc::new(BlockCache::new(1 << 20)))).unwrap();
    assert_eq!((table.num_segments(), table.file_size()), (3, metas[2].end));
    let p = table.properties();
    assert_eq!(p.num_entries, all.len() as u64);
    assert_eq!(p.num_deletions, all.iter().filter(|(k, _)| k[k.len() - 8] == 0).count() as u64);
    assert_eq!((&p.smallest, &p.largest), (&all[0].0, &all.last().unwrap().0));
    assert_eq!(p.segment_start, 0);
    assert!(table.index_block().is_none() && table.data_end().is_none());
    assert!(table.read_data_range(0, 10).is_err(), "the read stage takes one-segment tables only");

    // Iteration: forward and backward, plain and with readahead windows
    // (each segment reads ahead within its own data blocks).
    for (readahead, prefetch) in [(0, false), (700, false), (700, true), (1 << 20, false)] {
        let ro = BlockReadOptions { readahead, prefetch, ..Default::default() };
        let mut it = table.iter(ro);
        assert_eq!(scan_forward(&mut it), all, "readahead {readahead} prefetch {prefetch}");
        it.seek_to_last().unwrap();
        for (k, v) in all.iter().rev() {
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.prev().unwrap();
        }
        assert!(!it.valid());
    }

    // Seeks in both directions, then a step each way.
    let mut rng = SmallRng::seed_from_u64(22);
    let mut it = table.iter(BlockReadOptions::default());
    for _ in 0..600 {
        let user = format!("k{:05}", rng.gen_range(0..1250));
        let target = lookup_key(user.as_bytes(), rng.gen_range(0..400_000));
        let ge = all.iter().position(|(k, _)| compare_internal(k, &target) != Ordering::Less);
        it.seek(&target).unwrap();
        assert_eq!(it.valid().then(|| it.key().to_vec()), ge.map(|i| all[i].0.clone()), "seek {user}");
        if let Some(i) = ge.filter(|&i| i > 0) {
            it.prev().unwrap();
            assert_eq!(it.key(), &all[i - 1].0[..]);
            it.next().unwrap();
            assert_eq!(it.key(), &all[i].0[..]);
        }
        let le = all.iter().rposition(|(k, _)| compare_internal(k, &target) != Ordering::Greater);
        it.seek_for_prev(&target).unwrap();
        assert_eq!(it.valid().then(|| it.key().to_vec()), le.map(|i| all[i].0.clone()), "sfp {user}");
        if let Some(i) = le.filter(|&i| i + 1 < all.len()) {
            it.next().unwrap();
            assert_eq!(it.key(), &all[i + 1].0[..]);
            it.prev().unwrap();
            assert_eq!(it.key(), &all[i].0[..]);
        }
    }

    // Point gets: newest version across segments, and at snapshots the
    // versions older segments hold.
    let ro = BlockReadOptions::default();
    let mut by_user: BTreeMap<Vec<u8>, Vec<u64>> = BTreeMap::new();
    for (k, _) in &all {
        let p = crate::key::parse_internal_key(k).unwrap();
        by_user.entry(p.user_key.to_vec()).or_default().push(p.seq);
    }
    let mut older_found = 0;
    for (user, seqs) in &by_user {
        assert!(table.may_contain(user));
        let mut snapshots = vec![crate::key::MAX_SEQ];
        for &s in seqs {
            snapshots.extend([s, s - 1]);
        }
        for snap in snapshots {
            let l = lookup_key(user, snap);
            let want = model_get(&all, &l);
            let got = table.get(&l, ro).unwrap();
            assert_eq!(got, want, "{:?}@{snap}", String::from_utf8_lossy(user));
            older_found += usize::from(snap < 200_000 && got.is_some());
        }
    }
    assert!(older_found > 100, "snapshots reached segment 0 only {older_found} times");
    // A delete in segment 1 hides segment 0's put; before it, the put shows.
    let deleted = b"k00000";
    assert_eq!(
        table.get(&lookup_key(deleted, crate::key::MAX_SEQ), ro).unwrap(),
        Some((ValueKind::Delete, vec![]))
    );
    let put = table.get(&lookup_key(deleted, 199_999), ro).unwrap();
    assert!(matches!(put, Some((ValueKind::Put, ref v)) if !v.is_empty()), "{put:?}");
    assert_eq!(table.get(&lookup_key(deleted, 99_999), ro).unwrap(), None, "before any version");
    // Put only in the oldest segment: found behind the newer segments.
    let old_only = table.get(&lookup_key(b"k00002", crate::key::MAX_SEQ), ro).unwrap();
    assert_eq!(old_only, model_get(&all, &lookup_key(b"k00002", crate::key::MAX_SEQ)));
    assert!(old_only.is_some());
    for absent in ["k00001", "a", "k99999", "k00499x", ""] {
        assert_eq!(table.get(&lookup_key(absent.as_bytes(), crate::key::MAX_SEQ), ro).unwrap(), None);
    }
    // Every data block of every segment is found by its handle alone
    // (read_block picks the segment holding the offset), and together they
    // hold every entry.
    assert!(table.memory_usage() > 0);
    let mut blocks = 0;
    let mut entries = 0;
    for seg in table.segments() {
        let mut index = seg.index.iter();
        index.seek_to_first().unwrap();
        while index.valid() {
            let h = format::BlockHandle::decode(index.value()).unwrap();
            assert!(h.offset >= seg.start && h.offset < seg.data_end);
            let block = table.read_block(h, ro).unwrap();
            let mut it = block.iter();
            it.seek_to_last().unwrap();
            assert_eq!(it.key(), index.key(), "the index key is the block's last key");
            it.seek_to_first().unwrap();
            while it.valid() {
                entries += 1;
                it.next().unwrap();
            }
            blocks += 1;
            index.next().unwrap();
        }
    }
    assert_eq!((blocks, entries), (table.num_data_blocks(), all.len() as u64));
}

/// The compaction buffer's probe across segments: nothing cached is
/// `NotCached` for every written key; after a get has read the blocks it
/// needed, the probe answers exactly as the get did (`Found`, or `Absent`
/// for a key no segment holds at that snapshot), a delete in a newer
/// segment included; a key whose only block is uncached never comes back
/// `Absent` or from an older segment.
#[test]
fn get_if_cached_across_segments() {
    let (segments, file, metas) = three_segments(23);
    let all = merged(&segments);
    let none = open_dtable(&file, &metas, None).unwrap();
    assert_eq!(
        none.get_if_cached(&lookup_key(b"k00000", crate::key::MAX_SEQ)).unwrap(),
        CachedGet::NotCached
    );

    let cache = Arc::new(BlockCache::new(4 << 20));
    let table = open_dtable(&file, &metas, Some(cache.clone())).unwrap();
    let users: std::collections::BTreeSet<Vec<u8>> =
        all.iter().map(|(k, _)| crate::key::user_key(k).to_vec()).collect();
    for u in &users {
        let l = lookup_key(u, crate::key::MAX_SEQ);
        assert_eq!(table.get_if_cached(&l).unwrap(), CachedGet::NotCached, "{u:?}");
    }
    for absent in ["k00001", "k00501", "zzz"] {
        let got = table.get_if_cached(&lookup_key(absent.as_bytes(), crate::key::MAX_SEQ)).unwrap();
        assert!(!matches!(got, CachedGet::Found(..)), "{absent}: {got:?}");
    }
    assert_eq!((cache.resident_blocks(7), cache.stats().misses), (0, 0), "nothing read, no miss");

    // The delete in segment 1 over segment 0's put.
    let ro = BlockReadOptions::default();
    let d = lookup_key(b"k00000", crate::key::MAX_SEQ);
    assert_eq!(table.get(&d, ro).unwrap(), Some((ValueKind::Delete, vec![])));
    assert_eq!(table.get_if_cached(&d).unwrap(), CachedGet::Found(ValueKind::Delete, vec![]));
    // Segment 0's block holding the put was never read: at a snapshot
    // below the delete the probe cannot answer.
    assert_eq!(table.get_if_cached(&lookup_key(b"k00000", 199_999)).unwrap(), CachedGet::NotCached);
    // A key held by segment 0 only: its block is read behind the newer
    // segments (whose blocks a filter false positive may read too).
    let old = lookup_key(b"k00002", crate::key::MAX_SEQ);
    assert_eq!(table.get_if_cached(&old).unwrap(), CachedGet::NotCached);
    let want = table.get(&old, ro).unwrap().unwrap();
    assert_eq!(table.get_if_cached(&old).unwrap(), CachedGet::Found(want.0, want.1));

    // Random lookups and snapshots: before their get the probe is
    // NotCached or already the get's answer; after it, always the answer.
    let mut rng = SmallRng::seed_from_u64(24);
    for _ in 0..1500 {
        let user = format!("k{:05}", rng.gen_range(0..1250));
        let snap = if rng.gen_bool(0.5) { crate::key::MAX_SEQ } else { rng.gen_range(0..400_000) };
        let l = lookup_key(user.as_bytes(), snap);
        let want = model_get(&all, &l);
        let as_cached = |w: &Option<(ValueKind, Vec<u8>)>| match w {
            Some((k, v)) => CachedGet::Found(*k, v.clone()),
            None => CachedGet::Absent,
        };
        let before = table.get_if_cached(&l).unwrap();
        assert!(
            before == CachedGet::NotCached || before == as_cached(&want),
            "{user}@{snap}: {before:?} vs {want:?}"
        );
        assert_eq!(table.get(&l, ro).unwrap(), want, "{user}@{snap}");
        assert_eq!(table.get_if_cached(&l).unwrap(), as_cached(&want), "{user}@{snap}");
    }
}

#[test]
fn segment_lists_that_do_not_match_the_file_are_corruption() {
    let (_, file, metas) = three_segments(25);
    let f: Arc<dyn crate::vfs::RandomAccessFile> = Arc::new(file.clone());
    let size = metas[2].end;
    let open = |size: u64, list: &[SegmentMeta]| Table::open_segments(f.clone(), 7, size, list, None);
    open(size, &metas).unwrap();
    let corrupt = |r: Result<Table, crate::Error>, what: &str| match r {
        Err(e) => assert!(e.is_corruption(), "{what}: {e}"),
        Ok(_) => panic!("{what}: opened"),
    };
    // A footer checksum that is not the one written, for each segment.
    for i in 0..3 {
        let mut bad = metas.clone();
        bad[i].footer_crc ^= 1;
        corrupt(open(size, &bad), &format!("crc of segment {i}"));
    }
    let mut swapped = metas.clone();
    swapped.swap(0, 1);
    (swapped[0].end, swapped[1].end) = (metas[0].end, metas[1].end);
    corrupt(open(size, &swapped), "checksums swapped");
    // Ends that are not where segments end.
    let mut shifted = metas.clone();
    shifted[0].end += 1;
    corrupt(open(size, &shifted), "first end shifted");
    let mut shifted = metas.clone();
    shifted[1].end -= 1;
    corrupt(open(size, &shifted), "middle end shifted");
    corrupt(open(size, &[metas[0], metas[2]]), "a segment left out");
    corrupt(open(size, &[metas[1], metas[2]]), "the first segment left out");
    corrupt(open(size, &[metas[0]]), "a one-segment list");
    corrupt(open(size, &metas[..2]), "the list ends before the size");
    corrupt(open(metas[1].end, &metas), "the list ends after the size");
    corrupt(open(size + 64, &metas), "a size past the file");
    corrupt(
        open(size, &[SegmentMeta { end: 10, footer_crc: 0 }, metas[2]]),
        "a segment shorter than a footer",
    );
    // Without its list the file is not read as its last segment alone.
    corrupt(open(size, &[]), "a DTable opened as one segment");
    corrupt(open(metas[1].end, &[]), "two segments opened as one");
}

#[test]
fn a_shorter_segment_list_sees_only_those_segments() {
    let (segments, file, metas) = three_segments(26);
    let ro = BlockReadOptions::default();
    // The first segment's end, no list: segment 0 alone; the bytes past
    // it (an append no MANIFEST lists) are ignored.
    let first = Table::open(Arc::new(file.clone()), 7, metas[0].end, None).map(Arc::new).unwrap();
    assert_eq!((first.num_segments(), first.file_size()), (1, metas[0].end));
    assert_eq!(first.properties().num_entries, segments[0].len() as u64);
    assert_eq!(scan_forward(&mut first.iter(ro)), segments[0]);
    let put = first.get(&lookup_key(b"k00000", crate::key::MAX_SEQ), ro).unwrap();
    assert!(matches!(put, Some((ValueKind::Put, _))), "segment 1's delete is not seen: {put:?}");
    // A key segment 2 alone holds is not there.
    let only2 = segments[2]
        .iter()
        .map(|(k, _)| crate::key::user_key(k).to_vec())
        .find(|u| !segments[0].iter().chain(&segments[1]).any(|(k, _)| crate::key::user_key(k) == &u[..]))
        .expect("a key of segment 2 alone");
    assert_eq!(first.get(&lookup_key(&only2, crate::key::MAX_SEQ), ro).unwrap(), None);
    // Two of three segments.
    let two = open_dtable(&file, &metas[..2], None).unwrap();
    assert_eq!(two.num_segments(), 2);
    assert_eq!(scan_forward(&mut two.iter(ro)), merged(&segments[..2]));
    assert_eq!(two.get(&lookup_key(&only2, crate::key::MAX_SEQ), ro).unwrap(), None);
    assert_eq!(
        two.get(&lookup_key(b"k00000", crate::key::MAX_SEQ), ro).unwrap(),
        Some((ValueKind::Delete, vec![]))
    );
    let all = open_dtable(&file, &metas, None).unwrap();
    assert!(all.get(&lookup_key(&only2, crate::key::MAX_SEQ), ro).unwrap().is_some());
}

#[test]
fn discover_segments_recovers_the_list_from_the_bytes() {
    let (segments, file, metas) = three_segments(27);
    let len = metas[2].end;
    let ro = BlockReadOptions::default();
    let found = discover_segments(&file, 7, len).unwrap();
    assert_eq!(found, (metas.clone(), len));
    // Two segments, and one (a table written once lists none).
    assert_eq!(discover_segments(&file, 7, metas[1].end).unwrap(), (metas[..2].to_vec(), metas[1].end));
    assert_eq!(discover_segments(&file, 7, metas[0].end).unwrap(), (vec![], metas[0].end));

    // Garbage after the last segment: random bytes, bytes holding the
    // table magic, and the front of a segment whose append was cut short.
    let magic = format::TABLE_MAGIC.to_le_bytes();
    let mut rng = SmallRng::seed_from_u64(28);
    let random: Vec<u8> = (0..500).map(|_| rng.gen()).collect();
    let mut with_magic = random.clone();
    with_magic[100..108].copy_from_slice(&magic);
    with_magic.extend_from_slice(&magic);
    let cut_append = {
        let more = MemFile(Arc::new(parking_lot::Mutex::new(file.bytes())));
        let mut b = TableBuilder::new(Box::new(more.clone()), TableBuilderOptions::default());
        for (k, v) in &segments[2] {
            b.add(k, v).unwrap();
        }
        b.finish().unwrap();
        let b = more.bytes();
        b[len as usize..b.len() - 20].to_vec()
    };
    for (what, tail) in [("random", random), ("magic", with_magic), ("cut append", cut_append)] {
        let mut bytes = file.bytes();
        bytes.extend_from_slice(&tail);
        let f = MemFile(Arc::new(parking_lot::Mutex::new(bytes)));
        let (list, end) = discover_segments(&f, 7, f.bytes().len() as u64).unwrap();
        assert_eq!((&list, end), (&metas, len), "{what}");
        let t = Table::open_segments(Arc::new(f.clone()), 7, end, &list, None).map(Arc::new).unwrap();
        assert_eq!(scan_forward(&mut t.iter(ro)), merged(&segments), "{what}");
    }
    // A file cut inside its second segment: the first one is what is left.
    let mut cut = file.bytes();
    cut.truncate(metas[1].end as usize - 30);
    let f = MemFile(Arc::new(parking_lot::Mutex::new(cut)));
    assert_eq!(discover_segments(&f, 7, f.bytes().len() as u64).unwrap(), (vec![], metas[0].end));
    // Nothing that chains back to offset 0: an error.
    let f = MemFile(Arc::new(parking_lot::Mutex::new(vec![7u8; 300])));
    assert!(discover_segments(&f, 7, 300).is_err());
}

/// A read that resumes where a cached-only probe stopped (the LSbM run's
/// read after its buffer) answers exactly as a fresh get: across segments,
/// at random snapshots, with a cache small enough that the probe stops in
/// every segment, and on a one-segment table.
#[test]
fn a_resumed_get_answers_as_a_fresh_one() {
    let (segments, file, metas) = three_segments(26);
    let all = merged(&segments);
    let cache = Arc::new(BlockCache::new(16 << 10));
    let dtable = open_dtable(&file, &metas, Some(cache)).unwrap();
    let mut rng = SmallRng::seed_from_u64(27);
    let entries = versioned_entries(&mut rng, 400);
    let (bytes, _) = build(&entries, &TableBuilderOptions { block_size: 256, ..Default::default() });
    let single = open(bytes, Some(Arc::new(BlockCache::new(8 << 10)))).unwrap();
    let ro = BlockReadOptions::default();
    let mut resumed = [0; 2];
    for _ in 0..3000 {
        for (t, table) in [&dtable, &single].into_iter().enumerate() {
            let user = format!("k{:05}", rng.gen_range(0..1250));
            let snap = if rng.gen_bool(0.5) { crate::key::MAX_SEQ } else { rng.gen_range(0..400_000) };
            let l = lookup_key(user.as_bytes(), snap);
            // The probe before the get: nothing of the key's may be cached yet.
            let probe = table.may_contain(user.as_bytes()).then(|| table.get_if_cached_in(&l, None).unwrap());
            let want = table.get(&l, ro).unwrap();
            if t == 0 {
                assert_eq!(want, model_get(&all, &l), "{user}@{snap}");
            }
            if let Some((CachedGet::NotCached, Some(at))) = probe {
                resumed[t] += 1;
                let got = table.get_unfiltered_in(&l, ro, None, Some(at)).unwrap();
                assert_eq!(got.map(|(k, v)| (k, v.into_vec())), want, "table {t}: {user}@{snap}");
            }
        }
    }
    assert!(resumed.iter().all(|&n| n > 100), "the probe stopped too rarely to test: {resumed:?}");
}
