//! Event listeners and logging: flushes, compactions, stalls and background
//! errors reach `EventListener`s (outside engine locks, panics caught) and
//! the `log` facade.

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use strata::vfs::testing::{FaultConfig, FaultOp, FaultVfs, PathFilter};
use strata::{
    BackgroundErrorInfo, BackgroundErrorReason, CompactionFilter, CompactionInfo, Db, Decision,
    EventListener, FlushInfo, FlushReason, KeyspaceOptions, MemVfs, Options, PolicyChangeInfo, StallCause,
    StallCondition, StallInfo,
};

/// Records every event it sees.
#[derive(Default)]
struct Recorder {
    flushes: Mutex<Vec<FlushInfo>>,
    compactions: Mutex<Vec<CompactionInfo>>,
    stalls: Mutex<Vec<StallInfo>>,
    errors: Mutex<Vec<BackgroundErrorInfo>>,
    policies: Mutex<Vec<PolicyChangeInfo>>,
}

impl EventListener for Recorder {
    fn on_flush_completed(&self, info: &FlushInfo) {
        self.flushes.lock().unwrap().push(info.clone());
    }
    fn on_compaction_completed(&self, info: &CompactionInfo) {
        self.compactions.lock().unwrap().push(info.clone());
    }
    fn on_stall_conditions_changed(&self, info: &StallInfo) {
        self.stalls.lock().unwrap().push(info.clone());
    }
    fn on_background_error(&self, info: &BackgroundErrorInfo) {
        self.errors.lock().unwrap().push(info.clone());
    }
    fn on_policy_changed(&self, info: &PolicyChangeInfo) {
        self.policies.lock().unwrap().push(info.clone());
    }
}

/// Polls `done` for up to 20 s (events arrive shortly after the call that caused them).
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn small_opts() -> Options {
    Options::default()
        .with_vfs(Arc::new(MemVfs::new()))
        .with_write_buffer_size(16 << 10)
        .with_target_file_size_base(8 << 10)
        .with_max_bytes_for_level_base(32 << 10)
        .with_level0_file_num_compaction_trigger(2)
}

fn fill(put: impl Fn(String, Vec<u8>), n: u32) {
    for i in 0..n {
        put(format!("k{:06}", (i * 7919) % n), vec![b'v'; 100]);
    }
}

#[test]
fn listener_sees_flushes_and_compactions_matching_stats() {
    let rec = Arc::new(Recorder::default());
    let db = Db::open("/db", small_opts().with_event_listener(rec.clone())).unwrap();
    fill(|k, v| db.put(k, v).unwrap(), 3000);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.flushes >= 5 && s.compactions >= 1, "{s}");
    eventually("every flush and compaction event", || {
        let c = rec.compactions.lock().unwrap();
        rec.flushes.lock().unwrap().len() as u64 == s.flushes
            && c.iter().filter(|c| c.kind == "merge" || c.kind == "append").count() as u64 == s.compactions
    });
    let flushes = rec.flushes.lock().unwrap().clone();
    assert_eq!(flushes.iter().map(|f| f.bytes_written).sum::<u64>(), s.flush_bytes_written);
    for (i, f) in flushes.iter().enumerate() {
        assert_eq!(f.keyspace, "default");
        assert_eq!(f.output_level, 0);
        assert!(f.entries > 0 && !f.file_numbers.is_empty() && f.bytes_written > 0, "{f:?}");
        // The last is `db.flush()`'s.
        let want = if i + 1 == flushes.len() { FlushReason::Manual } else { FlushReason::MemtableFull };
        assert_eq!(f.reason, want);
    }
    let compactions = rec.compactions.lock().unwrap().clone();
    let merges: Vec<_> = compactions.iter().filter(|c| c.kind == "merge" || c.kind == "append").collect();
    assert_eq!(merges.iter().map(|c| c.bytes_written).sum::<u64>(), s.compaction_bytes_written);
    assert_eq!(merges.iter().map(|c| c.bytes_read).sum::<u64>(), s.compaction_bytes_read);
    let flushed: Vec<u64> = flushes.iter().flat_map(|f| f.file_numbers.clone()).collect();
    for c in &compactions {
        assert_eq!((c.keyspace.as_str(), c.policy.as_str()), ("default", "leveled"));
        assert!(!c.input_files.is_empty() && !c.input_levels.is_empty(), "{c:?}");
        assert!(c.input_levels.iter().all(|&l| l <= c.output_level), "{c:?}");
        if c.kind == "merge" {
            assert!(c.bytes_read > 0 && c.bytes_written > 0 && !c.output_files.is_empty(), "{c:?}");
        }
    }
    // The first compaction takes L0 tables that flushes reported.
    let first = &compactions[0];
    assert_eq!(first.input_levels[0], 0);
    assert!(first.input_files.iter().any(|f| flushed.contains(f)), "{first:?} {flushed:?}");
    assert!(rec.errors.lock().unwrap().is_empty());
    db.close().unwrap();
}

