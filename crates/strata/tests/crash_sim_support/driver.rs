//! Runs one crash case end to end: a workload on a [`CrashVfs`] that loses
//! power at a chosen operation, then recovery from the post-crash image
//! (optionally crashing recovery itself), checked against the [`History`].

use std::sync::Arc;

use strata::vfs::testing::{CrashFault, CrashMode, CrashOpKind, CrashVfs};
use strata::{
    associative_merge_operator, CompactionPipeline, CompactionStyle, Db, IngestExternalFileOptions,
    MergeOperator, OptimisticTransactionDb, Options, SstFileWriter, TransactionOptions, WriteBatch,
    WriteOptions,
};

use super::history::{value_of, History, Kv, Write};
use super::keyspaces::{self, ks_key, ks_options, marker, KsOp, Spaces};

/// Keys are `k00`..; small spaces make overwrites and deletes of live keys common.
pub fn key(i: usize) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

/// One workload step.
#[derive(Debug, Clone)]
pub enum Step {
    /// Put `key(k)` (value length `len`).
    Put { k: usize, len: usize, sync: bool },
    /// Delete `key(k)`.
    Delete { k: usize, sync: bool },
    /// `Db::delete_range(key(lo), key(hi))`: deletes keys `lo..hi`.
    DeleteRange { lo: usize, hi: usize, sync: bool },
    /// Merge an operand of length `len` into `key(k)` ([`merge_operator`]).
    Merge { k: usize, len: usize, sync: bool },
    /// An atomic batch of puts (`Some(len)`) and deletes (`None`).
    Batch { ops: Vec<(usize, Option<usize>)>, sync: bool },
    /// An optimistic transaction: each key read for update, then put
    /// (`Some(len)`) or deleted, committed (alone, it never conflicts).
    Txn { ops: Vec<(usize, Option<usize>)>, sync: bool },
    /// An `SstFileWriter` table of puts and deletes (keys ascending, each
    /// once) ingested with `ingest_external_file`: durable once it returns.
    Ingest { ops: Vec<(usize, Option<usize>)> },
    /// `Db::flush`.
    Flush,
    /// `Db::compact_range(None, None)`.
    Compact,
    /// `Db::wait_for_compactions`: background work settles (nothing more
    /// becomes durable than a flush already made so).
    Wait,
    /// `Db::close`, then reopen (recovery runs on the live VFS, so the crash
    /// point may fall inside it).
    Close,
    /// In keyspace `ks` (0 = default, `i` = `Case::keyspaces[i - 1]`): a
    /// `Put`, `Delete`, `DeleteRange`, `Merge` (by its handle if synced, else
    /// by `Db::*_cf` for odd keys), `Flush` or `Compact` (handle or `_cf`).
    In { ks: usize, step: Box<Step> },
    /// An atomic batch across keyspaces: (keyspace, key, op).
    CfBatch { ops: Vec<(usize, usize, KsOp)>, sync: bool },
    /// `Db::create_keyspace` of keyspace `ks` (> 0).
    CreateKeyspace { ks: usize },
    /// `Db::drop_keyspace` of keyspace `ks` (> 0).
    DropKeyspace { ks: usize },
}

