//! Fault injection (issue 5, item 2): I/O errors injected by `FaultVfs` into
//! WAL, table, MANIFEST and metadata operations, under every built-in policy.
//! The promises: a failed write or sync returns the error and turns the
//! database read-only (`Error::ReadOnly`), reads keep working, and reopening
//! with faults off loses no acknowledged write and never shows a failed write
//! partially. Read faults surface as errors, never as wrong values.
//!
//! `STRATA_FAULT_SEEDS=N` runs N fault storms per policy (default 400 in all);
//! `STRATA_FAULT_DEBUG=1` prints each storm's injected faults. Background
//! threads make a storm's exact interleaving vary between runs of one seed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::vfs::testing::{FaultConfig, FaultKind, FaultOp, FaultVfs, PathFilter};
use strata::{CompactionPipeline, CompactionStyle, Db, Error, MemVfs, Options, WriteBatch, WriteOptions};

type Kv = BTreeMap<Vec<u8>, Vec<u8>>;

fn policies() -> Vec<(&'static str, CompactionStyle)> {
    CompactionStyle::builtin_names()
        .iter()
        .map(|&n| (n, CompactionStyle::from_name(n).expect("built-in policy")))
        .collect()
}

/// A fresh in-memory file system behind a fault injector with nothing armed.
fn fault_fs(cfg: FaultConfig) -> FaultVfs {
    FaultVfs::new(Arc::new(MemVfs::new()), cfg)
}

fn db_path() -> PathBuf {
    PathBuf::from("/db")
}

/// Small sizes so flushes and compactions happen within a few hundred writes.
fn small_opts(style: &CompactionStyle, vfs: &FaultVfs) -> Options {
    // dLSM runs its aggressive compaction whenever it has nothing else to do.
    let idle = matches!(style, CompactionStyle::Dlsm).then_some(std::time::Duration::ZERO);
    Options::default()
        .with_compaction_style(style.clone())
        .with_idle_compaction(idle)
        .with_vfs(Arc::new(vfs.clone()))
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_level0_file_num_compaction_trigger(2)
        .with_level0_slowdown_writes_trigger(8)
        .with_level0_stop_writes_trigger(12)
        .with_block_size(512)
        .with_block_cache_capacity(16 << 10)
        .with_max_open_files(16)
        // Both read caches on, so faults meet their fill and invalidation paths.
        .with_row_cache(8 << 10)
        .with_compaction_warmup(true)
}

/// Large memtable, no background compaction: flushes happen only when asked.
fn manual_opts(style: &CompactionStyle, vfs: &FaultVfs) -> Options {
    small_opts(style, vfs).with_write_buffer_size(4 << 20).with_disable_auto_compactions(true)
}

fn open(path: &Path, opts: Options) -> Db {
    Db::open(path, opts).expect("open")
}

fn is_injected(e: &Error) -> bool {
    e.to_string().contains("injected fault")
}

/// Every pair in the database, failing on any error.
fn dump(db: &Db) -> Kv {
    db.iter().collect::<Result<Kv, _>>().expect("scan")
}

/// Equality with a readable first difference.
fn same(got: &Kv, want: &Kv) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let keys: BTreeSet<_> = got.keys().chain(want.keys()).collect();
    let k = keys.into_iter().find(|k| got.get(*k) != want.get(*k)).expect("a difference");
    Err(format!(
        "{} keys vs {} expected; first difference at {:?}: got {:?}, want {:?}",
        got.len(),
        want.len(),
        String::from_utf8_lossy(k),
        got.get(k).map(|v| String::from_utf8_lossy(v).into_owned()),
        want.get(k).map(|v| String::from_utf8_lossy(v).into_owned()),
    ))
}

// ---------------------------------------------------------------------------
// The model of acknowledged and failed writes.

/// One attempted write: its operations (`None` = delete) and whether it was acknowledged.
#[derive(Clone, Debug)]
struct Attempt {
    ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    acked: bool,
}

/// Every write attempted, in order. What may be on disk after a reopen: per
/// key, the latest acknowledged value, or the value of a failed write
/// attempted after it; and a failed write is there entirely or not at all.
#[derive(Default, Debug)]
struct History {
    attempts: Vec<Attempt>,
}

