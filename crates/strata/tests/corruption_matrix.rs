//! Corruption matrix (issue 5, item 3): bit flips and truncations in every file
//! type — WAL, table data/index/filter/properties blocks and footer, MANIFEST,
//! CURRENT — opened under every `WalRecoveryMode` and every built-in policy.
//! Each case predicts the documented outcome (docs/FORMAT.md, "Corruption and
//! recovery behaviour by file type") from the file's own layout, then checks
//! it: open fails with `Corruption`, or it opens and every read is the model's
//! value, a predicted `None` (dropped records), or a `Corruption` error for
//! exactly the damaged keys. Never a panic, never a wrong value.
//! `STRATA_MATRIX_VERBOSE=1` prints every case with its prediction and result.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use strata::iter::InternalIterator;
use strata::key::user_key;
use strata::table::format::{read_block_contents, BlockHandle, Footer, FOOTER_LEN};
use strata::table::Block;
use strata::version::VersionEdit;
use strata::vfs::RandomOpenOptions;
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

/// A table's regions, located from its footer and index.
#[derive(Debug)]
struct TableLayout {
    /// Data block extents (payload and trailer) and the user keys in each.
    data: Vec<((usize, usize), Keys)>,
    filter: (usize, usize),
    properties: (usize, usize),
    index: (usize, usize),
    len: usize,
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
    let len = file.len();
    let footer = Footer::decode(&file.read_at(len - FOOTER_LEN as u64, FOOTER_LEN).expect("footer"), len)
        .expect("valid footer");
    let index = Block::new(read_block_contents(&*file, footer.index, true).expect("index")).expect("index");
    let data = block_keys(index)
        .into_iter()
        .map(|(_, handle)| {
            let h = BlockHandle::decode(&handle).expect("handle");
            let block = Block::new(read_block_contents(&*file, h, true).expect("data")).expect("data");
            (extent(h), block_keys(block).into_iter().map(|(k, _)| user_key(&k).to_vec()).collect())
        })
        .collect();
    TableLayout {
        data,
        filter: extent(footer.filter),
        properties: extent(footer.properties),
        index: extent(footer.index),
        len: len as usize,
    }
}

/// The undamaged database: its files, what it holds, and where things are.
struct Base {
    files: BTreeMap<String, Vec<u8>>,
    model: Kv,
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

#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip { offset: usize, xor: u8 },
    Truncate { len: usize },
}

/// What a case must produce.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// `Db::open` fails with `Corruption`.
    OpenFails,
    /// Open succeeds; `absent` keys read `None` (their records were dropped),
    /// `failing` keys read `Err(Corruption)`, every other key its value.
    Opens { absent: Keys, failing: Keys },
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
        f.append(data).expect("append");
        f.sync().expect("sync");
    }
    let path = dir().join(file);
    match damage {
        Damage::Flip { offset, xor } => vfs.corrupt_byte(&path, offset as u64, xor).expect("flip"),
        Damage::Truncate { len } => vfs.truncate(&path, len as u64).expect("truncate"),
    }
    vfs
}

/// Checks an open database against the model and the expectation: every get,
/// and full scans both ways (which may stop at an error, never skip or invent).
fn check_reads(db: &Db, model: &Kv, absent: &Keys, failing: &Keys) -> Result<(), String> {
    let name = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
    for (k, v) in model {
        let got = db.get(k);
        let ok = match &got {
            Err(e) => failing.contains(k) && e.is_corruption(),
            Ok(None) => absent.contains(k) && !failing.contains(k),
            Ok(Some(g)) => g == v && !absent.contains(k) && !failing.contains(k),
        };
        if !ok {
            let want = if failing.contains(k) {
                "Corruption"
            } else if absent.contains(k) {
                "None"
            } else {
                "its value"
            };
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
                Err(e) if e.is_corruption() && !failing.is_empty() => {
                    errored = true;
                    break;
                }
                Err(e) => return Err(format!("scan (reverse {reverse}): unexpected error {e}")),
            }
        }
        if !failing.is_empty() && !errored {
            return Err(format!("scan (reverse {reverse}) passed damaged keys without an error"));
        }
        if failing.is_empty() && n != want.len() {
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
        (Ok(db), Expect::Opens { absent, failing }) => {
            let r = check_reads(&db, &base.model, absent, failing);
            db.close().map_err(|e| format!("close: {e}"))?;
            r
        }
    }
}

fn short(e: &Expect) -> String {
    match e {
        Expect::OpenFails => "OpenFails".into(),
        Expect::Opens { absent, failing } => {
            format!("Opens({} absent, {} failing)", absent.len(), failing.len())
        }
    }
}

#[test]
fn corruption_matrix() {
    let start = Instant::now();
    let mut total = 0;
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (name, style) in policies() {
        let base = build(&style);
        for case in cases(&base) {
            let label = format!(
                "{name} | {} | {:?} | {:?} | paranoid {}",
                case.what, case.damage, case.mode, case.paranoid
            );
            let r = catch_unwind(AssertUnwindSafe(|| run_case(&base, &style, &case)))
                .unwrap_or_else(|_| Err("panicked".into()));
            if std::env::var("STRATA_MATRIX_VERBOSE").is_ok() {
                eprintln!("{label} -> {} {:?}", short(&case.expect), r);
            }
            if let Err(e) = r {
                failures.push(format!("{label}: {e}"));
            }
            *outcomes
                .entry(format!("{} -> {}", kind_of(&case.file), short_kind(&case.expect)))
                .or_default() += 1;
            total += 1;
        }
    }
    for (k, n) in &outcomes {
        eprintln!("  {k}: {n}");
    }
    eprintln!("{total} corruption cases in {:?}, {} failed", start.elapsed(), failures.len());
    assert!(failures.is_empty(), "{} of {total} cases failed:\n{}", failures.len(), failures.join("\n"));
    assert!(total >= 200 * policies().len(), "only {total} cases");
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
