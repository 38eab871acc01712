//! Corruption matrix (issue 5, item 3): bit flips and truncations in every file
//! type — WAL, table data/index/filter/properties blocks and footer, MANIFEST,
//! CURRENT — opened under every `WalRecoveryMode` and every built-in policy.
//! Each case predicts the documented outcome (docs/FORMAT.md, "Corruption and
//! recovery behaviour by file type") from the file's own layout, then checks
//! it: open fails with `Corruption`, or it opens and every read is the model's
//! value, a predicted `None` (dropped records), or a `Corruption` error for
//! exactly the damaged keys. Never a panic, never a wrong value.
//! `STRATA_MATRIX_VERBOSE=1` prints every case with its prediction and result.
//!
//! `multi_segment_dtable_matrix` does the same for a DTable of the `lwc`
//! policy (one table file of several appended segments): bit flips in each
//! segment's data, filter, properties and index blocks and footer,
//! truncations at and between segment boundaries, uncommitted appends (garbage
//! and a complete segment), and damage of the MANIFEST's segment list (tag 14),
//! both as a record whose checksum fails and as a well-formed record with a
//! wrong footer checksum, end offset, count or file id.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use strata::iter::InternalIterator;
use strata::key::{compare_internal, lookup_key, make_internal_key, user_key, ValueKind, MAX_SEQ};
use strata::table::format::{read_block_contents, BlockHandle, Footer, FOOTER_LEN};
use strata::table::{discover_segments, Block, SegmentMeta, TableBuilder, TableBuilderOptions};
use strata::util::crc;
use strata::version::VersionEdit;
use strata::vfs::{RandomAccessFile, RandomOpenOptions};
use strata::{CompactionStyle, CompressionType, Db, MemVfs, Options, Vfs, WalRecoveryMode, WriteOptions};

type Kv = BTreeMap<Vec<u8>, Vec<u8>>;
type Keys = BTreeSet<Vec<u8>>;

const LOG_BLOCK: usize = 32768;
const LOG_HEADER: usize = 7;
const TRAILER: usize = 5;

const MODES: [WalRecoveryMode; 4] = [
    WalRecoveryMode::TolerateCorruptedTailRecords,
    WalRecoveryMode::AbsoluteConsistency,
    WalRecoveryMode::PointInTimeRecovery,
    WalRecoveryMode::SkipAnyCorruptedRecords,
];

fn policies() -> Vec<(&'static str, CompactionStyle)> {
    CompactionStyle::builtin_names()
        .iter()
        .map(|&n| (n, CompactionStyle::from_name(n).expect("built-in policy")))
        .collect()
}

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

fn options(style: &CompactionStyle, vfs: &MemVfs) -> Options {
    Options::default()
        .with_compaction_style(style.clone())
        .with_vfs(Arc::new(vfs.clone()))
        .with_compression(CompressionType::None)
        .with_block_size(1024)
        .with_write_buffer_size(4 << 20)
        .with_disable_auto_compactions(true)
}

fn value(tag: &str, i: usize) -> Vec<u8> {
    format!("{tag}-{i}-{}", "v".repeat(i % 70)).into_bytes()
}

// ---------------------------------------------------------------------------
// The database every case starts from, and its layout.

/// One physical log record: `[start, end)` covers header and payload.
#[derive(Debug, Clone, Copy)]
struct Frag {
    start: usize,
    end: usize,
    record: usize,
}

/// Physical records of a file in the log format, grouped into logical records.
fn parse_log(data: &[u8]) -> (Vec<Frag>, Vec<Vec<u8>>) {
    let (mut frags, mut records, mut cur) = (Vec::new(), Vec::new(), Vec::new());
    let mut off = 0;
    while off + LOG_HEADER <= data.len() {
        let room = LOG_BLOCK - off % LOG_BLOCK;
        if room < LOG_HEADER {
            off += room;
            continue;
        }
        let len = u16::from_le_bytes([data[off + 4], data[off + 5]]) as usize;
        let ty = data[off + 6];
        if ty == 0 {
            break;
        }
        let end = off + LOG_HEADER + len;
        cur.extend_from_slice(&data[off + LOG_HEADER..end]);
        frags.push(Frag { start: off, end, record: records.len() });
        if ty == 1 || ty == 4 {
            records.push(std::mem::take(&mut cur));
        }
        off = end;
    }
    (frags, records)
}

/// A table's regions (of a DTable: one segment's), located from its footer and index.
#[derive(Debug, Clone)]
struct TableLayout {
    /// Data block extents (payload and trailer) and the user keys in each.
    data: Vec<((usize, usize), Keys)>,
    filter: (usize, usize),
    properties: (usize, usize),
    index: (usize, usize),
    /// Where the footer ends: the file's length, or the segment's end.
    len: usize,
    /// The index block's keys, one per data block.
    index_keys: Vec<Vec<u8>>,
}

impl TableLayout {
    /// The data block a point read of `user` looks in (`None`: the index
    /// sends it past the last block).
    fn lands_in(&self, user: &[u8]) -> Option<usize> {
        let target = lookup_key(user, MAX_SEQ);
        self.index_keys.iter().position(|k| compare_internal(k, &target) != Ordering::Less)
    }
}

fn extent(h: BlockHandle) -> (usize, usize) {
    (h.offset as usize, (h.offset + h.size) as usize + TRAILER)
}

fn block_keys(block: Block) -> Vec<(Vec<u8>, Vec<u8>)> {
    let block = Arc::new(block);
    let mut it = block.iter();
    let mut out = Vec::new();
    it.seek_to_first().expect("seek");
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().expect("next");
    }
    out
}

fn table_layout(vfs: &MemVfs, path: &Path) -> TableLayout {
    let file = vfs.open_random(path, RandomOpenOptions::default()).expect("open table");
    segment_layout(&*file, file.len())
}

/// The layout of the segment whose footer ends at `end` (of a one-segment
/// table: the whole file).
fn segment_layout(file: &dyn RandomAccessFile, end: u64) -> TableLayout {
    let footer = Footer::decode(&file.read_at(end - FOOTER_LEN as u64, FOOTER_LEN).expect("footer"), end)
        .expect("valid footer");
    let index = Block::new(read_block_contents(file, footer.index, true).expect("index")).expect("index");
    let entries = block_keys(index);
    let index_keys = entries.iter().map(|(k, _)| k.clone()).collect();
    let data = entries
        .into_iter()
        .map(|(_, handle)| {
            let h = BlockHandle::decode(&handle).expect("handle");
            let block = Block::new(read_block_contents(file, h, true).expect("data")).expect("data");
            (extent(h), block_keys(block).into_iter().map(|(k, _)| user_key(&k).to_vec()).collect())
        })
        .collect();
    TableLayout {
        data,
        filter: extent(footer.filter),
        properties: extent(footer.properties),
        index: extent(footer.index),
        len: end as usize,
        index_keys,
    }
}

/// The undamaged database: its files, what it holds, and where things are.
struct Base {
    files: BTreeMap<String, Vec<u8>>,
    model: Kv,
    /// Keys written and then deleted: they must read `None` (or `Corruption`
    /// where a case predicts it), never a value.
    deleted: Keys,
    /// The older table (damaged by table cases) and its layout.
    table: String,
    layout: TableLayout,
    /// Per table file id, the user keys it holds.
    table_keys: BTreeMap<u64, Keys>,
    wal: String,
    /// WAL records in order; record i wrote `wal_keys[i]`.
    wal_keys: Vec<Vec<u8>>,
    manifest: String,
}

