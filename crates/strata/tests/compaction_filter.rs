//! The compaction filter end to end: it removes and changes entries under
//! every built-in policy once compaction runs (merges, split merges, pipelined
//! stages, `lwc` appends), a removal never uncovers an older version held
//! deeper, snapshots keep what they see, and flushes and tombstones never
//! reach it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use strata::{
    CompactionFilter, CompactionPipeline, CompactionStyle, Db, Decision, MemVfs, Options, ReadOptions, Stats,
    Vfs,
};

/// Removes values under `drop/` and values starting with `gone`, changes
/// values under `chg/` (once: a changed value starts with `changed:`), and
/// records every call.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<Call>>,
}

/// One call of the filter: level, key, value.
type Call = (usize, Vec<u8>, Vec<u8>);

impl CompactionFilter for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision {
        self.calls().push((level, key.to_vec(), value.to_vec()));
        if key.starts_with(b"drop/") || value.starts_with(b"gone") {
            Decision::Remove
        } else if (key.starts_with(b"chg/") || value.starts_with(b"chg")) && !value.starts_with(b"changed:") {
            Decision::ChangeValue([&b"changed:"[..], value].concat())
        } else {
            Decision::Keep
        }
    }
}

impl Recorder {
    fn calls(&self) -> MutexGuard<'_, Vec<Call>> {
        self.calls.lock().unwrap()
    }

    fn saw_value(&self, value: &[u8]) -> bool {
        self.calls().iter().any(|(_, _, v)| v == value)
    }

    fn saw_key(&self, key: &[u8]) -> bool {
        self.calls().iter().any(|(_, k, _)| k == key)
    }
}

fn key(prefix: &str, i: u32) -> Vec<u8> {
    format!("{prefix}/{i:05}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat((i % 40) as usize)).into_bytes()
}

fn scan(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter().map(|kv| kv.expect("iterate")).collect()
}

/// `n` keys under each of `keep/`, `drop/` and `chg/`, interleaved so every
/// table holds all three.
fn load(db: &Db, n: u32) {
    for i in 0..n {
        for p in ["keep", "drop", "chg"] {
            db.put(key(p, i), value(i)).unwrap();
        }
    }
}

/// After every entry went through a compaction: `drop/` gone, `chg/` changed
/// once, `keep/` as written, in gets and scans alike.
fn check_filtered(db: &Db, n: u32, what: &str) {
    let all = scan(db);
    let mut want = BTreeMap::new();
    for i in 0..n {
        want.insert(key("keep", i), value(i));
        want.insert(key("chg", i), [&b"changed:"[..], &value(i)].concat());
        assert_eq!(db.get(key("drop", i)).unwrap(), None, "{what}: drop/{i}");
        assert_eq!(db.get(key("chg", i)).unwrap().as_ref(), want.get(&key("chg", i)), "{what}: chg/{i}");
    }
    assert!(all == want, "{what}: scan differs ({} entries, {} expected)", all.len(), want.len());
}

#[test]
fn the_filter_removes_and_changes_entries_under_every_policy() {
    const N: u32 = 400;
    for style in common::builtin_policies() {
        let name = style.name();
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let filter = Arc::new(Recorder::default());
        let opts = common::policy_options(&style, vfs).with_compaction_filter(filter.clone());
        let db = Db::open("/db", opts).unwrap();
        load(&db, N);
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        check_filtered(&db, N, &name);
        let s = db.stats();
        // Each entry is filtered once: a removed one is a tombstone after, a
        // changed one is kept by the filter from then on.
        assert_eq!(s.compaction_filter_removed, u64::from(N), "{name}\n{s}");
        assert_eq!(s.compaction_filter_changed, u64::from(N), "{name}\n{s}");
        assert!(s.to_string().contains("compaction filter: 400 entries removed"), "{name}\n{s}");
        let levels: BTreeSet<usize> = filter.calls().iter().map(|c| c.0).collect();
        assert!(!levels.contains(&0), "{name}: no compaction writes L0, so no call names it");
        db.close().unwrap();
    }
}

#[test]
fn flushes_and_tombstones_never_reach_the_filter() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let filter = Arc::new(Recorder::default());
    let opts = common::small_options()
        .with_vfs(vfs)
        .with_disable_auto_compactions(true)
        .with_compaction_filter(filter.clone());
    let db = Db::open("/db", opts).unwrap();
    load(&db, 200);
    // Tombstones: of keys written (and flushed) before, and of keys never written.
    db.flush().unwrap();
    for i in 0..50 {
        db.delete(key("keep", i)).unwrap();
        db.delete(key("never", i)).unwrap();
    }
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.flushes >= 2, "{s}");
    assert!(filter.calls().is_empty(), "a flush ran the filter");
    assert!(db.get(key("drop", 7)).unwrap().is_some(), "flushed as written");
    assert_eq!(s.compaction_filter_removed, 0);

    db.compact_range(None, None).unwrap();
    assert!(!filter.calls().is_empty(), "the compaction ran it");
    for i in 0..50 {
        assert!(!filter.saw_key(&key("keep", i)), "deleted keep/{i} reached the filter");
        assert!(!filter.saw_key(&key("never", i)), "tombstone never/{i} reached the filter");
        assert_eq!(db.get(key("keep", i)).unwrap(), None);
    }
    assert!(filter.saw_key(&key("keep", 50)));
    assert!(filter.calls().iter().all(|(l, _, _)| *l == 1), "L0 merges into L1");
}

