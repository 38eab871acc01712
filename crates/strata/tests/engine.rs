//! Focused engine behaviour: flush, manual compaction, stats, iterator
//! pinning, snapshots across compactions, properties.

mod common;

use common::custom_policy::WrappedLeveled;
use strata::{Db, MemVfs, Options, ReadOptions};

fn opts() -> Options {
    Options::default()
        .with_vfs(std::sync::Arc::new(MemVfs::new()))
        .with_write_buffer_size(8 << 10)
        .with_target_file_size_base(4 << 10)
        .with_max_bytes_for_level_base(16 << 10)
        .with_level0_file_num_compaction_trigger(2)
        .with_block_size(512)
}

fn k(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn fill(db: &Db, range: std::ops::Range<u32>, tag: &str) {
    for i in range {
        db.put(k(i), format!("{tag}-{i}-{}", "x".repeat((i % 40) as usize))).unwrap();
    }
}

#[test]
fn manual_compaction_empties_l0_and_drops_tombstones() {
    let db = Db::open("/db", opts().with_disable_auto_compactions(true)).unwrap();
    fill(&db, 0..2000, "a");
    db.flush().unwrap();
    for i in 0..1000 {
        db.delete(k(i)).unwrap();
    }
    db.flush().unwrap();
    assert!(db.stats().levels[0].files >= 2);
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!(s.levels[0].files, 0, "{s}");
    assert!(s.compactions >= 1);
    // Deleted keys are gone from the bottom: no entries remain for them.
    assert_eq!(db.iter().count(), 1000);
    assert_eq!(db.get(k(5)).unwrap(), None);
    assert!(db.get(k(1500)).unwrap().is_some());
    let entries: u64 = s.levels.iter().map(|l| l.bytes).sum();
    assert!(entries > 0);
    assert!(db.property("strata.levels").unwrap().contains("L1"));
    assert_eq!(db.property("strata.num-files-at-level0").unwrap(), "0");
    assert_eq!(db.property("strata.policy").unwrap(), "leveled");
    assert!(matches!(db.property("strata.nope"), Err(strata::Error::InvalidArgument(_))));
}

#[test]
fn background_compaction_builds_levels_and_counts_write_amplification() {
    let db = Db::open("/db", opts()).unwrap();
    for round in 0..6 {
        fill(&db, 0..3000, &format!("r{round}"));
    }
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.compactions > 0, "{s}");
    assert!(s.write_amplification > 1.0, "{s}");
    assert!(s.levels.iter().skip(2).any(|l| l.files > 0), "expected a tree deeper than L1: {s}");
    assert!(s.user_bytes_written >= 6 * 3000 * 10, "user bytes not counted: {s}");
    for i in (0..3000).step_by(37) {
        let v = db.get(k(i)).unwrap().unwrap();
        assert!(v.starts_with(b"r5-"), "stale value for {i}");
    }
}