/// One crash case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Compaction policy name.
    pub policy: String,
    /// Which threads write output tables (a crash may fall inside any stage).
    pub pipeline: CompactionPipeline,
    /// Tables spread over two data paths (each directory synced on its own).
    pub data_paths: bool,
    pub steps: Vec<Step>,
    /// Power goes out after this many mutating VFS operations; `None` = after the workload.
    pub crash_after: Option<u64>,
    pub mode: CrashMode,
    /// Crash recovery too: after this many operations of the first reopen, under this mode.
    pub recovery_crash: Option<(u64, CrashMode)>,
    /// A planted crash-model bug (negative tests).
    pub fault: Option<CrashFault>,
    /// Fail this mutating operation like a disk does (`CrashVfs::set_io_fault`:
    /// operation number, seed) and go on; the crash comes after the workload.
    pub io_fault: Option<(u64, u64)>,
    /// After an I/O fault, close the database cleanly before the power goes out.
    pub close_after_fault: bool,
    /// Key space size (for point reads).
    pub keys: usize,
    /// Also reopen to check recovery is idempotent, and that writes after
    /// recovery win and persist (three more opens).
    pub extra_reopens: bool,
    /// Keyspaces the steps may create, as (name, policy); empty: the case
    /// runs exactly as before keyspaces existed.
    pub keyspaces: Vec<(String, String)>,
    /// Monkey's bloom allocation: filters sized per run, and rebuilt in place
    /// (a patch appended to the table) as the tree changes.
    pub monkey: bool,
    /// dLSM's aggressive compaction whenever it has nothing else to do (see
    /// [`options`]); off where a case needs the same operations in the same
    /// order on every run, as an I/O fault aimed at one of them does.
    pub idle_compaction: bool,
}

impl Case {
    /// `steps` under `policy` over `keys` keys: the power goes out after the
    /// workload (`ProcessKill`), no fault, no extra reopens.
    pub fn new(policy: &str, steps: Vec<Step>, keys: usize) -> Case {
        Case {
            policy: policy.to_string(),
            pipeline: CompactionPipeline::Sequential,
            data_paths: false,
            steps,
            crash_after: None,
            mode: CrashMode::ProcessKill,
            recovery_crash: None,
            fault: None,
            io_fault: None,
            close_after_fault: false,
            keys,
            extra_reopens: false,
            keyspaces: Vec::new(),
            monkey: false,
            idle_compaction: true,
        }
    }

    /// Opens the database on `vfs` with [`Case::options`] and, for each
    /// keyspace its root MANIFEST lists, that keyspace's options (its merge
    /// operator cannot be persisted).
    pub fn open(&self, vfs: Arc<dyn strata::Vfs>) -> strata::Result<Db> {
        let mut opts = self.options(vfs);
        if !self.keyspaces.is_empty() {
            // No database yet (a crash inside its creation): nothing to name.
            for name in Db::list_keyspaces_at(DIR, &opts).unwrap_or_default().iter().skip(1) {
                let Some((_, policy)) = self.keyspaces.iter().find(|(n, _)| n == name) else {
                    return Err(strata::Error::invalid(format!("keyspace {name:?} was never created")));
                };
                opts = opts.with_keyspace(name, ks_options(policy));
            }
        }
        Db::open(DIR, opts)
    }

    /// [`options`] for this case's policy and pipeline.
    pub fn options(&self, vfs: Arc<dyn strata::Vfs>) -> Options {
        // Small sub-tasks, so a parallel merge runs several at once.
        let mut o = options(&self.policy, vfs)
            .with_compaction_pipeline(self.pipeline)
            .with_compaction_subtask_bytes(2 << 10);
        if self.monkey {
            o = o.with_bloom_allocation(strata::BloomAllocation::Monkey);
        }
        if !self.idle_compaction {
            o = o.with_idle_compaction(None);
        }
        if self.data_paths {
            o.with_db_paths(["/data-a", "/data-b"])
        } else {
            o
        }
    }
}

/// What a case did.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// Mutating VFS operations before the crash.
    pub ops: u64,
    /// Writes issued / that had to survive / that survived.
    pub issued: usize,
    pub durable: usize,
    pub survived: usize,
    /// Mutating operations of a clean recovery of the image.
    pub recovery_ops: u64,
    /// Whether the crash point was reached inside the workload (not after it).
    pub crashed_in_workload: bool,
    /// The kinds of the mutating operations before the crash, in order.
    pub log: Vec<CrashOpKind>,
    /// The operation the I/O fault failed, if it fired.
    pub io_fault_hit: Option<CrashOpKind>,
    /// Keyspace creates and drops acknowledged.
    pub keyspace_ops: usize,
    /// Whether a create or drop was in flight at the crash (or failed).
    pub keyspace_op_in_flight: bool,
    /// Flushes and compactions in keyspaces other than the default one
    /// (from their stats, so those of keyspaces dropped are not counted).
    pub keyspace_flushes: u64,
    pub keyspace_compactions: u64,
}

