//! Merge operators end to end: operands across memtables, flushes,
//! compactions, reopens and snapshots under every built-in policy; what a
//! compaction combines; a missing or failing operator.

mod common;

use std::sync::Arc;

use common::{builtin_policies, policy_options};
use strata::{
    associative_merge_operator, Db, Error, KeyspaceOptions, MemVfs, MergeOperator, Options, ReadOptions,
    WriteBatch, WriteOptions,
};

/// Adds little-endian u64 counters (only a full merge: operands are kept
/// until a put, a delete or the bottom is below them).
struct Add;

impl MergeOperator for Add {
    fn name(&self) -> &str {
        "add"
    }
    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let n = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
        let mut sum = existing.map_or(Some(0), n)?;
        for op in operands {
            sum += n(op)?;
        }
        Some(sum.to_le_bytes().to_vec())
    }
}

fn append() -> Arc<dyn MergeOperator> {
    associative_merge_operator("append", |_key, existing, operand| {
        Some(existing.map_or_else(|| operand.to_vec(), |e| [e, b".", operand].concat()))
    })
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

/// Every read path's answer for every key, checked against `want`.
fn check_all(db: &Db, want: &[Option<Vec<u8>>], what: &str) {
    for (i, w) in want.iter().enumerate() {
        assert_eq!(db.get(key(i)).unwrap(), *w, "{what}: get {i}");
        assert_eq!(db.get_pinned(key(i)).unwrap().map(|p| p.to_vec()), *w, "{what}: get_pinned {i}");
    }
    let keys: Vec<Vec<u8>> = (0..want.len()).map(key).collect();
    for (i, got) in db.multi_get(&keys).into_iter().enumerate() {
        assert_eq!(got.unwrap(), want[i], "{what}: multi_get {i}");
    }
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        want.iter().enumerate().filter_map(|(i, w)| Some((key(i), w.clone()?))).collect();
    let forward: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(forward, expected, "{what}: iter");
    let mut backward: Vec<_> = db.iter().rev().collect::<Result<_, _>>().unwrap();
    backward.reverse();
    assert_eq!(backward, expected, "{what}: reverse iter");
    // The raw iterator both ways, within bounds, changing direction on merged keys.
    let ro =
        ReadOptions::default().with_iterate_lower_bound(key(1)).with_iterate_upper_bound(key(want.len() - 1));
    let bounded: Vec<_> = expected.iter().filter(|(k, _)| *k >= key(1) && *k < key(want.len() - 1)).collect();
    let mut it = db.raw_iterator_opt(&ro);
    it.seek_to_first();
    for (j, (k, v)) in bounded.iter().enumerate() {
        assert_eq!(it.item(), Some((k.as_slice(), v.as_slice())), "{what}: raw next {j}");
        if j > 0 {
            it.prev();
            assert_eq!(it.item().map(|kv| kv.0.to_vec()), Some(bounded[j - 1].0.clone()), "{what}: raw prev");
            it.next();
        }
        it.next();
    }
    assert!(!it.valid());
    it.seek_to_last();
    for (k, v) in bounded.iter().rev() {
        assert_eq!(it.item(), Some((k.as_slice(), v.as_slice())), "{what}: raw prev");
        it.prev();
    }
    it.status().unwrap();
    let prefixed: Vec<_> = db.prefix_iterator(b"key00").collect::<Result<_, _>>().unwrap();
    assert_eq!(
        prefixed,
        expected.iter().filter(|(k, _)| k.starts_with(b"key00")).cloned().collect::<Vec<_>>()
    );
}

fn count(n: u64) -> Vec<u8> {
    n.to_le_bytes().to_vec()
}

#[test]
fn counters_survive_flushes_compactions_reopens_and_snapshots_under_every_policy() {
    const KEYS: usize = 40;
    for style in builtin_policies() {
        let what = format!("{style:?}");
        let vfs = Arc::new(MemVfs::new());
        let open = || {
            Db::open("/db", policy_options(&style, vfs.clone()).with_merge_operator(Arc::new(Add))).unwrap()
        };
        let mut db = open();
        let mut want: Vec<Option<u64>> = vec![None; KEYS];
        let mut snaps = Vec::new();
        for round in 0..30u64 {
            let mut batch = WriteBatch::new();
            for (i, w) in want.iter_mut().enumerate() {
                match (i as u64 + round) % 13 {
                    0 => {
                        batch.put(key(i), count(100));
                        *w = Some(100);
                    }
                    5 if round % 2 == 0 => {
                        batch.delete(key(i));
                        *w = None;
                    }
                    _ => {
                        let by = 1 + i as u64 % 3;
                        if i % 2 == 0 {
                            batch.merge(key(i), count(by));
                        } else {
                            db.merge(key(i), count(by)).unwrap();
                        }
                        *w = Some(w.unwrap_or(0) + by);
                    }
                }
            }
            db.write(batch).unwrap();
            // Padding so that memtables fill and the tree grows levels.
            for p in 0..20 {
                db.put(format!("pad{round:02}{p:02}"), [b'x'; 200]).unwrap();
            }
            if round % 7 == 3 {
                snaps.push((db.snapshot(), want.clone()));
            }
            if round % 5 == 4 {
                db.flush().unwrap();
            }
            if round % 11 == 10 {
                db.compact_range(None, None).unwrap();
            }
            if round == 20 {
                snaps.clear();
                db.close().unwrap();
                db = open();
            }
            for (snap, at) in &snaps {
                for (i, w) in at.iter().enumerate() {
                    assert_eq!(
                        snap.get(key(i)).unwrap(),
                        w.map(count),
                        "{what}: round {round} snapshot get {i}"
                    );
                }
            }
        }
        db.wait_for_compactions().unwrap();
        let want: Vec<Option<Vec<u8>>> = want.iter().map(|w| w.map(count)).collect();
        // Only the counters: the padding keys sort after them.
        let counters = |db: &Db| {
            let got: Vec<_> = (0..KEYS).map(|i| db.get(key(i)).unwrap()).collect();
            assert_eq!(got, want, "{what}");
        };
        counters(&db);
        db.compact_range(None, None).unwrap();
        counters(&db);
        db.close().unwrap();
        counters(&open());
    }
}

#[test]
fn every_read_path_merges_across_memtable_and_levels() {
    let vfs = Arc::new(MemVfs::new());
    let opts = || policy_options(&builtin_policies()[0], vfs.clone()).with_merge_operator(append());
    let db = Db::open("/db", opts()).unwrap();
    let n = 8;
    let mut want: Vec<Option<Vec<u8>>> = vec![None; n];
    for (i, w) in want.iter_mut().enumerate().filter(|(i, _)| i % 3 != 2) {
        db.put(key(i), "base").unwrap();
        *w = Some(b"base".to_vec());
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap(); // the bases at the bottom
    for step in 0..3 {
        for (i, w) in want.iter_mut().enumerate().filter(|(i, _)| i % 2 == 0) {
            db.merge(key(i), format!("s{step}")).unwrap();
            let mut v = w.take().map_or(Vec::new(), |mut v| {
                v.push(b'.');
                v
            });
            v.extend_from_slice(format!("s{step}").as_bytes());
            *w = Some(v);
        }
        if step < 2 {
            db.flush().unwrap(); // operands in L0 files above the bases
        }
    }
    db.delete(key(4)).unwrap();
    db.merge(key(4), "after").unwrap();
    want[4] = Some(b"after".to_vec());
    check_all(&db, &want, "memtable over files");
    let snap = db.snapshot();
    db.merge(key(0), "later").unwrap();
    assert_eq!(snap.get(key(0)).unwrap(), want[0], "the snapshot sees its own operands");
    let at_snap: Vec<_> = snap.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(at_snap.first().map(|kv| kv.1.clone()), want[0]);
    want[0].as_mut().unwrap().extend_from_slice(b".later");
    drop(snap);
    db.flush().unwrap();
    check_all(&db, &want, "all in files");
    db.compact_range(None, None).unwrap();
    check_all(&db, &want, "compacted");
}

#[test]
fn a_bottom_compaction_turns_operands_into_puts_but_not_under_a_snapshot() {
    let vfs = Arc::new(MemVfs::new());
    let with_op = || Options::default().with_vfs(vfs.clone()).with_merge_operator(append());
    let db = Db::open("/db", with_op()).unwrap();
    db.merge("held", "a").unwrap();
    db.merge("free", "a").unwrap();
    let snap = db.snapshot();
    db.merge("held", "b").unwrap();
    db.merge("free", "b").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(snap.get("held").unwrap(), Some(b"a".to_vec()), "not combined across the snapshot");
    assert_eq!(db.get("held").unwrap(), Some(b"a.b".to_vec()));
    drop(snap);
    // Nothing pins the operands any more: a compaction that rewrites the
    // bottom file (a new operand overlaps it) combines them into puts.
    db.merge("held", "c").unwrap();
    db.merge("free", "c").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let plain = Db::open("/db", Options::default().with_vfs(vfs.clone())).unwrap();
    assert_eq!(plain.get("held").unwrap(), Some(b"a.b.c".to_vec()), "a put now: no operator needed");
    assert_eq!(plain.get("free").unwrap(), Some(b"a.b.c".to_vec()));
}

#[test]
fn operands_without_an_operator_are_a_clear_error_on_every_read_path() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", Options::default().with_vfs(vfs.clone()).with_merge_operator(append())).unwrap();
    db.put("plain", "v").unwrap();
    db.put("counted", "1").unwrap();
    db.merge("counted", "2").unwrap();
    db.flush().unwrap(); // an L0 file: not the bottom of a compaction yet
    db.merge("counted", "3").unwrap();
    db.close().unwrap();

    let db = Db::open("/db", Options::default().with_vfs(vfs.clone())).unwrap();
    assert_eq!(db.get("plain").unwrap(), Some(b"v".to_vec()), "keys without operands still read");
    let invalid = |r: Result<Option<Vec<u8>>, Error>, what: &str| match r {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("counted") && m.contains("merge operator"), "{m}")
        }
        other => panic!("{what}: {other:?}"),
    };
    invalid(db.get("counted"), "get");
    invalid(db.get_pinned("counted").map(|v| v.map(|p| p.to_vec())), "get_pinned");
    let mut answers = db.multi_get(["plain", "counted"]).into_iter();
    assert_eq!(answers.next().unwrap().unwrap(), Some(b"v".to_vec()));
    invalid(answers.next().unwrap(), "multi_get");
    let scanned: Result<Vec<_>, _> = db.iter().collect();
    assert!(matches!(scanned, Err(Error::InvalidArgument(_))), "{scanned:?}");
    let back: Result<Vec<_>, _> = db.iter().rev().collect();
    assert!(matches!(back, Err(Error::InvalidArgument(_))), "{back:?}");
    let mut raw = db.raw_iterator();
    raw.seek_to_first();
    assert!(matches!(raw.status(), Err(Error::InvalidArgument(_))));
}

