//! Monkey bloom allocation against uniform filters at the same average bits per
//! key, on the same multi-level tree: lookups of missing keys must waste fewer
//! table probes (counted by the per-level filter statistics on the real read
//! path), and the deepest level must hold the fewest bits. Both fail if the
//! option is ignored.

use std::path::Path;
use std::sync::Arc;

mod common;

use strata::version::{read_current, read_manifest, VersionEdit};
use strata::wal::LogWriter;
use strata::{BloomAllocation, CompactionStyle, CompressionType, Db, MemVfs, Options, Stats, Vfs};

const KEYS: u64 = 60_000;
const MISSES: u64 = 40_000;
const BITS: f64 = 10.0;

/// Small memtables and levels, so 60 000 keys make a tree of four or five levels.
fn options(style: CompactionStyle, alloc: BloomAllocation, vfs: Arc<MemVfs>) -> Options {
    Options::default()
        .with_vfs(vfs)
        .with_compaction_style(style)
        .with_bloom_allocation(alloc)
        .with_bloom_bits_per_key(BITS)
        .with_compression(CompressionType::None)
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(16 << 10)
        .with_max_bytes_for_level_multiplier(4.0)
}

/// Even numbers are stored, odd ones never: a missing key falls inside the
/// key range of a file at every level, so each run's filter is asked.
fn key(i: u64) -> String {
    format!("key{i:09}")
}

/// Keys per memtable: flushed by hand before `write_buffer_size` (about 117
/// entries of 140 charged bytes here) fills, so no
/// flush happens in the background.
const PER_FLUSH: u64 = 100;

/// The tree after loading every stored key in a scattered order (so levels
/// fill by merges, not trivial moves). Compactions are drained after every
/// flush, so the tree's shape does not depend on thread timing: both
/// allocations get the same runs (a timing-dependent shape once gave Monkey
/// five levels of runs against uniform's two, and the test failed).
fn load(style: CompactionStyle, alloc: BloomAllocation) -> (Db, Arc<MemVfs>) {
    let vfs = Arc::new(MemVfs::new());
    let db = Db::open("/db", options(style, alloc, vfs.clone())).unwrap();
    fill(&db);
    (db, vfs)
}

