//! `Db::delete_range` end to end under every built-in policy, against a
//! model: over memtable data and data at several levels, newer writes and
//! merges above a tombstone, snapshots from before it, every read path, WAL
//! replay, and `compact_range` removing covered keys and the tombstones.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{builtin_policies, model_merge, model_merge_operator, policy_options};
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
        assert!(stats.range_dels_written > 0, "{name}: {stats}");
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
