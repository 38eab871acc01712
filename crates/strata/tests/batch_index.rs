//! `WriteBatchWithIndex` against the database it predicts: the database's
//! contents are replayed into a second database and the batch written there;
//! every read through the batch (get from the batch and the database, the
//! iterator with base from both ends, at the latest state and at a snapshot)
//! must equal that database's answer. Puts, deletes, merges and range deletes,
//! in the default keyspace and another.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::merge_operators::StringAppend;
use strata::{
    BatchLookup, Db, Error, Keyspace, KeyspaceOptions, MemVfs, Options, ReadOptions, WriteBatch,
    WriteBatchWithIndex,
};

const KEYS: u32 = 30;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

fn open(path: &str) -> (Db, Keyspace) {
    let append = Arc::new(StringAppend::new(","));
    let opts = Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_write_buffer_size(4 << 10)
        .with_merge_operator(append.clone());
    let db = Db::open(path, opts).unwrap();
    let ks = db.create_keyspace("ks", KeyspaceOptions::default().with_merge_operator(append)).unwrap();
    (db, ks)
}

/// The ops both batch types take, so one generator fills either.
trait Ops {
    fn put(&mut self, ks: Option<&Keyspace>, k: &[u8], v: &[u8]);
    fn delete(&mut self, ks: Option<&Keyspace>, k: &[u8]);
    fn merge(&mut self, ks: Option<&Keyspace>, k: &[u8], v: &[u8]);
    fn delete_range(&mut self, ks: Option<&Keyspace>, start: &[u8], end: &[u8]);
}

macro_rules! ops_for {
    ($t:ty) => {
        impl Ops for $t {
            fn put(&mut self, ks: Option<&Keyspace>, k: &[u8], v: &[u8]) {
                match ks {
                    Some(ks) => self.put_cf(ks, k, v),
                    None => <$t>::put(self, k, v),
                }
            }
            fn delete(&mut self, ks: Option<&Keyspace>, k: &[u8]) {
                match ks {
                    Some(ks) => self.delete_cf(ks, k),
                    None => <$t>::delete(self, k),
                }
            }
            fn merge(&mut self, ks: Option<&Keyspace>, k: &[u8], v: &[u8]) {
                match ks {
                    Some(ks) => self.merge_cf(ks, k, v),
                    None => <$t>::merge(self, k, v),
                }
            }
            fn delete_range(&mut self, ks: Option<&Keyspace>, start: &[u8], end: &[u8]) {
                match ks {
                    Some(ks) => self.delete_range_cf(ks, start, end),
                    None => <$t>::delete_range(self, start, end),
                }
            }
        }
    };
}
ops_for!(WriteBatch);
ops_for!(WriteBatchWithIndex);

/// One op drawn from `seed` on keyspace `ks` (None: the default keyspace):
/// the same seed gives the same op in any batch.
fn random_op(seed: u64, wb: &mut impl Ops, ks: Option<&Keyspace>, tag: &str) {
    let rng = &mut StdRng::seed_from_u64(seed);
    let k = key(rng.gen_range(0..KEYS));
    let v = format!("{tag}{}", rng.gen_range(0..100)).into_bytes();
    match rng.gen_range(0..10) {
        0..=3 => wb.put(ks, &k, &v),
        4..=5 => wb.delete(ks, &k),
        6..=8 => wb.merge(ks, &k, &v),
        _ => wb.delete_range(ks, &k, &key(rng.gen_range(0..KEYS + 2))),
    }
}

/// `n` random ops, the same into both batches: each op on the default
/// keyspace or on the batch's keyspace `ks`.
fn twin_ops(
    rng: &mut StdRng,
    n: usize,
    a: (&mut impl Ops, &Keyspace),
    b: (&mut impl Ops, &Keyspace),
    tag: &str,
) {
    for _ in 0..n {
        let on_ks = rng.gen_bool(0.5);
        let seed = rng.gen::<u64>();
        random_op(seed, a.0, on_ks.then_some(a.1), tag);
        random_op(seed, b.0, on_ks.then_some(b.1), tag);
    }
}

fn random_range(rng: &mut StdRng) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let mut b = || match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng.gen_range(0..KEYS + 1))),
        _ => Bound::Excluded(key(rng.gen_range(0..KEYS + 1))),
    };
    (b(), b())
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// The batch's iterator taken from random ends against `want`'s.
fn check_mixed_ends(
    mut it: impl DoubleEndedIterator<Item = strata::Result<(Vec<u8>, Vec<u8>)>>,
    want: &Entries,
    rng: &mut StdRng,
) {
    let mut want: VecDeque<_> = want.iter().cloned().collect();
    loop {
        let front = rng.gen_bool(0.5);
        let (got, exp) =
            if front { (it.next(), want.pop_front()) } else { (it.next_back(), want.pop_back()) };
        assert_eq!(got.transpose().unwrap(), exp, "front {front}");
        if exp.is_none() {
            break;
        }
    }
}

