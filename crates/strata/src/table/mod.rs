//! The table (SST) file format: sorted files of internal keys made of
//! prefix-compressed data blocks, one bloom filter, a properties block, an
//! index block and a fixed-size footer — one such segment, or several appended
//! one after another (a DTable of the `lwc` policy). See `docs/FORMAT.md`.

pub mod block;
pub mod builder;
pub mod filter;
pub mod format;
pub mod iter;
pub(crate) mod pipeline;
pub mod reader;
pub mod segment;

pub use block::{Block, BlockIter};
pub use builder::{TableBuilder, TableBuilderOptions, TableSummary};
pub use format::TableProperties;
pub use iter::TableIter;
pub use reader::{BlockReadOptions, CachedGet, Table};
pub use segment::{discover_segments, SegmentMeta};

/// In-memory files for the table and cache tests.
#[cfg(test)]
pub(crate) mod test_util {
    use std::sync::Arc;

    use parking_lot::Mutex;

    use crate::error::{Error, Result};
    use crate::vfs::{RandomAccessFile, WritableFile};

    /// A file whose bytes live in a shared vector; writable and randomly readable.
    #[derive(Debug, Clone, Default)]
    pub struct MemFile(pub Arc<Mutex<Vec<u8>>>);

    impl MemFile {
        /// A readable file holding `bytes`.
        pub fn with(bytes: Vec<u8>) -> Arc<dyn RandomAccessFile> {
            Arc::new(MemFile(Arc::new(Mutex::new(bytes))))
        }
        /// A copy of the contents.
        pub fn bytes(&self) -> Vec<u8> {
            self.0.lock().clone()
        }
    }

    impl WritableFile for MemFile {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.0.lock().extend_from_slice(data);
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0.lock().len() as u64
        }
    }

    impl RandomAccessFile for MemFile {
        fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
            let data = self.0.lock();
            let start = usize::try_from(offset).map_err(|_| Error::invalid("offset"))?;
            data.get(start..start.saturating_add(len))
                .map(<[u8]>::to_vec)
                .ok_or_else(|| Error::Io(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)))
        }
        fn len(&self) -> u64 {
            self.0.lock().len() as u64
        }
    }
}

#[cfg(test)]
mod tests {
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
                let value = if kind == ValueKind::Put {
                    vec![b'v' ^ (seq as u8); rng.gen_range(0..60)]
                } else {
                    vec![]
                };
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
            for snapshot in [
                crate::key::MAX_SEQ,
                versions[0].0,
                versions.last().unwrap().0,
                versions.last().unwrap().0 - 1,
            ] {
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
        impl builder::DataBlockObserver for Collect {
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
        let no_fill =
            BlockReadOptions { verify_checksums: false, fill_cache: false, readahead: 0, prefetch: false };
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
        let users: Vec<Vec<u8>> = entries
            .iter()
            .map(|(k, _)| crate::key::parse_internal_key(k).unwrap().user_key.to_vec())
            .collect();
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
        assert_eq!(
            table.get_if_cached(&lookup_key(b"k00001", crate::key::MAX_SEQ)).unwrap(),
            CachedGet::Absent
        );
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
}
