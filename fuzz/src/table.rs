//! Table reader: `Table::open`, `get` and full iteration both ways over an
//! in-memory file. The first byte picks the input's meaning: arbitrary file
//! bytes (only "no panic, no endless loop" is checked), or a valid table built
//! from fuzz-chosen entries and options, then optionally damaged (bit flips,
//! truncation). An undamaged table must read back exactly; a damaged one must
//! report `Corruption` or return a prefix of what was written, never a wrong
//! value or a lost key, while checksums are verified.

use std::cmp::Ordering;
use std::sync::Arc;

use strata::cache::BlockCache;
use strata::iter::InternalIterator;
use strata::key::{compare_internal, lookup_key, make_internal_key, parse_internal_key, ValueKind, MAX_SEQ};
use strata::table::{BlockReadOptions, Table, TableBuilder, TableBuilderOptions};
use strata::{CompactionPipeline, CompressionType};

use super::input::Input;
use super::mem::MemFile;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

const VERIFY: BlockReadOptions =
    BlockReadOptions { verify_checksums: true, fill_cache: true, readahead: 0, prefetch: false };
/// Unverified reads through a readahead window smaller than most inputs, so
/// garbage handles also exercise the window's bounds.
const RAW: BlockReadOptions =
    BlockReadOptions { verify_checksums: false, fill_cache: false, readahead: 4096, prefetch: false };

/// The fuzz body.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    if input.u8().is_multiple_of(4) {
        let bytes = input.rest().to_vec();
        if let Ok(table) = open(bytes) {
            let steps = 300 * table.file_size() as usize + 100;
            let _ = scan(&table, VERIFY, steps, false);
            let _ = scan(&table, RAW, steps, true);
            for user in [&b""[..], b"a", b"\xff\xff"] {
                let _ = table.get(&lookup_key(user, MAX_SEQ), RAW);
            }
        }
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

/// Sorted, distinct internal keys and the builder options, from the input.
fn gen_table(input: &mut Input) -> (Entries, TableBuilderOptions) {
    let compression = match input.u8() % 4 {
        0 | 1 => CompressionType::None,
        2 => CompressionType::Lz4,
        _ => CompressionType::Zstd(1 + input.below(3) as i32),
    };
    let opts = TableBuilderOptions {
        block_size: input.below(64) * 8,
        block_restart_interval: 1 + input.below(16),
        bloom_bits_per_key: f64::from(input.u8() % 64) / 4.0,
        compression,
        pipeline: match input.u8() % 4 {
            0 | 1 => CompactionPipeline::Sequential,
            2 => CompactionPipeline::Pipelined,
            _ => CompactionPipeline::Parallel { compute_threads: 2 },
        },
    };
    let n = input.below(64);
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let user = input.bytes(6);
        let seq = u64::from(input.u16());
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
    (entries, opts)
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