#[test]
fn reads_through_an_indexed_batch_equal_the_database_after_the_write() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (db, ks) = open("/db");
        let (expected, expected_ks) = open("/expected");
        // The database: the same ops into both; a snapshot part way for one.
        let mut history = Vec::new();
        let snap_at = rng.gen_range(0..6);
        let mut snapshot = None;
        for round in 0..6 {
            if round == snap_at {
                snapshot = Some((db.snapshot(), history.len()));
            }
            let mut wb = WriteBatch::new();
            let mut twin = WriteBatch::new();
            let n = rng.gen_range(1..15);
            twin_ops(&mut rng, n, (&mut wb, &ks), (&mut twin, &expected_ks), "d");
            db.write(wb).unwrap();
            history.push(twin);
            if rng.gen_bool(0.3) {
                db.flush().unwrap();
            }
        }
        let at_snapshot = rng.gen_bool(0.3);
        let ro = match (&snapshot, at_snapshot) {
            (Some((s, _)), true) => ReadOptions::default().with_snapshot(s),
            _ => ReadOptions::default(),
        };
        let replayed =
            if at_snapshot { snapshot.as_ref().map_or(history.len(), |s| s.1) } else { history.len() };
        for b in &history[..replayed] {
            expected.write(b.clone()).unwrap();
        }
        // The batch, twice: indexed over `db`, plain over `expected`.
        let mut wb = WriteBatchWithIndex::new();
        let mut plain = WriteBatch::new();
        let n = rng.gen_range(0..25);
        twin_ops(&mut rng, n, (&mut wb, &ks), (&mut plain, &expected_ks), "b");
        // Each keyspace's values below the batch, for the keys it does not touch.
        let below =
            |k: &Keyspace| -> Vec<Option<Vec<u8>>> { (0..=KEYS).map(|i| k.get(key(i)).unwrap()).collect() };
        let before = [below(&expected.default_keyspace()), below(&expected_ks)];
        expected.write(plain).unwrap();
        for (n, (mine, theirs)) in
            [(db.default_keyspace(), expected.default_keyspace()), (ks.clone(), expected_ks.clone())]
                .iter()
                .enumerate()
        {
            for i in 0..KEYS + 1 {
                let k = key(i);
                let want = theirs.get(&k).unwrap();
                let got = wb.get_from_batch_and_db(mine, &k, &ro).unwrap();
                assert_eq!(got, want, "seed {seed} {} {k:?}", mine.name());
                match wb.get_from_batch(mine, &k).unwrap() {
                    BatchLookup::Found(v) => assert_eq!(Some(v), want, "seed {seed}"),
                    BatchLookup::Deleted => assert_eq!(want, None, "seed {seed}"),
                    BatchLookup::NotFound => {
                        assert_eq!(want, before[n][i as usize], "seed {seed}: untouched {k:?}")
                    }
                    BatchLookup::MergeInProgress => {}
                }
            }
            for _ in 0..4 {
                let range = random_range(&mut rng);
                // Now and then the read options' iterate bounds narrow the range too.
                let (mut ro, mut bounds) = (ro.clone(), ReadOptions::default());
                if rng.gen_bool(0.3) {
                    let k = key(rng.gen_range(0..KEYS));
                    (ro, bounds) = (ro.with_iterate_lower_bound(&k), bounds.with_iterate_lower_bound(&k));
                }
                if rng.gen_bool(0.3) {
                    let k = key(rng.gen_range(0..KEYS + 1));
                    (ro, bounds) = (ro.with_iterate_upper_bound(&k), bounds.with_iterate_upper_bound(&k));
                }
                let want: Entries =
                    theirs.range_opt(range.clone(), &bounds).collect::<Result<_, _>>().unwrap();
                let got: Entries =
                    wb.iter_with_base(mine, range.clone(), &ro).collect::<Result<_, _>>().unwrap();
                assert_eq!(got, want, "seed {seed} {} {range:?}", mine.name());
                let mut back: Entries =
                    wb.iter_with_base(mine, range.clone(), &ro).rev().collect::<Result<_, _>>().unwrap();
                back.reverse();
                assert_eq!(back, want, "seed {seed} {} {range:?} reversed", mine.name());
                check_mixed_ends(wb.iter_with_base(mine, range.clone(), &ro), &want, &mut rng);
            }
        }
    }
}

#[test]
fn merges_in_a_batch_without_an_operator_are_an_error_not_a_value() {
    let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new()))).unwrap();
    let ks = db.default_keyspace();
    let mut wb = WriteBatchWithIndex::new();
    wb.put("a", "1");
    wb.merge("a", "2");
    assert!(matches!(wb.get_from_batch(&ks, "a"), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        wb.get_from_batch_and_db(&ks, "a", &ReadOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    let mut it = wb.iter_with_base::<&[u8], _>(&ks, .., &ReadOptions::default());
    assert!(matches!(it.next(), Some(Err(Error::InvalidArgument(_)))));
    assert!(it.next().is_none(), "the iterator stops after an error");
}

#[test]
fn a_keyspace_handle_of_another_database_is_refused() {
    let (db, ks) = open("/db");
    let (other, other_ks) = open("/other");
    assert_eq!(ks.id(), other_ks.id(), "ids repeat across databases");
    let mut wb = WriteBatchWithIndex::new();
    wb.put_cf(&ks, "a", "1");
    let ro = ReadOptions::default();
    assert!(matches!(wb.get_from_batch(&other_ks, "a"), Err(Error::InvalidArgument(_))));
    assert!(matches!(wb.get_from_batch_and_db(&other_ks, "a", &ro), Err(Error::InvalidArgument(_))));
    let mut it = wb.iter_with_base(&other_ks, "a".., &ro);
    assert!(matches!(it.next(), Some(Err(Error::InvalidArgument(_)))));
    assert_eq!(wb.get_from_batch_and_db(&ks, "a", &ro).unwrap(), Some(b"1".to_vec()));
    drop((db, other));
}
