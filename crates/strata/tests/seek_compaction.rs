//! Seek-triggered compaction (`Options::with_seek_compaction`) and flushes
//! placed below L0 (`Options::with_max_mem_compaction_level`): each option
//! changes the tree when on and nothing when off, under every policy the
//! answers stay right, and they survive a reopen.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{builtin_policies, policy_options};
use strata::{CompactionStyle, Db, MemVfs, Options, Stats};

fn k(prefix: &str, i: u32) -> Vec<u8> {
    format!("{prefix}{i:05}").into_bytes()
}

/// Small tables that stay in L0 until something moves them (trigger 8).
fn options(vfs: &Arc<MemVfs>) -> Options {
    Options::default()
        .with_vfs(vfs.clone())
        .with_write_buffer_size(256 << 10)
        .with_target_file_size_base(64 << 10)
        .with_max_bytes_for_level_base(1 << 20)
        .with_level0_file_num_compaction_trigger(8)
        .with_level0_slowdown_writes_trigger(16)
        .with_level0_stop_writes_trigger(24)
        .with_block_size(1024)
}

/// Puts keys `i` of `prefix` for `i` in `keys` and flushes them into one table.
fn flushed(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, prefix: &str, keys: impl Iterator<Item = u32>) {
    for i in keys {
        let v = format!("value-{prefix}-{i}").into_bytes();
        db.put(k(prefix, i), &v).unwrap();
        model.insert(k(prefix, i), v);
    }
    db.flush().unwrap();
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (key, v) in model {
        assert_eq!(db.get(key).unwrap().as_ref(), Some(v), "{}", String::from_utf8_lossy(key));
    }
    let all: Vec<_> = db.iter().map(Result::unwrap).collect();
    assert_eq!(all.len(), model.len());
    assert!(all.iter().zip(model).all(|((a, b), (c, d))| a == c && b == d));
}

/// Tables probed per get over `keys`, from the engine's own counters.
fn probes_per_get(db: &Db, keys: &[Vec<u8>]) -> f64 {
    let before = db.stats();
    for key in keys {
        db.get(key).unwrap();
    }
    let after = db.stats();
    (after.get_table_probes - before.get_table_probes) as f64 / (after.gets - before.gets) as f64
}

fn l0_files(s: &Stats) -> usize {
    s.levels[0].files
}

/// Two overlapping L0 tables; gets of the older one's keys read the newer one
/// in vain. With seek compaction the newer one runs out of seeks (100 for a
/// small table) and the two are merged into L1: one table per get after.
#[test]
fn gets_that_probe_two_tables_compact_them() {
    for on in [false, true] {
        let vfs = Arc::new(MemVfs::new());
        let opts = options(&vfs).with_seek_compaction(on);
        let db = Db::open("/db", opts.clone()).unwrap();
        let mut model = BTreeMap::new();
        flushed(&db, &mut model, "k", (0..2000).step_by(2));
        flushed(&db, &mut model, "k", (1..2000).step_by(2));
        assert_eq!(l0_files(&db.stats()), 2);
        // Key 0 is below the newer table's range: it is left out.
        let older: Vec<Vec<u8>> = (2..2000).step_by(2).map(|i| k("k", i)).collect();
        assert_eq!(probes_per_get(&db, &older[..50]), 2.0, "below the budget nothing happens");
        for key in older.iter().cycle().take(150) {
            db.get(key).unwrap();
        }
        db.wait_for_compactions().unwrap();
        let s = db.stats();
        if on {
            assert_eq!((s.seek_candidates, s.seek_compactions, l0_files(&s)), (1, 1, 0), "{s}");
            assert!(s.to_string().contains("seek-triggered compactions 1"), "{s}");
            assert!(s.recent_compactions.iter().any(|r| r.reason == "seek-triggered"), "{s}");
            assert_eq!(probes_per_get(&db, &older), 1.0);
        } else {
            assert_eq!((s.seek_candidates, s.seek_compactions, l0_files(&s)), (0, 0, 2), "{s}");
            assert!(!s.to_string().contains("seek-triggered"), "{s}");
            assert_eq!(probes_per_get(&db, &older), 2.0);
        }
        check(&db, &model);
        db.close().unwrap();
        let db = Db::open("/db", opts).unwrap();
        check(&db, &model);
        assert_eq!(l0_files(&db.stats()), if on { 0 } else { 2 });
    }
}

