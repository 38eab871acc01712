//! `strata::repair` and `strata::destroy`: a database that no longer opens is
//! rebuilt from what is readable, never with invented or resurrected values.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{builtin_policies, policy_options};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::key::{make_internal_key, ValueKind};
use strata::table::{discover_segments, SegmentMeta, TableBuilder, TableBuilderOptions};
use strata::vfs::testing::{CrashMode, CrashVfs};
use strata::vfs::RandomOpenOptions;
use strata::{
    associative_merge_operator, repair, CompactionStyle, CompressionType, Db, Error, KeyspaceOptions, MemVfs,
    MergeOperator, Options, Vfs, WriteBatch, WriteOptions,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

/// Every value ever written per key, to tell a real value from an invented one.
type Written = BTreeMap<Vec<u8>, Vec<Vec<u8>>>;

/// Overwrites and deletes over 300 keys, flushed and compacted on the way,
/// with the last writes left in the WAL.
fn workload(db: &Db, seed: u64) -> (Model, Written) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut model, mut written) = (Model::new(), Written::new());
    for i in 0..2500u32 {
        let k = format!("key{:04}", rng.gen_range(0..300)).into_bytes();
        if rng.gen_bool(0.15) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("s{seed}-w{i}-{}", "v".repeat(rng.gen_range(0..60))).into_bytes();
            db.put(&k, &v).unwrap();
            written.entry(k.clone()).or_default().push(v.clone());
            model.insert(k, v);
        }
        if i == 2000 {
            db.wait_for_compactions().unwrap();
        }
    }
    (model, written)
}

/// Compares two states, naming the first few differences instead of dumping both.
fn same(got: &Model, want: &Model, ctx: &str) {
    if got == want {
        return;
    }
    let show = |m: &Model, k: &Vec<u8>| {
        m.get(k).map(|v| String::from_utf8_lossy(&v[..v.len().min(16)]).into_owned())
    };
    let diffs: Vec<String> = got
        .keys()
        .chain(want.keys())
        .filter(|k| got.get(*k) != want.get(*k))
        .take(5)
        .map(|k| format!("{}: got {:?}, want {:?}", String::from_utf8_lossy(k), show(got, k), show(want, k)))
        .collect();
    panic!("{ctx}: {} keys vs {} expected; {}", got.len(), want.len(), diffs.join("; "));
}

fn scan(db: &Db) -> Model {
    db.iter().map(|kv| kv.unwrap()).collect()
}

fn names(vfs: &dyn Vfs, d: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = vfs.list_dir(d).unwrap().into_iter().filter(|n| n.ends_with(ext)).collect();
    v.sort();
    v
}

/// After a repair the database opens under the policy, takes writes, compacts and reads back.
fn still_works(style: &CompactionStyle, vfs: Arc<dyn Vfs>, expect: &Model) {
    let db = Db::open(dir(), policy_options(style, vfs))
        .unwrap_or_else(|e| panic!("{style:?}: open after repair: {e}"));
    same(&scan(&db), expect, &format!("{style:?}"));
    for i in 0..300 {
        db.put(format!("after{i:03}"), "x").unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("after007").unwrap().as_deref(), Some(&b"x"[..]));
    let mut want = expect.clone();
    for i in 0..300 {
        want.insert(format!("after{i:03}").into_bytes(), b"x".to_vec());
    }
    same(&scan(&db), &want, &format!("{style:?}: after writes and a compaction"));
    db.close().unwrap();
}

#[test]
fn missing_current_is_repaired_without_losing_or_resurrecting_anything() {
    // No data is damaged, so repair must give exactly the model: every
    // overwrite and deletion holds across duplicates (buffer files, unpurged
    // inputs) and interleaved sequence ranges.
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let db = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap();
        let (model, _) = workload(&db, 1);
        db.close().unwrap();
        vfs.remove_file(&dir().join("CURRENT")).unwrap();
        assert!(
            Db::open(dir(), policy_options(&style, vfs.clone())).is_err(),
            "{style:?}: no CURRENT, no open"
        );
        let report = repair(dir(), policy_options(&style, vfs.clone())).unwrap();
        assert!(
            report.manifest_readable,
            "{style:?}: the newest MANIFEST is found without CURRENT: {report}"
        );
        assert!(report.moved_to_lost.is_empty(), "{style:?}: {report}");
        assert_eq!(report.entries_kept, model.len() as u64, "{style:?}: {report}");
        still_works(&style, vfs, &model);
    }
}

#[test]
fn lost_manifest_is_repaired_from_every_table() {
    // Without any MANIFEST every table is used. Under the policies without a
    // compaction buffer nothing on disk after a clean close holds retired data,
    // so the result is exact; under LSbM and dLSM a buffer file may hold an
    // older copy of a key whose deletion was dropped, so only "never invented"
    // holds (FORMAT.md, Repair).
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let db = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap();
        let (model, written) = workload(&db, 7);
        db.close().unwrap();
        for n in vfs.list_dir(&dir()).unwrap() {
            if n.starts_with("MANIFEST") || n == "CURRENT" {
                vfs.remove_file(&dir().join(n)).unwrap();
            }
        }
        let report = repair(dir(), policy_options(&style, vfs.clone())).unwrap();
        assert!(!report.manifest_readable, "{report}");
        if matches!(
            style,
            CompactionStyle::Leveled | CompactionStyle::Blsm | CompactionStyle::Garnering { .. }
        ) {
            still_works(&style, vfs, &model);
        } else {
            let db = Db::open(dir(), policy_options(&style, vfs)).unwrap();
            only_written_values(&scan(&db), &written, &format!("{style:?}"));
        }
    }
}