impl History {
    fn record(&mut self, ops: Vec<(Vec<u8>, Option<Vec<u8>>)>, acked: bool) {
        self.attempts.push(Attempt { ops, acked });
    }

    /// The state a live handle must show: acknowledged writes only.
    fn acked_state(&self) -> Kv {
        let mut m = Kv::new();
        for a in self.attempts.iter().filter(|a| a.acked) {
            for (k, v) in &a.ops {
                match v {
                    Some(v) => m.insert(k.clone(), v.clone()),
                    None => m.remove(k),
                };
            }
        }
        m
    }

    /// Checks a recovered state against the rules above.
    fn check_recovered(&self, got: &Kv) -> Result<(), String> {
        // Per key: the index of the last acknowledged write touching it.
        let mut last_ack: BTreeMap<&[u8], usize> = BTreeMap::new();
        let mut touched: BTreeSet<&[u8]> = BTreeSet::new();
        for (i, a) in self.attempts.iter().enumerate() {
            for (k, _) in &a.ops {
                touched.insert(k);
                if a.acked {
                    last_ack.insert(k, i);
                }
            }
        }
        let value_in = |i: usize, k: &[u8]| -> Option<Option<&Vec<u8>>> {
            self.attempts[i].ops.iter().rev().find(|(kk, _)| kk == k).map(|(_, v)| v.as_ref())
        };
        for k in got.keys() {
            if !touched.contains(k.as_slice()) {
                return Err(format!("key {:?} was never written", String::from_utf8_lossy(k)));
            }
        }
        // What a key may hold: (attempt, value) for its last acknowledged write
        // (attempt None and no value if there is none) and every later failed one.
        let candidates = |k: &[u8]| -> Vec<(Option<usize>, Option<&Vec<u8>>)> {
            let start = last_ack.get(k).copied();
            let mut c = vec![(start, start.and_then(|i| value_in(i, k)).flatten())];
            for i in start.map_or(0, |s| s + 1)..self.attempts.len() {
                if let Some(v) = value_in(i, k) {
                    c.push((Some(i), v));
                }
            }
            c
        };
        for &k in &touched {
            let seen = got.get(k);
            let allowed: Vec<Option<&Vec<u8>>> = candidates(k).into_iter().map(|(_, v)| v).collect();
            if !allowed.contains(&seen) {
                return Err(format!(
                    "key {:?}: recovered {:?}, allowed {:?}",
                    String::from_utf8_lossy(k),
                    seen.map(|v| String::from_utf8_lossy(v).into_owned()),
                    allowed
                        .iter()
                        .map(|v| v.map(|v| String::from_utf8_lossy(v).into_owned()))
                        .collect::<Vec<_>>()
                ));
            }
        }
        // Atomicity: judge a failed write by the keys no later attempt touched.
        // It is evidently present where a key holds its value and no other
        // candidate's, evidently absent where a key holds something else.
        for (i, a) in self.attempts.iter().enumerate().filter(|(_, a)| !a.acked) {
            let later: BTreeSet<&[u8]> =
                self.attempts[i + 1..].iter().flat_map(|b| b.ops.iter().map(|(k, _)| k.as_slice())).collect();
            let (mut present, mut absent) = (false, false);
            for (k, _) in a.ops.iter().filter(|(k, _)| !later.contains(k.as_slice())) {
                let mine = value_in(i, k).flatten();
                if got.get(k) == mine {
                    present |= candidates(k).iter().all(|&(j, v)| j == Some(i) || v != mine);
                } else {
                    absent = true;
                }
            }
            if present && absent {
                let detail: Vec<String> = a
                    .ops
                    .iter()
                    .map(|(k, _)| {
                        format!(
                            "{}: mine {:?} got {:?} later-touched {}",
                            String::from_utf8_lossy(k),
                            value_in(i, k)
                                .flatten()
                                .map(|v| String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned()),
                            got.get(k).map(|v| String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned()),
                            later.contains(k.as_slice())
                        )
                    })
                    .collect();
                if std::env::var("STRATA_FAULT_DEBUG").is_ok() {
                    for (k, _) in &a.ops {
                        for (j, b) in self.attempts.iter().enumerate() {
                            if let Some(v) = value_in(j, k) {
                                eprintln!(
                                    "  {} #{j} acked={} {:?}",
                                    String::from_utf8_lossy(k),
                                    b.acked,
                                    v.map(|v| String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned())
                                );
                            }
                        }
                    }
                }
                return Err(format!(
                    "failed write #{i} of {} was recovered partially: {}",
                    self.attempts.len(),
                    detail.join("; ")
                ));
            }
        }
        Ok(())
    }
}

