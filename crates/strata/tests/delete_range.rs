//! `Db::delete_range` end to end under every built-in policy, against a
//! model: over memtable data and data at several levels, newer writes and
//! merges above a tombstone, snapshots from before it, every read path, WAL
//! replay, and `compact_range` removing covered keys and the tombstones.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::cursor::{check_move, gen_moves, ModelCursor};
use common::{builtin_policies, model_merge, model_merge_operator, policy_options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{CompactionStyle, Db, MemVfs, Options, ReadOptions, Snapshot, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u64 = 3000;

fn k(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn remove_range(m: &mut Model, a: &[u8], b: &[u8]) {
    let doomed: Vec<Vec<u8>> = m.range(a.to_vec()..b.to_vec()).map(|(k, _)| k.clone()).collect();
    for k in doomed {
        m.remove(&k);
    }
}

fn items(it: impl Iterator<Item = strata::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.collect::<strata::Result<_>>().expect("scan")
}

fn pairs<'a>(it: impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Every read path of `db` (or of `snap`) against `model`.
fn check(what: &str, db: &Db, snap: Option<&Snapshot>, model: &Model) {
    let keys: Vec<Vec<u8>> = (0..KEYS + 10).map(k).collect();
    for key in &keys {
        let got = match snap {
            Some(s) => s.get(key),
            None => db.get(key),
        }
        .expect("get");
        assert_eq!(got.as_ref(), model.get(key), "{what}: get {}", String::from_utf8_lossy(key));
    }
    let got = match snap {
        Some(s) => s.multi_get(&keys),
        None => db.multi_get(&keys),
    };
    for (key, got) in keys.iter().zip(got) {
        assert_eq!(got.expect("multi_get").as_ref(), model.get(key), "{what}: multi_get");
    }
    for key in keys.iter().step_by(7) {
        let got = match snap {
            Some(s) => s.get_pinned(key),
            None => db.get_pinned(key),
        }
        .expect("get_pinned");
        assert_eq!(got.as_deref(), model.get(key).map(Vec::as_slice), "{what}: get_pinned");
    }
    let iter = || match snap {
        Some(s) => s.iter(),
        None => db.iter(),
    };
    assert_eq!(items(iter()), pairs(model.iter()), "{what}: forward scan");
    assert_eq!(items(iter().rev()), pairs(model.iter().rev()), "{what}: reverse scan");
    let (lo, hi) = (k(50), k(1000));
    let range = || match snap {
        Some(s) => s.range(lo.clone()..hi.clone()),
        None => db.range(lo.clone()..hi.clone()),
    };
    assert_eq!(items(range()), pairs(model.range(lo.clone()..hi.clone())), "{what}: bounded scan");
    assert_eq!(items(range().rev()), pairs(model.range(lo.clone()..hi.clone()).rev()), "{what}: bounded rev");
    for prefix in [&b"key0001"[..], b"key0021", b"key0025"] {
        let it = match snap {
            Some(s) => s.prefix_iterator(prefix),
            None => db.prefix_iterator(prefix),
        };
        let want = pairs(model.range(prefix.to_vec()..).take_while(|(k, _)| k.starts_with(prefix)));
        assert_eq!(items(it), want, "{what}: prefix {}", String::from_utf8_lossy(prefix));
    }
    // The raw iterator across covered runs, both ways, within bounds too.
    for bounded in [false, true] {
        let mut it = match (snap, bounded) {
            (Some(s), false) => s.raw_iterator(),
            (Some(s), true) => db.raw_iterator_opt(
                &ReadOptions::default()
                    .with_snapshot(s)
                    .with_iterate_lower_bound(k(90))
                    .with_iterate_upper_bound(k(950)),
            ),
            (None, false) => db.raw_iterator(),
            (None, true) => db.raw_iterator_opt(
                &ReadOptions::default().with_iterate_lower_bound(k(90)).with_iterate_upper_bound(k(950)),
            ),
        };
        let in_bounds = |key: &Vec<u8>| !bounded || (key >= &k(90) && key < &k(950));
        let view: Vec<(Vec<u8>, Vec<u8>)> = pairs(model.iter().filter(|(key, _)| in_bounds(key)));
        for target in [k(95), k(99), k(500), k(899), k(2550)] {
            it.seek(&target);
            let first = view.partition_point(|(key, _)| key < &target);
            for pos in first..first + 4 {
                assert_eq!(
                    it.item().map(|(a, b)| (a.to_vec(), b.to_vec())),
                    view.get(pos).cloned(),
                    "{what}: raw next"
                );
                if !it.valid() {
                    break;
                }
                it.next();
            }
            it.seek_for_prev(&target);
            let mut pos = view.partition_point(|(key, _)| key <= &target) as i64 - 1;
            for _ in 0..4 {
                let want = usize::try_from(pos).ok().and_then(|p| view.get(p).cloned());
                assert_eq!(it.item().map(|(a, b)| (a.to_vec(), b.to_vec())), want, "{what}: raw prev");
                if !it.valid() {
                    break;
                }
                it.prev();
                pos -= 1;
            }
        }
        it.status().expect("raw iterator status");
    }
}

/// Random raw-iterator moves (seeks into deleted ranges, walks across them,
/// direction changes) against the model, unbounded and within bounds.
fn check_moves(what: &str, db: &Db, snap: Option<&Snapshot>, model: &Model, rng: &mut StdRng) {
    for (lo, hi) in [(None, None), (Some(k(150)), Some(k(1900))), (Some(k(420)), None), (None, Some(k(1010)))]
    {
        let mut ro = ReadOptions::default();
        if let Some(s) = snap {
            ro = ro.with_snapshot(s);
        }
        if let Some(l) = &lo {
            ro = ro.with_iterate_lower_bound(l.clone());
        }
        if let Some(h) = &hi {
            ro = ro.with_iterate_upper_bound(h.clone());
        }
        let mut it = db.raw_iterator_opt(&ro);
        let mut cur = ModelCursor::new(model, lo.clone(), hi.clone());
        let moves = gen_moves(rng, 80, |r| {
            let mut key = k(r.gen_range(0..KEYS + 10));
            if r.gen_bool(0.2) {
                key.push(b'x');
            }
            key
        });
        for mv in &moves {
            if let Err(e) = check_move(&mut it, &mut cur, mv) {
                panic!("{what}: bounds {lo:?}..{hi:?}: {e}");
            }
        }
    }
}

fn options(style: &CompactionStyle, vfs: Arc<MemVfs>) -> Options {
    policy_options(style, vfs).with_merge_operator(model_merge_operator())
}

#[test]
fn every_policy_answers_range_deletes_like_the_model() {
    let mut cleaned = Vec::new();
    for style in builtin_policies() {
        let name = format!("{style:?}");
        let vfs = Arc::new(MemVfs::new());
        let mut db = Db::open("/db", options(&style, vfs.clone())).expect("open");
        let mut model = Model::new();
        let put = |db: &Db, model: &mut Model, i: u64, v: String| {
            db.put(k(i), &v).expect("put");
            model.insert(k(i), v.into_bytes());
        };
        let merge = |db: &Db, model: &mut Model, i: u64, op: &str| {
            db.merge(k(i), op).expect("merge");
            let v = model_merge(model.get(&k(i)).map(Vec::as_slice), op.as_bytes());
            model.insert(k(i), v);
        };
        // Old data at the bottom, newer versions above it, operands above those.
        for i in 0..KEYS {
            put(&db, &mut model, i, format!("old{i}-{}", "x".repeat(40)));
        }
        db.compact_range(None, None).expect("compact");
        for i in (0..KEYS).step_by(3) {
            put(&db, &mut model, i, format!("mid{i}"));
        }
        db.flush().expect("flush");
        for i in (0..KEYS).step_by(7) {
            merge(&db, &mut model, i, "+a");
        }
        let snap = db.snapshot();
        let snap_model = model.clone();

        db.delete_range(k(100), k(900)).expect("delete_range");
        remove_range(&mut model, &k(100), &k(900));
        db.delete_range(k(2500), k(2600)).expect("delete_range");
        remove_range(&mut model, &k(2500), &k(2600));
        db.delete_range(k(20), k(10)).expect("an empty range succeeds");
        db.delete_range(k(30), k(30)).expect("an empty range succeeds");
        // Newer than the tombstones: they stay, and operands start afresh.
        for i in (150..250).step_by(5) {
            put(&db, &mut model, i, format!("new{i}"));
        }
        for i in (300..400).step_by(10) {
            merge(&db, &mut model, i, "+b");
        }
        // A batch: a put before its range delete goes, one after stays.
        let mut b = WriteBatch::new();
        b.put(k(2700), "gone");
        b.delete_range(k(2690), k(2710));
        b.put(k(2705), "kept");
        db.write(b).expect("batch");
        remove_range(&mut model, &k(2690), &k(2710));
        model.insert(k(2705), b"kept".to_vec());

        check(&format!("{name}: in the memtable"), &db, None, &model);
        check(&format!("{name}: snapshot from before"), &db, Some(&snap), &snap_model);
        db.flush().expect("flush");
        // Counted here, where the flush must write them: after the reopen
        // below a compaction into a one-run bottom may drop every tombstone
        // without writing any, depending on what ran before.
        let stats = db.stats();
        assert!(stats.range_dels_written > 0, "{name}: {stats}");
        check(&format!("{name}: flushed"), &db, None, &model);
        check(&format!("{name}: flushed, snapshot"), &db, Some(&snap), &snap_model);
        // Compactions with the snapshot alive keep what it sees.
        db.compact_range(None, None).expect("compact");
        check(&format!("{name}: compacted under a snapshot"), &db, None, &model);
        check(&format!("{name}: snapshot after compaction"), &db, Some(&snap), &snap_model);
        drop(snap);

        // A range delete only in the WAL, replayed at open.
        db.delete_range(k(2000), k(2100)).expect("delete_range");
        remove_range(&mut model, &k(2000), &k(2100));
        db.close().expect("close");
        db = Db::open("/db", options(&style, vfs.clone())).expect("reopen");
        check(&format!("{name}: reopened"), &db, None, &model);

        db.compact_range(None, None).expect("compact");
        db.wait_for_compactions().expect("wait");
        check(&format!("{name}: compacted"), &db, None, &model);
        let stats = db.stats();
        // Where the bottom is one run, nothing lies under the tombstones any
        // more: they and every key they covered are gone. (Tiered keeps
        // several runs at the bottom, which a tombstone must stay above.)
        let runs: Vec<usize> = stats.levels.iter().map(|l| l.runs).filter(|&r| r > 0).collect();
        if runs == [1] {
            let left = db.property("strata.num-range-deletes");
            assert_eq!(left.unwrap(), "0", "{name}: tombstones left\n{stats}");
            assert!(stats.range_dels_dropped > 0, "{name}");
            let entries: u64 = db.property_int("strata.num-entries").expect("property");
            assert_eq!(entries, model.len() as u64, "{name}: covered keys still stored");
            cleaned.push(name.clone());
        }
        db.close().expect("close");
    }
    assert!(cleaned.len() >= 5, "bottoms of one run: {cleaned:?}");
}

#[test]
fn repair_keeps_keys_deleted_by_range() {
    let vfs = Arc::new(MemVfs::new());
    let opts = || Options::default().with_vfs(vfs.clone()).with_write_buffer_size(16 << 10);
    let db = Db::open("/db", opts()).expect("open");
    for i in 0..500 {
        db.put(k(i), format!("v{i}")).expect("put");
    }
    db.flush().expect("flush");
    db.delete_range(k(100), k(200)).expect("delete_range"); // flushed below
    db.flush().expect("flush");
    db.delete_range(k(300), k(350)).expect("delete_range"); // only in the WAL
    db.put(k(320), "back").expect("put");
    db.close().expect("close");
    strata::repair("/db", opts()).expect("repair");
    let db = Db::open("/db", opts()).expect("open");
    let keys: Vec<u64> = (0..500).filter(|&i| db.get(k(i)).expect("get").is_some()).collect();
    let want: Vec<u64> =
        (0..500).filter(|&i| !(100..200).contains(&i) && !(300..350).contains(&i) || i == 320).collect();
    assert_eq!(keys, want);
    assert_eq!(db.get(k(320)).expect("get"), Some(b"back".to_vec()));
}

#[test]
fn a_table_of_only_range_tombstones_is_flushed_and_bounds_its_range() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", Options::default().with_vfs(vfs)).expect("open");
    for i in 0..100 {
        db.put(k(i), "v").expect("put");
    }
    db.compact_range(None, None).expect("compact");
    let snap = db.snapshot();
    db.delete_range(k(10), k(20)).expect("delete_range");
    db.flush().expect("flush");
    assert_eq!(db.property("strata.num-range-deletes").unwrap(), "1");
    assert_eq!(db.get(k(15)).expect("get"), None);
    assert_eq!(snap.get(k(15)).expect("get"), Some(b"v".to_vec()));
    assert_eq!(db.iter().count(), 90);
    drop(snap);
    db.compact_range(None, None).expect("compact");
    assert_eq!(db.property("strata.num-range-deletes").unwrap(), "0");
    assert_eq!(db.property("strata.num-entries").unwrap(), "90");
}

#[test]
fn a_row_cache_hit_is_never_returned_under_a_newer_range_tombstone() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", Options::default().with_vfs(vfs).with_row_cache(1 << 20)).expect("open");
    for i in 0..50 {
        db.put(k(i), "v").expect("put");
    }
    db.flush().expect("flush");
    for _ in 0..2 {
        assert_eq!(db.get(k(7)).expect("get"), Some(b"v".to_vec()));
    }
    assert!(db.stats().row_cache.hits > 0, "the row was cached");
    let snap = db.snapshot();
    db.delete_range(k(5), k(10)).expect("delete_range");
    assert_eq!(db.get(k(7)).expect("get"), None);
    assert_eq!(
        db.multi_get([k(7), k(10)]).into_iter().map(|r| r.expect("get")).collect::<Vec<_>>(),
        [None, Some(b"v".to_vec())]
    );
    assert_eq!(snap.get(k(7)).expect("get"), Some(b"v".to_vec()));
    db.flush().expect("flush");
    assert_eq!(db.get(k(7)).expect("get"), None);
}

/// Iterators pass a deleted range by seeking over the sources whose entries
/// there are all older than the tombstone; these are the cases where a wrong
/// jump would skip something visible: refills newer than a wide tombstone in
/// the memtable and in tables newer than it, an overlapping newer tombstone
/// refilled again, operands above a tombstone, snapshots older than either,
/// ends between stored keys, and every policy's tables (buffers, DTables).
#[test]
fn seeks_past_wide_range_deletes_show_every_visible_entry() {
    for style in builtin_policies() {
        let name = format!("{style:?}");
        let vfs = Arc::new(MemVfs::new());
        let db = Db::open("/db", options(&style, vfs.clone())).expect("open");
        let mut rng = StdRng::seed_from_u64(17);
        let mut model = Model::new();
        let put = |model: &mut Model, i: u64, v: String| {
            db.put(k(i), &v).expect("put");
            model.insert(k(i), v.into_bytes());
        };
        for i in 0..KEYS {
            put(&mut model, i, format!("old{i}-{}", "y".repeat(30)));
        }
        db.compact_range(None, None).expect("compact");
        let snap_old = db.snapshot();
        let model_old = model.clone();

        db.delete_range(k(100), k(2900)).expect("delete_range");
        remove_range(&mut model, &k(100), &k(2900));
        for i in (100..2900).step_by(97) {
            put(&mut model, i, format!("r1-{i}"));
        }
        check(&format!("{name}: refilled in the memtable"), &db, None, &model);
        db.flush().expect("flush");
        let snap_mid = db.snapshot();
        let model_mid = model.clone();

        db.delete_range(k(400), k(1800)).expect("delete_range");
        remove_range(&mut model, &k(400), &k(1800));
        for i in (400..1800).step_by(61) {
            put(&mut model, i, format!("r2-{i}"));
        }
        for i in (430..1800).step_by(173) {
            db.merge(k(i), "+m").expect("merge");
            let v = model_merge(model.get(&k(i)).map(Vec::as_slice), b"+m");
            model.insert(k(i), v);
        }
        db.flush().expect("flush");
        for i in (1000..1200).step_by(7) {
            put(&mut model, i, format!("r3-{i}"));
        }
        db.delete_range(&b"key002950x"[..], &b"key00297"[..]).expect("delete_range");
        remove_range(&mut model, b"key002950x", b"key00297");

        let views = [(None, &model), (Some(&snap_old), &model_old), (Some(&snap_mid), &model_mid)];
        let check_all = |what: &str, rng: &mut StdRng| {
            for (snap, m) in views {
                let what = format!("{name}: {what}, snapshot {}", snap.is_some());
                check(&what, &db, snap, m);
                check_moves(&what, &db, snap, m, rng);
            }
        };
        check_all("refilled in newer tables and the memtable", &mut rng);
        db.compact_range(Some(&k(0)[..]), Some(&k(1500)[..])).expect("compact");
        check_all("partly compacted", &mut rng);
        db.flush().expect("flush");
        db.wait_for_compactions().expect("wait");
        check_all("flushed and settled", &mut rng);
        drop((snap_old, snap_mid));
        db.compact_range(None, None).expect("compact");
        check(&format!("{name}: compacted"), &db, None, &model);
        check_moves(&format!("{name}: compacted"), &db, None, &model, &mut rng);
    }
}

/// A refilled wide tombstone compacted down over parts of its range, with a
/// snapshot keeping the entries it covers in the tables: old tables hidden
/// by it sit in runs beside tables holding refills newer than it.
#[test]
fn partial_compactions_under_a_refilled_wide_tombstone_keep_every_read_right() {
    for style in builtin_policies() {
        let name = format!("{style:?}");
        let db = Db::open("/db", options(&style, Arc::new(MemVfs::new()))).expect("open");
        let mut rng = StdRng::seed_from_u64(5);
        let mut model = Model::new();
        for i in 0..KEYS {
            let v = format!("old{i}-{}", "z".repeat(30));
            db.put(k(i), &v).expect("put");
            model.insert(k(i), v.into_bytes());
        }
        db.compact_range(None, None).expect("compact");
        // Covered entries stay for the snapshot, so old tables stay whole.
        let snap = db.snapshot();
        let old = model.clone();
        db.delete_range(k(100), k(2900)).expect("delete_range");
        remove_range(&mut model, &k(100), &k(2900));
        for i in (100..2900).step_by(37) {
            let v = format!("r-{i}");
            db.put(k(i), &v).expect("put");
            model.insert(k(i), v.into_bytes());
        }
        db.flush().expect("flush");
        for (a, b) in [(2000, 2100), (1200, 1250)] {
            db.compact_range(Some(&k(a)[..]), Some(&k(b)[..])).expect("compact");
            let what = format!("{name}: {a}..{b} compacted down");
            check(&what, &db, None, &model);
            check(&what, &db, Some(&snap), &old);
            check_moves(&what, &db, None, &model, &mut rng);
        }
    }
}