#[test]
fn deleted_wal_files_repair_keeps_table_data() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let db = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap();
        let (mut model, _) = workload(&db, 2);
        db.flush().unwrap();
        db.put("only-in-the-wal", "lost").unwrap();
        db.close().unwrap();
        for n in names(vfs.as_ref(), &dir(), ".log") {
            vfs.remove_file(&dir().join(n)).unwrap();
        }
        let e = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap_err();
        assert!(e.to_string().contains("WAL"), "{style:?}: {e}");
        let report = repair(dir(), policy_options(&style, vfs.clone())).unwrap();
        assert!(report.manifest_readable, "{report}");
        model.remove(&b"only-in-the-wal"[..]);
        still_works(&style, vfs, &model);
    }
}

#[test]
fn zero_byte_table_repair_keeps_other_tables() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let db = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap();
        let (_, written) = workload(&db, 3);
        db.close().unwrap();
        // The newest table is a flush or compaction output, so a run's file
        // (a buffer only ever holds older files).
        let victim = names(vfs.as_ref(), &dir(), ".sst").pop().unwrap();
        vfs.truncate(&dir().join(&victim), 0).unwrap();
        let e = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap_err();
        assert!(e.to_string().contains("0 bytes"), "{style:?}: {e}");
        let report = repair(dir(), policy_options(&style, vfs.clone())).unwrap();
        assert_eq!(report.tables_lost, 1, "{style:?}: {report}");
        assert_eq!(report.moved_to_lost, vec![victim.clone()], "{style:?}");
        assert!(vfs.exists(&dir().join("lost").join(&victim)), "damaged files are kept");
        let db = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap();
        let got = scan(&db);
        assert!(!got.is_empty());
        only_written_values(&got, &written, &format!("{style:?}"));
    }
}

/// Every value read back was written for that key: nothing invented.
fn only_written_values(got: &Model, written: &Written, ctx: &str) {
    for (k, v) in got {
        let ok = written.get(k).is_some_and(|vs| vs.contains(v));
        assert!(
            ok,
            "{ctx}: {} = {} was never written",
            String::from_utf8_lossy(k),
            String::from_utf8_lossy(v)
        );
    }
}