fn put_ops(prefix: &str, n: usize, tag: &str) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    (0..n)
        .map(|i| (format!("{prefix}{i:04}").into_bytes(), Some(format!("{tag}-{i}").into_bytes())))
        .collect()
}

fn batch_of(ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in ops {
        match v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        }
    }
    b
}

/// Applies one write and records its outcome.
fn attempt(db: &Db, h: &mut History, ops: Vec<(Vec<u8>, Option<Vec<u8>>)>, sync: bool) -> Result<(), Error> {
    let r = db.write_opt(batch_of(&ops), &WriteOptions::default().with_sync(sync));
    h.record(ops, r.is_ok());
    r
}

/// Acknowledged writes over a few key ranges, some overwriting, some deleting.
fn acked_workload(db: &Db, h: &mut History, tag: &str, sync: bool) {
    for round in 0..6 {
        let mut ops = put_ops(&format!("k{round}-"), 8, &format!("{tag}{round}"));
        ops.push((b"k0-0001".to_vec(), Some(format!("{tag}-over-{round}").into_bytes())));
        if round > 0 {
            ops.push((format!("k{}-0002", round - 1).into_bytes(), None));
        }
        attempt(db, h, ops, sync).expect("acknowledged write");
    }
}

/// The write that will meet the fault: new keys, an overwrite and a delete.
fn doomed_ops() -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut ops = put_ops("doomed-", 5, "doomed");
    ops.push((b"k1-0003".to_vec(), Some(b"doomed-overwrite".to_vec())));
    ops.push((b"k1-0004".to_vec(), None));
    ops
}

/// After a failure: writes are refused with `ReadOnly`, reads still see every
/// acknowledged write.
fn assert_read_only(db: &Db, h: &History, ctx: &str) {
    match db.put(b"after-failure", b"x") {
        Err(Error::ReadOnly(msg)) => {
            assert!(msg.contains("injected fault"), "{ctx}: unclear ReadOnly reason: {msg}")
        }
        other => panic!("{ctx}: write after a failure: expected ReadOnly, got {other:?}"),
    }
    assert!(matches!(db.flush(), Err(Error::ReadOnly(_))), "{ctx}: flush after a failure");
    if let Err(e) = same(&dump(db), &h.acked_state()) {
        panic!("{ctx}: reads after the failure: {e}");
    }
}

/// Reopens with faults off and checks the recovered state; then the database must accept writes.
fn reopen_and_check(vfs: &FaultVfs, opts: Options, h: &History, ctx: &str) {
    vfs.set_enabled(false);
    vfs.disarm();
    let db = open(&db_path(), opts);
    if let Err(e) = h.check_recovered(&dump(&db)) {
        panic!("{ctx}: after reopen: {e}");
    }
    db.put(b"after-reopen", b"ok").unwrap_or_else(|e| panic!("{ctx}: write after reopen: {e}"));
    db.close().expect("close");
}

// ---------------------------------------------------------------------------
// WAL faults.

#[test]
fn failed_wal_write_or_sync_fails_the_write_then_read_only_and_reopen_keeps_acked() {
    // (op, armed skip, sync write): a failed sync, a torn header, a torn payload, a failed flush.
    let cases = [
        (FaultOp::Sync, 0, true),
        (FaultOp::Append, 0, true),
        (FaultOp::Append, 1, true),
        (FaultOp::Flush, 0, false),
    ];
    for (name, style) in policies() {
        for (op, skip, sync) in cases {
            let ctx = format!("{name}: WAL {op} (skip {skip})");
            let cfg = FaultConfig::new(5).with_filter(PathFilter::extension("log")).with_torn_writes(true);
            let vfs = fault_fs(cfg);
            let db = open(&db_path(), manual_opts(&style, &vfs));
            let mut h = History::default();
            acked_workload(&db, &mut h, "a", sync);
            vfs.fail_after(op, skip, 1);
            let err =
                attempt(&db, &mut h, doomed_ops(), sync).expect_err("the write meeting the fault must fail");
            assert!(matches!(err, Error::Io(_)) && is_injected(&err), "{ctx}: got {err}");
            assert_eq!(vfs.injected(op), 1, "{ctx}");
            assert_read_only(&db, &h, &ctx);
            drop(db);
            reopen_and_check(&vfs, manual_opts(&style, &vfs), &h, &ctx);
        }
    }
}

