//! The seekable raw iterator, iterate bounds and prefix iteration: random
//! move sequences against a `BTreeMap` model cursor under every built-in
//! policy, over data spread across the memtable, L0 and deeper levels, at the
//! latest state and at snapshots; plus errors, pinning and seek accounting.

mod common;

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use common::cursor::{apply_move, check_move, gen_moves, ModelCursor, RawMove};
use common::{builtin_policies, policy_options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs, PathFilter};
use strata::{
    CompactionStyle, Db, DbIterator, Error, FixedPrefix, MemVfs, Options, ReadOptions, Snapshot, Stats, Vfs,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u32 = 600;

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("k{:04}", rng.gen_range(0..KEYS)).into_bytes()
}

/// A seek target or bound: a stored-looking key, or one between or around them.
fn probe(rng: &mut StdRng) -> Vec<u8> {
    let mut k = key(rng);
    match rng.gen_range(0..12) {
        0 => Vec::new(),
        1 => b"k\xff".to_vec(),
        2 => {
            k.truncate(rng.gen_range(1..k.len()));
            k
        }
        3 => {
            k.push(0);
            k
        }
        _ => k,
    }
}

fn write_round(db: &Db, model: &mut Model, rng: &mut StdRng, ops: usize) {
    for i in 0..ops {
        let k = key(rng);
        if rng.gen_bool(0.2) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("{i}-{}", "v".repeat(rng.gen_range(0..120))).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
}

/// The bounded `DbIterator` of `range` with `ro`'s bounds, both ways, against
/// the model's keys in both.
fn check_bounded_scan(
    it: impl Fn() -> DbIterator,
    model: &Model,
    range: &(Bound<Vec<u8>>, Bound<Vec<u8>>),
    lo: &Option<Vec<u8>>,
    hi: &Option<Vec<u8>>,
) -> Result<(), String> {
    let want: Vec<_> = model
        .iter()
        .filter(|(k, _)| range.contains(*k))
        .filter(|(k, _)| lo.as_ref().is_none_or(|l| *k >= l) && hi.as_ref().is_none_or(|h| *k < h))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let got: Vec<_> = it().collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    let mut back: Vec<_> = it().rev().collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    back.reverse();
    if got != want || back != want {
        return Err(format!("bounded scan: {} forward, {} back, want {}", got.len(), back.len(), want.len()));
    }
    Ok(())
}

fn random_bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(probe(rng)),
        _ => Bound::Excluded(probe(rng)),
    }
}