/// The regression: the filter removes the newest version of a key whose older
/// version sits in a deeper level. Dropping the entry outright would bring the
/// older version back; the tombstone written in its place hides it until a
/// compaction reaches the bottom and drops both.
#[test]
fn a_removed_key_does_not_come_back_from_a_deeper_level() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let base = || common::small_options().with_vfs(vfs.clone()).with_disable_auto_compactions(true);
    // The older version: a flush placed straight into L2.
    let db = Db::open("/db", base().with_max_mem_compaction_level(2)).unwrap();
    db.put(b"k", b"old").unwrap();
    db.put(b"other", b"x").unwrap();
    db.flush().unwrap();
    assert_eq!(db.stats().levels[2].files, 1, "{}", db.stats());
    db.close().unwrap();

    let removes_new =
        |_: usize, _: &[u8], v: &[u8]| if v == b"new" { Decision::Remove } else { Decision::Keep };
    // Level 0 again (a reopen keeps the recorded placement unless it is set).
    let db = Db::open(
        "/db",
        base().with_max_mem_compaction_level(0).with_compaction_filter(Arc::new(removes_new)),
    )
    .unwrap();
    db.put(b"k", b"new").unwrap();
    db.flush().unwrap();
    let s = db.stats();
    assert_eq!((s.levels[0].files, s.levels[1].files, s.levels[2].files), (1, 0, 1), "{s}");
    // L0 -> L1 (the filter removes `new`, `old` is below), then L1 -> L2.
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!(s.compaction_filter_removed, 1, "{s}");
    assert_eq!(db.get(b"k").unwrap(), None, "the older version came back");
    assert_eq!(scan(&db).into_keys().collect::<Vec<_>>(), vec![b"other".to_vec()]);
    db.close().unwrap();
    let db = Db::open("/db", base()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), None, "after reopen");
}

/// `compact_range` rewrites the deepest level's files (nothing above them
/// to merge) only when a filter is set, and then each of them once.
#[test]
fn compact_range_rewrites_the_deepest_level_only_with_a_filter() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let base = || common::small_options().with_vfs(vfs.clone()).with_disable_auto_compactions(true);
    let db = Db::open("/db", base()).unwrap();
    load(&db, 300);
    db.compact_range(None, None).unwrap();
    let written = db.stats().compaction_bytes_written;
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().compaction_bytes_written, written, "nothing above the data: nothing to do");
    db.close().unwrap();

    let db = Db::open("/db", base().with_compaction_filter(Arc::new(Recorder::default()))).unwrap();
    let before = db.stats();
    let deepest = before.levels.iter().rposition(|l| l.files > 0).unwrap();
    assert!(deepest >= 1 && before.levels[..deepest].iter().all(|l| l.files == 0), "{before}");
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!(s.compactions as usize, before.levels[deepest].files, "one rewrite per file\n{s}");
    assert!(s.recent_compactions.iter().all(|r| r.reason == strata::compaction::manual::BOTTOMMOST_REWRITE));
    check_filtered(&db, 300, "bottommost rewrite");
}