fn build(style: &CompactionStyle) -> Base {
    let vfs = MemVfs::new();
    let mut model = Kv::new();
    let db = Db::open(dir(), options(style, &vfs)).expect("open");
    let mut put = |db: &Db, k: Vec<u8>, v: Vec<u8>, sync: bool| {
        db.put_opt(&k, &v, &WriteOptions::default().with_sync(sync)).expect("put");
        model.insert(k, v);
    };
    for i in 0..400 {
        put(&db, format!("a{i:05}").into_bytes(), value("a", i), false);
    }
    db.flush().expect("flush");
    for i in 0..300 {
        put(&db, format!("b{i:05}").into_bytes(), value("b", i), false);
    }
    db.flush().expect("flush");
    // One WAL record per write; record 20 is large enough to be fragmented.
    let mut wal_keys = Vec::new();
    for i in 0..40 {
        let k = format!("c{i:05}").into_bytes();
        let v = if i == 20 { vec![b'L'; 40_000] } else { value("c", i) };
        put(&db, k.clone(), v, true);
        wal_keys.push(k);
    }
    db.close().expect("close");

    let mut files = BTreeMap::new();
    for name in vfs.list_dir(&dir()).expect("list") {
        if name != "LOCK" {
            files.insert(name.clone(), vfs.read_file(&dir().join(&name)).expect("read"));
        }
    }
    let named = |ext: &str| -> Vec<String> { files.keys().filter(|n| n.ends_with(ext)).cloned().collect() };
    let (tables, wals) = (named(".sst"), named(".log"));
    assert_eq!((tables.len(), wals.len()), (2, 1), "expected two tables and one WAL: {:?}", files.keys());
    let manifest = files.keys().find(|n| n.starts_with("MANIFEST-")).expect("a MANIFEST").clone();
    let mut table_keys = BTreeMap::new();
    for t in &tables {
        let id: u64 = t.trim_end_matches(".sst").parse().expect("table number");
        let keys = table_layout(&vfs, &dir().join(t)).data.into_iter().flat_map(|(_, k)| k).collect();
        table_keys.insert(id, keys);
    }
    let (_, records) = parse_log(&files[&wals[0]]);
    assert_eq!(records.len(), wal_keys.len(), "one WAL record per write");
    Base {
        deleted: Keys::new(),
        layout: table_layout(&vfs, &dir().join(&tables[0])),
        table: tables[0].clone(),
        files,
        model,
        table_keys,
        wal: wals[0].clone(),
        wal_keys,
        manifest,
    }
}

// ---------------------------------------------------------------------------
// Cases and their predicted outcomes.

/// How a case damages its file. Besides flips and truncations: `Reseal`
/// flips a byte inside the log record whose header starts at `record` and
/// gives the record a matching checksum (a well-formed record saying the
/// wrong thing); `AppendGarbage` appends `len` bytes of garbage and
/// `AppendSegment` a complete, valid segment (newer versions and deletions of
/// the table's keys) that no MANIFEST edit lists: appends whose edit never
/// committed.
#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip { offset: usize, xor: u8 },
    Truncate { len: usize },
    Reseal { offset: usize, xor: u8, record: usize },
    AppendGarbage { len: usize },
    AppendSegment,
}

/// What a case must produce.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// `Db::open` fails with `Corruption`.
    OpenFails,
    /// Open succeeds; `absent` keys read `None` (their records were dropped),
    /// `failing` keys read `Err(Corruption)`, every other key its value.
    Opens { absent: Keys, failing: Keys },
    /// Open succeeds (a damaged DTable): `failing` keys read `Err(Corruption)`,
    /// `maybe` keys their value or `Err(Corruption)` (a read of them reaches
    /// the damage only on a bloom filter false positive), every other key its
    /// value; every full scan reads the damage and stops with `Corruption`.
    Damaged { failing: Keys, maybe: Keys },
}

fn opens(absent: Keys, failing: Keys) -> Expect {
    Expect::Opens { absent, failing }
}

struct Case {
    what: String,
    file: String,
    damage: Damage,
    mode: WalRecoveryMode,
    /// `Options::with_paranoid_checks`; both values for table damage.
    paranoid: bool,
    expect: Expect,
}

fn wal_expect(base: &Base, damage: Damage, mode: WalRecoveryMode) -> Expect {
    let (frags, records) = parse_log(&base.files[&base.wal]);
    let keys_from = |r: usize| -> Keys { base.wal_keys[r..].iter().cloned().collect() };
    match damage {
        Damage::Flip { offset, .. } => {
            let f =
                frags.iter().position(|g| g.start <= offset && offset < g.end).expect("flip inside a record");
            let r = frags[f].record;
            let tail = f == frags.len() - 1;
            match mode {
                WalRecoveryMode::AbsoluteConsistency => Expect::OpenFails,
                WalRecoveryMode::TolerateCorruptedTailRecords if !tail => Expect::OpenFails,
                WalRecoveryMode::TolerateCorruptedTailRecords | WalRecoveryMode::PointInTimeRecovery => {
                    opens(keys_from(r), Keys::new())
                }
                WalRecoveryMode::SkipAnyCorruptedRecords => {
                    // The damaged record, and every record with a piece in the rest of its block.
                    let block_end = (frags[f].start / LOG_BLOCK + 1) * LOG_BLOCK;
                    let mut lost: BTreeSet<usize> = BTreeSet::from([r]);
                    lost.extend(
                        frags
                            .iter()
                            .filter(|g| g.start >= frags[f].start && g.start < block_end)
                            .map(|g| g.record),
                    );
                    opens(lost.into_iter().map(|i| base.wal_keys[i].clone()).collect(), Keys::new())
                }
            }
        }
        Damage::Truncate { len } => {
            // The first record not wholly inside the file.
            let cut =
                (0..records.len()).find(|&r| frags.iter().filter(|g| g.record == r).any(|g| g.end > len));
            let Some(r) = cut else { return opens(Keys::new(), Keys::new()) };
            let first = frags.iter().find(|g| g.record == r).expect("a fragment");
            let torn = first.start < len;
            if torn && mode == WalRecoveryMode::AbsoluteConsistency {
                Expect::OpenFails
            } else {
                opens(keys_from(r), Keys::new())
            }
        }
        other => panic!("no WAL prediction for {other:?}"),
    }
}

/// Table damage. With `paranoid_checks` open checks every live table's size
/// and its footer, index, filter and properties blocks, so only data-block
/// damage is left for reads to find; without it, any damage is found by the
/// first read of the table.
fn table_expect(base: &Base, damage: Damage, paranoid: bool) -> Expect {
    let all: Keys = base.layout.data.iter().flat_map(|(_, k)| k.iter().cloned()).collect();
    match damage {
        Damage::Truncate { .. } if paranoid => Expect::OpenFails,
        Damage::Truncate { .. } => opens(Keys::new(), all),
        Damage::Flip { offset, .. } => {
            match base.layout.data.iter().find(|((s, e), _)| *s <= offset && offset < *e) {
                Some((_, keys)) => opens(Keys::new(), keys.clone()),
                None if paranoid => Expect::OpenFails,
                // Filter, properties, index and footer are all checked when the table opens.
                None => opens(Keys::new(), all),
            }
        }
        other => panic!("no table prediction for {other:?}"),
    }
}