#[test]
fn corrupt_block_loses_only_its_entries() {
    let vfs = Arc::new(MemVfs::new());
    let o = policy_options(&CompactionStyle::Leveled, vfs.clone())
        .with_target_file_size_base(1 << 20)
        .with_disable_auto_compactions(true);
    let db = Db::open(dir(), o.clone()).unwrap();
    let mut model = Model::new();
    for i in 0..2000u32 {
        let (k, v) = (format!("key{i:05}").into_bytes(), format!("value{i}-{}", "p".repeat(30)).into_bytes());
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    db.close().unwrap();
    let table = names(vfs.as_ref(), &dir(), ".sst").pop().unwrap();
    let len = vfs.file_size(&dir().join(&table)).unwrap();
    vfs.corrupt_byte(&dir().join(&table), len / 3, 0x5a).unwrap();
    let report = repair(dir(), o.clone()).unwrap();
    assert_eq!((report.tables_damaged, report.blocks_lost), (1, 1), "{report}");
    let db = Db::open(dir(), o).unwrap();
    let got = scan(&db);
    let lost = model.len() - got.len();
    assert!(lost > 0 && lost < 40, "one 256-byte block's entries lost, got {lost}");
    for (k, v) in &got {
        assert_eq!(model.get(k), Some(v));
    }
    assert_eq!(report.entries_kept, got.len() as u64);
}

#[test]
fn repair_never_invents_values_whatever_is_damaged() {
    for style in builtin_policies() {
        for seed in 0..6u64 {
            let vfs = Arc::new(MemVfs::new());
            let db = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap();
            let (_, written) = workload(&db, 10 + seed);
            db.close().unwrap();
            let mut rng = StdRng::seed_from_u64(seed);
            let all: Vec<String> =
                vfs.list_dir(&dir()).unwrap().into_iter().filter(|n| n != "LOCK").collect();
            for _ in 0..3 {
                let f = dir().join(&all[rng.gen_range(0..all.len())]);
                let len = vfs.file_size(&f).unwrap();
                if len > 0 {
                    vfs.corrupt_byte(&f, rng.gen_range(0..len), 1 << rng.gen_range(0..8)).unwrap();
                }
            }
            let ctx = format!("{style:?} seed {seed}");
            let report =
                repair(dir(), policy_options(&style, vfs.clone())).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let db = Db::open(dir(), policy_options(&style, vfs.clone()))
                .unwrap_or_else(|e| panic!("{ctx}: {report}: {e}"));
            only_written_values(&scan(&db), &written, &ctx);
        }
    }
}

#[test]
fn repair_of_an_open_database_is_locked() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open(dir(), policy_options(&CompactionStyle::Leveled, vfs.clone())).unwrap();
    db.put("k", "v").unwrap();
    assert!(matches!(
        repair(dir(), policy_options(&CompactionStyle::Leveled, vfs.clone())),
        Err(Error::Locked(_))
    ));
    assert!(matches!(
        strata::destroy(dir(), policy_options(&CompactionStyle::Leveled, vfs)),
        Err(Error::Locked(_))
    ));
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn repair_is_idempotent() {
    let vfs = Arc::new(MemVfs::new());
    let style = CompactionStyle::Lsbm;
    let db = Db::open(dir(), policy_options(&style, vfs.clone())).unwrap();
    let (model, _) = workload(&db, 4);
    db.close().unwrap();
    let first = repair(dir(), policy_options(&style, vfs.clone())).unwrap();
    let second = repair(dir(), policy_options(&style, vfs.clone())).unwrap();
    assert_eq!(second.entries_kept, first.entries_kept);
    assert_eq!(
        (second.tables_intact, second.tables_lost, second.tables_damaged),
        (second.tables_scanned, 0, 0)
    );
    assert_eq!(names(vfs.as_ref(), &dir(), "MANIFEST").len(), 0, "MANIFEST names have no extension");
    still_works(&style, vfs, &model);
}

#[test]
fn crash_during_repair_then_repair_again_keeps_data() {
    let style = CompactionStyle::Blsm;
    let base = MemVfs::new();
    let db = Db::open(dir(), policy_options(&style, Arc::new(base.clone()))).unwrap();
    let (model, _) = workload(&db, 5);
    db.close().unwrap();
    base.remove_file(&dir().join("CURRENT")).unwrap();
    let image = CrashVfs::from_mem(base);
    // How many mutating operations a whole repair takes.
    let probe = CrashVfs::from_mem(image.image(CrashMode::ProcessKill));
    repair(dir(), policy_options(&style, Arc::new(probe.clone()))).unwrap();
    let total = probe.ops_done();
    for n in 0..=total {
        for mode in [CrashMode::PowerLoss, CrashMode::TornWrite { seed: n }] {
            let vfs = CrashVfs::from_mem(image.image(CrashMode::ProcessKill));
            vfs.set_crash_after(Some(n));
            let _ = repair(dir(), policy_options(&style, Arc::new(vfs.clone())));
            vfs.crash_now();
            let after = Arc::new(vfs.image(mode));
            let ctx = format!("crash after op {n} of {total} ({mode:?})");
            // The directory opens as repaired, or a second repair finishes the job.
            let db = match Db::open(dir(), policy_options(&style, after.clone())) {
                Ok(db) => db,
                Err(_) => {
                    repair(dir(), policy_options(&style, after.clone()))
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    Db::open(dir(), policy_options(&style, after.clone()))
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"))
                }
            };
            same(&scan(&db), &model, &ctx);
        }
    }
}

#[test]
fn destroy_removes_only_strata_files() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open(dir(), policy_options(&CompactionStyle::Leveled, vfs.clone())).unwrap();
    workload(&db, 6);
    db.close().unwrap();
    let mut notes = vfs.create(&dir().join("notes.txt")).unwrap();
    notes.append(b"mine").unwrap();
    notes.sync().unwrap();
    drop(notes);
    strata::destroy(dir(), policy_options(&CompactionStyle::Leveled, vfs.clone())).unwrap();
    assert_eq!(vfs.list_dir(&dir()).unwrap(), vec!["notes.txt".to_string()]);
    vfs.remove_file(&dir().join("notes.txt")).unwrap();
    strata::destroy(dir(), policy_options(&CompactionStyle::Leveled, vfs.clone())).unwrap();
    assert!(!vfs.exists(&dir()), "an emptied directory is removed");
    strata::destroy(dir(), policy_options(&CompactionStyle::Leveled, vfs)).unwrap();
}

#[test]
fn destroy_and_repair_on_the_real_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let o = || Options::default().with_write_buffer_size(64 << 10);
    let db = Db::open(&path, o()).unwrap();
    for i in 0..5000 {
        db.put(format!("key{i:05}"), format!("value{i}")).unwrap();
    }
    db.close().unwrap();
    std::fs::remove_file(path.join("CURRENT")).unwrap();
    let report = repair(&path, o()).unwrap();
    println!("{report}");
    let db = Db::open(&path, o()).unwrap();
    assert_eq!(db.iter().count(), 5000);
    db.close().unwrap();
    strata::destroy(&path, o()).unwrap();
    assert!(!path.exists());
}