#[test]
fn iterators_and_snapshots_survive_compactions() {
    let vfs = std::sync::Arc::new(MemVfs::new());
    let db = Db::open("/db", opts().with_vfs(vfs.clone())).unwrap();
    fill(&db, 0..1500, "old");
    let snap = db.snapshot();
    let mut it = db.iter();
    let first = it.next().unwrap().unwrap();
    for round in 0..4 {
        fill(&db, 0..1500, &format!("new{round}"));
        for i in (0..1500).step_by(3) {
            db.delete(k(i)).unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    // The iterator still sees the state at its creation, files pinned.
    assert!(first.1.starts_with(b"old-"));
    let rest: Vec<_> = it.map(|r| r.unwrap()).collect();
    assert_eq!(rest.len(), 1499);
    assert!(rest.iter().all(|(_, v)| v.starts_with(b"old-")));
    // The snapshot too, through both APIs.
    assert!(snap.get(k(3)).unwrap().unwrap().starts_with(b"old-"));
    let ro = ReadOptions::default().with_snapshot(&snap);
    assert!(db.get_opt(k(3), &ro).unwrap().unwrap().starts_with(b"old-"));
    assert_eq!(snap.iter().count(), 1500);
    assert_eq!(db.get(k(3)).unwrap(), None);
    assert!(db.get(k(4)).unwrap().unwrap().starts_with(b"new3-"));
    drop(snap);
    db.compact_range(None, None).unwrap();
    // A background task the manual one made due may still be writing a table
    // the tree does not list yet.
    db.wait_for_compactions().unwrap();
    // Nothing pins the old files any more: every table on disk is in the tree
    // once the background threads have dropped the Versions they were looking
    // at (one may hold an old one for a moment; its files go when it drops).
    let on_disk = || {
        strata::Vfs::list_dir(&*vfs, std::path::Path::new("/db"))
            .unwrap()
            .into_iter()
            .filter(|n| n.ends_with(".sst"))
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let s = db.stats();
        assert!(s.files_deleted > 0, "{s}");
        let live = s.levels.iter().map(|l| l.files).sum::<usize>();
        if on_disk() == live {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "leaked table files: {} on disk\n{s}", on_disk());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn reverse_and_mixed_direction_iteration() {
    let db = Db::open("/db", opts()).unwrap();
    fill(&db, 0..500, "v");
    db.flush().unwrap();
    fill(&db, 250..300, "w");
    let mut it = db.range(k(100).as_slice()..k(110).as_slice());
    assert_eq!(it.next().unwrap().unwrap().0, k(100));
    assert_eq!(it.next_back().unwrap().unwrap().0, k(109));
    let middle: Vec<_> = it.map(|r| r.unwrap().0).collect();
    assert_eq!(middle, (101..109).map(k).collect::<Vec<_>>());
    let rev: Vec<_> = db.range(k(245).as_slice()..=k(255).as_slice()).rev().map(|r| r.unwrap()).collect();
    assert_eq!(rev.len(), 11);
    assert_eq!(rev[0].0, k(255));
    assert!(rev[0].1.starts_with(b"w-"));
    assert!(rev[10].1.starts_with(b"v-"));
    // Readahead changes how blocks are read, never what a scan returns.
    let all: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    for readahead in [1, 3000, 1 << 20] {
        let ro = ReadOptions::new().with_readahead_size(readahead);
        let got: Vec<_> = db.range_opt::<&[u8], _>(.., &ro).map(|r| r.unwrap()).collect();
        assert_eq!(got, all, "readahead {readahead}");
        let back: Vec<_> = db.range_opt::<&[u8], _>(.., &ro).rev().map(|r| r.unwrap()).collect();
        assert!(back.iter().rev().eq(all.iter()), "readahead {readahead}, reverse");
    }
}

#[test]
fn concurrent_writers_are_grouped_and_all_applied() {
    let db = std::sync::Arc::new(Db::open("/db", opts()).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..500u32 {
                    db.put(format!("t{t}-{i:04}"), format!("{i}")).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(db.iter().count(), 2000);
    for t in 0..4 {
        assert_eq!(db.get(format!("t{t}-0499")).unwrap().as_deref(), Some(&b"499"[..]));
    }
}

#[test]
fn concurrent_sync_writers_share_wal_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(Db::open(tmp.path(), Options::default()).unwrap());
    let wo = strata::WriteOptions::default().with_sync(true);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            let wo = wo.clone();
            std::thread::spawn(move || {
                for i in 0..150u32 {
                    db.put_opt(format!("t{t}-{i:04}"), b"v", &wo).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = db.stats();
    assert_eq!(s.writes, 600);
    assert!(s.wal_syncs <= s.write_groups && s.write_groups <= s.writes);
    // Four writers blocked on fsync queue up behind each other's leader.
    assert!(s.write_groups < s.writes, "no group commit happened: {s}");
}

#[test]
fn blsm_levels_split_into_receiving_and_draining_parts_and_survive_reopen() {
    let vfs = std::sync::Arc::new(MemVfs::new());
    let o = || {
        opts()
            .with_vfs(vfs.clone())
            .with_compaction_style(strata::CompactionStyle::Blsm)
            .with_max_bytes_for_level_base(24 << 10)
            .with_max_bytes_for_level_multiplier(4.0)
    };
    let db = Db::open("/db", o()).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let mut saw_two_part_level = false;
    for round in 0..12u32 {
        for i in 0..1500u32 {
            let key = (i * 7919 + round * 131) % 4000;
            let v = format!("r{round}-{i}-{}", "y".repeat((i % 30) as usize));
            db.put(k(key), &v).unwrap();
            model.insert(k(key), v.into_bytes());
        }
        db.flush().unwrap();
        // Sampling at quiescent points keeps the check independent of how
        // fast this machine's background thread is.
        db.wait_for_compactions().unwrap();
        let s = db.stats();
        saw_two_part_level |= s.levels.iter().skip(1).any(|l| l.runs == 2);
    }
    let s = db.stats();
    assert!(saw_two_part_level, "no level ever held C_i and C'_i: {s}");
    assert!(s.recent_compactions.iter().any(|c| c.kind == "state"), "no round turnover recorded: {s}");
    assert_eq!(db.property("strata.policy").unwrap(), "blsm");
    let got: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>());
    db.close().unwrap();
    // The draining part is persistent: after reopen the drain steps continue and data is intact.
    let db = Db::open("/db", o()).unwrap();
    for i in 0..3000u32 {
        let v = format!("after-{i}");
        db.put(k(i % 4000), &v).unwrap();
        model.insert(k(i % 4000), v.into_bytes());
    }
    db.flush().unwrap();
    for (key, v) in &model {
        assert_eq!(db.get(key).unwrap().as_ref(), Some(v));
    }
}

/// A VFS whose table creations take 20 ms, so flushes and compactions fall
/// behind a writer that only touches memory.
#[derive(Debug)]
struct SlowTables(MemVfs);

impl strata::Vfs for SlowTables {
    fn create_dir_all(&self, dir: &std::path::Path) -> strata::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn create(&self, path: &std::path::Path) -> strata::Result<Box<dyn strata::vfs::WritableFile>> {
        if path.extension().is_some_and(|e| e == "sst") {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.0.create(path)
    }
    fn open_sequential(
        &self,
        path: &std::path::Path,
    ) -> strata::Result<Box<dyn strata::vfs::SequentialFile>> {
        self.0.open_sequential(path)
    }
    fn open_random(
        &self,
        path: &std::path::Path,
        opts: strata::vfs::RandomOpenOptions,
    ) -> strata::Result<std::sync::Arc<dyn strata::vfs::RandomAccessFile>> {
        self.0.open_random(path, opts)
    }
    fn exists(&self, path: &std::path::Path) -> bool {
        self.0.exists(path)
    }
    fn file_size(&self, path: &std::path::Path) -> strata::Result<u64> {
        self.0.file_size(path)
    }
    fn remove_file(&self, path: &std::path::Path) -> strata::Result<()> {
        self.0.remove_file(path)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> strata::Result<()> {
        self.0.rename(from, to)
    }
    fn list_dir(&self, dir: &std::path::Path) -> strata::Result<Vec<String>> {
        self.0.list_dir(dir)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> strata::Result<()> {
        self.0.sync_dir(dir)
    }
    fn lock(&self, path: &std::path::Path) -> strata::Result<Box<dyn strata::vfs::FileLock>> {
        self.0.lock(path)
    }
}

/// Writes 500 puts of about 120 bytes with L0 held at the slowdown trigger,
/// under `delayed_write_rate(rate)`; returns the stats.
fn paced_writes(rate: u64) -> strata::Stats {
    let policy = WrappedLeveled::new("never-compacts", false);
    let o = Options::default()
        .with_vfs(std::sync::Arc::new(MemVfs::new()))
        .with_compaction_style(strata::CompactionStyle::Custom(std::sync::Arc::new(policy)))
        .with_level0_file_num_compaction_trigger(2)
        .with_level0_slowdown_writes_trigger(2)
        .with_level0_stop_writes_trigger(100)
        .with_delayed_write_rate(rate);
    let db = Db::open("/paced", o).unwrap();
    for round in 0..2 {
        db.put(format!("round{round}"), "v").unwrap();
        db.flush().unwrap();
    }
    assert_eq!(db.stats().levels[0].files, 2);
    for i in 0..500u32 {
        db.put(k(i), [b'v'; 110]).unwrap();
    }
    let s = db.stats();
    db.close().unwrap();
    s
}

/// Past the slowdown trigger every write is paced to `delayed_write_rate`
/// (RocksDB's delayed writes), instead of LevelDB's millisecond per write:
/// at 100 kB/s the 500 writes (about 60 kB) owe about 0.6 s of sleep, at
/// 1 GB/s nothing (the pace is never a millisecond behind).
#[test]
fn writes_past_the_slowdown_trigger_are_paced_to_the_delayed_write_rate() {
    let slow = paced_writes(100_000);
    assert_eq!(slow.slowdowns, 500, "{slow}");
    // The sleeps pay what the writes did not already take in real time;
    // 300 ms leaves the writes themselves 300 ms of a 600 ms pace.
    assert!(slow.stall_time >= std::time::Duration::from_millis(300), "{slow}");
    assert!(slow.stall_time <= std::time::Duration::from_millis(700), "{slow}");
    let fast = paced_writes(1 << 30);
    assert_eq!(fast.slowdowns, 500, "{fast}");
    assert_eq!(fast.stall_time, std::time::Duration::ZERO, "{fast}");
}

#[test]
fn a_writer_outrunning_flush_and_compaction_is_slowed_then_stopped_and_the_stall_is_counted() {
    let vfs = std::sync::Arc::new(SlowTables(MemVfs::new()));
    let o = opts()
        .with_vfs(vfs)
        .with_max_write_buffer_number(2)
        .with_level0_slowdown_writes_trigger(2)
        .with_level0_stop_writes_trigger(4);
    let db = Db::open("/stall", o).unwrap();
    fill(&db, 0..4000, "v");
    let s = db.stats();
    // Each memtable fills in well under the 20 ms a flush takes, so the
    // writer must have waited for a free memtable, and a compaction (also
    // slow) must have left L0 at the slowdown trigger for some writes.
    assert!(s.stops > 0, "no stop: {s:?}");
    assert!(s.slowdowns > 0, "no slowdown: {s:?}");
    assert!(s.stall_time > std::time::Duration::ZERO, "{s:?}");
    for i in (0..4000).step_by(97) {
        assert!(db.get(k(i)).unwrap().is_some(), "key {i} lost");
    }
}
