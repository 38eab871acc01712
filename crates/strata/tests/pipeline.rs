//! The compaction output pipeline: every mode turns the same inputs into the
//! same tables, snapshots' old versions included, and reports its stage times.

use std::path::Path;
use std::sync::Arc;

use strata::{CompactionPipeline, CompressionType, Db, MemVfs, Options, Vfs, WriteBatch};

const MODES: [CompactionPipeline; 5] = [
    CompactionPipeline::Sequential,
    CompactionPipeline::Pipelined,
    CompactionPipeline::Parallel { compute_threads: 2 },
    CompactionPipeline::Parallel { compute_threads: 3 },
    CompactionPipeline::Auto { max_compute_threads: 2 },
];

type Kv = Vec<(Vec<u8>, Vec<u8>)>;

fn options(mode: CompactionPipeline, vfs: Arc<dyn Vfs>) -> Options {
    Options::default()
        .with_vfs(vfs)
        .with_compaction_pipeline(mode)
        .with_compression(CompressionType::Zstd(3))
        .with_disable_auto_compactions(true)
        .with_write_buffer_size(1 << 20)
        .with_target_file_size_base(64 << 10)
        .with_block_size(512)
        // Parallel merges cut into many sub-tasks; the hot key's versions
        // (below) cover several sub-tasks' worth of input.
        .with_compaction_subtask_bytes(4 << 10)
}

fn collect(it: strata::DbIterator) -> Kv {
    it.map(|r| r.map(|kv| (kv.0.to_vec(), kv.1.to_vec())).expect("iterate")).collect()
}

/// Loads a fixed workload with a snapshot held over part of it, compacts
/// everything, and returns the table files' bytes by name and what the
/// latest state and the snapshot read.
fn run(mode: CompactionPipeline) -> (Vec<(String, Vec<u8>)>, Kv, Kv, String) {
    run_in(mode, &[])
}

/// [`run`] with the tables in data paths `paths` (none: the database directory).
fn run_in(mode: CompactionPipeline, paths: &[&str]) -> (Vec<(String, Vec<u8>)>, Kv, Kv, String) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let db = Db::open(dir, options(mode, vfs.clone()).with_db_paths(paths.iter().copied())).expect("open");
    let mut snap = None;
    for round in 0..6u32 {
        let mut b = WriteBatch::new();
        for i in 0..3000u32 {
            let k = format!("key{:06}", (i * 7919 + round * 13) % 5000);
            b.put(k.as_bytes(), format!("{round}-{i}-{}", "v".repeat((i % 40) as usize)).as_bytes());
            // One user key with many versions, spread over every table.
            b.put(b"key002500", format!("hot-{round}-{i}").as_bytes());
            if i % 11 == 0 {
                b.delete(format!("key{:06}", (i * 31) % 5000).as_bytes());
            }
        }
        db.write(b).expect("write");
        db.flush().expect("flush");
        if round == 2 {
            // Keeps the versions of rounds 0-2 alive through the compaction.
            snap = Some(db.snapshot());
        }
    }
    db.compact_range(None, None).expect("compact");
    let latest = collect(db.iter());
    let old = collect(snap.as_ref().expect("snapshot").iter());
    let report = db.property("strata.compaction-pipeline").expect("property");
    drop(snap);
    db.close().expect("close");
    let dirs: Vec<&Path> = if paths.is_empty() { vec![dir] } else { paths.iter().map(Path::new).collect() };
    let mut tables: Vec<(String, Vec<u8>)> = (dirs.iter())
        .flat_map(|d| vfs.list_dir(d).expect("list").into_iter().map(move |n| (d, n)))
        .filter(|(_, n)| n.ends_with(".sst"))
        .map(|(d, n)| {
            let bytes = vfs.read_file(&d.join(&n)).expect("read");
            (n, bytes)
        })
        .collect();
    tables.sort();
    (tables, latest, old, report)
}

/// The sub-task count in a `strata.compaction-pipeline` report.
fn subtask_count(report: &str) -> u64 {
    let line = report.lines().find(|l| l.starts_with("sub-tasks ")).expect("sub-task line");
    line["sub-tasks ".len()..].split(',').next().and_then(|n| n.parse().ok()).expect("count")
}