#[test]
fn merge_without_an_operator_is_refused() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", Options::default().with_vfs(vfs.clone())).unwrap();
    let ks = db.create_keyspace("ks", KeyspaceOptions::default()).unwrap();
    let with_op =
        db.create_keyspace("with-op", KeyspaceOptions::default().with_merge_operator(append())).unwrap();
    db.put("k", "v").unwrap();
    ks.put("k", "v").unwrap();
    let refused = |r: Result<(), Error>, what: &str| match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("Merge operator not set"), "{what}: {m}"),
        other => panic!("{what}: {other:?}"),
    };
    refused(db.merge("k", "x"), "Db::merge");
    refused(db.merge_opt("k", "x", &WriteOptions::default().with_sync(true)), "Db::merge_opt");
    refused(ks.merge("k", "x"), "Keyspace::merge");
    refused(db.merge_cf(&ks, "k", "x"), "Db::merge_cf");
    let mut batch = WriteBatch::new();
    batch.put("other", "v");
    batch.merge_cf(&with_op, "m", "a");
    batch.merge_cf(&ks, "k", "x");
    refused(db.write(batch), "a batch merging into a keyspace without an operator");
    // Nothing of a refused batch is applied, and every read still works.
    let check = |db: &Db| {
        let ks = db.keyspace("ks").unwrap();
        assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
        assert_eq!(ks.get("k").unwrap(), Some(b"v".to_vec()));
        assert_eq!(db.get("other").unwrap(), None);
        assert_eq!(db.keyspace("with-op").unwrap().get("m").unwrap(), None);
        assert_eq!(db.iter().collect::<Result<Vec<_>, _>>().unwrap(), [(b"k".to_vec(), b"v".to_vec())]);
        assert_eq!(ks.iter().collect::<Result<Vec<_>, _>>().unwrap().len(), 1);
    };
    check(&db);
    // A keyspace with an operator takes merges, in a batch too.
    with_op.merge("m", "a").unwrap();
    let mut batch = WriteBatch::new();
    batch.merge_cf(&with_op, "m", "b");
    db.write(batch).unwrap();
    assert_eq!(with_op.get("m").unwrap(), Some(b"a.b".to_vec()));
    db.close().unwrap();
    // Nothing refused reached the WAL.
    let db = Db::open("/db", Options::default().with_vfs(vfs)).unwrap();
    let ks = db.keyspace("ks").unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(ks.get("k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.iter().count(), 1);
}

#[test]
fn a_failed_merge_is_corruption_naming_the_key() {
    let strict = associative_merge_operator("digits", |_key, existing, operand| {
        operand.iter().all(u8::is_ascii_digit).then(|| [existing.unwrap_or_default(), operand].concat())
    });
    let db =
        Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new())).with_merge_operator(strict))
            .unwrap();
    db.merge("n", "12").unwrap();
    db.merge("n", "x").unwrap();
    let err = db.get("n").unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("'n'") && err.to_string().contains("digits"),
        "{err}"
    );
    // A compaction leaves the operands it cannot merge for reads to report.
    db.compact_range(None, None).unwrap();
    assert!(db.get("n").unwrap_err().is_corruption());
    db.put("n", "7").unwrap();
    assert_eq!(db.get("n").unwrap(), Some(b"7".to_vec()), "a put hides the bad operand");
}