pub const DIR: &str = "/db";

/// Tiny sizes: a 4 KiB memtable flushes every few dozen writes, and 1 KiB
/// tables with a 4 KiB level base make compactions and several levels happen.
pub fn options(policy: &str, vfs: Arc<dyn strata::Vfs>) -> Options {
    let style = CompactionStyle::from_name(policy).expect("builtin policy");
    // dLSM runs its aggressive compaction whenever it has nothing else to do.
    let idle = matches!(style, CompactionStyle::Dlsm).then_some(std::time::Duration::ZERO);
    Options::default()
        .with_compaction_style(style)
        .with_idle_compaction(idle)
        .with_write_buffer_size(4096)
        .with_target_file_size_base(1024)
        .with_max_bytes_for_level_base(4096)
        .with_level0_file_num_compaction_trigger(2)
        .with_block_size(256)
        .with_block_cache_capacity(64 << 10)
        // Both read caches on: a crash must never let them serve a lost write.
        .with_row_cache(16 << 10)
        .with_compaction_warmup(true)
        .with_merge_operator(merge_operator())
        .with_vfs(vfs)
}

/// Longest merged value: the newest operands, each naming its write first.
const MERGED_MAX: usize = 300;

/// The workload's merge: the operand, then what was there, cut to
/// `MERGED_MAX` bytes. A merged value starts with its newest operand, so it
/// names the merge write that made it, as the history checker expects.
pub fn merged(existing: Option<&[u8]>, operand: &[u8]) -> Vec<u8> {
    let mut v = operand.to_vec();
    if let Some(e) = existing {
        v.push(b'|');
        v.extend_from_slice(e);
    }
    v.truncate(MERGED_MAX);
    v
}

/// [`merged`] as an associative operator (cutting to the first bytes
/// commutes with prepending, so partial merges agree).
pub fn merge_operator() -> Arc<dyn MergeOperator> {
    associative_merge_operator("crash-sim-prepend", |_key, existing, operand| Some(merged(existing, operand)))
}

/// A step's write as the history records it (a merge as the value it makes
/// over `h`'s state after every issued write), with the merge operand of
/// each entry that is a merge, whether it syncs, and for a range delete its
/// range (the write then lists the keys of the range as deletes).
type StepWrite = (Write, Vec<Option<Vec<u8>>>, bool, Option<(Vec<u8>, Vec<u8>)>);

fn step_writes(step: &Step, h: &History) -> Option<StepWrite> {
    let w = h.next_index();
    let put = |k: usize, len: usize| (key(k), Some(value_of(w, &key(k), len)));
    let plain = |(write, sync): (Write, bool)| {
        let operands = vec![None; write.len()];
        (write, operands, sync, None)
    };
    match step {
        Step::Merge { k, len, sync } => {
            let operand = value_of(w, &key(*k), *len);
            let before = h.state_after(w);
            let after = merged(before.get(&key(*k)).map(Vec::as_slice), &operand);
            Some((vec![(key(*k), Some(after))], vec![Some(operand)], *sync, None))
        }
        Step::Put { k, len, sync } => Some(plain((vec![put(*k, *len)], *sync))),
        Step::Delete { k, sync } => Some(plain((vec![(key(*k), None)], *sync))),
        Step::DeleteRange { lo, hi, sync } => {
            let write: Write = (*lo..*hi).map(|k| (key(k), None)).collect();
            let operands = vec![None; write.len()];
            Some((write, operands, *sync, Some((key(*lo), key(*hi)))))
        }
        Step::Batch { ops, sync } | Step::Txn { ops, sync } => Some(plain((
            ops.iter().map(|&(k, len)| len.map_or((key(k), None), |len| put(k, len))).collect(),
            *sync,
        ))),
        Step::Ingest { ops } => Some(plain((
            ops.iter().map(|&(k, len)| len.map_or((key(k), None), |len| put(k, len))).collect(),
            true,
        ))),
        _ => None,
    }
}