fn manifest_expect(base: &Base, damage: Damage) -> Expect {
    let (frags, records) = parse_log(&base.files[&base.manifest]);
    // Edits replayed: all before the damage; damage an intact record follows is Corruption.
    let kept = match damage {
        Damage::Flip { offset, .. } => {
            let f =
                frags.iter().position(|g| g.start <= offset && offset < g.end).expect("flip inside a record");
            if f != frags.len() - 1 {
                return Expect::OpenFails;
            }
            frags[f].record
        }
        Damage::Truncate { len } => (0..records.len())
            .find(|&r| frags.iter().filter(|g| g.record == r).any(|g| g.end > len))
            .unwrap_or(records.len()),
        other => panic!("no MANIFEST prediction for {other:?}"),
    };
    if kept == 0 {
        return Expect::OpenFails;
    }
    let mut live = BTreeSet::new();
    let mut log_number = 0;
    for rec in &records[..kept] {
        let edit = VersionEdit::decode(rec).expect("edit");
        for (_, _, f) in &edit.deleted_files {
            live.remove(f);
        }
        live.extend(edit.new_files.iter().map(|(_, _, f)| f.id));
        log_number = log_number.max(edit.log_number.unwrap_or(0));
    }
    // Recovery checks the replayed state against the directory: an acknowledged
    // edit that was dropped had been followed by deletions (its flush's WAL, a
    // compaction's inputs), so the state names missing files: Corruption.
    let present = |name: String| base.files.contains_key(&name);
    if (log_number > 0 && !present(format!("{log_number:06}.log")))
        || live.iter().any(|id| !present(format!("{id:06}.sst")))
    {
        return Expect::OpenFails;
    }
    // Otherwise only edits that removed nothing were dropped: tables they alone added are lost.
    let lost =
        base.table_keys.iter().filter(|(id, _)| !live.contains(*id)).flat_map(|(_, k)| k.iter().cloned());
    opens(lost.collect(), Keys::new())
}

/// Offsets spread over `[s, e)`: first, middle and last byte.
fn spread(s: usize, e: usize) -> Vec<usize> {
    vec![s, s + (e - s) / 2, e - 1]
}

