//! `multi_get` answers exactly what `get` answers, key by key, under every
//! policy and the option sets that change how a point read goes (row cache,
//! compaction buffers), and counts what `get` counts; it reads a block once
//! for the keys that share it; an error is the answer of the keys that needed
//! the damaged block only.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::builtin_policies;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs};
use strata::{CompactionStyle, Db, MemVfs, Options, ReadOptions, Snapshot, Stats, Vfs};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keys written; reads also ask for keys past it (never written).
const N: u32 = 3000;

fn k(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn opts(style: CompactionStyle) -> Options {
    Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_compaction_style(style)
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(16 << 10)
        .with_max_bytes_for_level_base(48 << 10)
        .with_max_bytes_for_level_multiplier(4.0)
        .with_num_levels(5)
        .with_level0_file_num_compaction_trigger(2)
        .with_block_size(512)
        .with_block_cache_capacity(4 << 20)
        .with_buffer_trim_threshold(0.0)
}

/// Updates and deletes over `N` keys with reads of a hot range between them
/// (so LSbM builds and uses its buffer), in rounds; the model and a snapshot
/// with its model after the first round.
fn load(db: &Db, rng: &mut StdRng) -> (Model, Snapshot, Model) {
    let mut model = Model::new();
    let mut snap = None;
    for round in 0..4u32 {
        for i in 0..2500u32 {
            let key = k(rng.gen_range(0..N));
            if rng.gen_bool(0.1) {
                db.delete(&key).unwrap();
                model.remove(&key);
            } else {
                let v = format!("r{round}-{i}-{}", "v".repeat(rng.gen_range(0..60))).into_bytes();
                db.put(&key, &v).unwrap();
                model.insert(key, v);
            }
            let hot = k(rng.gen_range(0..N / 10));
            assert_eq!(db.get(&hot).unwrap().as_ref(), model.get(&hot));
        }
        if round == 0 {
            snap = Some((db.snapshot(), model.clone()));
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    // One table in L0 over the deeper levels (under the compaction trigger),
    // and a memtable over both. Both passes fit one memtable: with larger
    // passes, when L0 already held a table the second pass filled the
    // memtable, its flush made two and the L0 compaction emptied L0 (flaky).
    for i in 0..2 {
        for key in (i..N).step_by(46).map(k) {
            let v = format!("last-{i}").into_bytes();
            db.put(&key, &v).unwrap();
            model.insert(key, v);
        }
        if i == 0 && db.stats().levels[0].files == 0 {
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
        }
    }
    let (s, m) = snap.unwrap();
    (model, s, m)
}

/// A batch: random keys (some never written), some repeated, in random order.
fn batch(rng: &mut StdRng) -> Vec<Vec<u8>> {
    let mut b: Vec<Vec<u8>> = (0..rng.gen_range(1..80)).map(|_| k(rng.gen_range(0..N + N / 10))).collect();
    for _ in 0..rng.gen_range(0..4) {
        let dup = b[rng.gen_range(0..b.len())].clone();
        b.insert(rng.gen_range(0..=b.len()), dup);
    }
    b
}

fn values(got: Vec<strata::Result<Option<Vec<u8>>>>) -> Vec<Option<Vec<u8>>> {
    got.into_iter().map(|r| r.unwrap()).collect()
}

/// Every form of `multi_get` against `get` and the models, on random batches.
fn check(db: &Db, model: &Model, snap: &Snapshot, snap_model: &Model, rng: &mut StdRng, label: &str) {
    let no_buffer = ReadOptions::default().with_use_compaction_buffer(false);
    let dispatch = ReadOptions::default().with_buffer_dispatch(true);
    for _ in 0..40 {
        let keys = batch(rng);
        let want: Vec<Option<Vec<u8>>> = keys.iter().map(|key| model.get(key).cloned()).collect();
        let by_get: Vec<_> = keys.iter().map(|key| db.get(key).unwrap()).collect();
        assert_eq!(by_get, want, "{label}: get against the model");
        assert_eq!(values(db.multi_get(&keys)), want, "{label}: {keys:?}");
        assert_eq!(values(db.multi_get_opt(&keys, &no_buffer)), want, "{label}: without the buffer");
        assert_eq!(values(db.multi_get_opt(&keys, &dispatch)), want, "{label}: dispatched to the buffer");
        let pinned: Vec<_> = db.multi_get_pinned(&keys).into_iter().map(|r| r.unwrap()).collect();
        assert!(pinned.iter().map(|v| v.as_deref()).eq(want.iter().map(|v| v.as_deref())), "{label}: pinned");
        for (key, w) in keys.iter().zip(&want) {
            assert_eq!(db.get_pinned(key).unwrap().as_deref(), w.as_deref(), "{label}: get_pinned");
        }
        let old: Vec<Option<Vec<u8>>> = keys.iter().map(|key| snap_model.get(key).cloned()).collect();
        assert_eq!(values(snap.multi_get(&keys)), old, "{label}: at the snapshot");
        let ro = ReadOptions::default().with_snapshot(snap);
        assert_eq!(values(db.multi_get_opt(&keys, &ro)), old, "{label}: with a snapshot in the options");
        let old_pinned: Vec<_> = snap.multi_get_pinned(&keys).into_iter().map(|r| r.unwrap()).collect();
        assert!(old_pinned.iter().map(|v| v.as_deref()).eq(old.iter().map(|v| v.as_deref())), "{label}");
        for (key, w) in keys.iter().zip(&old) {
            assert_eq!(
                snap.get_pinned(key).unwrap().as_deref(),
                w.as_deref(),
                "{label}: snapshot get_pinned"
            );
        }
    }
}

/// The counters a point read moves that must not tell `get` from `multi_get`.
fn read_counters(s: &Stats) -> Vec<u64> {
    let mut v = vec![
        s.gets,
        s.get_table_probes,
        s.get_segment_probes,
        s.buffer_hits,
        s.buffer_uncached,
        s.row_cache.hits,
        s.row_cache.misses,
    ];
    for l in &s.levels {
        v.extend([l.filter_probes, l.filter_positives, l.filter_false_positives]);
    }
    v
}

fn diff(after: &[u64], before: &[u64]) -> Vec<u64> {
    after.iter().zip(before).map(|(a, b)| a - b).collect()
}

#[test]
fn multi_get_answers_and_counts_as_get_does_under_every_policy() {
    let mut configs: Vec<(String, Options)> = Vec::new();
    for style in builtin_policies() {
        configs.push((format!("{style:?}"), opts(style.clone())));
        configs.push((format!("{style:?} + row cache"), opts(style).with_row_cache(1 << 20)));
    }
    configs.push((
        "Lsbm + buffer read misses".into(),
        opts(CompactionStyle::Lsbm).with_buffer_read_misses(true),
    ));
    for (i, (label, o)) in configs.into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(i as u64);
        let db = Db::open("/db", o).unwrap();
        let (model, snap, snap_model) = load(&db, &mut rng);
        let s = db.stats();
        assert!(s.memtable_bytes > 0, "{label}: keys in the memtable");
        assert!(s.levels.iter().skip(1).any(|l| l.files > 0), "{label}: keys below L0: {s}");
        // Policies that merge L0 early (bLSM) may leave it empty.
        assert!(s.levels.iter().filter(|l| l.files > 0).count() >= 2, "{label}: two levels of tables: {s}");
        assert!(s.levels[0].files > 0 || !label.starts_with("leveled"), "{label}: keys in L0: {s}");
        if label.starts_with("Lsbm") || label.starts_with("Dlsm") {
            assert!(s.levels.iter().any(|l| l.buffer_files > 0), "{label}: no compaction buffer: {s}");
        }
        check(&db, &model, &snap, &snap_model, &mut rng, &label);

        // The same keys through get (the second pass, so caches are as warm
        // as they will be, and large enough to evict nothing: a batch visits
        // files in another order than single gets) and then through one
        // multi_get move the counters alike.
        let keys: Vec<Vec<u8>> = (0..N + 100).step_by(3).map(k).collect();
        for key in &keys {
            db.get(key).unwrap();
        }
        let before = read_counters(&db.stats());
        let by_get: Vec<_> = keys.iter().map(|key| db.get(key).unwrap()).collect();
        let mid = read_counters(&db.stats());
        let mut shuffled: Vec<(usize, &Vec<u8>)> = keys.iter().enumerate().collect();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.gen_range(0..=i));
        }
        let got = values(db.multi_get(shuffled.iter().map(|(_, key)| key)));
        let after = read_counters(&db.stats());
        for ((i, _), v) in shuffled.iter().zip(got) {
            assert_eq!(v, by_get[*i], "{label}");
        }
        assert_eq!(diff(&after, &mid), diff(&mid, &before), "{label}: counters of multi_get vs get");
        if label.starts_with("Dlsm") {
            assert!(after[3] > mid[3], "{label}: the batch read through the buffer");
        }
    }
}

