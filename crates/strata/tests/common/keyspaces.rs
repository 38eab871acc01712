//! The model harness with keyspaces: a random log of writes, batches across
//! keyspaces, reads, snapshot reads, scans, flushes, compactions, reopens and
//! drop/re-create and range deletes (alone and inside batches), over the default keyspace and three keyspaces under
//! different policies, each checked against its own `BTreeMap`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{
    CompactionStyle, Db, Keyspace, KeyspaceOptions, MemVfs, Options, ReadOptions, Snapshot, Vfs, WriteBatch,
};

use super::{model_merge, model_merge_operator, small_options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The keyspaces of the log: name and policy (`default` is leveled).
pub fn keyspace_policies() -> Vec<(&'static str, CompactionStyle)> {
    vec![
        ("default", CompactionStyle::Leveled),
        ("hot", CompactionStyle::Lsbm),
        ("ingest", CompactionStyle::Lwc { max_segments: 3 }),
        ("index", CompactionStyle::Garnering { c: 0.7 }),
    ]
}

fn ks_options(style: &CompactionStyle) -> KeyspaceOptions {
    KeyspaceOptions::from_options(&small_options().with_compaction_style(style.clone()))
        .with_merge_operator(model_merge_operator())
}

fn options(vfs: Arc<dyn Vfs>) -> Options {
    let mut o = small_options().with_vfs(vfs).with_merge_operator(model_merge_operator());
    for (name, style) in keyspace_policies().into_iter().skip(1) {
        o = o.with_keyspace(name, ks_options(&style));
    }
    o
}

fn handles(db: &Db) -> Vec<Keyspace> {
    keyspace_policies().iter().map(|(n, _)| db.keyspace(n).expect("keyspace")).collect()
}

fn key(rng: &mut StdRng, space: u32) -> Vec<u8> {
    format!("k{:05}", rng.gen_range(0..space)).into_bytes()
}

/// A short range `[lo, hi)` of the key space (1 to 20 keys wide).
fn span(rng: &mut StdRng, space: u32) -> (Vec<u8>, Vec<u8>) {
    let lo = rng.gen_range(0..space);
    let hi = lo + rng.gen_range(1..20);
    (format!("k{lo:05}").into_bytes(), format!("k{hi:05}").into_bytes())
}

fn delete_span(model: &mut Model, lo: &[u8], hi: &[u8]) {
    let doomed: Vec<Vec<u8>> = model.range(lo.to_vec()..hi.to_vec()).map(|(k, _)| k.clone()).collect();
    for k in doomed {
        model.remove(&k);
    }
}

fn value(rng: &mut StdRng, i: usize) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    let len = rng.gen_range(0..300);
    while v.len() < len {
        v.push(b'a' + rng.gen_range(0..26u8));
    }
    v
}

fn apply(model: &mut Model, key: &[u8], op: Option<&[u8]>, merge: bool) {
    match (op, merge) {
        (Some(v), false) => {
            model.insert(key.to_vec(), v.to_vec());
        }
        (Some(v), true) => {
            let merged = model_merge(model.get(key).map(Vec::as_slice), v);
            model.insert(key.to_vec(), merged);
        }
        (None, _) => {
            model.remove(key);
        }
    }
}