fn cases(base: &Base) -> Vec<Case> {
    let mut damages: Vec<(String, String, Damage)> = Vec::new();
    let mut add = |file: &str, what: String, d: Damage| damages.push((file.to_string(), what, d));
    let xors = [0x01u8, 0x80, 0x10, 0x04];

    // WAL: header (checksum, length, type) and payload bytes of the first, a
    // middle, the fragmented, the following and the last record.
    let (frags, records) = parse_log(&base.files[&base.wal]);
    let n = records.len();
    for r in [0, n / 4, 20, 21, n - 1] {
        for (fi, g) in frags.iter().filter(|g| g.record == r).enumerate() {
            let spots = [
                ("header crc", g.start, 0x01),
                ("header length +128", g.start + 4, 0x80),
                ("header length +-1", g.start + 4, 0x01),
                ("header type", g.start + 6, 0x10),
                ("payload", g.start + LOG_HEADER + (g.end - g.start - LOG_HEADER) / 2, 0x04),
            ];
            for (name, offset, xor) in spots {
                add(
                    &base.wal,
                    format!("WAL record {r}/{n} fragment {fi} {name}"),
                    Damage::Flip { offset, xor },
                );
            }
        }
    }
    let wal_len = base.files[&base.wal].len();
    let big = frags.iter().filter(|g| g.record == 20).collect::<Vec<_>>();
    for (name, len) in [
        ("empty", 0),
        ("inside the first header", 3),
        ("at a record boundary", frags[n / 4].start),
        ("inside a middle payload", frags[n / 4].end - 2),
        ("after the first fragment", big[0].end),
        ("inside the last fragment", big[big.len() - 1].end - 100),
        ("at the last record", frags[frags.len() - 1].start),
        ("inside the last header", frags[frags.len() - 1].start + 5),
        ("one byte short", wal_len - 1),
    ] {
        add(&base.wal, format!("WAL truncated {name}"), Damage::Truncate { len });
    }

    // Table: blocks located from the footer and index.
    let l = &base.layout;
    let nd = l.data.len();
    let mut regions: Vec<(String, (usize, usize))> =
        [0, nd / 2, nd - 1].iter().map(|&i| (format!("data block {i}/{nd}"), l.data[i].0)).collect();
    regions.push(("filter block".into(), l.filter));
    regions.push(("properties block".into(), l.properties));
    regions.push(("index block".into(), l.index));
    for (name, (s, e)) in regions {
        let mut offs = spread(s, e);
        offs.push(e - TRAILER); // the compression type byte
        for (i, offset) in offs.into_iter().enumerate() {
            add(
                &base.table,
                format!("table {name} byte {}", offset - s),
                Damage::Flip { offset, xor: xors[i % 4] },
            );
        }
    }
    for (i, at) in [0, 8, 20, 48, 52, 56, 63].into_iter().enumerate() {
        add(
            &base.table,
            format!("table footer byte {at}"),
            Damage::Flip { offset: l.len - FOOTER_LEN + at, xor: xors[i % 4] },
        );
    }
    for len in [0, 1, l.data[nd / 2].0 .0, l.index.0, l.len - FOOTER_LEN, l.len - 1] {
        add(&base.table, format!("table truncated to {len}/{}", l.len), Damage::Truncate { len });
    }

    // MANIFEST: each record's header and payload; truncations at and inside each record.
    let (mfrags, mrecords) = parse_log(&base.files[&base.manifest]);
    let m = mrecords.len();
    for g in &mfrags {
        let mid = g.start + LOG_HEADER + (g.end - g.start - LOG_HEADER) / 2;
        for (i, (name, offset)) in
            [("header crc", g.start), ("header type", g.start + 6), ("payload", mid)].into_iter().enumerate()
        {
            add(
                &base.manifest,
                format!("MANIFEST record {}/{m} {name}", g.record),
                Damage::Flip { offset, xor: xors[i] },
            );
        }
    }
    let manifest_len = base.files[&base.manifest].len();
    for g in &mfrags {
        add(
            &base.manifest,
            format!("MANIFEST truncated inside record {}", g.record),
            Damage::Truncate { len: g.end - 3 },
        );
        if g.end < manifest_len {
            add(
                &base.manifest,
                format!("MANIFEST truncated after record {}", g.record),
                Damage::Truncate { len: g.end },
            );
        }
    }
    add(&base.manifest, "MANIFEST truncated to 0".into(), Damage::Truncate { len: 0 });

    // CURRENT: the name, its number, the newline.
    let cur_len = base.files["CURRENT"].len();
    for (i, offset) in [0, 4, 9, cur_len - 2, cur_len - 1].into_iter().enumerate() {
        add("CURRENT", format!("CURRENT byte {offset}"), Damage::Flip { offset, xor: xors[i % 4] });
    }
    for len in [0, 9, cur_len - 1] {
        add("CURRENT", format!("CURRENT truncated to {len}"), Damage::Truncate { len });
    }

    let mut out = Vec::new();
    for (file, what, damage) in damages {
        let paranoid_values: &[bool] = if file == base.table { &[true, false] } else { &[true] };
        for (mode, &paranoid) in MODES.into_iter().flat_map(|m| paranoid_values.iter().map(move |p| (m, p))) {
            let expect = if file == base.wal {
                wal_expect(base, damage, mode)
            } else if file == base.table {
                table_expect(base, damage, paranoid)
            } else if file == base.manifest {
                manifest_expect(base, damage)
            } else {
                Expect::OpenFails
            };
            out.push(Case { what: what.clone(), file: file.clone(), damage, mode, paranoid, expect });
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Running and checking a case.

/// A fresh file system holding `base`'s files with `damage` applied to `file`.
fn damaged_fs(base: &Base, file: &str, damage: Damage) -> MemVfs {
    let vfs = MemVfs::new();
    vfs.create_dir_all(&dir()).expect("mkdir");
    for (name, data) in &base.files {
        let mut f = vfs.create(&dir().join(name)).expect("create");
        match damage {
            Damage::Reseal { offset, xor, record } if name == file => {
                f.append(&resealed(data, offset, xor, record)).expect("append")
            }
            _ => f.append(data).expect("append"),
        }
        f.sync().expect("sync");
    }
    let path = dir().join(file);
    match damage {
        Damage::Flip { offset, xor } => vfs.corrupt_byte(&path, offset as u64, xor).expect("flip"),
        Damage::Truncate { len } => vfs.truncate(&path, len as u64).expect("truncate"),
        Damage::Reseal { .. } => {}
        Damage::AppendGarbage { len } => {
            let mut f = vfs.open_append(&path).expect("open for append");
            f.append(&vec![0xAB; len]).expect("append");
            f.sync().expect("sync");
        }
        Damage::AppendSegment => append_uncommitted_segment(&vfs, &path, base),
    }
    vfs
}

/// `data` (a file in the log format) with byte `offset` flipped by `xor` and
/// the checksum of the physical record whose header is at `record` recomputed.
fn resealed(data: &[u8], offset: usize, xor: u8, record: usize) -> Vec<u8> {
    let mut d = data.to_vec();
    let len = u16::from_le_bytes([d[record + 4], d[record + 5]]) as usize;
    let payload = record + LOG_HEADER..record + LOG_HEADER + len;
    assert!(payload.contains(&offset), "resealed byte {offset} outside the record at {record}");
    d[offset] ^= xor;
    let sum = crc::mask(crc::crc32c_extend(crc::crc32c(&[d[record + 6]]), &d[payload]));
    d[record..record + 4].copy_from_slice(&sum.to_le_bytes());
    d
}

/// Appends to the table at `path` a complete segment, as a light-weight
/// compaction writes one, that no MANIFEST edit lists: newer versions of
/// every third key of the table and deletions of every fifth.
fn append_uncommitted_segment(vfs: &MemVfs, path: &Path, base: &Base) {
    let before = vfs.file_size(path).expect("size");
    let id: u64 = base.table.trim_end_matches(".sst").parse().expect("table number");
    let file = vfs.open_append(path).expect("open for append");
    let mut b = TableBuilder::new(file, TableBuilderOptions::default());
    let seq = 1 << 40;
    for (i, k) in base.table_keys[&id].iter().enumerate() {
        if i % 3 == 0 {
            b.add(&make_internal_key(k, seq, ValueKind::Put), b"uncommitted").expect("add");
        } else if i % 5 == 0 {
            b.add(&make_internal_key(k, seq, ValueKind::Delete), b"").expect("add");
        }
    }
    let summary = b.finish().expect("finish segment");
    assert_eq!(summary.segment_start, before, "the segment starts at the old end");
    assert!(vfs.file_size(path).expect("size") > before);
}

/// What the reads of an opened database must return.
struct Want<'a> {
    /// Keys that read `None` (their records were dropped).
    absent: &'a Keys,
    /// Keys that read `Err(Corruption)`.
    failing: &'a Keys,
    /// Keys that read their value or `Err(Corruption)`.
    maybe: &'a Keys,
    /// Every full scan must stop with `Corruption` (else it must be complete).
    scan_fails: bool,
}

/// Checks an open database against the model and the expectation: every get,
/// and full scans both ways (which may stop at an error, never skip or invent).
fn check_reads(db: &Db, model: &Kv, absent: &Keys, failing: &Keys) -> Result<(), String> {
    let want = Want { absent, failing, maybe: &Keys::new(), scan_fails: !failing.is_empty() };
    check_reads_with(db, model, &Keys::new(), &want)
}

/// [`check_reads`] with keys that may fail and `deleted` keys (absent from
/// the model), which must read `None` unless predicted to fail.
fn check_reads_with(db: &Db, model: &Kv, deleted: &Keys, w: &Want<'_>) -> Result<(), String> {
    let name = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
    let (absent, failing) = (w.absent, w.failing);
    for (k, v) in model {
        let got = db.get(k);
        let ok = match &got {
            Err(e) => (failing.contains(k) || w.maybe.contains(k)) && e.is_corruption(),
            Ok(None) => absent.contains(k) && !failing.contains(k),
            Ok(Some(g)) => g == v && !absent.contains(k) && !failing.contains(k),
        };
        if !ok {
            let want = if failing.contains(k) {
                "Corruption"
            } else if absent.contains(k) {
                "None"
            } else if w.maybe.contains(k) {
                "its value or Corruption"
            } else {
                "its value"
            };
            return Err(format!("get {}: got {:?}, want {want}", name(k), got.map(|v| v.map(|v| v.len()))));
        }
    }
    for k in deleted.iter().filter(|k| !model.contains_key(*k)) {
        let got = db.get(k);
        let ok = match &got {
            Err(e) => (failing.contains(k) || w.maybe.contains(k)) && e.is_corruption(),
            Ok(None) => !failing.contains(k),
            Ok(Some(_)) => false,
        };
        if !ok {
            let want = if failing.contains(k) { "Corruption" } else { "None (deleted)" };
            return Err(format!("get {}: got {:?}, want {want}", name(k), got.map(|v| v.map(|v| v.len()))));
        }
    }
    let want: Vec<(&Vec<u8>, &Vec<u8>)> = model.iter().filter(|(k, _)| !absent.contains(*k)).collect();
    for reverse in [false, true] {
        let mut want = want.clone();
        if reverse {
            want.reverse();
        }
        let items: Box<dyn Iterator<Item = _>> =
            if reverse { Box::new(db.iter().rev()) } else { Box::new(db.iter()) };
        let mut n = 0;
        let mut errored = false;
        for item in items {
            match item {
                Ok((k, v)) => {
                    if want.get(n) != Some(&(&k, &v)) || failing.contains(&k) {
                        return Err(format!("scan (reverse {reverse}) item #{n}: wrong entry {}", name(&k)));
                    }
                    n += 1;
                }
                Err(e) if e.is_corruption() && w.scan_fails => {
                    errored = true;
                    break;
                }
                Err(e) => return Err(format!("scan (reverse {reverse}): unexpected error {e}")),
            }
        }
        if w.scan_fails && !errored {
            return Err(format!("scan (reverse {reverse}) passed damaged keys without an error"));
        }
        if !w.scan_fails && n != want.len() {
            return Err(format!("scan (reverse {reverse}) ended after {n} of {} entries", want.len()));
        }
    }
    Ok(())
}

fn run_case(base: &Base, style: &CompactionStyle, case: &Case) -> Result<(), String> {
    let vfs = damaged_fs(base, &case.file, case.damage);
    let opts = options(style, &vfs).with_wal_recovery_mode(case.mode).with_paranoid_checks(case.paranoid);
    match (Db::open(dir(), opts), &case.expect) {
        (Err(e), Expect::OpenFails) if e.is_corruption() => Ok(()),
        (Err(e), _) => Err(format!("open failed with {e}, expected {:?}", short(&case.expect))),
        (Ok(_), Expect::OpenFails) => Err("open succeeded, expected Corruption".into()),
        (Ok(db), expect) => {
            let none = Keys::new();
            let want = match expect {
                Expect::Opens { absent, failing } => {
                    Want { absent, failing, maybe: &none, scan_fails: !failing.is_empty() }
                }
                Expect::Damaged { failing, maybe } => {
                    Want { absent: &none, failing, maybe, scan_fails: true }
                }
                Expect::OpenFails => unreachable!("matched above"),
            };
            let r = check_reads_with(&db, &base.model, &base.deleted, &want);
            db.close().map_err(|e| format!("close: {e}"))?;
            r?;
            // An uncommitted append is cut off at open.
            if matches!(case.damage, Damage::AppendGarbage { .. } | Damage::AppendSegment) {
                let size = vfs.file_size(&dir().join(&case.file)).map_err(|e| e.to_string())?;
                if size != base.files[&case.file].len() as u64 {
                    return Err(format!(
                        "the table is {size} bytes after open, the MANIFEST recorded {}",
                        base.files[&case.file].len()
                    ));
                }
            }
            Ok(())
        }
    }
}

fn short(e: &Expect) -> String {
    match e {
        Expect::OpenFails => "OpenFails".into(),
        Expect::Opens { absent, failing } => {
            format!("Opens({} absent, {} failing)", absent.len(), failing.len())
        }
        Expect::Damaged { failing, maybe } => {
            format!("Damaged({} failing, {} maybe failing, scans fail)", failing.len(), maybe.len())
        }
    }
}

/// Outcome counts and failures of a run of cases.
#[derive(Default)]
struct Tally {
    total: usize,
    outcomes: BTreeMap<String, usize>,
    failures: Vec<String>,
}

impl Tally {
    /// Runs every case on `base` under `style` (a panic is a failure).
    fn run(&mut self, name: &str, base: &Base, style: &CompactionStyle, cases: Vec<Case>) {
        for case in cases {
            let label = format!(
                "{name} | {} | {:?} | {:?} | paranoid {}",
                case.what, case.damage, case.mode, case.paranoid
            );
            let r = catch_unwind(AssertUnwindSafe(|| run_case(base, style, &case)))
                .unwrap_or_else(|_| Err("panicked".into()));
            if std::env::var("STRATA_MATRIX_VERBOSE").is_ok() {
                eprintln!("{label} -> {} {:?}", short(&case.expect), r);
            }
            if let Err(e) = r {
                self.failures.push(format!("{label}: {e}"));
            }
            *self
                .outcomes
                .entry(format!("{} -> {}", kind_of(&case.file), short_kind(&case.expect)))
                .or_default() += 1;
            self.total += 1;
        }
    }

    /// Prints the counts and fails with every failed case.
    fn finish(&self, start: Instant) {
        for (k, n) in &self.outcomes {
            eprintln!("  {k}: {n}");
        }
        let (total, failures) = (self.total, &self.failures);
        eprintln!("{total} corruption cases in {:?}, {} failed", start.elapsed(), failures.len());
        assert!(failures.is_empty(), "{} of {total} cases failed:\n{}", failures.len(), failures.join("\n"));
    }
}

#[test]
fn corruption_matrix() {
    let start = Instant::now();
    let mut tally = Tally::default();
    for (name, style) in policies() {
        let base = build(&style);
        tally.run(name, &base, &style, cases(&base));
    }
    tally.finish(start);
    assert!(tally.total >= 200 * policies().len(), "only {} cases", tally.total);
}

fn kind_of(file: &str) -> &'static str {
    if file.ends_with(".log") {
        "WAL"
    } else if file.ends_with(".sst") {
        "table"
    } else if file.starts_with("MANIFEST-") {
        "MANIFEST"
    } else {
        "CURRENT"
    }
}

fn short_kind(e: &Expect) -> &'static str {
    match e {
        Expect::OpenFails => "open fails with Corruption",
        Expect::Opens { absent, failing } if absent.is_empty() && failing.is_empty() => "opens, all intact",
        Expect::Opens { failing, .. } if !failing.is_empty() => "opens, damaged keys read Corruption",
        Expect::Opens { .. } => "opens, dropped records read None",
        Expect::Damaged { .. } => "opens, damaged keys read Corruption (DTable)",
    }
}