#[test]
fn values_a_live_snapshot_sees_stay_as_they_were_for_it() {
    for style in common::builtin_policies() {
        let name = style.name();
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let filter = Arc::new(Recorder::default());
        let opts = common::policy_options(&style, vfs).with_compaction_filter(filter.clone());
        let db = Db::open("/db", opts).unwrap();
        db.put(b"chg/a", b"before").unwrap();
        db.put(b"drop/a", b"before").unwrap();
        let snap = db.snapshot();
        db.compact_range(None, None).unwrap();
        assert!(!filter.saw_value(b"before"), "{name}: the filter saw a value the snapshot sees");
        assert_eq!(db.get(b"drop/a").unwrap().as_deref(), Some(&b"before"[..]), "{name}");
        // Newer versions, above the snapshot, are the filter's.
        db.put(b"chg/a", b"after").unwrap();
        db.put(b"drop/a", b"after").unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        assert_eq!(db.get(b"chg/a").unwrap().as_deref(), Some(&b"changed:after"[..]), "{name}");
        assert_eq!(db.get(b"drop/a").unwrap(), None, "{name}");
        assert_eq!(snap.get(b"chg/a").unwrap().as_deref(), Some(&b"before"[..]), "{name}");
        assert_eq!(snap.get(b"drop/a").unwrap().as_deref(), Some(&b"before"[..]), "{name}");
        let seen: Vec<_> = snap.iter().map(|kv| kv.unwrap().1).collect();
        assert_eq!(seen, vec![b"before".to_vec(), b"before".to_vec()], "{name}");
        drop(snap);
        db.compact_range(None, None).unwrap();
        assert!(!filter.saw_value(b"before"), "{name}: shadowed versions are not passed");
        assert_eq!(db.get(b"drop/a").unwrap(), None, "{name}");
        assert_eq!(scan(&db).len(), 1, "{name}");
    }
}

/// Under LSbM and dLSM a merge's drained inputs become buffer copies of what
/// arrived in the output run. Where the filter changed entries on the way they
/// are no such copies, so a read through the buffer must never return them.
/// The `cold` keys are written once, then pushed to L2 by writes of the `hot`
/// keys between them, whose merges into L2 are where the filter changes them.
///
/// Regression (flaky under load): the test read only `cold` keys while
/// writing, and under a slow schedule they had all left L1's buffer before the
/// first read, so no read used a buffer and the test failed for want of one.
/// Hot keys are read too now, and rounds go on until a read used a buffer.
#[test]
fn compaction_buffers_never_serve_what_the_filter_changed() {
    const N: u32 = 2000;
    const MAX_ROUNDS: u32 = 30;
    let cold = |i: u32| key("k", 2 * i);
    let hot = |i: u32| key("k", 2 * i + 1);
    for style in [CompactionStyle::Dlsm, CompactionStyle::Lsbm] {
        // Changes values only as they reach L2: after the drain from L1 that
        // the buffer of the receiving run would keep a copy of.
        let deep = |level: usize, _: &[u8], v: &[u8]| {
            if level >= 2 && !v.starts_with(b"deep:") {
                Decision::ChangeValue([&b"deep:"[..], v].concat())
            } else {
                Decision::Keep
            }
        };
        let opts = Options::default()
            .with_vfs(Arc::new(MemVfs::new()))
            .with_compaction_style(style.clone())
            .with_write_buffer_size(16 << 10)
            .with_target_file_size_base(16 << 10)
            .with_max_bytes_for_level_base(24 << 10)
            .with_max_bytes_for_level_multiplier(4.0)
            .with_num_levels(5)
            .with_level0_file_num_compaction_trigger(2)
            .with_block_size(512)
            .with_block_cache_capacity(1 << 20)
            .with_buffer_trim_threshold(0.0)
            .with_buffer_read_misses(true)
            .with_compaction_filter(Arc::new(deep));
        let db = Db::open("/db", opts).unwrap();
        let no_buffer = ReadOptions::default().with_use_compaction_buffer(false);
        let mut model = BTreeMap::new();
        // The value as written, or as the filter left it.
        let check = |k: &[u8], got: Option<Vec<u8>>, model: &BTreeMap<Vec<u8>, Vec<u8>>| {
            let want = model.get(k);
            let deep = want.map(|v| [&b"deep:"[..], v].concat());
            assert!(got.as_ref() == want || got == deep, "{style:?}: {got:?}, model {want:?}");
        };
        // Every key through the buffer and around it, once compactions are done.
        let check_all = |model: &BTreeMap<Vec<u8>, Vec<u8>>| {
            db.wait_for_compactions().unwrap();
            let mut changed = 0;
            for (k, v) in model {
                let got = db.get(k).unwrap();
                assert_eq!(db.get_opt(k, &no_buffer).unwrap(), got, "{style:?}: through the buffer");
                changed += usize::from(got.as_ref() != Some(v));
                check(k, got, model);
            }
            changed
        };
        for i in 0..N {
            let v = format!("cold-{i}-{}", "c".repeat((i % 50) as usize)).into_bytes();
            db.put(cold(i), &v).unwrap();
            model.insert(cold(i), v);
        }
        let mut round = 0;
        let changed = loop {
            for i in 0..3000u32 {
                let k = hot((i.wrapping_mul(7919) + round * 104_729) % N);
                let v = format!("r{round}-{i}-{}", "v".repeat((i % 50) as usize)).into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
                // A compaction may change a value between two reads here, so
                // each is checked against the model alone.
                for k in [cold((i * 31) % N), hot((i * 17) % N)] {
                    check(&k, db.get(&k).unwrap(), &model);
                    check(&k, db.get_opt(&k, &no_buffer).unwrap(), &model);
                }
            }
            round += 1;
            let changed = check_all(&model);
            let s = db.stats();
            if round >= 6 && s.compaction_filter_changed > 0 && s.buffer_hits > 0 {
                break changed;
            }
            assert!(round < MAX_ROUNDS, "{style:?}: no read used a buffer in {round} rounds\n{s}");
        };
        assert!(changed > 0, "{style:?}: no value reached L2");
    }
}