/// One raw iterator at the latest state or a snapshot, with random bounds,
/// walked by random moves; now and then the database changes under it.
fn check_session(
    db: &Db,
    model: &mut Model,
    snaps: &[(Snapshot, Model)],
    rng: &mut StdRng,
) -> Result<(), String> {
    let lo = rng.gen_bool(0.4).then(|| probe(rng));
    let hi = rng.gen_bool(0.4).then(|| probe(rng));
    let mut ro = ReadOptions::default();
    if let Some(l) = &lo {
        ro = ro.with_iterate_lower_bound(l);
    }
    if let Some(h) = &hi {
        ro = ro.with_iterate_upper_bound(h);
    }
    let unbounded = lo.is_none() && hi.is_none();
    let at = (!snaps.is_empty() && rng.gen_bool(0.4)).then(|| rng.gen_range(0..snaps.len()));
    let (mut it, view) = match at {
        Some(i) if unbounded && rng.gen_bool(0.5) => (snaps[i].0.raw_iterator(), snaps[i].1.clone()),
        Some(i) => (db.raw_iterator_opt(&ro.clone().with_snapshot(&snaps[i].0)), snaps[i].1.clone()),
        None if unbounded => (db.raw_iterator(), model.clone()),
        None => (db.raw_iterator_opt(&ro), model.clone()),
    };
    let mut cur = ModelCursor::new(&view, lo.clone(), hi.clone());
    let moves = gen_moves(rng, 40, probe);
    let change_at = rng.gen_bool(0.25).then(|| rng.gen_range(0..moves.len()));
    for (j, mv) in moves.iter().enumerate() {
        if change_at == Some(j) {
            // The iterator keeps its view: later writes, flushes and
            // compactions are not seen, and the files it reads stay.
            write_round(db, model, rng, 150);
            db.flush().unwrap();
            if rng.gen_bool(0.5) {
                db.compact_range(None, None).unwrap();
            }
        }
        check_move(&mut it, &mut cur, mv).map_err(|e| format!("bounds {lo:?}..{hi:?}, move {j}: {e}"))?;
    }
    drop(it);
    // The user iterator honours the same bounds, intersected with its range.
    let range = (random_bound(rng), random_bound(rng));
    let (snap_ro, view) = match at {
        Some(i) => (ro.clone().with_snapshot(&snaps[i].0), &snaps[i].1),
        None => (ro.clone(), &*model),
    };
    check_bounded_scan(|| db.range_opt(range.clone(), &snap_ro), view, &range, &lo, &hi)
        .map_err(|e| format!("range {range:?} with bounds {lo:?}..{hi:?}: {e}"))?;
    // Prefix iteration: exactly the keys starting with the prefix.
    let mut prefix = key(rng);
    prefix.truncate(rng.gen_range(0..=prefix.len()));
    let got: Vec<_> = match at {
        Some(i) => snaps[i].0.prefix_iterator(&prefix),
        None => db.prefix_iterator_opt(&prefix, &ReadOptions::default()),
    }
    .collect::<Result<_, _>>()
    .map_err(|e| e.to_string())?;
    let want: Vec<_> =
        view.iter().filter(|(k, _)| k.starts_with(&prefix)).map(|(k, v)| (k.clone(), v.clone())).collect();
    if got != want {
        return Err(format!("prefix {prefix:?}: got {} keys, want {}", got.len(), want.len()));
    }
    Ok(())
}

fn levels_with_files(s: &Stats) -> (bool, bool) {
    (s.levels[0].files > 0, s.levels.iter().skip(1).any(|l| l.files > 0))
}

#[test]
fn raw_iterator_matches_a_model_cursor_under_every_policy() {
    for style in builtin_policies() {
        for seed in 0..2u64 {
            // Seed 1 with prefix filters (keys are `k` + 4 digits: prefixes of
            // 10 keys), which prefix scans of 4 or 5 bytes ask.
            let mut opts = policy_options(&style, Arc::new(MemVfs::new()));
            if seed == 1 {
                opts = opts.with_prefix_extractor(Arc::new(FixedPrefix::new(4)));
            }
            let db = Db::open("/db", opts).unwrap();
            let mut rng = StdRng::seed_from_u64(seed);
            let mut model = Model::new();
            let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
            let (mut l0, mut deeper) = (false, false);
            for round in 0..8 {
                write_round(&db, &mut model, &mut rng, 300);
                match round % 4 {
                    1 => db.flush().unwrap(),
                    3 => {
                        let (mut a, mut b) = (key(&mut rng), key(&mut rng));
                        if a > b {
                            std::mem::swap(&mut a, &mut b);
                        }
                        db.compact_range(Some(&a), Some(&b)).unwrap()
                    }
                    _ => {}
                }
                if rng.gen_bool(0.5) {
                    snaps.push((db.snapshot(), model.clone()));
                    if snaps.len() > 3 {
                        snaps.remove(0);
                    }
                }
                // Unflushed writes stay in the memtable while the sessions read.
                write_round(&db, &mut model, &mut rng, 40);
                let (a, b) = levels_with_files(&db.stats());
                (l0, deeper) = (l0 || a, deeper || b);
                for s in 0..10 {
                    if let Err(e) = check_session(&db, &mut model, &snaps, &mut rng) {
                        panic!("{style:?} seed {seed} round {round} session {s}: {e}");
                    }
                }
            }
            assert!(l0 && deeper, "{style:?}: data never reached both L0 and a deeper level\n{}", db.stats());
            let s = db.stats();
            assert_eq!(
                s.prefix_filter_checks > 0,
                seed == 1,
                "{style:?} seed {seed}: {} prefix checks",
                s.prefix_filter_checks
            );
        }
    }
}