// ---------------------------------------------------------------------------
// Table and MANIFEST faults during flush and compaction.

/// Arms `op` on paths `filter` matches, runs `job` (a flush or compaction), and
/// checks the failure, read-only mode and recovery.
/// A fault armed at the first call must hit every policy's run.
fn check_hit(skip: u64, hits: usize) -> usize {
    assert!(skip > 0 || hits == policies().len(), "the first call was never made ({hits} hits)");
    hits
}

/// Returns how many runs (one per policy) the fault actually hit.
/// The output pipeline a background-fault run uses: every mode in turn, so a
/// table append fails inside the write thread as well as on the task's own.
/// A pipelined output finishes each table (last writes, sync) on a thread of
/// its own, so faults hit there too; `Parallel` runs also alternate tables
/// between two data paths (S-PPCP: a table finishing on each at once).
fn pipeline_for(i: usize) -> CompactionPipeline {
    [
        CompactionPipeline::Sequential,
        CompactionPipeline::Pipelined,
        CompactionPipeline::Parallel { compute_threads: 2 },
    ][i % 3]
}

fn background_fault(filter: PathFilter, op: FaultOp, skip: u64, compaction: bool) -> usize {
    let mut hit = 0;
    for (i, (name, style)) in policies().into_iter().enumerate() {
        let pipeline = pipeline_for(i + skip as usize);
        let ctx = format!(
            "{name} {}: {op} (skip {skip}) on {filter:?} during {}",
            pipeline.name(),
            if compaction { "compaction" } else { "flush" }
        );
        let vfs = fault_fs(FaultConfig::new(9).with_filter(filter.clone()).with_torn_writes(true));
        let manual_opts = |style: &CompactionStyle, vfs: &FaultVfs| {
            // Tiny sub-tasks: a parallel merge's reads fail on its sub-task threads.
            let o = manual_opts(style, vfs)
                .with_compaction_pipeline(pipeline)
                .with_compaction_subtask_bytes(1 << 10);
            match pipeline {
                CompactionPipeline::Parallel { .. } => o.with_db_paths(["/db", "/db-data"]),
                _ => o,
            }
        };
        let db = open(&db_path(), manual_opts(&style, &vfs));
        let mut h = History::default();
        acked_workload(&db, &mut h, "a", false);
        if compaction {
            db.flush().expect("flush");
            acked_workload(&db, &mut h, "b", false);
            db.flush().expect("flush");
            acked_workload(&db, &mut h, "c", false);
        }
        vfs.fail_after(op, skip, 1);
        let r = if compaction { db.compact_range(None, None) } else { db.flush() };
        if vfs.injected(op) == 0 {
            // Fewer calls than `skip`: the sweep went past the job's last call.
            assert!(r.is_ok(), "{ctx}: failed without an injected fault: {r:?}");
            drop(db);
            reopen_and_check(&vfs, manual_opts(&style, &vfs), &h, &ctx);
            continue;
        }
        hit += 1;
        match &r {
            Err(e) if is_injected(e) => {}
            // Errors of cleanup the engine ignores (removing a file) are not failures.
            Ok(()) if op == FaultOp::Remove => {
                drop(db);
                reopen_and_check(&vfs, manual_opts(&style, &vfs), &h, &ctx);
                continue;
            }
            other => panic!("{ctx}: expected the injected error, got {other:?}"),
        }
        assert_read_only(&db, &h, &ctx);
        drop(db);
        reopen_and_check(&vfs, manual_opts(&style, &vfs), &h, &ctx);
    }
    hit
}

#[test]
fn failed_table_write_or_sync_during_flush_keeps_acked_writes() {
    let mut hits = 0;
    for (op, skips) in [(FaultOp::Create, 1), (FaultOp::Append, 4), (FaultOp::Sync, 1)] {
        for skip in 0..skips {
            hits += check_hit(skip, background_fault(PathFilter::extension("sst"), op, skip, false));
        }
    }
    eprintln!("failed_table_write_or_sync_during_flush_keeps_acked_writes: {hits} runs hit by the fault");
    assert!(hits > 0);
}