#[test]
fn repair_keeps_a_keys_operands_down_to_its_put() {
    let vfs = Arc::new(MemVfs::new());
    let opts = || Options::default().with_vfs(vfs.clone()).with_merge_operator(append());
    let db = Db::open("/db", opts()).unwrap();
    db.put("k", "old").unwrap();
    db.put("k", "base").unwrap();
    db.flush().unwrap();
    db.merge("k", "m1").unwrap();
    db.merge("only", "m").unwrap();
    db.flush().unwrap();
    db.merge("k", "m2").unwrap();
    db.close().unwrap();
    strata::repair("/db", opts()).unwrap();
    let db = Db::open("/db", opts()).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"base.m1.m2".to_vec()));
    assert_eq!(db.get("only").unwrap(), Some(b"m".to_vec()));
}

#[test]
fn ttl_db_refuses_merges() {
    let dir = tempfile::tempdir().unwrap();
    let db = strata::TtlDb::open(dir.path(), Options::default(), std::time::Duration::from_secs(60)).unwrap();
    let mut batch = WriteBatch::new();
    batch.merge("k", "v");
    assert!(matches!(db.write(batch), Err(Error::InvalidArgument(_))));
}

/// Regression: a database using a merge operator could not be loaded by
/// `Options::load_latest` without code that supplies it; the engine's named
/// operators are rebuilt from the name the OPTIONS file records.
#[test]
fn load_latest_rebuilds_the_named_merge_operators() {
    use strata::merge_operators::{Max, StringAppend, UInt64Add};
    use strata::KeyspaceOptions;
    let base = Options::default().with_vfs(Arc::new(MemVfs::new()));
    let db = Db::open("/db", base.clone().with_merge_operator(Arc::new(UInt64Add))).unwrap();
    let tags = db
        .create_keyspace(
            "tags",
            KeyspaceOptions::default().with_merge_operator(Arc::new(StringAppend::new("; "))),
        )
        .unwrap();
    let high =
        db.create_keyspace("high", KeyspaceOptions::default().with_merge_operator(Arc::new(Max))).unwrap();
    db.merge("n", 2u64.to_le_bytes()).unwrap();
    tags.merge("t", "a").unwrap();
    high.merge("h", "b").unwrap();
    db.flush().unwrap();
    db.merge("n", 3u64.to_le_bytes()).unwrap();
    tags.merge("t", "b").unwrap();
    high.merge("h", "a").unwrap();
    db.close().unwrap();
    let loaded = Options::load_latest_with("/db", &base).expect("named operators load by name");
    let db = Db::open("/db", loaded).unwrap();
    db.merge("n", 4u64.to_le_bytes()).unwrap();
    assert_eq!(db.get("n").unwrap(), Some(9u64.to_le_bytes().to_vec()));
    assert_eq!(db.keyspace("tags").unwrap().get("t").unwrap(), Some(b"a; b".to_vec()));
    assert_eq!(db.keyspace("high").unwrap().get("h").unwrap(), Some(b"b".to_vec()));
    let names = strata::merge_operators::recorded_merge_operators("/db", &base).unwrap();
    let want = [("default", "strata.UInt64Add"), ("tags", "strata.StringAppend.; "), ("high", "strata.Max")];
    assert_eq!(names, want.map(|(k, o)| (k.to_string(), o.to_string())));
}