/// Runs `steps` until the first error, which must come from the crash (every
/// call after the crash point fails); an error before it is reported.
/// Returns the open database, if any.
pub fn run_workload<'a>(
    steps: &[Step],
    opts: &Options,
    vfs: &CrashVfs,
    h: &mut History,
    spaces: &mut Option<Spaces<'a>>,
    names: &'a [(String, String)],
) -> Result<Option<OptimisticTransactionDb>, String> {
    let unexpected = |what: &str, e: strata::Error| -> Result<Option<OptimisticTransactionDb>, String> {
        if vfs.crashed() || vfs.io_fault_hit().is_some() {
            Ok(None)
        } else {
            Err(format!("{what} failed without a crash: {e}"))
        }
    };
    let mut db = match OptimisticTransactionDb::open(DIR, opts.clone()) {
        Ok(db) => db,
        Err(e) => return unexpected("open", e),
    };
    let spaces = spaces.insert(Spaces::new(names, &db));
    for (i, step) in steps.iter().enumerate() {
        if let Some(r) = spaces.run(step, &db, h) {
            if let Err(e) = r {
                unexpected(&format!("step {i} ({step:?})"), e)?;
                break;
            }
            continue;
        }
        let r = match step_writes(step, h) {
            Some((write, operands, sync, range)) => {
                let mut b = WriteBatch::new();
                match &range {
                    Some((lo, hi)) => b.delete_range(lo, hi),
                    None => {
                        for ((k, v), operand) in write.iter().zip(&operands) {
                            match (v, operand) {
                                (_, Some(op)) => b.merge(k, op),
                                (Some(v), None) => b.put(k, v),
                                (None, None) => b.delete(k),
                            }
                        }
                    }
                }
                h.begin(write.clone());
                let wo = WriteOptions::default().with_sync(sync);
                let r = match step {
                    Step::Txn { .. } => commit_txn(&db, &write, &wo),
                    Step::Ingest { .. } => ingest(&db, &write, opts),
                    _ => db.write_opt(b, &wo),
                };
                if r.is_ok() {
                    h.ack(sync);
                }
                r
            }
            None if matches!(step, Step::Close) => {
                spaces.tally();
                if let Err(e) = db.close() {
                    return unexpected("close", e);
                }
                h.all_durable();
                db = match OptimisticTransactionDb::open(DIR, spaces.reopen_options(opts)) {
                    Ok(db) => db,
                    Err(e) => return unexpected("reopen", e),
                };
                spaces.reattach(&db)
            }
            None if matches!(step, Step::Wait) => db.wait_for_compactions(),
            None => {
                let r = if matches!(step, Step::Flush) { db.flush() } else { db.compact_range(None, None) };
                if r.is_ok() && names.is_empty() {
                    h.all_durable();
                } else if r.is_ok() {
                    // Only the default keyspace's writes, and all before them.
                    h.durable_through(|k| !k.contains(&b'@'));
                }
                r
            }
        };
        if let Err(e) = r {
            unexpected(&format!("step {i} ({step:?})"), e)?;
            break;
        }
    }
    spaces.tally();
    Ok(Some(db))
}

/// Writes `write` (puts and deletes) in one optimistic transaction that
/// reads each key for update first.
fn commit_txn(db: &OptimisticTransactionDb, write: &Write, wo: &WriteOptions) -> strata::Result<()> {
    let mut t = db.begin_with(&TransactionOptions::default().with_write_options(wo.clone()));
    for (k, v) in write {
        t.get_for_update(k)?;
        match v {
            Some(v) => t.put(k, v)?,
            None => t.delete(k)?,
        }
    }
    t.commit()
}