#[test]
fn keyspaces_inherit_the_database_listeners() {
    let rec = Arc::new(Recorder::default());
    let db = Db::open("/db", small_opts().with_event_listener(rec.clone())).unwrap();
    let ks = db.create_keyspace("hot", KeyspaceOptions::default()).unwrap();
    ks.put("a", "1").unwrap();
    ks.flush().unwrap();
    db.put("b", "2").unwrap();
    db.flush().unwrap();
    eventually("both flushes", || rec.flushes.lock().unwrap().len() == 2);
    let mut names: Vec<String> = rec.flushes.lock().unwrap().iter().map(|f| f.keyspace.clone()).collect();
    names.sort();
    assert_eq!(names, ["default", "hot"]);
}

/// Calls back into the database from every event.
struct CallsBack {
    db: OnceLock<Weak<Db>>,
    calls: Mutex<Vec<String>>,
}

impl CallsBack {
    fn visit(&self, what: &str) {
        let Some(db) = self.db.get().and_then(Weak::upgrade) else { return };
        let got = db.get("k000001").unwrap();
        let stats = db.stats();
        let keys = db.iter().count();
        self.calls.lock().unwrap().push(format!("{what} {} {} {keys}", got.is_some(), stats.flushes));
    }
}

impl EventListener for CallsBack {
    fn on_flush_completed(&self, _: &FlushInfo) {
        self.visit("flush");
    }
    fn on_compaction_completed(&self, _: &CompactionInfo) {
        self.visit("compaction");
    }
}

#[test]
fn a_listener_calling_back_into_the_db_does_not_deadlock() {
    let l = Arc::new(CallsBack { db: OnceLock::new(), calls: Mutex::new(Vec::new()) });
    let db = Arc::new(Db::open("/db", small_opts().with_event_listener(l.clone())).unwrap());
    l.db.set(Arc::downgrade(&db)).unwrap();
    fill(|k, v| db.put(k, v).unwrap(), 2000);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    eventually("callbacks from flushes and compactions", || {
        let calls = l.calls.lock().unwrap();
        calls.iter().any(|c| c.starts_with("flush true")) && calls.iter().any(|c| c.starts_with("compaction"))
    });
    assert_eq!(db.stats().background_error, None);
}

/// Panics on every flush.
struct Panics;
impl EventListener for Panics {
    fn on_flush_completed(&self, _: &FlushInfo) {
        panic!("listener bug");
    }
}

#[test]
fn a_panicking_listener_does_not_stop_background_work() {
    let rec = Arc::new(Recorder::default());
    let opts = small_opts().with_event_listener(Arc::new(Panics)).with_event_listener(rec.clone());
    let db = Db::open("/db", opts).unwrap();
    for round in 0..3 {
        db.put(format!("r{round}"), "v").unwrap();
        db.flush().unwrap();
    }
    // The flush thread lived through each panic, and later listeners still hear every event.
    eventually("three flush events", || rec.flushes.lock().unwrap().len() == 3);
    fill(|k, v| db.put(k, v).unwrap(), 1000);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert_eq!(s.background_error, None);
    eventually("the later flushes", || rec.flushes.lock().unwrap().len() as u64 == s.flushes);
    assert_eq!(db.get("r1").unwrap(), Some(b"v".to_vec()));
    db.close().unwrap();
}