#[test]
fn duplicates_empty_batches_and_stats() {
    let db = Db::open("/db", opts(CompactionStyle::Leveled)).unwrap();
    db.put(k(1), b"one").unwrap();
    db.flush().unwrap();
    db.put(k(2), b"two").unwrap();
    db.delete(k(3)).unwrap();
    let before = db.stats();
    assert!(db.multi_get(Vec::<Vec<u8>>::new()).is_empty());
    let got = values(db.multi_get([k(2), k(1), k(3), k(1), k(9), k(2), k(1)]));
    let one = Some(b"one".to_vec());
    let two = Some(b"two".to_vec());
    assert_eq!(got, [two.clone(), one.clone(), None, one.clone(), None, two, one]);
    let s = db.stats();
    assert_eq!(s.multi_gets - before.multi_gets, 2, "the empty batch is a call too");
    assert_eq!(s.multi_get_keys - before.multi_get_keys, 7);
    assert_eq!(s.gets - before.gets, 4, "four distinct keys");
    assert_eq!(s.get_table_probes - before.get_table_probes, 1, "only key 1 reaches its table");
    assert!(s.to_string().contains("multi-gets 2, 7 keys"), "{s}");
}

/// Keys `0..n` with 100-byte values in one table of 4 KiB blocks, read with
/// an empty block cache.
fn one_table(n: u32, vfs: Arc<dyn Vfs>) -> Db {
    let o = Options::default()
        .with_vfs(vfs)
        .with_compression(strata::CompressionType::None)
        .with_block_cache_capacity(4 << 20)
        .with_disable_auto_compactions(true);
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..n {
        db.put(k(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    Db::open("/db", o).unwrap()
}

fn block_lookups(db: &Db) -> u64 {
    let c = db.stats().cache;
    c.hits + c.misses
}

#[test]
fn keys_in_one_block_read_it_once() {
    let db = one_table(2000, Arc::new(MemVfs::new()));
    // 200 neighbouring keys, about 35 to a 4 KiB block, in scrambled order.
    let keys: Vec<Vec<u8>> = (0..200u32).map(|i| k(500 + (i * 37) % 200)).collect();
    let before = block_lookups(&db);
    let got = db.multi_get(&keys);
    let batched = block_lookups(&db) - before;
    assert!(got.iter().all(|r| matches!(r, Ok(Some(v)) if v.len() == 100)));
    assert!((5..=8).contains(&batched), "{batched} block lookups for 200 keys in about 6 blocks");
    let before = block_lookups(&db);
    for key in &keys {
        db.get(key).unwrap();
    }
    assert_eq!(block_lookups(&db) - before, 200, "get looks every key's block up");
    // The values of one block point into the same cached block.
    let pinned = db.multi_get_pinned([k(500), k(501)]);
    let (a, b) =
        (pinned[0].as_ref().unwrap().as_ref().unwrap(), pinned[1].as_ref().unwrap().as_ref().unwrap());
    assert!(a.is_pinned() && b.is_pinned());
    assert!((b.as_ptr() as usize).wrapping_sub(a.as_ptr() as usize) < 4096, "neighbours in one block");
    let again = db.get_pinned(k(500)).unwrap().unwrap();
    assert_eq!(again.as_ptr(), a.as_ptr(), "the cached block's bytes, not a copy");
    let copy = db.get(k(500)).unwrap().unwrap();
    assert_ne!(copy.as_ptr(), a.as_ptr(), "get copies");
}

/// Checks one batch read with some blocks unreadable: every answer is right or
/// an error, the errors are the keys of `bad` (a set of whole blocks: keys
/// `lo..hi`), and the rest are right.
fn only_the_damaged_block_fails(
    got: Vec<strata::Result<Option<Vec<u8>>>>,
    keys: &[u32],
    bad: std::ops::Range<u32>,
) {
    assert_eq!(got.len(), keys.len());
    let mut errors = 0;
    for (&i, r) in keys.iter().zip(got) {
        match r {
            Ok(v) => {
                assert!(!bad.contains(&i), "key {i} of the damaged block read without an error");
                assert_eq!(v, (i < 2000).then(|| vec![b'v'; 100]), "key {i}");
            }
            Err(e) => {
                assert!(bad.contains(&i), "key {i} failed outside the damaged block: {e}");
                errors += 1;
            }
        }
    }
    assert!(errors > 0, "no key met the damage");
}

/// The keys (a range) whose single gets fail.
fn failing_keys(db: &Db, keys: impl Iterator<Item = u32>) -> std::ops::Range<u32> {
    let failing: Vec<u32> = keys.filter(|&i| db.get(k(i)).is_err()).collect();
    assert!(!failing.is_empty());
    let range = failing[0]..failing[failing.len() - 1] + 1;
    assert_eq!(failing.len(), range.len(), "one block: contiguous keys");
    range
}

#[test]
fn a_damaged_block_fails_only_the_keys_in_it() {
    let vfs = Arc::new(MemVfs::new());
    let db = one_table(2000, vfs.clone());
    let table =
        vfs.list_dir(std::path::Path::new("/db")).unwrap().into_iter().find(|n| n.ends_with(".sst")).unwrap();
    // A byte inside the third data block (4 KiB blocks from offset 0).
    vfs.corrupt_byte(&std::path::Path::new("/db").join(table), 2 * 4096 + 1000, 0x40).unwrap();
    let bad = failing_keys(&db, 0..200);
    assert!(db.get(k(bad.start)).unwrap_err().is_corruption());
    let keys: Vec<u32> = (0..300).rev().chain([5000, bad.start, 150]).collect();
    let got = db.multi_get(keys.iter().map(|&i| k(i)));
    only_the_damaged_block_fails(got, &keys, bad);
}

#[test]
fn a_failed_read_fails_only_the_keys_of_its_block() {
    let faults = Arc::new(FaultVfs::new(Arc::new(MemVfs::new()), FaultConfig::new(7)));
    let db = one_table(2000, faults.clone());
    // The table is open and blocks 0 and 2 are cached, so the batch's first
    // read from the file is block 1's.
    db.get(k(0)).unwrap();
    db.get(k(80)).unwrap();
    faults.set_enabled(true);
    faults.fail_next(FaultOp::ReadAt);
    let keys: Vec<u32> = (0..120).collect();
    let got = db.multi_get(keys.iter().map(|&i| k(i)));
    assert_eq!(faults.injected(FaultOp::ReadAt), 1);
    faults.set_enabled(false);
    let cached = |i: u32| db.get(k(i)).is_ok();
    assert!(cached(0));
    let errors: Vec<u32> = keys.iter().zip(&got).filter(|(_, r)| r.is_err()).map(|(&i, _)| i).collect();
    assert!(!errors.is_empty() && errors.iter().all(|&i| i > 0 && i < 80), "{errors:?}");
    let bad = errors[0]..errors[errors.len() - 1] + 1;
    assert_eq!(bad.len(), errors.len());
    only_the_damaged_block_fails(got, &keys, bad);
}