/// Writes `write` (ascending keys) to an external table on the case's file
/// system and ingests it, moving the file.
fn ingest(db: &Db, write: &Write, opts: &Options) -> strata::Result<()> {
    let file = std::path::Path::new(DIR).with_extension("ingest.sst");
    let mut w = SstFileWriter::create(&file, opts)?;
    for (k, v) in write {
        match v {
            Some(v) => w.put(k, v)?,
            None => w.delete(k)?,
        }
    }
    w.finish()?;
    db.ingest_external_file(&[&file], &IngestExternalFileOptions::default().with_move_files(true))
}

/// Reads every key by a full scan, and checks point reads agree with it;
/// then the same in every other keyspace, whose keys (and a marker for the
/// keyspace itself) come back under `name/`.
pub fn read_all(db: &Db, keys: usize) -> Result<Kv, String> {
    let mut kv = Kv::new();
    for name in db.list_keyspaces() {
        let ks = db.keyspace(&name).map_err(|e| format!("keyspace {name}: {e}"))?;
        let full = |k: &[u8]| if name == "default" { k.to_vec() } else { ks_key(&name, k) };
        if name != "default" {
            kv.insert(marker(&name), Vec::new());
        }
        for item in ks.iter() {
            let (k, v) = item.map_err(|e| format!("{name}: scan failed: {e}"))?;
            kv.insert(full(&k), v);
        }
        for i in 0..keys {
            let got = ks.get(key(i)).map_err(|e| format!("{name}: get failed: {e}"))?;
            if got.as_ref() != kv.get(&full(&key(i))) {
                return Err(format!("{name}: get(k{i:02}) = {got:?} disagrees with the scan"));
            }
        }
    }
    Ok(kv)
}

fn open_read(vfs: Arc<dyn strata::Vfs>, c: &Case, what: &str) -> Result<Kv, String> {
    let db = c.open(vfs).map_err(|e| format!("{what}: open failed: {e}"))?;
    let kv = read_all(&db, c.keys).map_err(|e| format!("{what}: {e}"))?;
    db.close().map_err(|e| format!("{what}: close failed: {e}"))?;
    Ok(kv)
}