#[test]
fn every_mode_compacts_the_same_inputs_into_the_same_entries() {
    let (tables, latest, old, report) = run(CompactionPipeline::Sequential);
    assert!(tables.len() > 3, "{} tables", tables.len());
    assert!(
        old.iter().any(|(k, v)| k == b"key002500" && v.starts_with(b"hot-2-")),
        "snapshot lost its version"
    );
    assert!(latest.iter().any(|(k, v)| k == b"key002500" && v.starts_with(b"hot-5-")));
    assert!(report.contains("mode scp"), "{report}");
    for mode in &MODES[1..] {
        let (t, l, o, r) = run(*mode);
        assert_eq!(l, latest, "{mode:?}: latest state differs");
        assert_eq!(o, old, "{mode:?}: snapshot state differs");
        // Cut points may differ a little: a pipelined builder learns the
        // compression ratio as blocks are written, and settles the exact size
        // only once its estimate reaches the target.
        assert!(
            t.len().abs_diff(tables.len()) <= 1,
            "{mode:?}: {} tables, {} sequential",
            t.len(),
            tables.len()
        );
        let size = |t: &[(String, Vec<u8>)]| t.iter().map(|(_, b)| b.len()).sum::<usize>() as f64;
        assert!((size(&t) / size(&tables) - 1.0).abs() < 0.01, "{mode:?}: {} vs {}", size(&t), size(&tables));
        // Never cut short: every table but the last of the merge reaches the target.
        let short = t.iter().filter(|(_, b)| b.len() < 64 << 10).count();
        assert!(short <= 1, "{mode:?}: {short} tables below the target size");
        assert!(r.contains(&format!("mode {}", mode.name())), "{r}");
        let subtasks = subtask_count(&r);
        match mode {
            CompactionPipeline::Parallel { .. } => assert!(subtasks > 50, "{mode:?}: {r}"),
            _ => assert_eq!(subtasks, 0, "{mode:?}: {r}"),
        }
    }
}

/// The tables finished apart in a `strata.compaction-pipeline` report.
fn finished_apart(report: &str) -> u64 {
    let p = "tables finished apart ";
    let line = report.lines().find(|l| l.starts_with(p)).expect("finished-apart line");
    line[p.len()..].split(',').next().and_then(|n| n.parse().ok()).expect("count")
}

/// A pipelined merge finishes each table (last writes, sync) on a thread of
/// its own while the next fills, in the database directory and over two data
/// paths (S-PPCP), and writes what the sequential merge writes; a sequential
/// merge never does.
#[test]
fn pipelined_outputs_finish_tables_apart_and_write_the_same_entries() {
    for paths in [&[][..], &["/data-a", "/data-b"][..]] {
        let (tables, latest, old, report) = run_in(CompactionPipeline::Sequential, paths);
        assert_eq!(finished_apart(&report), 0, "{report}");
        for mode in &MODES[1..] {
            let (t, l, o, r) = run_in(*mode, paths);
            assert_eq!(l, latest, "{mode:?} {paths:?}: latest state differs");
            assert_eq!(o, old, "{mode:?} {paths:?}: snapshot state differs");
            assert!(
                t.len().abs_diff(tables.len()) <= 1,
                "{mode:?}: {} tables, {} sequential",
                t.len(),
                tables.len()
            );
            // Every table the merges wrote, at least the final ones (`Auto`
            // may choose `Sequential` from the stage times it measured).
            if !matches!(mode, CompactionPipeline::Auto { .. }) {
                assert!(finished_apart(&r) as usize >= t.len(), "{mode:?} {paths:?}: {r}");
            }
        }
    }
}

#[test]
fn stage_times_are_reported_for_merges() {
    for mode in MODES {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let db = Db::open("/db", options(mode, vfs)).expect("open");
        for round in 0..3u32 {
            for i in 0..4000u32 {
                db.put(format!("k{i:05}"), format!("{round}{}", "x".repeat(60))).expect("put");
            }
            db.flush().expect("flush");
        }
        db.compact_range(None, None).expect("compact");
        let s = db.stats();
        assert!(s.compactions > 0);
        assert!(
            s.compaction_stages.compute > std::time::Duration::ZERO,
            "{mode:?}: {:?}",
            s.compaction_stages
        );
        assert!(s.compaction_stages.write > std::time::Duration::ZERO, "{mode:?}: {:?}", s.compaction_stages);
        // The read stage: every merge reads its inputs through readahead windows.
        assert!(s.compaction_stages.read > std::time::Duration::ZERO, "{mode:?}: {:?}", s.compaction_stages);
        assert!(s.compaction_time >= s.compaction_stages.merge_waiting, "{mode:?}");
        // The CPU of every thread the merges used, the task's own included.
        assert!(s.compaction_stages.cpu > std::time::Duration::ZERO, "{mode:?}: {:?}", s.compaction_stages);
        if mode == CompactionPipeline::Sequential {
            assert_eq!(s.compaction_stages.merge_waiting, std::time::Duration::ZERO);
            // On the task's own thread, compute and write are part of its wall time.
            assert!(s.compaction_time >= s.compaction_stages.compute + s.compaction_stages.write);
        }
        let merges = s.recent_compactions.iter().filter(|r| r.kind == "merge");
        assert!(merges.clone().count() > 0);
        assert!(merges.clone().all(|r| r.stages.compute > std::time::Duration::ZERO));
        // Each task records the mode it ran with; `Auto` is resolved to one of the others.
        for r in &s.recent_compactions {
            match mode {
                CompactionPipeline::Auto { .. } => {
                    assert!(!matches!(r.pipeline, CompactionPipeline::Auto { .. }), "{r:?}")
                }
                m if r.kind == "merge" || r.kind == "flush" => assert_eq!(r.pipeline, m),
                _ => {}
            }
        }
    }
}