#[test]
fn failed_table_write_or_sync_during_compaction_keeps_acked_writes() {
    let mut hits = 0;
    for (op, skips) in [
        (FaultOp::Create, 2),
        (FaultOp::Append, 4),
        (FaultOp::Sync, 2),
        (FaultOp::Open, 2),
        (FaultOp::ReadAt, 4),
    ] {
        for skip in 0..skips {
            hits += check_hit(skip, background_fault(PathFilter::extension("sst"), op, skip, true));
        }
    }
    eprintln!(
        "failed_table_write_or_sync_during_compaction_keeps_acked_writes: {hits} runs hit by the fault"
    );
    assert!(hits > 0);
}

#[test]
fn failed_manifest_write_or_sync_keeps_acked_writes() {
    let mut hits = 0;
    for op in [FaultOp::Append, FaultOp::Sync] {
        for skip in 0..2 {
            for compaction in [false, true] {
                hits += check_hit(
                    skip,
                    background_fault(PathFilter::name_prefix("MANIFEST-"), op, skip, compaction),
                );
            }
        }
    }
    eprintln!("failed_manifest_write_or_sync_keeps_acked_writes: {hits} runs hit by the fault");
    assert!(hits > 0);
}

#[test]
fn failed_directory_operations_during_flush_and_compaction_keep_acked_writes() {
    let mut hits = 0;
    for op in [FaultOp::SyncDir, FaultOp::Remove] {
        for skip in 0..3 {
            for compaction in [false, true] {
                hits += check_hit(skip, background_fault(PathFilter::all(), op, skip, compaction));
            }
        }
    }
    eprintln!("failed_directory_operations_during_flush_and_compaction_keep_acked_writes: {hits} runs hit by the fault");
    assert!(hits > 0);
}

// ---------------------------------------------------------------------------
// Faults while opening: every call of each kind, one at a time.

#[test]
fn every_fault_during_recovery_is_an_error_and_a_clean_reopen_recovers_all() {
    let ops = [
        FaultOp::ListDir,
        FaultOp::Lock,
        FaultOp::Open,
        FaultOp::SequentialRead,
        FaultOp::Create,
        FaultOp::Append,
        FaultOp::Sync,
        FaultOp::SyncDir,
        FaultOp::Rename,
        FaultOp::Remove,
        FaultOp::FileSize,
    ];
    let mut attempts = 0;
    for (name, style) in policies() {
        for op in ops {
            // The info log's failures are ignored by design (tests/info_log.rs): faults spare it.
            let not_log = PathFilter::new("all but LOG*", |p| {
                !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("LOG"))
            });
            let vfs = fault_fs(FaultConfig::new(13).with_torn_writes(true).with_filter(not_log));
            let mut h = History::default();
            let opts = || manual_opts(&style, &vfs);
            {
                let db = open(&db_path(), opts());
                acked_workload(&db, &mut h, "a", true);
                db.flush().expect("flush");
                acked_workload(&db, &mut h, "b", true);
            }
            for skip in 0..40u64 {
                let ctx = format!("{name}: {op} #{skip} during open");
                vfs.set_enabled(true);
                vfs.fail_after(op, skip, 1);
                let r = Db::open(db_path(), opts());
                let fired = vfs.armed_remaining(op) == 0;
                vfs.disarm();
                attempts += 1;
                match r {
                    Err(e) => assert!(fired && is_injected(&e), "{ctx}: open failed with {e}"),
                    Ok(db) => {
                        // Only a best-effort cleanup call may fail without failing the open.
                        assert!(!fired || op == FaultOp::Remove, "{ctx}: open ignored an injected fault");
                        drop(db);
                    }
                }
                vfs.set_enabled(false);
                let db = open(&db_path(), opts());
                if let Err(e) = h.check_recovered(&dump(&db)) {
                    panic!("{ctx}: clean reopen: {e}");
                }
                // New WAL contents for the next open to replay.
                acked_workload(&db, &mut h, &format!("s{skip}"), true);
                drop(db);
                if !fired {
                    break;
                }
            }
        }
    }
    eprintln!("{attempts} faulty opens");
}

// ---------------------------------------------------------------------------
// Read faults.

