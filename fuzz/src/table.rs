//! Table reader: `Table::open`, `get` and full iteration both ways over an
//! in-memory file. The first byte picks the input's meaning: arbitrary file
//! bytes (`% 4 == 0`, but not `% 8 == 4`; only "no panic, no endless loop" is
//! checked), a DTable (`% 8 == 4`) of 2 to 4 segments built one after another
//! on the same file (the `lwc` policy's appends, each segment's entries newer
//! than an older segment's), or else a valid table built from fuzz-chosen
//! entries and options; the tables are then optionally damaged
//! (bit flips, truncation). An undamaged table must read back exactly; a
//! damaged one must report `Corruption` or return a prefix of what was
//! written, never a wrong value or a lost key, while checksums are verified.
//! A DTable is opened with the segment list a MANIFEST would record (each
//! segment's end and footer checksum); a wrong list must be refused, and
//! `discover_segments` must find the list from the file alone.

use std::cmp::Ordering;
use std::sync::Arc;

use strata::cache::BlockCache;
use strata::iter::InternalIterator;
use strata::key::{
    compare_internal, lookup_key, make_internal_key, parse_internal_key, user_key, ValueKind, MAX_SEQ,
};
use strata::table::{
    discover_segments, BlockReadOptions, SegmentMeta, Table, TableBuilder, TableBuilderOptions,
};
use strata::{CompactionPipeline, CompressionType};

use super::input::Input;
use super::mem::MemFile;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

const VERIFY: BlockReadOptions = BlockReadOptions {
    verify_checksums: true,
    verify_mapped: true,
    fill_cache: true,
    readahead: 0,
    prefetch: false,
};
/// Unverified reads through a readahead window smaller than most inputs, so
/// garbage handles also exercise the window's bounds.
const RAW: BlockReadOptions = BlockReadOptions {
    verify_checksums: false,
    verify_mapped: false,
    fill_cache: false,
    readahead: 4096,
    prefetch: false,
};

/// Sequence numbers of segment `s` start at `s * SEGMENT_SEQS`: every entry of
/// a later segment is newer than any of an older one, as an append from the
/// level above is.
const SEGMENT_SEQS: u64 = 1 << 16;

/// The fuzz body.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.u8();
    if mode % 8 == 4 {
        run_segments(&mut input);
        return;
    }
    if mode.is_multiple_of(4) {
        let bytes = input.rest().to_vec();
        if let Ok(table) = open(bytes.clone()) {
            let steps = 300 * table.file_size() as usize + 100;
            let _ = scan(&table, VERIFY, steps, false);
            let _ = scan(&table, RAW, steps, true);
            for user in [&b""[..], b"a", b"\xff\xff"] {
                let _ = table.get(&lookup_key(user, MAX_SEQ), RAW);
            }
        }
        discovered(bytes);
        return;
    }
    let (entries, opts) = gen_table(&mut input);
    let file = MemFile::default();
    let mut builder = TableBuilder::new(Box::new(file.clone()), opts);
    for (k, v) in &entries {
        builder.add(k, v).expect("add sorted entries");
    }
    builder.finish().expect("finish table");
    let mut bytes = file.bytes();
    let damaged = input.damage(&mut bytes, 20, false);
    let steps = 300 * bytes.len() + 100;
    let table = match open(bytes) {
        Ok(t) => t,
        Err(e) => {
            assert!(damaged, "an undamaged table failed to open: {e}");
            assert!(e.is_corruption(), "damage gave a non-corruption error: {e}");
            return;
        }
    };
    check_verified(&table, &entries, damaged, steps);
    // Unverified reads of damaged data: anything but a panic or an endless loop.
    let _ = scan(&table, RAW, steps, false);
    let _ = scan(&table, RAW, steps, true);
}

fn open(bytes: Vec<u8>) -> strata::Result<Arc<Table>> {
    let len = bytes.len() as u64;
    Table::open(MemFile::with(bytes), 7, len, Some(Arc::new(BlockCache::new(1 << 16)))).map(Arc::new)
}

/// Opens `bytes` as a table of `size` bytes with the MANIFEST's segment list.
fn open_segments(bytes: Vec<u8>, size: u64, segments: &[SegmentMeta]) -> strata::Result<Arc<Table>> {
    let cache = Some(Arc::new(BlockCache::new(1 << 16)));
    Table::open_segments(MemFile::with(bytes), 7, size, segments, cache).map(Arc::new)
}

/// Repair's walk over a file of unknown segments: no panic; whatever it
/// finds must open as it says or fail, and reads never loop.
fn discovered(bytes: Vec<u8>) {
    let file = MemFile::with(bytes.clone());
    let Ok((segments, end)) = discover_segments(&*file, 7, bytes.len() as u64) else { return };
    assert!(end <= bytes.len() as u64, "segments past the end of the file");
    assert!(segments.len() != 1, "a one-segment table is listed as no segments");
    if let Some(last) = segments.last() {
        assert_eq!(last.end, end, "the last segment ends where the walk started");
    }
    if let Ok(table) = open_segments(bytes, end, &segments) {
        let steps = 300 * table.file_size() as usize + 100;
        let _ = scan(&table, VERIFY, steps, false);
        let _ = scan(&table, RAW, steps, true);
    }
}