/// Runs `n` random steps of seed `seed`; panics with "keyspace model mismatch" on a difference.
pub fn run_keyspace_log(seed: u64, n: usize, space: u32) {
    let mut rng = StdRng::seed_from_u64(seed);
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    // The first open creates the keyspaces `Options::with_keyspace` names.
    let mut db = Db::open("/db", options(vfs.clone())).unwrap();
    let mut ks = handles(&db);
    let mut models: Vec<Model> = vec![Model::new(); ks.len()];
    let mut snaps: Vec<(Snapshot, Vec<Model>)> = Vec::new();
    let fail =
        |i: usize, what: String| -> ! { panic!("keyspace model mismatch: seed {seed} op {i}: {what}") };
    for i in 0..n {
        let k = rng.gen_range(0..ks.len());
        match rng.gen_range(0..100) {
            0..=26 => {
                let (key, v) = (key(&mut rng, space), value(&mut rng, i));
                ks[k].put(&key, &v).unwrap();
                apply(&mut models[k], &key, Some(&v), false);
            }
            27..=29 => {
                let (lo, hi) = span(&mut rng, space);
                ks[k].delete_range(&lo, &hi).unwrap();
                delete_span(&mut models[k], &lo, &hi);
            }
            30..=37 => {
                let (key, v) = (key(&mut rng, space), format!("+{i}").into_bytes());
                ks[k].merge(&key, &v).unwrap();
                apply(&mut models[k], &key, Some(&v), true);
            }
            38..=45 => {
                let key = key(&mut rng, space);
                ks[k].delete(&key).unwrap();
                apply(&mut models[k], &key, None, false);
            }
            46..=57 => {
                // A batch across keyspaces, some ops through the `_cf` forms.
                let mut batch = WriteBatch::new();
                let mut pending = Vec::new();
                let mut range_ops = Vec::new();
                for _ in 0..rng.gen_range(1..10) {
                    let t = rng.gen_range(0..ks.len());
                    let key = key(&mut rng, space);
                    match rng.gen_range(0..5) {
                        0 => {
                            batch.delete_cf(&ks[t], &key);
                            pending.push((t, key, None, false));
                        }
                        4 => {
                            // A range delete: its end rides in the value slot.
                            let (lo, hi) = span(&mut rng, space);
                            batch.delete_range_cf(&ks[t], &lo, &hi);
                            pending.push((t, lo, Some(hi), true));
                            range_ops.push(pending.len() - 1);
                        }
                        1 => {
                            let v = format!("+b{i}").into_bytes();
                            batch.merge_cf(&ks[t], &key, &v);
                            pending.push((t, key, Some(v), true));
                        }
                        _ => {
                            let v = value(&mut rng, i);
                            batch.put_cf(&ks[t], &key, &v);
                            pending.push((t, key, Some(v), false));
                        }
                    }
                }
                db.write(batch).unwrap();
                for (j, (t, key, v, merge)) in pending.into_iter().enumerate() {
                    match (range_ops.contains(&j), v) {
                        (true, Some(hi)) => delete_span(&mut models[t], &key, &hi),
                        (_, v) => apply(&mut models[t], &key, v.as_deref(), merge),
                    }
                }
            }
            58..=72 => {
                let key = key(&mut rng, space);
                let got = ks[k].get(&key).unwrap();
                if got.as_ref() != models[k].get(&key) {
                    fail(i, format!("{} get {:?}: {got:?}", ks[k].name(), String::from_utf8_lossy(&key)));
                }
            }
            73..=77 => {
                let keys: Vec<Vec<u8>> = (0..rng.gen_range(1..8)).map(|_| key(&mut rng, space)).collect();
                let got = ks[k].multi_get(&keys);
                for (key, g) in keys.iter().zip(got) {
                    if g.unwrap().as_ref() != models[k].get(key) {
                        fail(i, format!("{} multi_get {:?}", ks[k].name(), String::from_utf8_lossy(key)));
                    }
                }
            }
            78..=82 => {
                let lo = key(&mut rng, space);
                let limit = rng.gen_range(1..40);
                let got: Vec<_> = ks[k].range(lo.clone()..).take(limit).map(Result::unwrap).collect();
                let want: Vec<_> =
                    models[k].range(lo..).take(limit).map(|(a, b)| (a.clone(), b.clone())).collect();
                if got != want {
                    fail(i, format!("{} scan", ks[k].name()));
                }
            }
            83..=85 => {
                if snaps.len() < 4 {
                    snaps.push((db.snapshot(), models.clone()));
                }
            }
            86..=88 if !snaps.is_empty() => {
                let s = rng.gen_range(0..snaps.len());
                let (snap, at) = &snaps[s];
                let ro = ReadOptions::default().with_snapshot(snap);
                let key = key(&mut rng, space);
                let got = ks[k].get_opt(&key, &ro).unwrap();
                if got.as_ref() != at[k].get(&key) {
                    fail(i, format!("{} snapshot get {:?}", ks[k].name(), String::from_utf8_lossy(&key)));
                }
                let n = ks[k].iter_opt(&ro).count();
                if n != at[k].len() {
                    fail(i, format!("{} snapshot scan: {n} keys, model {}", ks[k].name(), at[k].len()));
                }
                if rng.gen_bool(0.3) {
                    snaps.swap_remove(s);
                }
            }
            89..=92 => ks[k].flush().unwrap(),
            93..=94 => ks[k].compact_range(None, None).unwrap(),
            95..=96 if k > 0 && snaps.is_empty() => {
                // Drop and re-create: the keyspace starts empty.
                let name = ks[k].name().to_string();
                db.drop_keyspace(&name).unwrap();
                let style = &keyspace_policies()[k].1;
                ks[k] = db.create_keyspace(&name, ks_options(style)).unwrap();
                models[k].clear();
            }
            _ => {
                // Reopen: without a close half the time (the WAL is replayed).
                snaps.clear();
                drop(ks);
                if rng.gen_bool(0.5) {
                    db.close().unwrap();
                } else {
                    drop(db);
                }
                // Every keyspace through a read-only open; then, at times, a
                // repair, which must keep exactly what open would read.
                let ro = Db::open_read_only("/db", options(vfs.clone())).unwrap();
                for (h, m) in handles(&ro).iter().zip(&models) {
                    let got: Vec<_> = h.iter().map(Result::unwrap).collect();
                    if !got.iter().map(|(a, b)| (a, b)).eq(m.iter()) {
                        fail(
                            i,
                            format!("{} read-only scan: {} keys, model {}", h.name(), got.len(), m.len()),
                        );
                    }
                }
                drop(ro);
                if rng.gen_bool(0.3) {
                    strata::repair("/db", options(vfs.clone()))
                        .unwrap_or_else(|e| fail(i, format!("repair: {e}")));
                }
                db = Db::open("/db", options(vfs.clone())).unwrap();
                ks = handles(&db);
            }
        }
    }
    for (h, m) in ks.iter().zip(&models) {
        let got: Vec<_> = h.iter().map(Result::unwrap).collect();
        let want: Vec<_> = m.iter().map(|(a, b)| (a.clone(), b.clone())).collect();
        if got != want {
            fail(n, format!("{} final scan: {} keys, model {}", h.name(), got.len(), want.len()));
        }
    }
}