#[test]
fn read_faults_return_errors_never_wrong_values() {
    for (name, style) in policies() {
        let vfs = fault_fs(FaultConfig::new(21).with_filter(PathFilter::extension("sst")));
        let mut model = Kv::new();
        {
            let db = open(&db_path(), small_opts(&style, &vfs));
            for i in 0..3000u32 {
                let k = format!("key{:05}", (i * 7919) % 2000).into_bytes();
                let v = format!("v{i}-{}", "x".repeat((i % 40) as usize)).into_bytes();
                db.put(&k, &v).expect("put");
                model.insert(k, v);
            }
            db.compact_range(None, None).expect("compact");
            for i in 0..300u32 {
                let k = format!("key{:05}", i * 3).into_bytes();
                db.put(&k, b"fresh").expect("put");
                model.insert(k, b"fresh".to_vec());
            }
            db.flush().expect("flush");
        }
        // No cache and no background work: every read reaches the file.
        let opts = (small_opts(&style, &vfs).with_block_cache_capacity(0).with_row_cache(0))
            .with_compaction_warmup(false)
            .with_disable_auto_compactions(true);
        let db = open(&db_path(), opts);
        vfs.set_config(
            FaultConfig::new(22).with_filter(PathFilter::extension("sst")).with_rate(FaultKind::Read, 0.2),
        );
        let (ok, errors) = check_reads_under_faults(&db, &model).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(ok > 100 && errors > 100, "{name}: {ok} good reads, {errors} errors: faults must show");
        assert!(vfs.injected_kind(FaultKind::Read) > 0);
        // Transient read errors poison nothing.
        vfs.set_enabled(false);
        same(&dump(&db), &model).unwrap_or_else(|e| panic!("{name}: after read faults: {e}"));
        db.put(b"zz", b"writes still work")
            .unwrap_or_else(|e| panic!("{name}: write after read faults: {e}"));
    }
}

/// Gets every model key and scans from several points both ways; each answer
/// must be right or an injected I/O error. Returns (right answers, errors).
fn check_reads_under_faults(db: &Db, model: &Kv) -> Result<(usize, usize), String> {
    let (mut ok, mut errors) = (0, 0);
    for (k, v) in model {
        match db.get(k) {
            Ok(got) if got.as_ref() == Some(v) => ok += 1,
            Ok(got) => return Err(format!("get {:?}: wrong value {got:?}", String::from_utf8_lossy(k))),
            Err(e) if matches!(e, Error::Io(_)) && is_injected(&e) => errors += 1,
            Err(e) => return Err(format!("get: unexpected error {e}")),
        }
    }
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    for start in (0..keys.len()).step_by(97) {
        for reverse in [false, true] {
            let want: Vec<(&Vec<u8>, &Vec<u8>)> = if reverse {
                model.range(..=keys[start].clone()).rev().collect()
            } else {
                model.range(keys[start].clone()..).collect()
            };
            let it = if reverse {
                db.range(..=keys[start].as_slice())
            } else {
                db.range(keys[start].as_slice()..)
            };
            let items: Box<dyn Iterator<Item = _>> = if reverse { Box::new(it.rev()) } else { Box::new(it) };
            for (i, item) in items.enumerate() {
                match item {
                    Ok((k, v)) => {
                        if want.get(i) != Some(&(&k, &v)) {
                            return Err(format!("scan from {start} rev={reverse}: wrong item #{i}"));
                        }
                        ok += 1;
                    }
                    Err(e) if matches!(e, Error::Io(_)) && is_injected(&e) => {
                        errors += 1;
                        break;
                    }
                    Err(e) => return Err(format!("scan: unexpected error {e}")),
                }
            }
        }
    }
    Ok((ok, errors))
}

// ---------------------------------------------------------------------------
// Random fault storms.