/// The damage the corruption matrix shows `Db::open` refusing in the default
/// recovery mode: each one is repaired into a database that opens.
#[test]
fn every_damage_open_refuses_is_repaired() {
    type Damage = fn(&MemVfs);
    let cases: Vec<(&str, Damage)> = vec![
        ("CURRENT bit flip", |v| v.corrupt_byte(&dir().join("CURRENT"), 3, 0x10).unwrap()),
        ("MANIFEST record before an intact one", |v| {
            let m = v.list_dir(&dir()).unwrap().into_iter().find(|n| n.starts_with("MANIFEST")).unwrap();
            v.corrupt_byte(&dir().join(m), 20, 0x10).unwrap()
        }),
        ("WAL record before an intact one", |v| {
            let mut l: Vec<String> =
                v.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".log")).collect();
            l.sort();
            v.corrupt_byte(&dir().join(l.pop().unwrap()), 20, 0x10).unwrap()
        }),
        ("table footer", |v| {
            let mut t: Vec<String> =
                v.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".sst")).collect();
            t.sort();
            let p = dir().join(t.pop().unwrap());
            let len = v.file_size(&p).unwrap();
            v.corrupt_byte(&p, len - 10, 0x10).unwrap()
        }),
    ];
    // Uncompressed, the workload spans many tables, so the damaged one (the
    // newest) never holds most of the data. Compressed, a compaction could fold
    // everything into one table and the footer case would lose all but the WAL
    // (this test failed that way on slow, loaded machines).
    let policy_options =
        |style: &CompactionStyle, vfs| policy_options(style, vfs).with_compression(CompressionType::None);
    for style in builtin_policies() {
        for (what, damage) in &cases {
            let vfs = MemVfs::new();
            let db = Db::open(dir(), policy_options(&style, Arc::new(vfs.clone()))).unwrap();
            let (_, written) = workload(&db, 8);
            db.close().unwrap();
            damage(&vfs);
            let ctx = format!("{style:?}, {what}");
            assert!(
                Db::open(dir(), policy_options(&style, Arc::new(vfs.clone()))).is_err(),
                "{ctx}: open should refuse"
            );
            let report = repair(dir(), policy_options(&style, Arc::new(vfs.clone())))
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let db = Db::open(dir(), policy_options(&style, Arc::new(vfs.clone())))
                .unwrap_or_else(|e| panic!("{ctx}: open after repair ({report}): {e}"));
            let got = scan(&db);
            assert!(got.len() > 100, "{ctx}: most data kept, {} keys: {report}", got.len());
            only_written_values(&got, &written, &ctx);
        }
    }
}

// ---------------------------------------------------------------------------
// DTables of the `lwc` policy: table files of several appended segments.