/// Writes every stored key as [`load`] does.
fn fill(db: &Db) {
    for i in 0..KEYS {
        // 7919 is prime and does not divide KEYS: a permutation.
        let k = (i * 7919) % KEYS;
        db.put(key(2 * k), format!("value-{k:034}")).unwrap();
        if (i + 1) % PER_FLUSH == 0 {
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
}

/// False-positive table probes per missing-key lookup.
fn wasted_probes(db: &Db) -> (f64, Stats) {
    let before = db.stats().filter_false_positives();
    for i in 0..MISSES {
        let k = (i * 104_729) % KEYS;
        assert_eq!(db.get(key(2 * k + 1)).unwrap(), None);
    }
    let s = db.stats();
    ((s.filter_false_positives() - before) as f64 / MISSES as f64, s)
}

/// Bits per key of the levels holding files, L0 first.
fn level_bits(s: &Stats) -> Vec<(usize, f64)> {
    s.levels.iter().filter(|l| l.files > 0).map(|l| (l.level, l.bloom_bits_per_key)).collect()
}

/// Rewrites the MANIFEST without its bloom-bits fields, as a version before
/// them wrote it.
fn strip_bloom_bits(vfs: &MemVfs, dir: &Path) {
    let number = read_current(vfs, dir).unwrap();
    let path = dir.join(format!("MANIFEST-{number:06}"));
    let mut edits = Vec::new();
    read_manifest(vfs, &path, |e| {
        edits.push(e);
        Ok(())
    })
    .unwrap();
    let mut w = LogWriter::new(vfs.create(&path).unwrap());
    for mut e in edits {
        for (_, _, f) in &mut e.new_files {
            f.bloom_bits_per_key = None;
        }
        let record = e.encode();
        assert_eq!(VersionEdit::decode(&record).unwrap(), e);
        w.add_record(&record).unwrap();
    }
    w.sync().unwrap();
}

/// Filter bits of the live tables (`Σ entries × bits`) and their entries.
fn filter_memory(vfs: &MemVfs) -> (f64, u64) {
    common::filters::live_filter_bits(vfs, Path::new("/db"))
}

/// Loads the tree under both allocations and measures missing-key lookups.
fn compare(style: CompactionStyle) -> [(f64, Stats, Db, Arc<MemVfs>); 2] {
    [BloomAllocation::Uniform, BloomAllocation::Monkey].map(|alloc| {
        let (db, vfs) = load(style.clone(), alloc);
        let (rate, stats) = wasted_probes(&db);
        eprintln!("{style:?} {alloc:?}: {rate:.4} wasted probes per missing key\n{stats}");
        for l in stats.levels.iter().filter(|l| l.files > 0 && l.level > 0) {
            assert!(l.filter_probes > 0, "L{} was never probed", l.level);
            assert!(l.filter_false_positives <= l.filter_positives && l.filter_positives <= l.filter_probes);
        }
        (rate, stats, db, vfs)
    })
}

/// Stepped merge is Monkey's own setting: every run spans the key range, so
/// every missing-key lookup asks every run's filter, and the sum of the
/// false-positive rates is the expected number of wasted probes.
#[test]
fn monkey_wastes_fewer_probes_than_uniform_at_the_same_memory() {
    let [(u_rate, u_stats, _, u_vfs), (m_rate, m_stats, _, m_vfs)] = compare(CompactionStyle::Tiered);
    for (l, b) in level_bits(&u_stats) {
        assert!((b - BITS).abs() < 1e-9, "uniform L{l} has {b} bits/key");
    }
    let m_bits = level_bits(&m_stats);
    assert!(m_bits.len() >= 3, "want several levels: {m_bits:?}");
    // Runs grow with depth, so bits fall with it: the deepest level (the
    // largest run) below the average, the levels above it more.
    assert!(m_bits.windows(2).all(|w| w[0].1 > w[1].1), "{m_bits:?}");
    assert!(m_bits[m_bits.len() - 1].1 < BITS && m_bits[0].1 > BITS + 2.0, "{m_bits:?}");
    assert!(m_rate < 0.75 * u_rate, "monkey {m_rate} vs uniform {u_rate} wasted probes per lookup");
    // At the same memory: no more filter bits than uniform's (the regression
    // was a tree whose large runs were sized while the levels above them were
    // empty, so it spent more than the budget).
    let ((u_bits, u_n), (m_bits, m_n)) = (filter_memory(&u_vfs), filter_memory(&m_vfs));
    assert_eq!(u_n, m_n);
    assert!((u_bits / u_n as f64 - BITS).abs() < 1e-9, "uniform {u_bits} bits for {u_n} entries");
    assert!(m_bits <= u_bits * (1.0 + 1e-9), "monkey {m_bits} filter bits vs uniform {u_bits}");
    eprintln!("filter bits per entry: monkey {:.3}, uniform {:.3}", m_bits / m_n as f64, u_bits / u_n as f64);
}

/// Under leveling the bits follow the level sizes the same way, are recorded
/// per file in the MANIFEST, and come back on reopen, also from a MANIFEST
/// written before it carried them (from the tables' properties).
#[test]
fn leveled_monkey_bits_follow_level_sizes_and_survive_reopen() {
    let [(u_rate, _, _, u_vfs), (m_rate, m_stats, monkey, vfs)] = compare(CompactionStyle::Leveled);
    // Leveled upper levels cover only part of the key range (round-robin
    // compaction drains them range by range), so lookups ask their filters
    // less often than the sizes assume: the gain is smaller than under tiering.
    eprintln!("leveled: monkey {m_rate:.4} vs uniform {u_rate:.4} wasted probes per missing key");
    let m_bits = level_bits(&m_stats);
    assert!(m_bits.len() >= 3, "want several levels: {m_bits:?}");
    let (top, deepest) = (m_bits[0], m_bits[m_bits.len() - 1]);
    assert!(top.1 > BITS + 2.0 && deepest.1 < BITS, "{m_bits:?}");
    assert!(m_rate < 0.75 * u_rate, "monkey {m_rate} vs uniform {u_rate} wasted probes per lookup");
    let ((u_bits, u_n), (f_bits, f_n)) = (filter_memory(&u_vfs), filter_memory(&vfs));
    assert_eq!(u_n, f_n);
    assert!(f_bits <= u_bits * (1.0 + 1e-9), "monkey {f_bits} filter bits vs uniform {u_bits}");

    monkey.close().unwrap();
    let opts = options(CompactionStyle::Leveled, BloomAllocation::Monkey, vfs.clone())
        .with_disable_auto_compactions(true);
    let db = Db::open("/db", opts.clone()).unwrap();
    assert_eq!(level_bits(&db.stats()), m_bits);
    db.close().unwrap();
    strip_bloom_bits(&vfs, Path::new("/db"));
    let db = Db::open("/db", opts).unwrap();
    let reread = level_bits(&db.stats());
    assert_eq!(reread.len(), m_bits.len());
    for (a, b) in reread.iter().zip(&m_bits) {
        assert!(a.0 == b.0 && (a.1 - b.1).abs() < 1e-9, "{reread:?} != {m_bits:?}");
    }
    assert_eq!(db.get(key(2)).unwrap(), Some(format!("value-{:034}", 1).into_bytes()));
}

/// Garnering with Monkey's bits, as Autumn pairs them: the full tree a table's
/// bits are sized for has Garnering's capacities (ratios `T / c^(L−i)`), and
/// the tree stays within uniform's filter memory. Before filters could be
/// rebuilt apart from their tables this tree gained nothing (0.052 wasted
/// probes per lookup either way): the tables of a level written while it was
/// the deepest kept the few bits they got then, and the budget they held was
/// what the levels above needed. Rebuilt filters free it.
#[test]
fn garnering_monkey_stays_within_the_budget_and_beats_uniform() {
    let [(u_rate, _, _, u_vfs), (m_rate, m_stats, _, m_vfs)] = compare(CompactionStyle::Garnering { c: 0.5 });
    eprintln!("garnering: monkey {m_rate:.4} vs uniform {u_rate:.4} wasted probes per missing key");
    let m_level_bits = level_bits(&m_stats);
    assert!(m_level_bits.len() >= 4, "want several levels: {m_level_bits:?}");
    assert!(
        m_level_bits.iter().any(|&(_, b)| (b - BITS).abs() > 0.5),
        "bits vary by level: {m_level_bits:?}"
    );
    let ((u_bits, u_n), (m_bits, m_n)) = (filter_memory(&u_vfs), filter_memory(&m_vfs));
    assert_eq!(u_n, m_n);
    assert!(m_bits <= u_bits * (1.0 + 1e-9), "monkey {m_bits} filter bits vs uniform {u_bits}");
    assert!(m_rate < 0.75 * u_rate, "monkey {m_rate} vs uniform {u_rate} wasted probes per lookup");
    assert!(m_stats.filter_rebuilds > 0, "no filter was rebuilt");
}

/// The files of a directory whose last bytes are a filter patch's footer.
fn patched_tables(vfs: &MemVfs, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = vfs.list_dir(Path::new(dir)).unwrap();
    names.retain(|n| {
        n.ends_with(".sst") && vfs.read_file(&Path::new(dir).join(n)).unwrap().ends_with(b"STRAFPAT")
    });
    names
}

/// Every stored key (a sample) reads back and no missing one does.
fn check_keys(db: &Db) {
    for k in (0..KEYS).step_by(7) {
        assert_eq!(db.get(key(2 * k)).unwrap(), Some(format!("value-{k:034}").into_bytes()), "key {k}");
        assert_eq!(db.get(key(2 * k + 1)).unwrap(), None);
    }
}

/// Filters rebuilt in place (a patch appended to the table, its data
/// untouched) are what a reopen, a checkpoint, a restored backup and a repair
/// read: every key found, the bits the MANIFEST recorded. Bytes of an
/// unfinished patch past a table's recorded end (a crash between the patch's
/// sync and its edit) are ignored by open and by repair.
#[test]
fn rebuilt_filters_survive_reopen_checkpoint_backup_and_repair() {
    let (db, vfs) = load(CompactionStyle::Leveled, BloomAllocation::Monkey);
    let stats = db.stats();
    assert!(stats.filter_rebuilds > 0, "no filter was rebuilt");
    let patched = patched_tables(&vfs, "/db");
    assert!(!patched.is_empty(), "no table ends in a filter patch");
    let bits = level_bits(&stats);
    db.checkpoint("/ckpt").unwrap();
    let engine = strata::BackupEngine::open_with_vfs("/b", vfs.clone()).unwrap();
    let id = engine.create_new_backup(&db).unwrap();
    db.close().unwrap();
    engine.restore_db_from_backup(id, "/restored").unwrap();
    // An unfinished patch after a committed one.
    let path = Path::new("/db").join(&patched[0]);
    let mut junk = vfs.read_file(&path).unwrap();
    junk.extend_from_slice(&[0x5a; 300]);
    junk.extend_from_slice(b"STRAFPAT");
    let mut f = vfs.create(&path).unwrap();
    f.append(&junk).unwrap();
    f.sync().unwrap();
    drop(f);
    let opts = options(CompactionStyle::Leveled, BloomAllocation::Monkey, vfs.clone())
        .with_disable_auto_compactions(true);
    for dir in ["/db", "/ckpt", "/restored"] {
        let db = Db::open(dir, opts.clone()).unwrap();
        assert_eq!(level_bits(&db.stats()), bits, "{dir}");
        check_keys(&db);
        db.close().unwrap();
    }
    let report = strata::repair("/db", opts.clone()).unwrap();
    assert_eq!((report.tables_damaged, report.tables_lost), (0, 0), "{report:?}");
    let db = Db::open("/db", opts).unwrap();
    check_keys(&db);
}

/// Light-weight compaction with Monkey: one-segment tables get their filters
/// rebuilt, and later segments appended after the patch (the first segment
/// then ends with it); every key reads back, before and after a reopen.
#[test]
fn lwc_appends_after_rebuilt_filters_and_reads_stay_exact() {
    let (db, vfs) = load(CompactionStyle::Lwc { max_segments: 4 }, BloomAllocation::Monkey);
    let s = db.stats();
    assert!(s.filter_rebuilds > 0, "no filter was rebuilt");
    let appended_after_patch = vfs
        .list_dir(Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| vfs.read_file(&Path::new("/db").join(n)).unwrap())
        .filter(|b| !b.ends_with(b"STRAFPAT") && b.windows(8).any(|w| w == b"STRAFPAT"))
        .count();
    assert!(appended_after_patch > 0, "no segment was appended after a filter patch");
    check_keys(&db);
    db.close().unwrap();
    let opts = options(CompactionStyle::Lwc { max_segments: 4 }, BloomAllocation::Monkey, vfs);
    let db = Db::open("/db", opts).unwrap();
    check_keys(&db);
}

/// A filter rebuild that fails in the OS call (the patch's append, its sync)
/// fails like any compaction: the database turns read-only, and a reopen
/// finds every key, rebuilds the filters and reads the tables as recorded.
#[test]
fn a_failed_filter_rebuild_keeps_every_key() {
    use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs, PathFilter};
    for op in [FaultOp::Append, FaultOp::Sync] {
        let vfs = FaultVfs::new(
            Arc::new(MemVfs::new()),
            FaultConfig::new(3).with_filter(PathFilter::extension("sst")),
        );
        let opts = |alloc| {
            options(CompactionStyle::Leveled, alloc, Arc::new(MemVfs::new())).with_vfs(Arc::new(vfs.clone()))
        };
        // Built with uniform bits: under Monkey the tables' shares differ, so
        // the first background task after the reopen is a rebuild.
        let db = Db::open("/db", opts(BloomAllocation::Uniform)).unwrap();
        fill(&db);
        db.close().unwrap();
        vfs.fail_after(op, 0, 1);
        let db = Db::open("/db", opts(BloomAllocation::Monkey)).unwrap();
        let e = db.wait_for_compactions().unwrap_err();
        assert_eq!(vfs.injected(op), 1, "{op}: {e}");
        assert!(e.to_string().contains("injected fault"), "{op}: {e}");
        assert!(db.put("k", "v").is_err(), "{op}: read-only after the failed rebuild");
        check_keys(&db);
        drop(db);
        vfs.disarm();
        let db = Db::open("/db", opts(BloomAllocation::Monkey)).unwrap();
        db.wait_for_compactions().unwrap();
        assert!(db.stats().filter_rebuilds > 0, "{op}: the rebuilds ran after the reopen");
        check_keys(&db);
    }
}