/// A filter that panics fails the compaction with an error: nothing is
/// installed, nothing is lost, and the caller learns which filter it was.
#[test]
fn a_panicking_filter_fails_the_compaction_and_loses_nothing() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let base = || common::small_options().with_vfs(vfs.clone()).with_disable_auto_compactions(true);
    let panics = |_: usize, key: &[u8], _: &[u8]| -> Decision {
        assert!(!key.starts_with(b"drop/00042"), "a bug in the filter");
        Decision::Keep
    };
    let db = Db::open("/db", base().with_compaction_filter(Arc::new(panics))).unwrap();
    load(&db, 100);
    let err = db.compact_range(None, None).unwrap_err();
    assert!(matches!(&err, strata::Error::InvalidArgument(m) if m.contains("\"closure\" panicked")), "{err}");
    assert_eq!(db.stats().compactions, 0);
    assert_eq!(db.get(key("drop", 42)).unwrap().as_deref(), Some(&value(42)[..]));
    assert_eq!(scan(&db).len(), 300);
    db.close().unwrap();
    let db = Db::open("/db", base()).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(scan(&db).len(), 300, "the same data compacts without the filter");
}

fn split_options(vfs: Arc<dyn Vfs>, pipeline: CompactionPipeline) -> Options {
    Options::default()
        .with_vfs(vfs)
        .with_compaction_pipeline(pipeline)
        .with_disable_auto_compactions(true)
        .with_write_buffer_size(64 << 10)
        .with_target_file_size_base(32 << 10)
        .with_block_size(512)
        .with_compaction_subtask_bytes(2 << 10)
}