/// `lwc` options under which L0 flushes are appended to the tables below as
/// segments within a short workload (those of tests/lwc.rs).
fn lwc_options(vfs: Arc<dyn Vfs>) -> Options {
    Options::default()
        .with_vfs(vfs)
        .with_compaction_style(CompactionStyle::Lwc { max_segments: 64 })
        .with_compression(CompressionType::None)
        .with_write_buffer_size(8 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_max_bytes_for_level_multiplier(4.0)
        .with_num_levels(5)
        .with_level0_file_num_compaction_trigger(2)
        .with_block_size(512)
}

fn lwc_key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// Rounds of overwrites and deletions over 2000 keys, each round compacted
/// (appends), then a few writes left in the WAL. Returns the model; the
/// database holds tables of several segments.
fn lwc_workload(db: &Db) -> Model {
    let mut model = Model::new();
    for round in 0..4u32 {
        for i in 0..3000u32 {
            let k = lwc_key((i.wrapping_mul(7919) + round * 104_729) % 2000);
            if i % 9 == 4 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("r{round}-{i}-{}", "v".repeat((i % 80) as usize)).into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        db.wait_for_compactions().unwrap();
    }
    let s = db.stats();
    let (segments, files) = s.levels.iter().fold((0, 0), |(sg, f), l| (sg + l.segments, f + l.files));
    assert!(s.appends > 0 && segments > files, "no table holds several segments\n{s}");
    for i in 0..50 {
        let (k, v) = (lwc_key(i * 40), format!("wal-{i}").into_bytes());
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    model
}

/// Each table file's segments as found from the file alone (repair's walk),
/// and the length they cover.
fn file_segments(vfs: &MemVfs) -> BTreeMap<String, (Vec<SegmentMeta>, u64)> {
    names(vfs, &dir(), ".sst")
        .into_iter()
        .map(|n| {
            let id: u64 = n.trim_end_matches(".sst").parse().unwrap();
            let file = vfs.open_random(&dir().join(&n), RandomOpenOptions::default()).unwrap();
            let found = discover_segments(&*file, id, file.len()).unwrap();
            assert_eq!(found.1, file.len(), "{n}: an intact table is all segments");
            (n, found)
        })
        .collect()
}

/// Appends to the table at `path` most of a segment of newer versions of
/// keys the workload wrote, cut before its footer: an append torn by a crash
/// (never committed; its values must not come back).
fn append_torn_segment(vfs: &MemVfs, path: &Path) {
    let len = vfs.file_size(path).unwrap();
    let mut b = TableBuilder::new(
        vfs.open_append(path).unwrap(),
        TableBuilderOptions { block_size: 512, ..Default::default() },
    );
    for i in 0..2000 {
        b.add(&make_internal_key(&lwc_key(i), 1 << 40, ValueKind::Put), b"uncommitted").unwrap();
    }
    let end = b.finish().unwrap().file_size;
    vfs.truncate(path, len + (end - len) * 2 / 3).unwrap();
}

/// How the metadata of the DTable database is lost.
#[derive(Debug, Clone, Copy)]
enum Lost {
    /// CURRENT deleted: the MANIFEST is found and read.
    Current,
    /// Every MANIFEST and CURRENT deleted: every table is used.
    Manifest,
    /// A bit flip in the MANIFEST's first record: it does not replay.
    ManifestDamaged,
}

/// An `lwc` database of DTables loses CURRENT, every MANIFEST, or its
/// MANIFEST's first record; one DTable also has a torn append after its last
/// segment (most of a segment of newer values, no footer) and another 700
/// garbage bytes. Repair finds each table's segments from the file alone,
/// skipping the tails, and brings back exactly the committed state: every
/// key, no value of the torn append, no deleted key.
#[test]
fn lwc_dtables_are_repaired_from_their_segments_whatever_their_tail() {
    for lost in [Lost::Current, Lost::Manifest, Lost::ManifestDamaged] {
        let ctx = format!("{lost:?}");
        let vfs = MemVfs::new();
        let db = Db::open(dir(), lwc_options(Arc::new(vfs.clone()))).unwrap();
        let model = lwc_workload(&db);
        db.close().unwrap();
        let before = file_segments(&vfs);
        let dtables: Vec<&String> = before.iter().filter(|(_, (s, _))| s.len() > 1).map(|(n, _)| n).collect();
        assert!(dtables.len() >= 2, "{ctx}: DTables of several segments: {before:?}");
        // A torn append after one DTable, garbage after another.
        append_torn_segment(&vfs, &dir().join(dtables[0]));
        let mut f = vfs.open_append(&dir().join(dtables[1])).unwrap();
        f.append(&[0xAB; 700]).unwrap();
        f.sync().unwrap();
        drop(f);
        // The walk back from each file's end skips the tail to the committed segments.
        for (n, (segs, end)) in &before {
            let id: u64 = n.trim_end_matches(".sst").parse().unwrap();
            let file = vfs.open_random(&dir().join(n), RandomOpenOptions::default()).unwrap();
            assert_eq!(
                discover_segments(&*file, id, file.len()).unwrap(),
                (segs.clone(), *end),
                "{ctx}: {n}"
            );
        }
        match lost {
            Lost::Current => vfs.remove_file(&dir().join("CURRENT")).unwrap(),
            Lost::Manifest => {
                for n in vfs.list_dir(&dir()).unwrap() {
                    if n.starts_with("MANIFEST") || n == "CURRENT" {
                        vfs.remove_file(&dir().join(n)).unwrap();
                    }
                }
            }
            Lost::ManifestDamaged => {
                let m = names(&vfs, &dir(), "").into_iter().find(|n| n.starts_with("MANIFEST")).unwrap();
                vfs.corrupt_byte(&dir().join(m), 10, 0x10).unwrap();
            }
        }
        assert!(Db::open(dir(), lwc_options(Arc::new(vfs.clone()))).is_err(), "{ctx}: open refuses");
        let report = repair(dir(), lwc_options(Arc::new(vfs.clone()))).unwrap();
        assert_eq!(report.manifest_readable, matches!(lost, Lost::Current), "{ctx}: {report}");
        assert_eq!((report.tables_scanned, report.tables_lost), (before.len(), 0), "{ctx}: {report}");
        if report.manifest_readable {
            // The tails lie past the sizes the MANIFEST records: never committed, nothing damaged.
            assert_eq!((report.tables_damaged, report.blocks_lost), (0, 0), "{ctx}: {report}");
            assert!(report.moved_to_lost.is_empty(), "{ctx}: {report}");
        } else {
            // Without the MANIFEST a tail that does not chain back may have been
            // a damaged newest segment: both tables with one are counted
            // damaged and kept in lost/, and every committed entry is salvaged.
            assert_eq!((report.tables_damaged, report.blocks_lost), (2, 2), "{ctx}: {report}");
            assert_eq!(report.moved_to_lost.len(), 2, "{ctx}: {report}");
        }
        assert_eq!(report.entries_kept, model.len() as u64, "{ctx}: {report}");
        let db = Db::open(dir(), lwc_options(Arc::new(vfs.clone()))).unwrap();
        same(&scan(&db), &model, &ctx);
        for (k, v) in &model {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{ctx}");
        }
        db.close().unwrap();
        still_works(&CompactionStyle::Lwc { max_segments: 64 }, Arc::new(vfs), &model);
    }
}

/// A DTable whose newest segment's footer is damaged was taken for a table
/// with a torn tail: repair's walk (`discover_segments`) skipped back to the
/// previous segment's footer, dropped the newest segment's entries (older
/// versions of their keys came back, which FORMAT.md allows for damaged data),
/// counted the table intact and deleted the file as superseded instead of
/// moving it to `lost/`. Repair now tells them apart with the readable
/// MANIFEST: the recorded length reaches into the skipped bytes.
#[test]
fn repair_reports_a_dtable_whose_newest_footer_is_damaged() {
    let vfs = MemVfs::new();
    let db = Db::open(dir(), lwc_options(Arc::new(vfs.clone()))).unwrap();
    let model = lwc_workload(&db);
    db.close().unwrap();
    let segments = file_segments(&vfs);
    let (victim, (segs, end)) =
        segments.iter().filter(|(_, (s, _))| s.len() > 1).max_by_key(|(_, (s, _))| s.len()).unwrap();
    let victim = victim.clone();
    vfs.corrupt_byte(&dir().join(&victim), end - 10, 0x10).unwrap();
    assert!(Db::open(dir(), lwc_options(Arc::new(vfs.clone()))).is_err(), "open refuses a damaged footer");
    let report = repair(dir(), lwc_options(Arc::new(vfs.clone()))).unwrap();
    let db = Db::open(dir(), lwc_options(Arc::new(vfs.clone()))).unwrap();
    let got = scan(&db);
    let differ = model.iter().filter(|(k, v)| got.get(*k) != Some(*v)).count();
    let resurrected = got.keys().filter(|k| !model.contains_key(*k)).count();
    eprintln!(
        "{victim}: newest of {} segments damaged; after repair {differ} keys read another value than \
         the model and {resurrected} deleted keys are back\n{report}",
        segs.len()
    );
    assert!(
        report.tables_damaged + report.tables_lost >= 1,
        "a table with a damaged footer is reported damaged or lost: {report}"
    );
    assert!(
        vfs.exists(&dir().join("lost").join(&victim)),
        "the damaged table is kept in lost/, not deleted: {report}"
    );
}

/// Appends `,operand` (the operator).
fn append_comma() -> Arc<dyn MergeOperator> {
    associative_merge_operator("append", |_key, existing, operand| {
        Some(existing.map_or_else(|| operand.to_vec(), |e| [e, b",", operand].concat()))
    })
}

/// Copies a database directory (keyspace directories included) as a crash would leave it.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn sst_names(d: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

/// Copies into `to` the tables `from` has that it did not have before.
fn copy_new_tables(from: &Path, before: &std::collections::BTreeSet<String>, to: &Path) -> usize {
    let new: Vec<String> = sst_names(from).difference(before).cloned().collect();
    for n in &new {
        std::fs::copy(from.join(n), to.join(n)).unwrap();
    }
    new.len()
}

/// What `Db::open` makes of a directory (on a copy, since open changes it).
fn open_reads(d: &Path, scratch: &Path, o: Options) -> Model {
    copy_dir(d, scratch);
    let db = Db::open(scratch, o).unwrap();
    let m = scan(&db);
    db.close().unwrap();
    m
}

#[test]
fn repair_does_not_count_merge_operands_twice_after_a_crash_between_output_sync_and_manifest_edit() {
    let base = tempfile::tempdir().unwrap();
    let (live, crashed) = (base.path().join("db"), base.path().join("crashed"));
    let o = || Options::default().with_merge_operator(append_comma());
    let db = Db::open(&live, o()).unwrap();
    db.put("k", "a").unwrap();
    db.flush().unwrap();
    db.merge("k", "b").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    copy_dir(&live, &crashed);
    let before = sst_names(&live);
    let db = Db::open(&live, o()).unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    // The output synced, its MANIFEST edit never written: the state a kill leaves.
    assert!(copy_new_tables(&live, &before, &crashed) > 0, "the compaction wrote a table");
    let want = open_reads(&crashed, &base.path().join("opened"), o());
    assert_eq!(want.get(&b"k"[..]).map(Vec::as_slice), Some(&b"a,b"[..]));
    let report = repair(&crashed, o()).unwrap();
    let db = Db::open(&crashed, o()).unwrap();
    same(&scan(&db), &want, &format!("repair vs open: {report}"));
    assert_eq!(report.tables_superseded, 1, "the orphan output is left out: {report}");
}

#[test]
fn repair_does_not_fail_on_a_flush_output_beside_its_still_present_wal() {
    let base = tempfile::tempdir().unwrap();
    let (live, crashed) = (base.path().join("db"), base.path().join("crashed"));
    let o = || Options::default().with_merge_operator(append_comma());
    let sync = WriteOptions::default().with_sync(true);
    let db = Db::open(&live, o()).unwrap();
    for i in 0..50 {
        db.put_opt(format!("k{i:02}"), "v", &sync).unwrap();
    }
    // Folded onto the put by the flush: a put and a merge operand at one sequence.
    db.put_opt("m", "a", &sync).unwrap();
    db.merge_opt("m", "b", &sync).unwrap();
    copy_dir(&live, &crashed);
    let before = sst_names(&live);
    db.flush().unwrap();
    db.close().unwrap();
    assert!(copy_new_tables(&live, &before, &crashed) > 0, "the flush wrote a table");
    let want = open_reads(&crashed, &base.path().join("opened"), o());
    assert_eq!(want.len(), 51);
    assert_eq!(want.get(&b"m"[..]).map(Vec::as_slice), Some(&b"a,b"[..]));
    let report = repair(&crashed, o()).unwrap_or_else(|e| panic!("repair failed: {e}"));
    let db = Db::open(&crashed, o()).unwrap();
    same(&scan(&db), &want, &format!("repair vs open: {report}"));
}

#[test]
fn repair_without_a_manifest_does_not_count_a_flush_or_a_merge_twice() {
    // No MANIFEST says which copy is live: the duplicates are told apart by
    // (key, sequence), a folded put winning over the operand it holds.
    let base = tempfile::tempdir().unwrap();
    let (live, crashed) = (base.path().join("db"), base.path().join("crashed"));
    let o = || Options::default().with_merge_operator(append_comma());
    let sync = WriteOptions::default().with_sync(true);
    let db = Db::open(&live, o()).unwrap();
    db.put("k", "a").unwrap();
    db.flush().unwrap();
    db.merge("k", "b").unwrap();
    db.flush().unwrap();
    db.put_opt("m", "a", &sync).unwrap();
    db.merge_opt("m", "b", &sync).unwrap();
    copy_dir(&live, &crashed);
    let before = sst_names(&live);
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    assert!(copy_new_tables(&live, &before, &crashed) > 0);
    for n in
        std::fs::read_dir(&crashed).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
    {
        if n.starts_with("MANIFEST") || n == "CURRENT" {
            std::fs::remove_file(crashed.join(n)).unwrap();
        }
    }
    let report = repair(&crashed, o()).unwrap_or_else(|e| panic!("repair failed: {e}"));
    assert!(!report.manifest_readable);
    let db = Db::open(&crashed, o()).unwrap();
    let want: Model = [(b"k".to_vec(), b"a,b".to_vec()), (b"m".to_vec(), b"a,b".to_vec())].into();
    same(&scan(&db), &want, &format!("{report}"));
}

/// Puts, merges, flushes and full compactions, with the WAL synced: the
/// states a kill leaves at every step are what repair must match open on.
fn merge_workload(vfs: Arc<dyn Vfs>) -> Result<(), Error> {
    let o = Options::default()
        .with_vfs(vfs)
        .with_merge_operator(append_comma())
        .with_disable_auto_compactions(true);
    let db = Db::open(dir(), o)?;
    let sync = WriteOptions::default().with_sync(true);
    for round in 0..3 {
        for i in 0..6 {
            let k = format!("k{i}");
            if (i + round) % 3 == 0 {
                db.put_opt(&k, format!("p{round}"), &sync)?;
            } else {
                db.merge_opt(&k, format!("m{round}"), &sync)?;
            }
        }
        db.flush()?;
        db.merge_opt("k0", format!("w{round}"), &sync)?;
        if round > 0 {
            db.compact_range(None, None)?;
        }
    }
    db.close()
}

#[test]
fn repair_reads_what_open_reads_after_a_kill_at_every_step_of_flushes_and_merges() {
    let o = |vfs: Arc<dyn Vfs>| Options::default().with_vfs(vfs).with_merge_operator(append_comma());
    let probe = CrashVfs::new();
    merge_workload(Arc::new(probe.clone())).unwrap();
    let total = probe.ops_done();
    for n in 0..=total {
        for mode in [CrashMode::ProcessKill, CrashMode::PowerLoss] {
            let vfs = CrashVfs::new();
            vfs.set_crash_after(Some(n));
            let _ = merge_workload(Arc::new(vfs.clone()));
            vfs.crash_now();
            let ctx = format!("kill after op {n} of {total} ({mode:?})");
            let opened: Arc<dyn Vfs> = Arc::new(vfs.image(mode));
            // Only states open accepts (no database yet is not one to repair).
            let Ok(db) = Db::open(dir(), o(opened).with_create_if_missing(false)) else { continue };
            let want = scan(&db);
            drop(db);
            let repaired: Arc<dyn Vfs> = Arc::new(vfs.image(mode));
            let report = repair(dir(), o(repaired.clone())).unwrap_or_else(|e| panic!("{ctx}: repair: {e}"));
            let db = Db::open(dir(), o(repaired)).unwrap_or_else(|e| panic!("{ctx}: open after repair: {e}"));
            same(&scan(&db), &want, &format!("{ctx}: {report}"));
        }
    }
}

#[test]
fn repair_rebuilds_every_keyspace_in_its_directory_and_keeps_the_registry() {
    let vfs = Arc::new(MemVfs::new());
    let concat = associative_merge_operator("concat", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    let log_opts = KeyspaceOptions::default().with_merge_operator(concat);
    let o = || Options::default().with_vfs(vfs.clone()).with_keyspace("log", log_opts.clone());
    let db = Db::open(dir(), o()).unwrap();
    let users = db.create_keyspace("users", KeyspaceOptions::default()).unwrap();
    // Created by the open that names it.
    let log = db.keyspace("log").unwrap();
    let gone = db.create_keyspace("gone", KeyspaceOptions::default()).unwrap();
    for i in 0..100 {
        db.put(format!("k{i:03}"), "default").unwrap();
        users.put(format!("k{i:03}"), format!("user{i}")).unwrap();
    }
    log.merge("l", "a").unwrap();
    gone.put("g", "x").unwrap();
    db.flush().unwrap();
    users.flush().unwrap();
    log.flush().unwrap();
    db.drop_keyspace("gone").unwrap();
    // Left in the shared WAL: ops of each keyspace, interleaved in batches.
    let mut batch = WriteBatch::new();
    batch.put_cf(&users, "k000", "user0-new");
    batch.delete_cf(&users, "k001");
    batch.merge_cf(&log, "l", "b");
    batch.put("k000", "default-new");
    db.write(batch).unwrap();
    drop((users, log, gone));
    db.close().unwrap();
    vfs.remove_file(&dir().join("CURRENT")).unwrap();
    assert!(Db::open(dir(), o()).is_err(), "no CURRENT, no open");
    let report = repair(dir(), o()).unwrap();
    assert_eq!(report.keyspaces, 2, "{report}");
    let db = Db::open(dir(), o()).unwrap();
    assert_eq!(db.list_keyspaces(), ["default", "log", "users"]);
    let mut want_default: Model =
        (0..100).map(|i| (format!("k{i:03}").into_bytes(), b"default".to_vec())).collect();
    want_default.insert(b"k000".to_vec(), b"default-new".to_vec());
    same(&scan(&db), &want_default, "default keyspace");
    let users = db.keyspace("users").unwrap();
    let mut want_users: Model =
        (0..100).map(|i| (format!("k{i:03}").into_bytes(), format!("user{i}").into_bytes())).collect();
    want_users.insert(b"k000".to_vec(), b"user0-new".to_vec());
    want_users.remove(&b"k001"[..]);
    same(&users.iter().map(|kv| kv.unwrap()).collect(), &want_users, "keyspace users");
    assert_eq!(db.keyspace("log").unwrap().get("l").unwrap(), Some(b"ab".to_vec()));
    assert!(db.keyspace("gone").is_err(), "a dropped keyspace stays dropped");
    // Still a working database: writes, a reopen, a second repair.
    users.put("after", "x").unwrap();
    db.flush().unwrap();
    drop(users);
    db.close().unwrap();
    repair(dir(), o()).unwrap();
    let db = Db::open(dir(), o()).unwrap();
    want_users.insert(b"after".to_vec(), b"x".to_vec());
    same(
        &db.keyspace("users").unwrap().iter().map(|kv| kv.unwrap()).collect(),
        &want_users,
        "after a second repair",
    );
}

#[test]
fn repair_of_keyspaces_without_a_readable_root_manifest_is_a_clear_error() {
    let vfs = Arc::new(MemVfs::new());
    let o = || Options::default().with_vfs(vfs.clone());
    let db = Db::open(dir(), o()).unwrap();
    db.create_keyspace("ks", KeyspaceOptions::default()).unwrap().put("k", "v").unwrap();
    db.close().unwrap();
    for n in vfs.list_dir(&dir()).unwrap() {
        if n.starts_with("MANIFEST") {
            vfs.remove_file(&dir().join(n)).unwrap();
        }
    }
    let err = repair(dir(), o()).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("registry"), "{err}");
    assert!(vfs.exists(&dir().join("keyspaces/1/CURRENT")), "nothing removed");
}

/// Every keyspace's entries, by name.
fn scan_all(db: &Db) -> BTreeMap<String, Model> {
    let mut all = BTreeMap::new();
    for name in db.list_keyspaces() {
        let m = if name == "default" {
            scan(db)
        } else {
            db.keyspace(&name).unwrap().iter().map(|kv| kv.unwrap()).collect()
        };
        all.insert(name, m);
    }
    all
}

#[test]
fn crash_during_repair_of_keyspaces_then_repair_again_keeps_every_keyspace() {
    let base = MemVfs::new();
    let o = |vfs: Arc<dyn Vfs>| Options::default().with_vfs(vfs).with_write_buffer_size(8 << 10);
    let db = Db::open(dir(), o(Arc::new(base.clone()))).unwrap();
    for name in ["a", "b"] {
        let ks =
            db.create_keyspace(name, KeyspaceOptions::default().with_write_buffer_size(8 << 10)).unwrap();
        for i in 0..400 {
            ks.put(format!("k{i:03}"), format!("{name}{i}")).unwrap();
            db.put(format!("k{i:03}"), format!("default{i}")).unwrap();
        }
        ks.delete("k007").unwrap();
    }
    let want = scan_all(&db);
    db.close().unwrap();
    base.remove_file(&dir().join("CURRENT")).unwrap();
    let image = CrashVfs::from_mem(base);
    let probe = CrashVfs::from_mem(image.image(CrashMode::ProcessKill));
    repair(dir(), o(Arc::new(probe.clone()))).unwrap();
    let total = probe.ops_done();
    for n in 0..=total {
        for mode in [CrashMode::PowerLoss, CrashMode::TornWrite { seed: n }] {
            let vfs = CrashVfs::from_mem(image.image(CrashMode::ProcessKill));
            vfs.set_crash_after(Some(n));
            let _ = repair(dir(), o(Arc::new(vfs.clone())));
            vfs.crash_now();
            let after: Arc<dyn Vfs> = Arc::new(vfs.image(mode));
            let ctx = format!("crash after op {n} of {total} ({mode:?})");
            let db = match Db::open(dir(), o(after.clone())) {
                Ok(db) => db,
                Err(_) => {
                    repair(dir(), o(after.clone())).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    Db::open(dir(), o(after.clone())).unwrap_or_else(|e| panic!("{ctx}: {e}"))
                }
            };
            assert!(scan_all(&db) == want, "{ctx}: keyspaces {:?}", db.list_keyspaces());
        }
    }
}