/// One storm: a random workload with faults at small rates on every
/// operation, then a reopen with faults off checked against the history.
/// Returns whether the database went read-only.
fn storm(seed: u64, style: &CompactionStyle) -> Result<bool, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    // Per kind: off, or log-uniform in [lo, hi] (rarer operations get higher rates).
    let rate = |rng: &mut StdRng, lo: f64, hi: f64| {
        if rng.gen_bool(0.3) {
            0.0
        } else {
            lo * (hi / lo).powf(rng.gen::<f64>())
        }
    };
    let cfg = FaultConfig {
        seed,
        read_rate: rate(&mut rng, 1e-4, 3e-3),
        write_rate: rate(&mut rng, 5e-5, 1e-3),
        sync_rate: rate(&mut rng, 1e-3, 2e-2),
        metadata_rate: rate(&mut rng, 1e-3, 2e-2),
        torn_writes: true,
        filter: PathFilter::all(),
        // Write-through, or the real file system's buffer (faults below it).
        write_buffer: if rng.gen_bool(0.5) { 0 } else { strata::vfs::WRITE_BUFFER },
        below_buffer_only: false,
    };
    let vfs = fault_fs(cfg);
    vfs.set_enabled(false);
    let db = Db::open(db_path(), small_opts(style, &vfs)).map_err(|e| format!("clean open: {e}"))?;
    vfs.set_enabled(true);
    let mut h = History::default();
    let mut failed_at: Option<usize> = None;
    let steps = 400;
    for step in 0..steps {
        if failed_at.is_some_and(|f| step > f + 20) {
            break;
        }
        let key = |rng: &mut StdRng| format!("key{:03}", rng.gen_range(0..150)).into_bytes();
        match rng.gen_range(0..100) {
            0..=64 => {
                let n = if rng.gen_bool(0.2) { rng.gen_range(2..6) } else { 1 };
                let ops = (0..n)
                    .map(|j| {
                        let k = key(&mut rng);
                        let v = rng.gen_bool(0.85).then(|| {
                            let mut v = format!("s{step}.{j}-").into_bytes();
                            v.resize(v.len() + rng.gen_range(0..300), b'v');
                            v
                        });
                        (k, v)
                    })
                    .collect();
                let r = attempt(&db, &mut h, ops, rng.gen_bool(0.3));
                match (r, failed_at) {
                    (Ok(()), Some(f)) => {
                        return Err(format!("write at step {step} succeeded after the failure at {f}"))
                    }
                    (Err(e), Some(_)) if !matches!(e, Error::ReadOnly(_)) => {
                        return Err(format!("step {step}: after a failure, expected ReadOnly, got {e}"))
                    }
                    (Err(_), None) => failed_at = Some(step),
                    _ => {}
                }
            }
            65..=84 => {
                let k = key(&mut rng);
                let want = h.acked_state().get(&k).cloned();
                match db.get(&k) {
                    Ok(got) if got == want => {}
                    Ok(got) => {
                        return Err(format!(
                            "step {step}: get {:?} = {got:?}, want {want:?}",
                            String::from_utf8_lossy(&k)
                        ))
                    }
                    Err(Error::Io(e)) if e.to_string().contains("injected fault") => {}
                    Err(e) => return Err(format!("step {step}: get failed with {e}")),
                }
            }
            85..=89 => {
                let want: Vec<_> = h.acked_state().into_iter().collect();
                for (i, item) in db.iter().enumerate() {
                    match item {
                        Ok(kv) if want.get(i) == Some(&kv) => {}
                        Ok(kv) => {
                            return Err(format!(
                                "step {step}: scan item #{i} wrong: {:?}",
                                String::from_utf8_lossy(&kv.0)
                            ))
                        }
                        Err(Error::Io(e)) if e.to_string().contains("injected fault") => break,
                        Err(e) => return Err(format!("step {step}: scan failed with {e}")),
                    }
                }
            }
            90..=95 => {
                let _ = db.flush();
            }
            _ => {
                let _ = db.compact_range(None, None);
            }
        }
    }
    // A last write probes whether the database is read-only.
    let probe = attempt(&db, &mut h, vec![(b"probe-key".to_vec(), Some(b"p".to_vec()))], false);
    if failed_at.is_some() && !matches!(probe, Err(Error::ReadOnly(_))) {
        return Err(format!("probe write after the failure: expected ReadOnly, got {probe:?}"));
    }
    let went_read_only = probe.is_err();
    if std::env::var("STRATA_FAULT_DEBUG").is_ok() {
        let hits: Vec<String> = FaultOp::ALL
            .iter()
            .filter(|&&o| vfs.injected(o) > 0)
            .map(|&o| format!("{o}x{}", vfs.injected(o)))
            .collect();
        eprintln!("seed {seed}: failed at {failed_at:?}, injected {hits:?}, probe {probe:?}");
    }
    drop(db);
    vfs.set_enabled(false);
    let db =
        Db::open(db_path(), small_opts(style, &vfs)).map_err(|e| format!("reopen with faults off: {e}"))?;
    let got = db.iter().collect::<Result<Kv, _>>().map_err(|e| format!("scan after reopen: {e}"))?;
    h.check_recovered(&got).map_err(|e| format!("after reopen: {e}"))?;
    db.put(b"after", b"reopen").map_err(|e| format!("write after reopen: {e}"))?;
    Ok(went_read_only)
}