#[test]
fn invalid_compute_thread_counts_are_refused() {
    for k in [0, 65] {
        let o = Options::default()
            .with_vfs(Arc::new(MemVfs::new()))
            .with_compaction_pipeline(CompactionPipeline::Parallel { compute_threads: k });
        let Err(e) = Db::open("/db", o) else { panic!("compute_threads {k} accepted") };
        assert!(e.to_string().contains("compute_threads"), "{e}");
    }
    assert!(CompactionPipeline::parse("c-ppcp", 3).is_ok_and(|p| p.name() == "c-ppcp(3)"));
    assert!(CompactionPipeline::parse("zip", 2).is_err());
}

/// A read error in a parallel merge — in the read stage or in a sub-task
/// thread's own read — fails the merge with every thread joined, names no
/// partial output, and loses nothing: the database turns read-only, as on
/// any failed compaction, and a reopen compacts it.
#[test]
fn read_errors_in_a_parallel_merge_fail_it_cleanly() {
    use strata::vfs::testing::{FaultConfig, FaultKind, FaultVfs, PathFilter};
    let vfs =
        FaultVfs::new(Arc::new(MemVfs::new()), FaultConfig::new(5).with_filter(PathFilter::extension("sst")));
    let opts = options(CompactionPipeline::Parallel { compute_threads: 2 }, Arc::new(vfs.clone()))
        .with_compaction_subtask_bytes(2 << 10)
        .with_block_cache_capacity(0);
    let db = Db::open("/db", opts).expect("open");
    for round in 0..4u32 {
        for i in 0..2000u32 {
            let (k, v) = (format!("key{:05}", (i * 7919 + round) % 3000), format!("{round}-{i}"));
            db.put(&k, &v).expect("put");
        }
        db.flush().expect("flush");
    }
    let want = collect(db.iter());
    vfs.set_config(
        FaultConfig::new(6).with_filter(PathFilter::extension("sst")).with_rate(FaultKind::Read, 0.05),
    );
    let mut failed = 0;
    for _ in 0..5 {
        if db.compact_range(None, None).is_err() {
            failed += 1;
        }
    }
    assert!(failed > 0 && vfs.injected_kind(FaultKind::Read) > 0, "faults must hit the merge");
    vfs.set_enabled(false);
    assert_eq!(collect(db.iter()), want, "a failed merge loses nothing");
    let _ = db.close();
    let opts = options(CompactionPipeline::Parallel { compute_threads: 2 }, Arc::new(vfs.clone()))
        .with_compaction_subtask_bytes(2 << 10);
    let db = Db::open("/db", opts).expect("reopen");
    assert_eq!(collect(db.iter()), want);
    db.compact_range(None, None).expect("compacts once the reads work");
    assert_eq!(collect(db.iter()), want);
}

/// `Auto` pipelines only work someone waits on: the flush of a full memtable
/// while writes run free is sequential (a pipeline's threads would only take
/// the writers' CPU), and `flush()`, which its caller waits on, follows the
/// stage model. (With no history, which is each fresh database's case, the
/// model says pipelined; the model's own choices are `compaction/auto.rs`'s
/// unit tests.)
#[test]
fn auto_pipelines_only_what_someone_waits_on() {
    for manual_first in [true, false] {
        let opts = Options::default()
            .with_vfs(Arc::new(MemVfs::new()))
            .with_compaction_pipeline(CompactionPipeline::Auto { max_compute_threads: 2 })
            .with_compression(CompressionType::Zstd(3))
            .with_write_buffer_size(64 << 10)
            // One sealed memtable cannot stop writes, and one L0 table is far
            // from the slowdown trigger: nothing waits on the background flush.
            .with_max_write_buffer_number(4);
        let db = Db::open("/db", opts).unwrap();
        let put = |from: u32, to: u32| {
            for i in from..to {
                db.put(format!("k{i:08}"), vec![b'v'; 100]).unwrap();
            }
        };
        if manual_first {
            put(0, 10);
            db.flush().unwrap();
        }
        // About 70 KiB: one memtable fills and is flushed in the background.
        put(10, 600);
        db.wait_for_compactions().unwrap();
        let s = db.stats();
        let flushes: Vec<_> = s.recent_compactions.iter().filter(|r| r.kind == "flush").collect();
        let full: Vec<_> = flushes.iter().filter(|r| r.reason == "memtable full").collect();
        assert_eq!(full.len(), 1, "{flushes:?}");
        assert_eq!(full[0].pipeline, CompactionPipeline::Sequential, "{:?}", full[0]);
        if manual_first {
            let manual: Vec<_> = flushes.iter().filter(|r| r.reason == "manual flush").collect();
            assert_eq!(manual.len(), 1, "{flushes:?}");
            assert_eq!(manual[0].pipeline, CompactionPipeline::Pipelined, "{:?}", manual[0]);
        }
    }
}