// ---------------------------------------------------------------------------
// The checker catches planted violations.

#[test]
fn read_checker_catches_wrong_missing_and_unreported_damage() {
    let (_, style) = policies().remove(0);
    let base = build(&style);
    let vfs = damaged_fs(&base, "CURRENT", Damage::Truncate { len: base.files["CURRENT"].len() });
    let db = Db::open(dir(), options(&style, &vfs)).expect("open intact copy");
    let none = Keys::new();
    assert!(check_reads(&db, &base.model, &none, &none).is_ok());
    let key = base.model.keys().nth(10).expect("a key").clone();
    let mut wrong = base.model.clone();
    wrong.insert(key.clone(), b"planted".to_vec());
    assert!(check_reads(&db, &wrong, &none, &none).is_err(), "wrong value");
    let mut extra = base.model.clone();
    extra.insert(b"a00000x".to_vec(), b"missing".to_vec());
    assert!(check_reads(&db, &extra, &none, &none).is_err(), "missing key");
    let one = Keys::from([key]);
    assert!(check_reads(&db, &base.model, &one, &none).is_err(), "key predicted dropped but present");
    assert!(check_reads(&db, &base.model, &none, &one).is_err(), "damage predicted but not reported");
}

#[test]
fn predictions_follow_the_layout() {
    let (_, style) = policies().remove(0);
    let base = build(&style);
    let (frags, _) = parse_log(&base.files[&base.wal]);
    let last = frags[frags.len() - 1];
    let flip = |offset| Damage::Flip { offset, xor: 1 };
    // A torn tail is dropped by default and refused by AbsoluteConsistency.
    let tail = wal_expect(&base, flip(last.start + 8), WalRecoveryMode::TolerateCorruptedTailRecords);
    assert_eq!(tail, opens(Keys::from([base.wal_keys[last.record].clone()]), Keys::new()));
    assert_eq!(wal_expect(&base, flip(last.start), WalRecoveryMode::AbsoluteConsistency), Expect::OpenFails);
    assert_eq!(
        wal_expect(&base, flip(frags[0].start), WalRecoveryMode::TolerateCorruptedTailRecords),
        Expect::OpenFails
    );
    // A data block flip fails exactly that block's keys.
    let ((s, _), keys) = &base.layout.data[1];
    assert_eq!(table_expect(&base, flip(*s), true), opens(Keys::new(), keys.clone()));
    assert_eq!(table_expect(&base, flip(base.layout.index.0), true), Expect::OpenFails);
    assert!(keys.len() > 3 && base.layout.data.len() > 10, "blocks of several keys, tables of many blocks");
    assert_eq!(manifest_expect(&base, flip(0)), Expect::OpenFails);
}