/// A DTable: segments appended one by one with `TableBuilder` on one file,
/// checked against the merged model, reopened with the older segments only
/// (the last append not committed), with a wrong segment list (refused),
/// then damaged.
fn run_segments(input: &mut Input) {
    let count = 2 + input.below(3);
    let file = MemFile::default();
    let (mut metas, mut segments) = (Vec::<SegmentMeta>::new(), Vec::new());
    for s in 0..count {
        let opts = gen_options(input);
        let entries = gen_entries(input, s as u64 * SEGMENT_SEQS);
        let mut builder = TableBuilder::new(Box::new(file.clone()), opts);
        for (k, v) in &entries {
            builder.add(k, v).expect("add sorted entries");
        }
        let summary = builder.finish().expect("finish segment");
        let start = metas.last().map_or(0, |m| m.end);
        assert_eq!(summary.segment_start, start, "segment {s} starts where the file ended");
        assert_eq!(summary.num_entries, entries.len() as u64);
        metas.push(SegmentMeta { end: summary.file_size, footer_crc: summary.footer_crc });
        segments.push(entries);
    }
    let bytes = file.bytes();
    let size = bytes.len() as u64;
    assert_eq!(metas.last().map(|m| m.end), Some(size));
    let steps = 300 * bytes.len() + 100;

    // Undamaged: exact answers, at the newest state and at older snapshots.
    let model = merged(&segments);
    let table = open_segments(bytes.clone(), size, &metas).expect("an undamaged DTable opens");
    assert_eq!(table.num_segments(), count);
    assert_eq!(table.properties().num_entries, model.len() as u64);
    check_verified(&table, &model, false, steps);
    check_snapshot_gets(&table, &model, count);
    // The file alone leads back to the same segments (repair's walk).
    let probe = MemFile::with(bytes.clone());
    let found = discover_segments(&*probe, 7, size).expect("discover an undamaged DTable's segments");
    assert_eq!(found, (metas.clone(), size), "discover_segments");
    // Without its segment list the file is not read as its last segment alone.
    let alone = open(bytes.clone()).map(|_| ()).expect_err("a DTable opened as one segment");
    assert!(alone.is_corruption(), "{alone}");
    // The last append not committed: the MANIFEST lists the older segments
    // (one segment: no list) and the size they end at.
    let older = &metas[..count - 1];
    let older_list: &[SegmentMeta] = if older.len() == 1 { &[] } else { older };
    let t =
        open_segments(bytes.clone(), older[older.len() - 1].end, older_list).expect("older segments open");
    check_verified(&t, &merged(&segments[..count - 1]), false, steps);

    // A wrong segment list, as a damaged MANIFEST record could give: refused.
    let (mut list, mut listed_size) = (metas.clone(), size);
    let i = input.below(count);
    let delta = 1 + input.below(100) as u64;
    match input.below(4) {
        0 => list[i].footer_crc ^= 1 << input.below(32),
        1 if i + 1 < count => {
            list[i].end =
                if input.chance(128) { list[i].end + delta } else { list[i].end.saturating_sub(delta) }
        }
        2 => listed_size = if input.chance(128) { size + delta } else { size.saturating_sub(delta) },
        _ => {}
    }
    if (list.as_slice(), listed_size) != (metas.as_slice(), size) {
        match open_segments(bytes.clone(), listed_size, &list) {
            Ok(_) => {
                panic!("a wrong segment list was accepted: {list:?} of {listed_size} bytes, want {metas:?}")
            }
            Err(e) => assert!(e.is_corruption(), "a wrong segment list: {e}"),
        }
    }

    // Damage: refused at open, or `Corruption` / a prefix on reads.
    let mut bytes = bytes;
    if input.damage(&mut bytes, 20, false) {
        match open_segments(bytes.clone(), size, &metas) {
            Err(e) => assert!(e.is_corruption(), "damage gave a non-corruption error: {e}"),
            Ok(table) => {
                check_verified(&table, &model, true, steps);
                let _ = scan(&table, RAW, steps, false);
                let _ = scan(&table, RAW, steps, true);
            }
        }
    }
    discovered(bytes);
}

/// Every segment's entries in one sorted list.
fn merged(segments: &[Entries]) -> Entries {
    let mut all: Entries = segments.concat();
    all.sort_by(|a, b| compare_internal(&a.0, &b.0));
    all
}

