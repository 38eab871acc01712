//! Prefix filters (`Options::with_prefix_extractor`): a database with an
//! extractor answers every prefix scan and get as one without under every
//! built-in policy; a scan whose prefix no table holds reads no data block;
//! tables written without the extractor, or with another, are read correctly
//! after reopening with one.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::builtin_policies;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{Db, FixedPrefix, MemVfs, Options, ReadOptions, Vfs};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// A named change to the base options.
type Variant = (&'static str, fn(Options) -> Options);

/// Groups of keys `u<group:04>/<item:02>`; groups `g % 4 == 3` are never written.
const GROUPS: u32 = 400;

fn key(group: u32, item: u32) -> Vec<u8> {
    format!("u{group:04}/{item:02}").into_bytes()
}

fn written_group(rng: &mut StdRng) -> u32 {
    let g = rng.gen_range(0..GROUPS);
    if g % 4 == 3 {
        g - 1
    } else {
        g
    }
}

fn small(vfs: Arc<dyn Vfs>) -> Options {
    common::small_options().with_vfs(vfs)
}

fn collect(it: strata::DbIterator, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut got: Vec<_> = if reverse { it.rev().collect() } else { it.collect() };
    got.drain(..).map(|kv| kv.unwrap()).collect()
}

fn model_prefix(model: &Model, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .range(prefix.to_vec()..)
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Every group's prefix (in and out of the domain of `FixedPrefix(5)`: 5
/// bytes, 7 bytes, 3 bytes) both ways, and some gets, against the model.
fn check_all(db: &Db, model: &Model, what: &str) {
    for g in 0..GROUPS {
        let full = format!("u{g:04}");
        let longer = format!("u{g:04}/{}", g % 10);
        let shorter = format!("u{:02}", g % 100);
        for prefix in [full, longer, shorter] {
            let want = model_prefix(model, prefix.as_bytes());
            assert_eq!(collect(db.prefix_iterator(&prefix), false), want, "{what}: prefix {prefix}");
            let mut back = collect(db.prefix_iterator(&prefix), true);
            back.reverse();
            assert_eq!(back, want, "{what}: prefix {prefix} reversed");
        }
        let k = key(g, g % 7);
        assert_eq!(
            db.get(&k).unwrap().as_ref(),
            model.get(&k),
            "{what}: get {}",
            String::from_utf8_lossy(&k)
        );
    }
}

#[test]
fn an_extractor_changes_no_answer_under_every_policy() {
    for style in builtin_policies() {
        let with = Db::open(
            "/db",
            small(Arc::new(MemVfs::new()))
                .with_compaction_style(style.clone())
                .with_prefix_extractor(Arc::new(FixedPrefix::new(5))),
        )
        .unwrap();
        let without =
            Db::open("/db", small(Arc::new(MemVfs::new())).with_compaction_style(style.clone())).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let mut model = Model::new();
        for round in 0..6 {
            for i in 0..400 {
                let k = key(written_group(&mut rng), rng.gen_range(0..12));
                if rng.gen_bool(0.15) {
                    with.delete(&k).unwrap();
                    without.delete(&k).unwrap();
                    model.remove(&k);
                } else {
                    let v = format!("{round}-{i}-{}", "x".repeat(rng.gen_range(0..80))).into_bytes();
                    with.put(&k, &v).unwrap();
                    without.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            if round % 2 == 1 {
                with.flush().unwrap();
                without.flush().unwrap();
            }
            if round == 4 {
                with.compact_range(None, Some(b"u0200")).unwrap();
                without.compact_range(None, Some(b"u0200")).unwrap();
            }
            check_all(&with, &model, &format!("{style:?} with, round {round}"));
            check_all(&without, &model, &format!("{style:?} without, round {round}"));
        }
        let (s, t) = (with.stats(), without.stats());
        assert!(s.prefix_filter_skips > 0, "{style:?}: no table skipped\n{s}");
        assert!(s.prefix_filter_skips <= s.prefix_filter_checks);
        assert_eq!(
            (t.prefix_filter_checks, t.prefix_filter_skips),
            (0, 0),
            "{style:?}: no extractor, no checks"
        );
    }
}

#[test]
fn a_prefix_no_table_holds_reads_no_data_block() {
    // Three tables over the same key range, each holding a third of the
    // written groups (and none holding the groups `g % 4 == 3`).
    let opts = small(Arc::new(MemVfs::new()))
        .with_disable_auto_compactions(true)
        .with_target_file_size_base(1 << 20)
        .with_write_buffer_size(1 << 20)
        .with_prefix_extractor(Arc::new(FixedPrefix::new(5)));
    let db = Db::open("/db", opts).unwrap();
    for t in 0..3 {
        for g in (0..GROUPS).filter(|g| g % 4 != 3 && g % 3 == t) {
            for i in 0..3 {
                db.put(key(g, i), format!("{g}-{i}")).unwrap();
            }
        }
        db.flush().unwrap();
    }
    assert_eq!(db.stats().levels[0].runs, 3);
    let (mut absent, mut all_skipped) = (0, 0);
    for g in 0..GROUPS {
        let before = db.stats();
        let got = collect(db.prefix_iterator(format!("u{g:04}")), false);
        let after = db.stats();
        let checks = after.prefix_filter_checks - before.prefix_filter_checks;
        let skips = after.prefix_filter_skips - before.prefix_filter_skips;
        let lookups = |s: &strata::Stats| s.cache.hits + s.cache.misses;
        let block_reads = lookups(&after) - lookups(&before);
        assert!(checks <= 3, "group {g}: {checks} checks of 3 tables");
        // One segment per table: a table skipped whole is not counted as read.
        let opened = after.iter_tables_opened - before.iter_tables_opened;
        assert_eq!(opened, checks - skips, "group {g}: tables read");
        assert_eq!(after.iter_seeks - before.iter_seeks, 1, "group {g}: one positioning");
        if skips == checks {
            assert_eq!(block_reads, 0, "group {g}: every table skipped, yet blocks were looked up");
        }
        if g % 4 == 3 {
            assert!(got.is_empty());
            absent += 1;
            all_skipped += u32::from(checks > 0 && skips == checks);
        } else {
            assert_eq!(got.len(), 3, "group {g}");
            assert!(skips < checks, "group {g}: the table holding it was skipped");
        }
    }
    assert!(
        all_skipped * 10 >= absent * 9,
        "only {all_skipped} of {absent} absent prefixes skipped every table"
    );
    // total_order_seek asks no filter and finds the same.
    let before = db.stats().prefix_filter_checks;
    let ro = ReadOptions::default().with_total_order_seek(true);
    assert_eq!(db.prefix_iterator_opt("u0003", &ro).count(), 0);
    assert_eq!(db.prefix_iterator_opt("u0004", &ro).count(), 3);
    assert_eq!(db.stats().prefix_filter_checks, before);
}

#[test]
fn tables_of_another_extractor_or_none_are_read_after_reopening_with_one() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let base = || small(vfs.clone()).with_disable_auto_compactions(true);
    let variants: [Variant; 4] = [
        ("none", |o| o),
        ("fixed5", |o| o.with_prefix_extractor(Arc::new(FixedPrefix::new(5)))),
        ("fixed6-prefixes-only", |o| {
            o.with_prefix_extractor(Arc::new(FixedPrefix::new(6))).with_whole_key_filtering(false)
        }),
        ("none-no-filter", |o| o.with_whole_key_filtering(false)),
    ];
    let mut rng = StdRng::seed_from_u64(11);
    let mut model = Model::new();
    // Each option set writes its own tables (one per variant, all over the
    // whole key range), then every option set reads them all.
    for (wi, (name, variant)) in variants.into_iter().enumerate() {
        let db = Db::open("/db", variant(base())).unwrap();
        for i in 0..600 {
            let k = key(written_group(&mut rng), rng.gen_range(0..12));
            let v = format!("{name}-{i}").into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
        db.close().unwrap();
        for (ri, (reader, read_variant)) in variants.into_iter().enumerate() {
            let db = Db::open("/db", read_variant(base())).unwrap();
            check_all(&db, &model, &format!("written up to {name}, read with {reader}"));
            // Only the tables written with the reader's own extractor are asked.
            let own_tables = (ri == 1 || ri == 2) && wi >= ri;
            let checks = db.stats().prefix_filter_checks;
            assert_eq!(checks > 0, own_tables, "written up to {name}, read with {reader}: {checks} checks");
            db.close().unwrap();
        }
    }
    // A compaction rewrites every table with the current extractor, which
    // then rules out the absent groups of the one table left.
    let db = Db::open("/db", variants[1].1(base())).unwrap();
    db.compact_range(None, None).unwrap();
    let before = db.stats().prefix_filter_skips;
    check_all(&db, &model, "compacted with fixed5");
    assert!(db.stats().prefix_filter_skips > before);
}

/// The model's entries a raw iterator may show: within the iterate bounds
/// and, when scoped, with `prefix`.
fn scoped(model: &Model, lo: &Option<Vec<u8>>, hi: &Option<Vec<u8>>, prefix: Option<&[u8]>) -> Vec<Vec<u8>> {
    model
        .keys()
        .filter(|k| lo.as_ref().is_none_or(|l| *k >= l) && hi.as_ref().is_none_or(|h| *k < h))
        .filter(|k| prefix.is_none_or(|p| k.starts_with(p)))
        .cloned()
        .collect()
}

#[test]
fn raw_iterators_with_prefix_same_as_start_stay_in_the_seek_prefix() {
    for style in builtin_policies() {
        let opts = small(Arc::new(MemVfs::new()))
            .with_compaction_style(style.clone())
            .with_prefix_extractor(Arc::new(FixedPrefix::new(5)));
        let db = Db::open("/db", opts).unwrap();
        let mut rng = StdRng::seed_from_u64(3);
        let mut model = Model::new();
        for round in 0..4 {
            for i in 0..500 {
                let k = key(written_group(&mut rng), rng.gen_range(0..12));
                let v = format!("{round}-{i}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            db.flush().unwrap();
        }
        let before = db.stats().prefix_filter_checks;
        for session in 0..60 {
            let lo = rng.gen_bool(0.2).then(|| key(rng.gen_range(0..GROUPS), 5));
            let hi = rng.gen_bool(0.2).then(|| key(rng.gen_range(0..GROUPS), 5));
            let mut ro = ReadOptions::default().with_prefix_same_as_start(true);
            if let Some(l) = &lo {
                ro = ro.with_iterate_lower_bound(l);
            }
            if let Some(h) = &hi {
                ro = ro.with_iterate_upper_bound(h);
            }
            let mut it = db.raw_iterator_opt(&ro);
            for seek in 0..4 {
                let g = rng.gen_range(0..GROUPS);
                // In the domain (a group prefix, or a key of it), or not (3 bytes).
                let target = match rng.gen_range(0..4) {
                    0 => format!("u{g:04}").into_bytes(),
                    1 => format!("u{:02}", g % 100).into_bytes(),
                    _ => key(g, rng.gen_range(0..12)),
                };
                let scope = (target.len() >= 5).then(|| target[..5].to_vec());
                let keys = scoped(&model, &lo, &hi, scope.as_deref());
                let what =
                    format!("{style:?} session {session} seek {seek} {:?}", String::from_utf8_lossy(&target));
                let mut pos: Option<usize> = match rng.gen_range(0..4) {
                    0 => {
                        it.seek_for_prev(&target);
                        keys.partition_point(|k| *k <= target).checked_sub(1)
                    }
                    1 if scope.is_none() => {
                        it.seek_to_last();
                        keys.len().checked_sub(1)
                    }
                    _ => {
                        it.seek(&target);
                        Some(keys.partition_point(|k| *k < target)).filter(|&i| i < keys.len())
                    }
                };
                for step in 0..8 {
                    assert_eq!(it.key(), pos.map(|i| keys[i].as_slice()), "{what} step {step}");
                    let Some(i) = pos else { break };
                    if rng.gen_bool(0.6) {
                        it.next();
                        pos = Some(i + 1).filter(|&j| j < keys.len());
                    } else {
                        it.prev();
                        pos = i.checked_sub(1);
                    }
                }
                it.status().unwrap();
            }
        }
        assert!(db.stats().prefix_filter_checks > before, "{style:?}: raw seeks asked no prefix filter");
    }
}