/// Every version of a key, tombstones and snapshots, read across direction
/// changes: the raw iterator shows each key's newest visible version once.
#[test]
fn direction_changes_show_each_key_once_at_its_snapshot() {
    let db = Db::open("/db", common::small_options().with_vfs(Arc::new(MemVfs::new()))).unwrap();
    let mut model = Model::new();
    let mut snaps = Vec::new();
    for round in 0..6u32 {
        for i in 0..40u32 {
            let k = format!("k{:02}", (i * 7 + round) % 20).into_bytes();
            if (i + round) % 5 == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("r{round}-{i}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        snaps.push((db.snapshot(), model.clone()));
        if round % 2 == 1 {
            db.flush().unwrap();
        }
    }
    let zigzag = [RawMove::First, RawMove::Next, RawMove::Next, RawMove::Prev, RawMove::Next, RawMove::Prev]
        .into_iter()
        .chain([RawMove::Prev, RawMove::Last, RawMove::Prev, RawMove::Next, RawMove::Prev, RawMove::Prev])
        .chain((0..25).map(|i| if i % 3 == 2 { RawMove::Prev } else { RawMove::Next }))
        .chain([RawMove::SeekForPrev(b"k10".to_vec()), RawMove::Next, RawMove::Seek(b"k05".to_vec())])
        .chain((0..25).map(|i| if i % 3 == 2 { RawMove::Next } else { RawMove::Prev }))
        .collect::<Vec<_>>();
    for (snap, m) in &snaps {
        let mut it = snap.raw_iterator();
        let mut cur = ModelCursor::new(m, None, None);
        for (j, mv) in zigzag.iter().enumerate() {
            check_move(&mut it, &mut cur, mv).unwrap_or_else(|e| panic!("{snap:?} move {j}: {e}"));
        }
    }
}

#[test]
fn seeks_outside_the_bounds_are_clamped_and_moves_stop_at_them() {
    let db = Db::open("/db", Options::default().with_vfs(Arc::new(MemVfs::new()))).unwrap();
    for k in ["a", "b", "c", "d", "e", "f", "g"] {
        db.put(k, k.to_uppercase()).unwrap();
    }
    db.flush().unwrap();
    db.put("d", "D2").unwrap();
    let at = |it: &strata::DbRawIterator| it.key().map(|k| String::from_utf8(k.to_vec()).unwrap());
    let ro = ReadOptions::default().with_iterate_lower_bound("c").with_iterate_upper_bound("f");
    let mut it = db.raw_iterator_opt(&ro);
    for (mv, want) in [
        (RawMove::Seek(b"a".to_vec()), Some("c")),
        (RawMove::Seek(b"dd".to_vec()), Some("e")),
        (RawMove::Seek(b"f".to_vec()), None),
        (RawMove::SeekForPrev(b"z".to_vec()), Some("e")),
        (RawMove::SeekForPrev(b"f".to_vec()), Some("e")),
        (RawMove::SeekForPrev(b"d".to_vec()), Some("d")),
        (RawMove::SeekForPrev(b"bz".to_vec()), None),
        (RawMove::First, Some("c")),
        (RawMove::Prev, None),
        (RawMove::Last, Some("e")),
        (RawMove::Next, None),
    ] {
        apply_move(&mut it, &mv);
        assert_eq!(at(&it).as_deref(), want, "{mv:?}");
        it.status().unwrap();
    }
    it.seek("d");
    assert_eq!(it.value(), Some(&b"D2"[..]));
    // Bounds between stored keys, and an empty range.
    let mut it = db.raw_iterator_opt(
        &ReadOptions::default().with_iterate_lower_bound("bb").with_iterate_upper_bound("e0"),
    );
    it.seek_to_first();
    assert_eq!(at(&it).as_deref(), Some("c"));
    it.seek_to_last();
    assert_eq!(at(&it).as_deref(), Some("e"));
    let mut it = db.raw_iterator_opt(
        &ReadOptions::default().with_iterate_lower_bound("e").with_iterate_upper_bound("c"),
    );
    for mv in
        [RawMove::First, RawMove::Last, RawMove::Seek(b"d".to_vec()), RawMove::SeekForPrev(b"d".to_vec())]
    {
        match mv {
            RawMove::Seek(k) => it.seek(k),
            RawMove::SeekForPrev(k) => it.seek_for_prev(k),
            RawMove::First => it.seek_to_first(),
            _ => it.seek_to_last(),
        }
        assert!(!it.valid());
    }
    it.status().unwrap();
    // The user iterator: range and bounds intersect.
    fn keys(it: impl Iterator<Item = strata::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<String> {
        it.map(|kv| String::from_utf8(kv.unwrap().0).unwrap()).collect()
    }
    assert_eq!(keys(db.iter_opt(&ro)), ["c", "d", "e"]);
    assert_eq!(keys(db.range_opt("d".., &ro)), ["d", "e"]);
    assert_eq!(keys(db.range_opt(.."d", &ro).rev()), ["c"]);
    assert_eq!(keys(db.range_opt("a"..="z", &ro)), ["c", "d", "e"]);
    assert_eq!(keys(db.prefix_iterator_opt("e", &ro)), ["e"]);
    assert!(keys(db.prefix_iterator_opt("f", &ro)).is_empty());
}

#[test]
fn prefixes_ending_in_0xff_and_empty_prefixes() {
    let db = Db::open("/db", common::small_options().with_vfs(Arc::new(MemVfs::new()))).unwrap();
    let keys: [&[u8]; 9] =
        [b"", b"a", b"a\xff", b"a\xff\x00", b"a\xff\xff", b"b", b"\xff", b"\xff\x00", b"\xff\xff\xff"];
    for (i, k) in keys.iter().enumerate() {
        db.put(k, [i as u8]).unwrap();
        if i == 4 {
            db.flush().unwrap();
        }
    }
    let snap = db.snapshot();
    db.delete(b"a\xff\x00").unwrap();
    fn got(it: impl Iterator<Item = strata::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<Vec<u8>> {
        it.map(|kv| kv.unwrap().0).collect()
    }
    let want = |p: &[u8], gone: &[u8]| {
        let mut v: Vec<Vec<u8>> =
            keys.iter().filter(|k| k.starts_with(p) && **k != gone).map(|k| k.to_vec()).collect();
        v.sort();
        v
    };
    for p in [&b""[..], b"a", b"a\xff", b"a\xff\xff", b"\xff", b"\xff\xff", b"\xff\xff\xff\xff", b"c"] {
        assert_eq!(got(db.prefix_iterator(p)), want(p, b"a\xff\x00"), "prefix {p:?}");
        assert_eq!(got(snap.prefix_iterator(p)), want(p, b"-"), "prefix {p:?} at the snapshot");
        let mut back = got(db.prefix_iterator(p).rev());
        back.reverse();
        assert_eq!(back, want(p, b"a\xff\x00"), "prefix {p:?} reversed");
    }
}

/// A read error makes the raw iterator invalid for good and is reported by
/// `status`; wrong use (moving an invalid iterator) is an error too.
#[test]
fn errors_are_sticky_and_reported_by_status() {
    let vfs = Arc::new(FaultVfs::new(
        Arc::new(MemVfs::new()),
        FaultConfig::new(1).with_filter(PathFilter::extension("sst")),
    ));
    let db = Db::open("/db", Options::default().with_vfs(vfs.clone()).with_block_cache_capacity(0)).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), "v").unwrap();
    }
    db.flush().unwrap();
    let mut it = db.raw_iterator();
    vfs.fail_next(FaultOp::ReadAt);
    it.seek_to_first();
    assert!(!it.valid() && it.key().is_none() && it.item().is_none());
    assert!(matches!(it.status(), Err(Error::Io(_))), "{:?}", it.status());
    // Nothing moves once failed, though the disk works again.
    it.seek("k050");
    assert!(!it.valid());
    assert!(matches!(it.status(), Err(Error::Io(_))));
    let mut it = db.raw_iterator();
    it.seek("k050");
    assert_eq!(it.key(), Some(&b"k050"[..]));
    it.status().unwrap();

    for back in [false, true] {
        let mut it = db.raw_iterator();
        it.seek_to_last();
        it.next(); // past the end: fine
        it.status().unwrap();
        if back {
            it.prev();
        } else {
            it.next();
        }
        assert!(matches!(it.status(), Err(Error::InvalidArgument(_))), "{:?}", it.status());
        it.seek_to_first();
        assert!(!it.valid(), "a failed iterator stays failed");
    }
}

/// A raw iterator pins the memtables and files of its view until dropped.
#[test]
fn raw_iterators_pin_their_files() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", common::small_options().with_vfs(vfs.clone())).unwrap();
    let k = |i: u32| format!("k{i:05}").into_bytes();
    for i in 0..1500 {
        db.put(k(i), format!("old-{i}")).unwrap();
    }
    let mut it = db.raw_iterator();
    for round in 0..3 {
        for i in 0..1500 {
            db.put(k(i), format!("new{round}-{i}")).unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    let tables = |s: &Stats| s.levels.iter().map(|l| l.files).sum::<usize>();
    let on_disk =
        || vfs.list_dir(std::path::Path::new("/db")).unwrap().iter().filter(|n| n.ends_with(".sst")).count();
    assert!(on_disk() > tables(&db.stats()), "the iterator's tables are still on disk");
    it.seek_to_first();
    let mut n = 0;
    while let Some((key, v)) = it.item() {
        assert_eq!(v, format!("old-{n}").as_bytes(), "{key:?}");
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 1500);
    drop(it);
    db.compact_range(None, None).unwrap();
    assert_eq!(on_disk(), tables(&db.stats()), "nothing pins the old tables any more");
}

/// Keys `k0000`..`k0399` with 40-byte values, compacted into one run of
/// three or more files, with no background work left.
fn one_run_of_several_files() -> (Db, usize, Stats) {
    // Uncompressed, about 22 KB: three or more 8 KiB files, all within the
    // 32 KiB L1 so they stay one run. (Compressed, the same data once fit
    // one file: a flake-hunt failure of a test using it, under load.)
    let opts = common::small_options()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_block_cache_capacity(8 << 20)
        .with_compression(strata::CompressionType::None);
    let db = Db::open("/db", opts).unwrap();
    for i in 0..N {
        db.put(k(i), vec![b'v'; 40]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    let levels: Vec<usize> = s.levels.iter().map(|l| l.files).filter(|&f| f > 0).collect();
    let [files] = levels[..] else { panic!("one level: {s}") };
    assert!(files > 2 && s.levels[0].files == 0, "one run of several files: {s}");
    (db, files, s)
}

/// Keys of [`one_run_of_several_files`].
const N: u32 = 400;

fn k(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// A bounded scan does not open a file of a run that lies wholly past its
/// upper bound. An iterator that returns a key moves on to the next one (to
/// step over the key's older versions), so the same scan without the bound,
/// taking as many keys, reads the first block of the next file whenever the
/// key after its last one starts that file; the bounded one reads nothing
/// there. Both return the same keys.
#[test]
fn bounded_scans_do_not_read_files_past_the_upper_bound() {
    let (db, files, s) = one_run_of_several_files();
    let lookups = || {
        let c = db.stats().cache;
        c.hits + c.misses
    };
    let mut saved = 0;
    for b in 3..N {
        for upper in [Bound::Excluded(k(b)), Bound::Included(k(b))] {
            let range = (Bound::Included(k(b - 3)), upper.clone());
            let before = lookups();
            let bounded: Vec<_> = db.range(range.clone()).map(|kv| kv.unwrap().0).collect();
            let bounded_reads = lookups() - before;
            let before = lookups();
            let by_hand: Vec<_> = db.range(k(b - 3)..).take(bounded.len()).map(|kv| kv.unwrap().0).collect();
            let by_hand_reads = lookups() - before;
            assert_eq!(bounded, by_hand, "{range:?}");
            assert_eq!(bounded.len(), if matches!(upper, Bound::Included(_)) { 4 } else { 3 });
            assert!(bounded_reads <= by_hand_reads, "{range:?}: {bounded_reads} > {by_hand_reads}");
            saved += by_hand_reads - bounded_reads;
        }
    }
    // The first key of each file but the first ends one exclusive and one
    // inclusive scan just before it.
    assert_eq!(saved, 2 * (files as u64 - 1), "{s}");
}

/// `Stats::iter_seeks` and `Stats::iter_tables_opened` count what user
/// iterators did: one positioning per scan, one open per file a scan reads
/// (none past its upper bound), and nothing for gets or compactions.
#[test]
fn iterators_count_their_seeks_and_the_tables_they_open() {
    let (db, files, s) = one_run_of_several_files();
    let counts = || {
        let s = db.stats();
        (s.iter_seeks, s.iter_tables_opened)
    };
    let start = counts();
    assert_eq!(db.iter().count(), N as usize);
    assert_eq!(counts(), (start.0 + 1, start.1 + files as u64), "a full scan reads every file once");

    // Scans of three and of four keys: each opens one file, and one more for
    // each file start after its first key and within its bounds. Each of the
    // `files - 1` starts lies in two of the three-key scans and three of the
    // four-key ones.
    let start = counts();
    let mut scans = 0;
    for b in 3..N {
        for upper in [Bound::Excluded(k(b)), Bound::Included(k(b))] {
            assert!(db.range((Bound::Included(k(b - 3)), upper)).count() >= 3);
            scans += 1;
        }
    }
    let (seeks, opened) = counts();
    assert_eq!(seeks - start.0, scans);
    assert_eq!(opened - start.1, scans + 5 * (files as u64 - 1), "{s}");

    // A raw iterator counts each positioning, the seek to the last key too.
    let mut it = db.raw_iterator();
    it.seek_to_last();
    it.seek(k(10));
    it.seek_for_prev(k(20));
    it.seek_to_first();
    it.status().unwrap();
    drop(it);
    assert_eq!(counts().0, seeks + 4);

    // Gets and compactions read tables but are not iterators. The new
    // version gives the full compaction a table to merge into the run (with
    // nothing above it, the run's level has nothing to merge).
    let before = counts();
    assert!(db.get(k(7)).unwrap().is_some());
    db.put(k(7), b"new").unwrap();
    let merged = db.stats().compaction_bytes_read;
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    assert!(db.stats().compaction_bytes_read > merged, "the compaction read the run");
    assert_eq!(counts(), before);
}

/// Raw seeks land in DTables like the user iterator's first positioning, so
/// under `lwc` with seek compaction they charge each multi-segment table and
/// get it rewritten into one segment.
#[test]
fn raw_seeks_charge_the_dtables_they_land_in() {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open(
        "/db",
        Options::default()
            .with_vfs(vfs)
            .with_compaction_style(CompactionStyle::Lwc { max_segments: 64 })
            .with_write_buffer_size(8 << 10)
            .with_target_file_size_base(8 << 10)
            .with_max_bytes_for_level_base(32 << 10)
            .with_max_bytes_for_level_multiplier(4.0)
            .with_num_levels(5)
            .with_level0_file_num_compaction_trigger(2)
            .with_block_size(512)
            .with_block_cache_capacity(1 << 20)
            .with_seek_compaction(true),
    )
    .unwrap();
    let k = |i: u32| format!("k{i:06}").into_bytes();
    for round in 0..4u32 {
        for i in 0..6000u32 {
            db.put(k((i.wrapping_mul(7919) + round * 104_729) % 4000), format!("r{round}-{i}")).unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    let segments = |s: &Stats| s.levels.iter().map(|l| l.segments).sum::<usize>();
    let files = |s: &Stats| s.levels.iter().map(|l| l.files).sum::<usize>();
    let before = db.stats();
    assert!(segments(&before) > files(&before), "no DTable to seek into\n{before}");
    for _ in 0..3 {
        // A fresh iterator per pass sees the tables rewritten meanwhile.
        let mut it = db.raw_iterator();
        for i in (0..4000).step_by(3) {
            it.seek(k(i));
            assert!(it.valid());
        }
        it.status().unwrap();
    }
    db.wait_for_compactions().unwrap();
    let after = db.stats();
    assert!(after.seek_compactions > 0 && after.table_rewrites > before.table_rewrites, "{after}");
    // Rewrites may push data down and append to tables below, whose new
    // states start with a fresh budget: most extra segments go, not all.
    let extra = |s: &Stats| segments(s) - files(s);
    assert!(
        extra(&after) * 4 <= extra(&before),
        "{} extra segments left of {}\n{after}",
        extra(&after),
        extra(&before)
    );
}