/// Reads at snapshots inside each segment's sequence range: the newest entry
/// of the key at or below the snapshot, whichever segment holds it.
fn check_snapshot_gets(table: &Arc<Table>, entries: &Entries, segments: usize) {
    let mut users: Vec<&[u8]> = entries.iter().map(|(k, _)| user_key(k)).collect();
    users.dedup();
    for s in 0..segments as u64 {
        let snap = s * SEGMENT_SEQS + SEGMENT_SEQS / 2;
        for &u in &users {
            let want = entries.iter().find_map(|(k, v)| {
                let p = parse_internal_key(k).expect("built keys parse");
                (p.user_key == u && p.seq <= snap).then(|| (p.kind, v.clone()))
            });
            let got = table.get(&lookup_key(u, snap), VERIFY).expect("get from an undamaged DTable");
            assert_eq!(got, want, "get({u:?}) at snapshot {snap}");
        }
    }
}

/// Sorted, distinct internal keys and the builder options, from the input.
fn gen_table(input: &mut Input) -> (Entries, TableBuilderOptions) {
    let opts = gen_options(input);
    (gen_entries(input, 0), opts)
}

/// Table builder options, from the input.
fn gen_options(input: &mut Input) -> TableBuilderOptions {
    let compression = match input.u8() % 4 {
        0 | 1 => CompressionType::None,
        2 => CompressionType::Lz4,
        _ => CompressionType::Zstd(1 + input.below(3) as i32),
    };
    TableBuilderOptions {
        block_size: input.below(64) * 8,
        block_restart_interval: 1 + input.below(16),
        bloom_bits_per_key: f64::from(input.u8() % 64) / 4.0,
        compression,
        pipeline: match input.u8() % 4 {
            0 | 1 => CompactionPipeline::Sequential,
            2 => CompactionPipeline::Pipelined,
            _ => CompactionPipeline::Parallel { compute_threads: 2 },
        },
        // Not drawn from the input, so the committed corpus keeps its meaning.
        ..TableBuilderOptions::default()
    }
}

/// Sorted, distinct internal keys with sequence numbers from `seq_base` on.
fn gen_entries(input: &mut Input, seq_base: u64) -> Entries {
    let n = input.below(64);
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let user = input.bytes(6);
        let seq = seq_base + u64::from(input.u16());
        let (kind, value) = if input.chance(50) {
            (ValueKind::Delete, Vec::new())
        } else if input.chance(30) {
            let fill = input.u8();
            (ValueKind::Put, vec![fill; 16 * input.below(64)])
        } else {
            (ValueKind::Put, input.bytes(24))
        };
        entries.push((make_internal_key(&user, seq, kind), value));
    }
    entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
    entries.dedup_by(|a, b| compare_internal(&a.0, &b.0) == Ordering::Equal);
    entries
}

/// With checksums on: exact contents if undamaged, else a prefix and no wrong value.
fn check_verified(table: &Arc<Table>, entries: &Entries, damaged: bool, steps: usize) {
    let (fwd, err) = scan(table, VERIFY, steps, false);
    if let Some(e) = err {
        assert!(damaged, "undamaged table: scan failed: {e}");
        assert!(e.is_corruption(), "scan error is not corruption: {e}");
    } else {
        assert_eq!(fwd.len(), entries.len(), "forward scan length (damaged: {damaged})");
    }
    assert_eq!(fwd[..], entries[..fwd.len()], "forward scan returned unwritten data");
    let (mut bwd, err) = scan(table, VERIFY, steps, true);
    if err.is_none() {
        bwd.reverse();
        assert_eq!(bwd, *entries, "backward scan");
    }
    // Newest version of each user key through `get`.
    let mut prev_user: Option<&[u8]> = None;
    for (k, v) in entries {
        let p = parse_internal_key(k).expect("built keys parse");
        if prev_user == Some(p.user_key) {
            continue;
        }
        prev_user = Some(p.user_key);
        match table.get(&lookup_key(p.user_key, MAX_SEQ), VERIFY) {
            Ok(Some((kind, got))) => {
                assert_eq!(kind, p.kind, "get({:?}) kind", p.user_key);
                assert_eq!(&got, v, "get({:?}) value", p.user_key);
            }
            Ok(None) => panic!("get({:?}) lost a written key (damaged: {damaged})", p.user_key),
            Err(e) => assert!(damaged && e.is_corruption(), "get({:?}): {e}", p.user_key),
        }
    }
    if !damaged {
        let mut it = table.iter(VERIFY);
        for (i, (k, _)) in entries.iter().enumerate() {
            it.seek(k).expect("seek");
            assert_eq!(it.key(), &k[..], "seek to entry {i}");
        }
    }
}

/// Iterates the whole table (capped at `steps` entries); returns what was read
/// and the error that stopped it, if any.
fn scan(
    table: &Arc<Table>,
    opts: BlockReadOptions,
    steps: usize,
    backward: bool,
) -> (Entries, Option<strata::Error>) {
    let mut it = table.iter(opts);
    let mut out = Vec::new();
    let mut res = if backward { it.seek_to_last() } else { it.seek_to_first() };
    while res.is_ok() && it.valid() {
        assert!(out.len() <= steps, "table iterator does not terminate");
        out.push((it.key().to_vec(), it.value().to_vec()));
        res = if backward { it.prev() } else { it.next() };
    }
    (out, res.err())
}