/// Regression (found by this matrix): the flipped record is complete (not a
/// torn append) and its edit was acknowledged — the flush finished and deleted
/// its WAL — so dropping it as a torn tail lost the flushed keys silently, and
/// recovery then deleted their table as unreferenced. Now it is `Corruption`.
#[test]
fn bit_flip_in_the_last_manifest_record_is_reported_not_silently_dropped() {
    for (name, style) in policies() {
        let base = build(&style);
        let (frags, _) = parse_log(&base.files[&base.manifest]);
        let last = frags[frags.len() - 1];
        let flip = Damage::Flip { offset: last.start + LOG_HEADER + 2, xor: 0x10 };
        let vfs = damaged_fs(&base, &base.manifest.clone(), flip);
        match Db::open(dir(), options(&style, &vfs)) {
            Err(e) => assert!(e.is_corruption(), "{name}: {e}"),
            Ok(db) => {
                let none = Keys::new();
                if let Err(e) = check_reads(&db, &base.model, &none, &none) {
                    panic!("{name}: opened without an error but lost acknowledged data: {e}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// A DTable of several segments (the `lwc` policy).

const LWC: CompactionStyle = CompactionStyle::Lwc { max_segments: 64 };

/// Options under which overlapping L0 flushes are appended to the one L1
/// table as new segments (small blocks: segments of many blocks).
fn dtable_options(vfs: &MemVfs) -> Options {
    Options::default()
        .with_compaction_style(LWC)
        .with_vfs(Arc::new(vfs.clone()))
        .with_compression(CompressionType::None)
        .with_block_size(512)
        .with_write_buffer_size(1 << 20)
        .with_target_file_size_base(1 << 20)
        .with_level0_file_num_compaction_trigger(2)
}

/// Where a MANIFEST record's segment list (tag 14) of the DTable is: file
/// offsets of the record's header and of each field's first byte.
#[derive(Debug)]
struct SegmentList {
    record: usize,
    /// Segments of the table's state before this record (1: written once).
    prev: usize,
    /// A later record lists the table again.
    superseded: bool,
    id: usize,
    count: usize,
    /// Per segment: its end offset (a varint) and footer checksum (4 bytes).
    ends: Vec<usize>,
    crcs: Vec<usize>,
}

/// The database of one L1 DTable and a WAL, and the DTable's layout.
struct DBase {
    /// `table` is the DTable, `layout` its last segment, `table_keys` every
    /// user key it holds (any segment, any version).
    base: Base,
    /// Its segments, oldest first (each one's `len` is its end).
    segs: Vec<TableLayout>,
    /// Per user key in the DTable, the newest segment holding it.
    newest: BTreeMap<Vec<u8>, usize>,
    /// Its user-key range.
    range: (Vec<u8>, Vec<u8>),
    /// The segment list of every MANIFEST record that lists the table's
    /// segments (each append's edit), oldest first.
    lists: Vec<SegmentList>,
}

impl DBase {
    /// Every key the test reads (model and deleted) inside the DTable's range:
    /// a get of any of them asks the DTable.
    fn in_range(&self) -> Keys {
        let (lo, hi) = &self.range;
        let b = &self.base;
        b.model.keys().chain(&b.deleted).filter(|k| *k >= lo && *k <= hi).cloned().collect()
    }
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Checks that a segment's regions tile `[start, end)` exactly, so every
/// byte flip lands in a block the predictions know, or in the footer.
fn assert_tiles(seg: &TableLayout, start: usize) {
    let mut parts: Vec<(usize, usize)> = seg.data.iter().map(|(e, _)| *e).collect();
    parts.extend([seg.filter, seg.properties, seg.index, (seg.len - FOOTER_LEN, seg.len)]);
    parts.sort_unstable();
    let mut at = start;
    for (s, e) in parts {
        assert_eq!(s, at, "segment [{start}, {}): a gap or overlap at {at}", seg.len);
        at = e;
    }
    assert_eq!(at, seg.len);
}

/// Finds the segment list of table `id` in every MANIFEST record that lists
/// its segments, and checks that the last is the list `segments` found from
/// the file.
fn locate_segment_lists(manifest: &[u8], id: u64, segments: &[SegmentMeta]) -> Vec<SegmentList> {
    let (frags, records) = parse_log(manifest);
    let mut out: Vec<SegmentList> = Vec::new();
    let (mut prev, mut last) = (0, Vec::new());
    for (r, rec) in records.iter().enumerate() {
        let edit = VersionEdit::decode(rec).expect("edit");
        let Some((_, _, f)) = edit.new_files.iter().find(|(_, _, f)| f.id == id) else { continue };
        if f.segments.is_empty() {
            prev = 1;
            continue;
        }
        let pieces: Vec<&Frag> = frags.iter().filter(|g| g.record == r).collect();
        assert_eq!(pieces.len(), 1, "record {r} is one physical record");
        let g = pieces[0];
        let mut enc = Vec::new();
        varint(14, &mut enc);
        let id_at = enc.len();
        varint(id, &mut enc);
        let count_at = enc.len();
        varint(f.segments.len() as u64, &mut enc);
        let (mut ends, mut crcs) = (Vec::new(), Vec::new());
        for s in &f.segments {
            ends.push(enc.len());
            varint(s.end, &mut enc);
            crcs.push(enc.len());
            enc.extend_from_slice(&s.footer_crc.to_le_bytes());
        }
        let payload = &manifest[g.start + LOG_HEADER..g.end];
        let hits: Vec<usize> =
            payload.windows(enc.len()).enumerate().filter(|(_, w)| *w == enc).map(|(i, _)| i).collect();
        assert_eq!(hits.len(), 1, "tag 14 of table {id} found once in record {r}");
        let at = g.start + LOG_HEADER + hits[0];
        if let Some(last) = out.last_mut() {
            last.superseded = true;
        }
        out.push(SegmentList {
            record: g.start,
            prev,
            superseded: false,
            id: at + id_at,
            count: at + count_at,
            ends: ends.into_iter().map(|o| at + o).collect(),
            crcs: crcs.into_iter().map(|o| at + o).collect(),
        });
        prev = f.segments.len();
        last = f.segments.clone();
    }
    assert_eq!(last, segments, "the file's segments are the ones the MANIFEST lists last");
    out
}

/// Builds the DTable database: 600 keys compacted into one L1 table, then
/// three rounds of two overlapping flushes (overwrites and deletions), each
/// round appended to that table as a segment by a light-weight compaction;
/// last, a few writes left in the WAL, outside the table's key range. Not
/// reopened, so the MANIFEST's last record is the last append's edit.
fn build_dtable() -> DBase {
    let vfs = MemVfs::new();
    let db = Db::open(dir(), dtable_options(&vfs)).expect("open");
    let (mut model, mut deleted) = (Kv::new(), Keys::new());
    let key = |i: usize| format!("k{i:05}").into_bytes();
    for i in 0..600 {
        db.put(key(i), value("a", i)).expect("put");
        model.insert(key(i), value("a", i));
    }
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    for round in 1..=3usize {
        for half in 0..2 {
            for i in 0..600usize {
                if i % 6 == round + 2 * half {
                    let v = value(&format!("r{round}"), i);
                    db.put(key(i), &v).expect("put");
                    model.insert(key(i), v);
                    deleted.remove(&key(i));
                } else if i % 13 == round + half {
                    db.delete(key(i)).expect("delete");
                    model.remove(&key(i));
                    deleted.insert(key(i));
                }
            }
            db.flush().expect("flush");
        }
        db.wait_for_compactions().expect("compactions");
    }
    let s = db.stats();
    assert!(s.appends >= 3, "segments were appended\n{s}");
    assert_eq!((s.levels[0].files, s.levels[1].files), (0, 1), "one L1 table\n{s}");
    assert!(s.levels[1].segments >= 4, "an L1 table of several segments\n{s}");
    let mut wal_keys = Vec::new();
    for i in 0..20 {
        let k = format!("z{i:05}").into_bytes();
        db.put(&k, value("z", i)).expect("put");
        model.insert(k.clone(), value("z", i));
        wal_keys.push(k);
    }
    db.close().expect("close");

    let mut files = BTreeMap::new();
    for name in vfs.list_dir(&dir()).expect("list") {
        if name != "LOCK" {
            files.insert(name.clone(), vfs.read_file(&dir().join(&name)).expect("read"));
        }
    }
    let named = |ext: &str| -> Vec<String> { files.keys().filter(|n| n.ends_with(ext)).cloned().collect() };
    let (tables, wals) = (named(".sst"), named(".log"));
    assert_eq!((tables.len(), wals.len()), (1, 1), "one table and one WAL: {:?}", files.keys());
    let manifest = files.keys().find(|n| n.starts_with("MANIFEST-")).expect("a MANIFEST").clone();
    let table = tables[0].clone();
    let id: u64 = table.trim_end_matches(".sst").parse().expect("table number");

    // The segments, walked back from the last footer as repair does.
    let file = vfs.open_random(&dir().join(&table), RandomOpenOptions::default()).expect("open table");
    let (metas, len) = discover_segments(&*file, id, file.len()).expect("segments");
    assert_eq!(len, file.len(), "no tail past the last segment");
    assert!(metas.len() >= 4, "{} segments", metas.len());
    let mut segs = Vec::new();
    let mut start = 0;
    for m in &metas {
        let seg = segment_layout(&*file, m.end);
        assert_tiles(&seg, start);
        assert!(seg.data.len() >= 3, "segments of several blocks");
        start = seg.len;
        segs.push(seg);
    }
    let mut newest = BTreeMap::new();
    for (k, seg) in segs.iter().enumerate() {
        for key in seg.data.iter().flat_map(|(_, keys)| keys) {
            newest.insert(key.clone(), k);
        }
    }
    let range = (newest.keys().next().expect("keys").clone(), newest.keys().last().expect("keys").clone());
    assert!(wal_keys.iter().all(|k| *k > range.1), "the WAL's keys are outside the table's range");
    assert!(
        model.keys().chain(&deleted).filter(|k| k.starts_with(b"k")).all(|k| newest.contains_key(k)),
        "every table key is in the DTable"
    );
    let lists = locate_segment_lists(&files[&manifest], id, &metas);
    assert!(lists.len() >= 3, "one list per append");
    let table_keys = BTreeMap::from([(id, newest.keys().cloned().collect())]);
    let base = Base {
        files,
        model,
        deleted,
        table,
        layout: segs.last().expect("segments").clone(),
        table_keys,
        wal: wals[0].clone(),
        wal_keys,
        manifest,
    };
    DBase { base, segs, newest, range, lists }
}

/// What damage of the DTable does (`AppendGarbage`, `AppendSegment`: nothing,
/// the tail is cut at open). A flip in data block `b` of segment `k`: a get
/// reads that block if its key's newest version in the table is in segment
/// `k` and the index sends it to block `b` (fails); if the key is older than
/// segment `k` or not in the table, only on a filter false positive of
/// segment `k` (may fail); never if a newer segment holds it (answered
/// there). Anything else — filter, properties, index, footer, truncation —
/// is found when the table opens: at `Db::open` with `paranoid_checks`, else
/// by every read that asks the table.
fn dtable_expect(d: &DBase, damage: Damage, paranoid: bool) -> Expect {
    let whole = || {
        if paranoid {
            Expect::OpenFails
        } else {
            Expect::Damaged { failing: d.in_range(), maybe: Keys::new() }
        }
    };
    match damage {
        Damage::AppendGarbage { .. } | Damage::AppendSegment => opens(Keys::new(), Keys::new()),
        Damage::Truncate { .. } => whole(),
        Damage::Flip { offset, .. } => {
            for (k, seg) in d.segs.iter().enumerate() {
                let Some(b) = seg.data.iter().position(|((s, e), _)| *s <= offset && offset < *e) else {
                    continue;
                };
                let (mut failing, mut maybe) = (Keys::new(), Keys::new());
                for u in d.in_range() {
                    if seg.lands_in(&u) != Some(b) {
                        continue;
                    }
                    match d.newest.get(&u) {
                        Some(&j) if j == k => failing.insert(u),
                        Some(&j) if j > k => false,
                        _ => maybe.insert(u),
                    };
                }
                return Expect::Damaged { failing, maybe };
            }
            whole()
        }
        Damage::Reseal { .. } => panic!("no table prediction for {damage:?}"),
    }
}

/// A well-formed MANIFEST record with a wrong segment list. Refused when the
/// MANIFEST is replayed: a wrong last end (not the table's size), count or
/// file id (the record does not decode); any change to a segment the table
/// already had (a grown table's list must extend its old one), and so any
/// change to a list a later record extends. Left: a wrong footer checksum
/// (or end, other than the last) of a segment this record appends, found
/// when the table opens, because that footer is not the one recorded.
fn segment_list_expect(d: &DBase, damage: Damage, paranoid: bool) -> Expect {
    let Damage::Reseal { offset, record, .. } = damage else {
        panic!("not a segment list damage: {damage:?}")
    };
    let l = d.lists.iter().find(|l| l.record == record).expect("a listed record");
    let n = l.ends.len();
    let new_crc = (l.prev..n).any(|k| (l.crcs[k]..l.crcs[k] + 4).contains(&offset));
    let new_end = (l.prev..n - 1).any(|k| l.ends[k] == offset);
    if !l.superseded && (new_crc || new_end) {
        dtable_expect(d, Damage::Truncate { len: 0 }, paranoid)
    } else {
        Expect::OpenFails
    }
}

fn dtable_cases(d: &DBase) -> Vec<Case> {
    let b = &d.base;
    let xors = [0x01u8, 0x80, 0x10, 0x04];
    // (file, what, damage, prediction per paranoid value)
    let mut damages: Vec<(String, String, Damage)> = Vec::new();
    let mut add = |file: &str, what: String, damage: Damage| damages.push((file.to_string(), what, damage));
    let n = d.segs.len();
    for (k, seg) in d.segs.iter().enumerate() {
        let nd = seg.data.len();
        let mut regions: Vec<(String, (usize, usize))> =
            [0, nd / 2, nd - 1].iter().map(|&i| (format!("data block {i}/{nd}"), seg.data[i].0)).collect();
        regions.push(("filter block".into(), seg.filter));
        regions.push(("properties block".into(), seg.properties));
        regions.push(("index block".into(), seg.index));
        for (name, (s, e)) in regions {
            let mut offs = spread(s, e);
            offs.push(e - TRAILER);
            for (i, offset) in offs.into_iter().enumerate() {
                add(
                    &b.table,
                    format!("DTable segment {k}/{n} {name} byte {}", offset - s),
                    Damage::Flip { offset, xor: xors[i % 4] },
                );
            }
        }
        for (i, at) in [0, 8, 20, 40, 48, 52, 56, 63].into_iter().enumerate() {
            add(
                &b.table,
                format!("DTable segment {k}/{n} footer byte {at}"),
                Damage::Flip { offset: seg.len - FOOTER_LEN + at, xor: xors[i % 4] },
            );
        }
    }
    let last = &d.segs[n - 1];
    let mut cuts: Vec<(String, usize)> = d.segs[..n - 1]
        .iter()
        .enumerate()
        .map(|(k, s)| (format!("at the end of segment {k}"), s.len))
        .collect();
    cuts.extend([
        ("inside the last segment's data".to_string(), last.data[last.data.len() / 2].0 .0),
        ("at the last segment's index".to_string(), last.index.0),
        ("before the last footer".to_string(), last.len - FOOTER_LEN),
        ("one byte short".to_string(), last.len - 1),
    ]);
    for (what, len) in cuts {
        add(&b.table, format!("DTable truncated {what} ({len}/{})", last.len), Damage::Truncate { len });
    }
    add(&b.table, "DTable: 700 garbage bytes appended".into(), Damage::AppendGarbage { len: 700 });
    add(&b.table, "DTable: 30 garbage bytes appended".into(), Damage::AppendGarbage { len: 30 });
    add(&b.table, "DTable: an uncommitted segment appended".into(), Damage::AppendSegment);

    // The segment list of each append's MANIFEST record: raw flips (the
    // record's checksum fails) and resealed ones (a well-formed record with
    // a wrong list).
    for (i, l) in d.lists.iter().enumerate() {
        let mut fields = vec![("file id".to_string(), l.id), ("segment count".to_string(), l.count)];
        for k in 0..l.ends.len() {
            fields.push((format!("segment {k} end"), l.ends[k]));
            fields.push((format!("segment {k} footer checksum byte 0"), l.crcs[k]));
            fields.push((format!("segment {k} footer checksum byte 3"), l.crcs[k] + 3));
        }
        for (what, offset) in fields {
            let what = format!("MANIFEST segment list {i} ({} segments) {what}", l.ends.len());
            add(&b.manifest, what.clone(), Damage::Flip { offset, xor: 0x01 });
            add(
                &b.manifest,
                format!("{what}, record resealed"),
                Damage::Reseal { offset, xor: 0x01, record: l.record },
            );
        }
    }
    // Every record of a MANIFEST that holds appends: header and payload
    // flips, truncations inside and after each record.
    let (mfrags, mrecords) = parse_log(&b.files[&b.manifest]);
    let m = mrecords.len();
    for g in &mfrags {
        let mid = g.start + LOG_HEADER + (g.end - g.start - LOG_HEADER) / 2;
        for (name, offset) in [("header crc", g.start), ("payload", mid)] {
            add(
                &b.manifest,
                format!("MANIFEST record {}/{m} {name}", g.record),
                Damage::Flip { offset, xor: 0x10 },
            );
        }
        add(
            &b.manifest,
            format!("MANIFEST truncated inside record {}", g.record),
            Damage::Truncate { len: g.end - 3 },
        );
        if g.end < b.files[&b.manifest].len() {
            add(
                &b.manifest,
                format!("MANIFEST truncated after record {}", g.record),
                Damage::Truncate { len: g.end },
            );
        }
    }

    let mut out = Vec::new();
    for (file, what, damage) in damages {
        let table_side = file == b.table || matches!(damage, Damage::Reseal { .. });
        let paranoid_values: &[bool] = if table_side { &[true, false] } else { &[true] };
        for (mode, &paranoid) in MODES.into_iter().flat_map(|m| paranoid_values.iter().map(move |p| (m, p))) {
            let expect = if file == b.table {
                dtable_expect(d, damage, paranoid)
            } else if matches!(damage, Damage::Reseal { .. }) {
                segment_list_expect(d, damage, paranoid)
            } else {
                manifest_expect(b, damage)
            };
            out.push(Case { what: what.clone(), file: file.clone(), damage, mode, paranoid, expect });
        }
    }
    out
}

/// Damage to a DTable (one L1 table file of several appended segments) and
/// to the MANIFEST's list of its segments: every case reports `Corruption`
/// (at open or on the reads that reach the damage) or loses nothing; never a
/// panic, a wrong value, a resurrected deletion or an uncommitted segment's data.
#[test]
fn multi_segment_dtable_matrix() {
    let start = Instant::now();
    let d = build_dtable();
    let cases = dtable_cases(&d);
    // The predictions cover each kind of outcome.
    let has = |f: &dyn Fn(&Expect) -> bool| cases.iter().any(|c| f(&c.expect));
    assert!(has(
        &|e| matches!(e, Expect::Damaged { failing, maybe } if !failing.is_empty() && !maybe.is_empty())
    ));
    assert!(has(&|e| matches!(e, Expect::Damaged { failing, .. } if failing.len() == d.in_range().len())));
    assert!(has(&|e| *e == Expect::OpenFails));
    assert!(has(&|e| *e == opens(Keys::new(), Keys::new())));
    let mut tally = Tally::default();
    tally.run("lwc DTable", &d.base, &LWC, cases);
    tally.finish(start);
    assert!(tally.total >= 1000, "only {} cases", tally.total);
}

/// The DTable checks catch a deletion that comes back and a live key that
/// reads as deleted.
#[test]
fn dtable_checker_catches_resurrected_deletions() {
    let d = build_dtable();
    let b = &d.base;
    let vfs = damaged_fs(b, "CURRENT", Damage::Truncate { len: b.files["CURRENT"].len() });
    let db = Db::open(dir(), options(&LWC, &vfs)).expect("open intact copy");
    let none = Keys::new();
    let intact = Want { absent: &none, failing: &none, maybe: &none, scan_fails: false };
    assert!(check_reads_with(&db, &b.model, &b.deleted, &intact).is_ok());
    let gone = b.deleted.iter().next().expect("a deleted key").clone();
    let mut resurrected = b.model.clone();
    resurrected.insert(gone.clone(), value("a", 0));
    let mut still_deleted = b.deleted.clone();
    still_deleted.remove(&gone);
    assert!(check_reads_with(&db, &resurrected, &still_deleted, &intact).is_err(), "a deletion undone");
    let live = b.model.keys().next().expect("a key").clone();
    let mut dropped = b.model.clone();
    dropped.remove(&live);
    let mut deleted = b.deleted.clone();
    deleted.insert(live);
    assert!(check_reads_with(&db, &dropped, &deleted, &intact).is_err(), "a live key read as deleted");
    let failing = Keys::from([b.model.keys().next().expect("a key").clone()]);
    let unreported = Want { absent: &none, failing: &failing, maybe: &none, scan_fails: true };
    assert!(check_reads_with(&db, &b.model, &b.deleted, &unreported).is_err(), "damage not reported");
}