#[test]
fn random_fault_storms_never_lose_acknowledged_writes() {
    let per_policy: u64 = std::env::var("STRATA_FAULT_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| (400 / policies().len() as u64).max(60));
    let start = Instant::now();
    let (mut runs, mut read_only) = (0, 0);
    for (name, style) in policies() {
        for seed in 0..per_policy {
            match storm(seed, &style) {
                Ok(ro) => read_only += usize::from(ro),
                Err(e) => panic!("fault storm: policy {name}, seed {seed}: {e}"),
            }
            runs += 1;
        }
    }
    eprintln!("{runs} fault storms ({read_only} went read-only) in {:?}", start.elapsed());
    assert!(
        read_only * 4 >= runs,
        "only {read_only} of {runs} storms hit a fault: rates too low to test anything"
    );
}

// ---------------------------------------------------------------------------
// The checkers catch planted violations.

#[test]
fn history_checker_catches_lost_stale_partial_and_invented_writes() {
    let mut h = History::default();
    h.record(vec![(b"a".to_vec(), Some(b"1".to_vec())), (b"b".to_vec(), Some(b"1".to_vec()))], true);
    h.record(vec![(b"a".to_vec(), Some(b"2".to_vec()))], true);
    h.record(vec![(b"b".to_vec(), Some(b"3".to_vec())), (b"c".to_vec(), Some(b"3".to_vec()))], false);
    let kv = |pairs: &[(&str, &str)]| -> Kv {
        pairs.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
    };
    assert!(h.check_recovered(&kv(&[("a", "2"), ("b", "1")])).is_ok(), "failed write absent");
    assert!(h.check_recovered(&kv(&[("a", "2"), ("b", "3"), ("c", "3")])).is_ok(), "failed write present");
    assert!(h.check_recovered(&kv(&[("b", "1")])).is_err(), "lost acknowledged write");
    assert!(h.check_recovered(&kv(&[("a", "1"), ("b", "1")])).is_err(), "stale value");
    assert!(h.check_recovered(&kv(&[("a", "2"), ("b", "1"), ("c", "3")])).is_err(), "partial failed write");
    assert!(h.check_recovered(&kv(&[("a", "2"), ("b", "1"), ("d", "9")])).is_err(), "invented key");
    assert_eq!(h.acked_state(), kv(&[("a", "2"), ("b", "1")]));
    // A failed delete of a key whose only other writes failed proves nothing.
    let mut h = History::default();
    h.record(vec![(b"a".to_vec(), Some(b"1".to_vec()))], true);
    h.record(vec![(b"b".to_vec(), Some(b"5".to_vec()))], false);
    h.record(vec![(b"b".to_vec(), None), (b"c".to_vec(), Some(b"7".to_vec()))], false);
    assert!(h.check_recovered(&kv(&[("a", "1")])).is_ok());
    assert!(h.check_recovered(&kv(&[("a", "1"), ("c", "7")])).is_ok());
    assert!(
        h.check_recovered(&kv(&[("a", "1"), ("b", "5"), ("c", "7")])).is_err(),
        "b's delete lost, c kept"
    );
}

#[test]
fn read_checker_catches_a_wrong_value() {
    let vfs = fault_fs(FaultConfig::new(1));
    let db = open(&db_path(), manual_opts(&CompactionStyle::default(), &vfs));
    let mut model = Kv::new();
    for i in 0..50 {
        let (k, v) = (format!("k{i:03}").into_bytes(), format!("v{i}").into_bytes());
        db.put(&k, &v).expect("put");
        model.insert(k, v);
    }
    assert!(check_reads_under_faults(&db, &model).is_ok());
    model.insert(b"k010".to_vec(), b"planted".to_vec());
    assert!(check_reads_under_faults(&db, &model).is_err());
}
