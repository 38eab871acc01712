//! Garnering end to end: the number of levels in use grows with the data, is
//! recorded in the MANIFEST and read back on reopen, and the tree holds the
//! same data in fewer levels than leveling.

use std::sync::Arc;

use strata::{CompactionStyle, Db, MemVfs, Options};

fn opts(vfs: &Arc<MemVfs>, style: CompactionStyle) -> Options {
    Options::default()
        .with_vfs(vfs.clone())
        .with_compaction_style(style)
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(16 << 10)
        .with_max_bytes_for_level_multiplier(3.0)
        .with_num_levels(7)
        .with_level0_file_num_compaction_trigger(2)
        .with_block_size(512)
}

fn k(i: u32) -> Vec<u8> {
    format!("k{:08}", (i.wrapping_mul(2_654_435_761)) % 1_000_000).into_bytes()
}

/// (deepest level holding data, per-level targets) from the engine's stats.
fn shape(db: &Db) -> (usize, Vec<Option<u64>>) {
    let s = db.stats();
    let deepest = s.levels.iter().rposition(|l| l.bytes > 0).unwrap_or(0);
    (deepest, s.levels.iter().map(|l| l.target_bytes).collect())
}

/// `L` as the stats show it: level 2's target is `B * T / c^(L-2)` (B = 16 KiB, T = 3, c = 0.5).
fn levels_in_use(targets: &[Option<u64>]) -> usize {
    let t2 = targets[2].unwrap() as f64;
    2 + (t2 / (48 << 10) as f64).log2().round() as usize
}

#[test]
fn level_count_survives_reopen_and_uses_fewer_levels_than_leveling() {
    let vfs = Arc::new(MemVfs::new());
    let style = CompactionStyle::Garnering { c: 0.5 };
    let mut db = Db::open("/g", opts(&vfs, style.clone())).unwrap();
    // Load until the tree has grown a level that no data has reached yet (the delayed
    // last-level compaction at work), so a reopen that re-derived L from the data would differ.
    let mut n = 0;
    let (deepest, targets) = loop {
        for i in n..n + 500 {
            db.put(k(i), [i as u8; 100]).unwrap();
        }
        n += 500;
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let (deepest, targets) = shape(&db);
        assert!(levels_in_use(&targets) >= deepest, "{deepest} {targets:?}");
        if levels_in_use(&targets) > deepest && deepest >= 2 {
            break (deepest, targets);
        }
        assert!(n < 40_000, "L never ran ahead of the data: {deepest} {targets:?}");
    };
    db.close().unwrap();
    db = Db::open("/g", opts(&vfs, style)).unwrap();
    assert_eq!(shape(&db), (deepest, targets.clone()), "the level count is read back, not re-derived");
    for i in (0..n).step_by(97) {
        assert_eq!(db.get(k(i)).unwrap(), Some(vec![i as u8; 100]));
    }
    // Fewer levels for the same data, compared well past the first level the
    // two could share: at the size where L first ran ahead, leveling may sit on
    // a level boundary, and where it lands depends on how background flushes
    // interleave with the writes (a loaded machine moved it).
    let total = n + 12_000;
    load_chunked(&db, n, total);
    let (deepest, targets) = shape(&db);
    db.close().unwrap();
    let lvfs = Arc::new(MemVfs::new());
    let leveled = Db::open("/l", opts(&lvfs, CompactionStyle::Leveled)).unwrap();
    load_chunked(&leveled, 0, total);
    let (leveled_deepest, leveled_targets) = shape(&leveled);
    assert!(
        deepest < leveled_deepest,
        "garnering {deepest} {targets:?}, leveled {leveled_deepest} {leveled_targets:?}"
    );
}

/// Keys `from..to` in chunks of 500, each flushed and compacted before the next.
fn load_chunked(db: &Db, from: u32, to: u32) {
    for start in (from..to).step_by(500) {
        for i in start..(start + 500).min(to) {
            db.put(k(i), [i as u8; 100]).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
}