/// Makes compactions slow, so flushes pile up in L0.
struct SlowFilter;
impl CompactionFilter for SlowFilter {
    fn name(&self) -> &str {
        "slow"
    }
    fn filter(&self, _level: usize, _key: &[u8], _value: &[u8]) -> Decision {
        std::thread::sleep(Duration::from_micros(500));
        Decision::Keep
    }
}

#[test]
fn stall_changes_under_a_tiny_l0_stop_trigger() {
    let rec = Arc::new(Recorder::default());
    let opts = small_opts()
        .with_level0_slowdown_writes_trigger(2)
        .with_level0_stop_writes_trigger(3)
        .with_compaction_filter(Arc::new(SlowFilter))
        .with_event_listener(rec.clone());
    let db = Db::open("/db", opts).unwrap();
    fill(|k, v| db.put(k, v).unwrap(), 2000);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.stops > 0 && s.slowdowns > 0, "{s}");
    let over =
        |r: &Recorder| r.stalls.lock().unwrap().last().map(|i| i.current) == Some(StallCondition::Normal);
    eventually("the stall to end", || over(&rec));
    let stalls = rec.stalls.lock().unwrap().clone();
    let seen = |c: StallCondition| stalls.iter().find(|i| i.current == c).cloned();
    let delayed = seen(StallCondition::Delayed).expect("a delay");
    assert_eq!((delayed.cause, delayed.keyspace.as_str()), (Some(StallCause::L0Files), "default"));
    assert!(delayed.l0_files >= 2, "{delayed:?}");
    let stopped = (stalls.iter())
        .find(|i| i.current == StallCondition::Stopped && i.cause == Some(StallCause::L0Files))
        .expect("a stop for L0 files");
    assert!(stopped.l0_files >= 3, "{stopped:?}");
    // Consecutive events chain: each starts where the last one ended.
    let mut prev = StallCondition::Normal;
    for i in &stalls {
        assert_eq!(i.previous, prev, "{stalls:?}");
        assert_eq!(i.cause.is_none(), i.current == StallCondition::Normal);
        prev = i.current;
    }
}

#[test]
fn a_background_error_reaches_the_listener_and_stats() {
    let rec = Arc::new(Recorder::default());
    let fault = Arc::new(FaultVfs::new(
        Arc::new(MemVfs::new()),
        FaultConfig::new(3).with_filter(PathFilter::extension("sst")),
    ));
    let db = Db::open("/db", small_opts().with_vfs(fault.clone()).with_event_listener(rec.clone())).unwrap();
    db.put("a", "1").unwrap();
    fault.fail_next(FaultOp::Create);
    assert!(db.flush().is_err());
    fault.disarm();
    eventually("the error event", || !rec.errors.lock().unwrap().is_empty());
    let errors = rec.errors.lock().unwrap().clone();
    assert_eq!(errors.len(), 1, "reported once: {errors:?}");
    let e = &errors[0];
    assert_eq!((e.keyspace.as_str(), e.reason), ("default", BackgroundErrorReason::Flush));
    let s = db.stats();
    assert_eq!(s.background_error.as_deref(), Some(e.error.as_str()));
    assert!(s.to_string().contains("background error"), "{s}");
    assert!(matches!(db.put("b", "2"), Err(strata::Error::ReadOnly(_))));
    assert_eq!(db.get("a").unwrap(), Some(b"1".to_vec()));
}

/// Captures every log record as `target: message`.
struct Capture(Mutex<Vec<String>>);
impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        self.0.lock().unwrap().push(format!("{} {}: {}", r.level(), r.target(), r.args()));
    }
    fn flush(&self) {}
}