/// Runs one case; `Err` describes the first violated invariant.
pub fn run_case(c: &Case) -> Result<Outcome, String> {
    let vfs = CrashVfs::new();
    vfs.set_crash_after(c.crash_after);
    vfs.set_fault(c.fault);
    vfs.set_io_fault(c.io_fault);
    let mut h = History::default();
    let mut spaces = None;
    let opts = c.options(Arc::new(vfs.clone()));
    let db = run_workload(&c.steps, &opts, &vfs, &mut h, &mut spaces, &c.keyspaces)?;
    let (ddl, ks_work) = spaces.map(|s| (s.ddl, (s.flushes, s.compactions))).unwrap_or_default();
    let crashed_in_workload = vfs.crashed();
    let hit = vfs.io_fault_hit();
    let db = match db {
        Some(db) if hit.is_some() && c.close_after_fault => {
            // A close after a failure may report it; what it may not do is
            // write a failed file again, which recovery below would show.
            let _ = db.close();
            None
        }
        other => other,
    };
    // Power off before the handle drops: its close must not sync anything.
    vfs.crash_now();
    drop(db);
    let mut out = Outcome {
        ops: vfs.ops_done(),
        issued: h.next_index(),
        crashed_in_workload,
        log: vfs.op_log().iter().map(|o| o.kind).collect(),
        io_fault_hit: hit.as_ref().map(|o| o.kind),
        keyspace_ops: ddl.acked(),
        keyspace_op_in_flight: ddl.in_flight(),
        keyspace_flushes: ks_work.0,
        keyspace_compactions: ks_work.1,
        ..Outcome::default()
    };
    let min_prefix = if c.mode == CrashMode::ProcessKill { h.acked() } else { h.durable() };
    out.durable = min_prefix;
    // A write that failed must not come back, unless a sync failed: its data
    // may have reached the disk before the error (as in RocksDB).
    let sync_failed = hit.as_ref().is_some_and(|op| op.kind == CrashOpKind::Sync);
    let max_prefix = if hit.is_some() && !sync_failed { h.acked() } else { h.next_index() };

    // Recovery 1 on a counting VFS, to learn how many operations recovery takes.
    let rec = CrashVfs::from_mem(vfs.image(c.mode));
    let db = c.open(Arc::new(rec.clone())).map_err(|e| format!("recovery failed: {e}"))?;
    out.recovery_ops = rec.ops_done();
    let got = read_all(&db, c.keys).map_err(|e| format!("after recovery: {e}"))?;
    db.close().map_err(|e| format!("close after recovery failed: {e}"))?;
    let checked = if c.keyspaces.is_empty() {
        h.check_within(&got, min_prefix, max_prefix)
    } else {
        keyspaces::check(&h, &ddl, &c.keyspaces, &got, min_prefix, max_prefix)
    };
    out.survived = checked.map_err(|e| match &hit {
        Some(op) => format!("after an I/O fault at {op:?}: {e}"),
        None => e,
    })?;

    if !c.extra_reopens {
        return crash_recovery(c, &vfs, &got, out);
    }
    // Recovery is idempotent.
    let again = open_read(Arc::new(rec.clone()), c, "second reopen")?;
    if again != got {
        return Err(format!("second reopen differs: {} keys vs {}", again.len(), got.len()));
    }
    // The recovered database accepts writes that win over recovered ones
    // (sequence numbers continue past everything on disk).
    {
        let db = c.open(Arc::new(rec.clone())).map_err(|e| format!("third open: {e}"))?;
        let mut expect = got.clone();
        for name in db.list_keyspaces().iter().skip(1) {
            let v = value_of(usize::MAX / 2, &ks_key(name, &key(0)), 50);
            let ks = db.keyspace(name).map_err(|e| format!("third open: {e}"))?;
            ks.put_opt(key(0), &v, &WriteOptions::default().with_sync(true))
                .map_err(|e| format!("post-put in {name}: {e}"))?;
            expect.insert(ks_key(name, &key(0)), v);
        }
        let v = value_of(usize::MAX / 2, &key(0), 50);
        db.put_opt(key(0), &v, &WriteOptions::default().with_sync(true))
            .map_err(|e| format!("post-put: {e}"))?;
        expect.insert(key(0), v);
        db.delete(key(1)).map_err(|e| format!("post-delete: {e}"))?;
        expect.remove(&key(1));
        db.close().map_err(|e| format!("post-close: {e}"))?;
        if open_read(Arc::new(rec.clone()), c, "fourth open")? != expect {
            return Err("writes after recovery were not kept or lost to recovered data".into());
        }
    }

    crash_recovery(c, &vfs, &got, out)
}

/// A crash during recovery loses nothing the image held.
fn crash_recovery(c: &Case, vfs: &CrashVfs, got: &Kv, out: Outcome) -> Result<Outcome, String> {
    if let Some((n, mode2)) = c.recovery_crash {
        let rv = CrashVfs::from_mem(vfs.image(c.mode));
        rv.set_crash_after(Some(n % (out.recovery_ops + 1)));
        let db = c.open(Arc::new(rv.clone()));
        rv.crash_now();
        drop(db);
        let what = "recovery after a crash during recovery";
        let after = open_read(Arc::new(rv.image(mode2)), c, what)?;
        if &after != got {
            return Err(format!(
                "crash during recovery (op {n}, {mode2:?}) changed the state: {} keys vs {}",
                after.len(),
                got.len()
            ));
        }
    }
    Ok(out)
}