/// Merges cut into sub-tasks (several threads running the filter at once) and
/// the pipelined output stages filter exactly as the one-thread merge does.
#[test]
fn split_merges_and_pipelined_stages_run_the_filter() {
    const N: u32 = 1500;
    let modes = [
        CompactionPipeline::Sequential,
        CompactionPipeline::Pipelined,
        CompactionPipeline::Parallel { compute_threads: 2 },
        CompactionPipeline::Parallel { compute_threads: 3 },
    ];
    let mut reference = None;
    for mode in modes {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let filter = Arc::new(Recorder::default());
        let db = Db::open("/db", split_options(vfs, mode).with_compaction_filter(filter.clone())).unwrap();
        load(&db, N);
        db.compact_range(None, None).unwrap();
        let s: Stats = db.stats();
        if matches!(mode, CompactionPipeline::Parallel { .. }) {
            assert!(s.compaction_stages.subtasks > 10, "{mode:?}: the merge was not split\n{s}");
        }
        assert_eq!((s.compaction_filter_removed, s.compaction_filter_changed), (u64::from(N), u64::from(N)));
        check_filtered(&db, N, &format!("{mode:?}"));
        let all = scan(&db);
        match &reference {
            None => reference = Some(all),
            Some(r) => assert!(*r == all, "{mode:?} differs from the sequential merge"),
        }
    }
}

/// Several merges at once share one filter.
#[test]
fn concurrent_merges_run_the_filter() {
    const N: u32 = 1500;
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let opts = common::small_options()
        .with_vfs(vfs)
        .with_max_background_compactions(3)
        .with_compaction_filter(Arc::new(Recorder::default()));
    let db = Db::open("/db", opts).unwrap();
    load(&db, N);
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    check_filtered(&db, N, "3 compaction threads");
}

fn lwc_options(vfs: Arc<dyn Vfs>, filter: Arc<Recorder>) -> Options {
    Options::default()
        .with_vfs(vfs)
        .with_compaction_style(CompactionStyle::Lwc { max_segments: 64 })
        .with_write_buffer_size(8 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(256 << 10)
        .with_num_levels(4)
        // Every flushed table is compacted, so every newer version below
        // went through an append once compactions settle.
        .with_level0_file_num_compaction_trigger(1)
        .with_block_size(512)
        .with_compaction_filter(filter)
}

/// An `lwc` append runs the filter over the victims: a value it removes
/// becomes a tombstone in the new segment, which hides the older version the
/// target's first segment holds; a changed value is appended changed.
#[test]
fn lwc_appends_run_the_filter_and_removals_hide_the_targets_older_versions() {
    // Enough data that a full compaction writes several L1 tables whatever ran
    // before it (600 keys fit one 8 KiB table when nothing did: a flaky setup).
    const N: u32 = 1500;
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let filter = Arc::new(Recorder::default());
    let db = Db::open("/db", lwc_options(vfs, filter.clone())).unwrap();
    let base = |i: u32| format!("base-{i:05}").into_bytes();
    for i in 0..N {
        db.put(key("k", i), base(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert!(s.levels[1].files > 1 && s.levels[0].files == 0, "the base versions sit in L1\n{s}");
    assert_eq!(s.compaction_filter_removed + s.compaction_filter_changed, 0);
    // Newer versions over the whole key range, in L0 tables: the victims of
    // appends into the L1 tables.
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = (0..N).map(|i| (key("k", i), base(i))).collect();
    for round in 0..2u32 {
        for i in (round..N).step_by(2) {
            let v = match i % 6 {
                0 | 1 => format!("gone-{i}").into_bytes(),
                2 | 3 => format!("chg-{i}").into_bytes(),
                _ => format!("new-{i}").into_bytes(),
            };
            db.put(key("k", i), &v).unwrap();
            match &v[..3] {
                b"gon" => model.remove(&key("k", i)),
                b"chg" => model.insert(key("k", i), [&b"changed:"[..], &v].concat()),
                _ => model.insert(key("k", i), v),
            };
        }
        db.flush().unwrap();
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.appends > 0 && s.levels[0].files == 0, "no append ran, or not for every table\n{s}");
    let appended: Vec<_> = s.recent_compactions.iter().filter(|r| r.kind == "append").collect();
    assert!(
        appended.iter().any(|r| r.filter_removed > 0 && r.filter_changed > 0),
        "no append ran the filter: {appended:?}"
    );
    for (i, k) in (0..N).map(|i| (i, key("k", i))) {
        assert_eq!(db.get(&k).unwrap().as_ref(), model.get(&k), "k/{i}");
    }
    assert!(scan(&db) == model, "scan differs from the model");
    // A full compaction (tables rewritten) changes no answer.
    db.compact_range(None, None).unwrap();
    assert!(scan(&db) == model, "scan differs after the rewrite");
}