fn captured() -> &'static Capture {
    static LOGGER: OnceLock<&'static Capture> = OnceLock::new();
    LOGGER.get_or_init(|| {
        let c: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(c).expect("the only logger of this test binary");
        log::set_max_level(log::LevelFilter::Trace);
        c
    })
}

fn lines_with(needle: &str) -> Vec<String> {
    captured().0.lock().unwrap().iter().filter(|l| l.contains(needle)).cloned().collect()
}

#[test]
fn the_log_shows_flushes_compactions_and_recovery() {
    captured();
    let vfs = Arc::new(MemVfs::new());
    let opts = small_opts().with_vfs(vfs.clone());
    let db = Db::open("/logged", opts.clone()).unwrap();
    let ks = db.create_keyspace("logged-ks", KeyspaceOptions::from_options(&opts)).unwrap();
    fill(|k, v| ks.put(k, v).unwrap(), 2000);
    ks.flush().unwrap();
    ks.wait_for_compactions().unwrap();
    ks.put("unflushed", "x").unwrap();
    db.close().unwrap();
    let created = lines_with("[logged-ks] keyspace created");
    assert!(created.iter().any(|l| l.starts_with("INFO strata::keyspace")), "{created:?}");
    let flushes = lines_with("[logged-ks] flush:");
    assert!(flushes.len() >= 5, "{flushes:?}");
    assert!(flushes[0].starts_with("INFO strata::flush") && flushes[0].contains(" B in "), "{flushes:?}");
    assert!(!lines_with("[logged-ks] leveled merge").is_empty(), "{:?}", lines_with("[logged-ks]"));

    let db = Db::open("/logged", opts).unwrap();
    assert_eq!(db.keyspace("logged-ks").unwrap().get("unflushed").unwrap(), Some(b"x".to_vec()));
    assert!(!lines_with("[logged-ks] MANIFEST").is_empty());
    assert!(!lines_with("[logged-ks] keyspace recovered").is_empty());
    let replayed = lines_with(".log replayed:");
    assert!(replayed.iter().any(|l| l.contains("1 records")), "{replayed:?}");
    db.drop_keyspace("logged-ks").unwrap();
    assert!(!lines_with("[logged-ks] keyspace dropped").is_empty());
    db.close().unwrap();
}

#[test]
fn background_errors_and_listener_panics_are_logged() {
    captured();
    let fault = Arc::new(FaultVfs::new(
        Arc::new(MemVfs::new()),
        FaultConfig::new(5).with_filter(PathFilter::extension("sst")),
    ));
    let db =
        Db::open("/db", small_opts().with_vfs(fault.clone()).with_event_listener(Arc::new(Panics))).unwrap();
    let ks = db.create_keyspace("failing", KeyspaceOptions::default()).unwrap();
    ks.put("a", "1").unwrap();
    ks.flush().unwrap();
    ks.put("b", "1").unwrap();
    fault.fail_next(FaultOp::Create);
    assert!(ks.flush().is_err());
    eventually("the error line", || !lines_with("[failing] flush failed, writes stopped").is_empty());
    assert!(lines_with("[failing] flush failed")[0].starts_with("ERROR strata::background"));
    eventually("the panic line", || !lines_with("panicked in on_flush_completed").is_empty());
}