/// Regression: a database whose merge operator is not available (a custom
/// one) could not be read at all where a key had operands. The stand-in
/// returns each key's operands unmerged (over puts, deletes, flushed and
/// compacted data, in gets and scans both ways), and leaves them as they are
/// when a compaction runs under it.
#[test]
fn a_database_whose_merge_operator_is_missing_reads_its_operands_unmerged() {
    use strata::merge_operators::{unmerged_stand_in, MergeOperands};
    use strata::KeyspaceOptions;
    let concat = || associative_merge_operator("my.op", |_k, e, o| Some([e.unwrap_or_default(), o].concat()));
    let base = Options::default().with_vfs(Arc::new(MemVfs::new()));
    let db = Db::open("/db", base.clone().with_merge_operator(concat())).unwrap();
    let ks = db.create_keyspace("ks", KeyspaceOptions::default().with_merge_operator(concat())).unwrap();
    for t in [db.default_keyspace(), ks.clone()] {
        t.put("a", "base").unwrap();
        t.merge("a", "1").unwrap();
        t.put("plain", "v").unwrap();
        t.merge("b", "x").unwrap();
        t.flush().unwrap();
        t.merge("a", "2").unwrap();
        t.merge("b", "y").unwrap();
        t.put("d", "old").unwrap();
        t.delete("d").unwrap();
        t.merge("d", "z").unwrap();
    }
    db.close().unwrap();
    let ops = |base: Option<&str>, ops: &[&str]| MergeOperands {
        base: base.map(|b| b.as_bytes().to_vec()),
        operands: ops.iter().map(|o| o.as_bytes().to_vec()).collect(),
    };
    let want = [
        ("a", Some(ops(Some("base"), &["1", "2"]))),
        ("b", Some(ops(None, &["x", "y"]))),
        ("d", Some(ops(None, &["z"]))),
        ("plain", None),
    ];
    let stand_in = |o: Options| {
        o.with_merge_operator(unmerged_stand_in("my.op"))
            .with_keyspace("ks", KeyspaceOptions::default().with_merge_operator(unmerged_stand_in("my.op")))
    };
    let check = |db: &Db| {
        for t in [db.default_keyspace(), db.keyspace("ks").unwrap()] {
            for (k, w) in &want {
                let v = t.get(k).unwrap().expect("every key has a value");
                assert_eq!(&MergeOperands::decode(&v), w, "{} {k}", t.name());
            }
            assert_eq!(t.get("plain").unwrap(), Some(b"v".to_vec()));
            let fwd: Vec<_> = t.iter().map(|kv| kv.unwrap()).collect();
            let rev: Vec<_> = t.iter().rev().map(|kv| kv.unwrap()).collect();
            assert_eq!(fwd.iter().rev().cloned().collect::<Vec<_>>(), rev);
            let got: Vec<_> = fwd.iter().map(|(k, v)| (k.clone(), MergeOperands::decode(v))).collect();
            let w: Vec<_> = want.iter().map(|(k, w)| (k.as_bytes().to_vec(), w.clone())).collect();
            assert_eq!(got, w, "{}: scan", t.name());
        }
    };
    check(&Db::open_read_only("/db", stand_in(base.clone())).unwrap());
    // A compaction under the stand-in keeps every operand as it is.
    let db = Db::open("/db", stand_in(base.clone())).unwrap();
    for t in [db.default_keyspace(), db.keyspace("ks").unwrap()] {
        t.compact_range(None, None).unwrap();
    }
    check(&db);
    db.close().unwrap();
    let db = Db::open(
        "/db",
        base.with_merge_operator(concat())
            .with_keyspace("ks", KeyspaceOptions::default().with_merge_operator(concat())),
    )
    .unwrap();
    for t in [db.default_keyspace(), db.keyspace("ks").unwrap()] {
        assert_eq!(t.get("a").unwrap(), Some(b"base12".to_vec()));
        assert_eq!(t.get("b").unwrap(), Some(b"xy".to_vec()));
        assert_eq!(t.get("d").unwrap(), Some(b"z".to_vec()));
    }
}