/// A flush of keys nothing in the tree holds goes as deep as
/// `max_mem_compaction_level` allows; a flush over data already in a level
/// stops above it; with the option at 0 every flush goes to L0.
#[test]
fn flushes_of_new_key_ranges_skip_l0() {
    for max_level in [0, 2] {
        let vfs = Arc::new(MemVfs::new());
        let opts = options(&vfs).with_max_mem_compaction_level(max_level);
        let db = Db::open("/db", opts.clone()).unwrap();
        let mut model = BTreeMap::new();
        let files = |db: &Db| db.stats().levels.iter().map(|l| l.files).take(3).collect::<Vec<_>>();
        flushed(&db, &mut model, "a", 0..1000);
        flushed(&db, &mut model, "b", 0..1000);
        let disjoint = files(&db);
        // Over the "a" keys: above L2 (L1), then above L1 (L0).
        flushed(&db, &mut model, "a", (0..1000).step_by(3));
        flushed(&db, &mut model, "a", (0..1000).step_by(5));
        let s = db.stats();
        if max_level == 0 {
            assert_eq!((disjoint, files(&db), s.flushes_below_l0), (vec![2, 0, 0], vec![4, 0, 0], 0), "{s}");
        } else {
            // The "b" table joins the "a" table's run in L2: nothing overlaps it.
            assert_eq!((disjoint, files(&db), s.flushes_below_l0), (vec![0, 0, 2], vec![1, 1, 2], 3), "{s}");
            assert!(s.to_string().contains("flushes placed below L0 3"), "{s}");
            let levels: Vec<usize> =
                (s.recent_compactions.iter()).filter(|r| r.kind == "flush").map(|r| r.output_level).collect();
            assert_eq!(levels, vec![2, 2, 1, 0]);
        }
        check(&db, &model);
        db.close().unwrap();
        let db = Db::open("/db", opts).unwrap();
        check(&db, &model);
        assert_eq!(files(&db), if max_level == 0 { vec![4, 0, 0] } else { vec![1, 1, 2] });
    }
}

/// Placement is the policy's: Garnering never opens a level by a flush, the
/// policies with tiers, two-part levels or buffers keep every flush in L0.
#[test]
fn flush_placement_follows_the_policy() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let opts = options(&vfs).with_compaction_style(style.clone()).with_max_mem_compaction_level(2);
        let db = Db::open("/db", opts).unwrap();
        let mut model = BTreeMap::new();
        flushed(&db, &mut model, "a", 0..500);
        let s = db.stats();
        let level = s.levels.iter().position(|l| l.files > 0).unwrap();
        let want = match style {
            CompactionStyle::Leveled | CompactionStyle::Lwc { .. } => 2,
            CompactionStyle::Garnering { .. } => 1,
            _ => 0,
        };
        assert_eq!(level, want, "{style:?}\n{s}");
        assert_eq!(s.flushes_below_l0, u64::from(want > 0));
        check(&db, &model);
    }
}

/// Under every policy, both options on: overlapping flushes and many gets;
/// seek compactions run through each policy's own pick and every answer stays
/// right, also after a reopen.
#[test]
fn every_policy_stays_correct_with_both_options() {
    for style in builtin_policies() {
        let vfs = Arc::new(MemVfs::new());
        let opts = policy_options(&style, vfs)
            .with_level0_file_num_compaction_trigger(6)
            .with_level0_slowdown_writes_trigger(12)
            .with_level0_stop_writes_trigger(16)
            .with_seek_compaction(true)
            .with_max_mem_compaction_level(2);
        let db = Db::open("/db", opts.clone()).unwrap();
        let mut model = BTreeMap::new();
        for round in 0..5u32 {
            for i in 0..600u32 {
                let key = k("k", (i * 7919 + round * 131) % 3000);
                let v = format!("v{round}-{i}").into_bytes();
                db.put(&key, &v).unwrap();
                model.insert(key, v);
                if i % 11 == 0 {
                    let gone = k("k", (i * 13 + round) % 3000);
                    db.delete(&gone).unwrap();
                    model.remove(&gone);
                }
            }
            db.flush().unwrap();
            for i in 0..1500u32 {
                let key = k("k", (i * 31 + round) % 3000);
                assert_eq!(db.get(&key).unwrap(), model.get(&key).cloned(), "{style:?}");
            }
            // Long scans sample reads for seek accounting too.
            assert_eq!(db.iter().count(), model.len(), "{style:?}");
        }
        db.wait_for_compactions().unwrap();
        let s = db.stats();
        assert!(s.seek_compactions > 0, "{style:?}: no seek compaction\n{s}");
        check(&db, &model);
        db.close().unwrap();
        let db = Db::open("/db", opts).unwrap();
        check(&db, &model);
    }
}

/// A table that runs out of seeks in the last level (tiered keeps several
/// runs there) has no level to go to: the candidate is dropped, nothing loops.
#[test]
fn a_candidate_in_the_last_level_is_dropped() {
    let vfs = Arc::new(MemVfs::new());
    let opts = options(&vfs)
        .with_compaction_style(CompactionStyle::Tiered)
        .with_num_levels(2)
        .with_level0_file_num_compaction_trigger(1)
        .with_seek_compaction(true);
    let db = Db::open("/db", opts).unwrap();
    let mut model = BTreeMap::new();
    flushed(&db, &mut model, "k", (0..2000).step_by(2));
    db.wait_for_compactions().unwrap();
    flushed(&db, &mut model, "k", (1..2000).step_by(2));
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert_eq!((s.levels[0].files, s.levels[1].runs), (0, 2), "{s}");
    let older: Vec<Vec<u8>> = (0..2000).step_by(2).map(|i| k("k", i)).collect();
    for key in older.iter().cycle().take(300) {
        db.get(key).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert_eq!((s.seek_candidates, s.seek_compactions, s.levels[1].runs), (1, 0, 2), "{s}");
    check(&db, &model);
}