/// Issue 28: an explicitly given other policy is applied, logged and
/// reported to listeners (during the open); an open that gives no policy
/// changes none and reports nothing.
#[test]
fn an_explicit_policy_change_is_applied_logged_and_reported() {
    captured();
    let vfs = Arc::new(MemVfs::new());
    let tiered = || KeyspaceOptions::default().with_compaction_style(strata::CompactionStyle::Tiered);
    {
        let db = Db::open("/policy", Options::default().with_vfs(vfs.clone())).unwrap();
        db.create_keyspace("policy-ks", tiered()).unwrap();
    }
    let rec = Arc::new(Recorder::default());
    let quiet = Options::default().with_vfs(vfs.clone()).with_event_listener(rec.clone());
    drop(Db::open("/policy", quiet.clone().with_keyspace("policy-ks", KeyspaceOptions::default())).unwrap());
    assert!(rec.policies.lock().unwrap().is_empty(), "nothing set, nothing changed");

    let changed = quiet.with_compaction_style(strata::CompactionStyle::Lsbm).with_keyspace(
        "policy-ks",
        KeyspaceOptions::default().with_compaction_style(strata::CompactionStyle::Blsm),
    );
    let db = Db::open("/policy", changed).unwrap();
    assert_eq!(db.property("strata.policy").unwrap(), "lsbm");
    assert_eq!(db.keyspace("policy-ks").unwrap().property("strata.policy").unwrap(), "blsm");
    let seen: Vec<_> = rec
        .policies
        .lock()
        .unwrap()
        .iter()
        .map(|i| (i.keyspace.clone(), i.old.clone(), i.new.clone()))
        .collect();
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(seen, [s("default", "leveled", "lsbm"), s("policy-ks", "tiered", "blsm")]);
    let logged = lines_with("compaction policy changed from tiered to blsm");
    assert!(
        logged.iter().any(|l| l.starts_with("INFO strata::recovery") && l.contains("[policy-ks]")),
        "{logged:?}"
    );
    assert!(!lines_with("[default] compaction policy changed from leveled to lsbm").is_empty());
}

/// Regression: every `FlushInfo::reason` and flush record said "memtable
/// full", also after `flush()`, a flush for `max_total_wal_size` and the
/// flush `close` makes of writes that skipped the WAL.
#[test]
fn flush_reasons_say_why_the_memtable_was_sealed() {
    let rec = Arc::new(Recorder::default());
    let opts = small_opts().with_event_listener(rec.clone()).with_max_total_wal_size(1);
    let db = Db::open("/db", opts).unwrap();
    let ks = db.create_keyspace("cold", KeyspaceOptions::default()).unwrap();
    ks.put("c", "holds the first WAL").unwrap();
    // The default keyspace fills its memtable: a second WAL; the WALs then
    // pass the limit, so the next write group seals `cold`'s memtable.
    fill(|k, v| db.put(k, v).unwrap(), 200);
    db.put("x", "y").unwrap();
    db.flush().unwrap();
    ks.flush().unwrap();
    db.put_opt("unlogged", "v", &strata::WriteOptions::default().with_disable_wal(true)).unwrap();
    let stats = db.stats();
    db.close().unwrap(); // delivers the queued events
    let reasons = |ks: &str| -> Vec<FlushReason> {
        rec.flushes.lock().unwrap().iter().filter(|f| f.keyspace == ks).map(|f| f.reason).collect()
    };
    let default = reasons("default");
    assert_eq!(default.first(), Some(&FlushReason::MemtableFull), "{default:?}");
    assert_eq!(&default[default.len() - 2..], [FlushReason::Manual, FlushReason::Shutdown], "{default:?}");
    assert_eq!(reasons("cold"), [FlushReason::WalSize], "the manual flush found nothing left");
    let records: Vec<&str> =
        stats.recent_compactions.iter().filter(|r| r.kind == "flush").map(|r| r.reason).collect();
    assert!(records.contains(&"manual flush") && records.contains(&"memtable full"), "{records:?}");
}

/// Regression: `flush()` returned once the memtable left the queue, before
/// the flush was counted, so `stats()` right after it could miss the flush
/// (a range-delete test failed in CI on exactly that).
#[test]
fn a_flush_is_counted_in_stats_when_flush_returns() {
    let db = Db::open("/db", small_opts()).unwrap();
    for i in 0..200u64 {
        db.put(format!("k{i:04}"), "v").unwrap();
        db.delete_range(format!("k{i:04}a"), format!("k{i:04}b")).unwrap();
        db.flush().unwrap();
        let s = db.stats();
        assert_eq!(s.flushes, i + 1, "flush {i} not counted yet:\n{s}");
        assert_eq!(s.range_dels_written, i + 1, "flush {i}: its range delete not counted:\n{s}");
    }
    db.close().unwrap();
}
