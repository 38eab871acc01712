//! Op-sequence fuzzer: the input becomes option choices and a sequence of
//! puts, deletes, batches, gets, scans, flushes, compactions and reopens, run
//! on an in-memory database under every built-in compaction policy with tiny
//! sizes (so flushes and compactions happen within a few operations) and
//! checked against a `BTreeMap` after every read and at the end.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use strata::{CompactionStyle, CompressionType, Db, MemVfs, Options, WriteBatch};

use super::input::Input;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Operations per input at most, so one input stays fast.
const MAX_OPS: usize = 400;

/// The fuzz body.
pub fn run(data: &[u8]) {
    for name in CompactionStyle::builtin_names() {
        run_policy(data, name);
    }
}

/// Runs the input's operations under one policy.
pub fn run_policy(data: &[u8], policy: &str) {
    run_checked(data, policy, false);
}

/// As [`run_policy`]; with `plant` the model gets one write the database never
/// saw, so a test can prove the final check catches a divergence.
pub fn run_checked(data: &[u8], policy: &str, plant: bool) {
    let mut input = Input::new(data);
    let opts = options(&mut input, policy);
    let dir = Path::new("/db");
    let mut db = Some(Db::open(dir, opts.clone()).expect("open"));
    let mut model = Model::new();
    let mut counter = 0u64;
    for step in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        let d = db.as_ref().expect("open db");
        let op = input.u8() % 16;
        match op {
            0..=4 => {
                let (k, v) = (key(&mut input), value(&mut input, &mut counter));
                d.put(&k, &v).expect("put");
                model.insert(k, v);
            }
            5 | 6 => {
                let k = key(&mut input);
                d.delete(&k).expect("delete");
                model.remove(&k);
            }
            7 => {
                let mut b = WriteBatch::new();
                let mut staged = Vec::new();
                for _ in 0..1 + input.below(8) {
                    let k = key(&mut input);
                    if input.chance(64) {
                        b.delete(&k);
                        staged.push((k, None));
                    } else {
                        let v = value(&mut input, &mut counter);
                        b.put(&k, &v);
                        staged.push((k, Some(v)));
                    }
                }
                d.write(b).expect("write batch");
                for (k, v) in staged {
                    match v {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                }
            }
            8 | 9 => {
                let k = key(&mut input);
                assert_eq!(d.get(&k).expect("get"), model.get(&k).cloned(), "step {step}: get({k:?})");
            }
            10 | 11 => scan(d, &model, &mut input, step),
            12 => d.flush().expect("flush"),
            13 => {
                let lo = input.chance(128).then(|| key(&mut input));
                let hi = input.chance(128).then(|| key(&mut input));
                d.compact_range(lo.as_deref(), hi.as_deref()).expect("compact_range");
            }
            14 => {
                db.take().expect("open db").close().expect("close");
                db = Some(Db::open(dir, opts.clone()).expect("reopen"));
            }
            _ => {
                // Drop without close (a clean process exit without `close`).
                drop(db.take());
                db = Some(Db::open(dir, opts.clone()).expect("reopen after drop"));
            }
        }
    }
    if plant {
        model.insert(b"planted".to_vec(), b"never written".to_vec());
    }
    let d = db.expect("open db");
    let all: Vec<_> = d.iter().collect::<Result<_, _>>().expect("final scan");
    assert!(all.iter().map(|(k, v)| (k, v)).eq(model.iter()), "final scan differs from the model");
    let rev: Vec<_> = d.iter().rev().collect::<Result<_, _>>().expect("final reverse scan");
    assert!(rev.iter().map(|(k, v)| (k, v)).eq(model.iter().rev()), "final reverse scan differs");
    d.close().expect("close");
}

/// Tiny sizes so that a few hundred small writes flush and compact.
fn options(input: &mut Input, policy: &str) -> Options {
    let compression = match input.u8() % 4 {
        0 | 1 => CompressionType::None,
        2 => CompressionType::Lz4,
        _ => CompressionType::Zstd(1),
    };
    let l0 = 1 + input.below(4);
    Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_compaction_style(CompactionStyle::from_name(policy).expect("builtin policy"))
        .with_write_buffer_size(4096)
        .with_level0_file_num_compaction_trigger(l0)
        .with_level0_slowdown_writes_trigger(l0 + 4)
        .with_level0_stop_writes_trigger(l0 + 8)
        .with_max_bytes_for_level_base(4096 << input.below(3))
        .with_max_bytes_for_level_multiplier(2.0 + input.below(9) as f64)
        .with_num_levels(3 + input.below(5))
        .with_target_file_size_base(1024 << input.below(3))
        .with_block_size(256 << input.below(3))
        .with_block_restart_interval(1 + input.below(16))
        .with_bloom_bits_per_key(f64::from(input.u8() % 16))
        .with_compression(compression)
        .with_block_cache_capacity(if input.chance(64) { 0 } else { 64 << 10 })
        .with_max_open_files(16)
        .with_disable_auto_compactions(input.chance(32))
}

fn key(input: &mut Input) -> Vec<u8> {
    format!("k{:02}", input.below(48)).into_bytes()
}

/// A value unique to this write, sometimes long enough to fill a memtable fast.
fn value(input: &mut Input, counter: &mut u64) -> Vec<u8> {
    *counter += 1;
    let mut v = format!("v{counter}-").into_bytes();
    let len = match input.u8() % 8 {
        0 => 0,
        7 => 100 * input.below(40),
        _ => input.below(32),
    };
    let fill = b'a' + input.below(26) as u8;
    v.resize(v.len() + len, fill);
    v
}

fn bound(input: &mut Input) -> Bound<Vec<u8>> {
    match input.u8() % 3 {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(input)),
        _ => Bound::Excluded(key(input)),
    }
}

fn scan(db: &Db, model: &Model, input: &mut Input, step: usize) {
    let (lo, hi) = (bound(input), bound(input));
    let reverse = input.chance(128);
    let limit = input.below(64);
    // BTreeMap::range panics on an empty or inverted range; the database must not.
    let inverted = match (&lo, &hi) {
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a > b || (a == b && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
        }
        _ => false,
    };
    let want: Vec<(Vec<u8>, Vec<u8>)> = if inverted {
        Vec::new()
    } else {
        let r = model.range((lo.clone(), hi.clone())).map(|(k, v)| (k.clone(), v.clone()));
        if reverse {
            r.rev().take(limit).collect()
        } else {
            r.take(limit).collect()
        }
    };
    let it = db.range((lo.clone(), hi.clone()));
    let got: Vec<_> = if reverse {
        it.rev().take(limit).collect::<Result<_, _>>()
    } else {
        it.take(limit).collect::<Result<_, _>>()
    }
    .expect("scan");
    assert_eq!(got, want, "step {step}: scan {lo:?}..{hi:?} reverse={reverse} limit={limit}");
}
