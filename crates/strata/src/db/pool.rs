//! The database's one background pool (RocksDB's `max_background_jobs`):
//! a fixed number of worker threads run every keyspace's flushes,
//! compactions, buffer trims, event deliveries and idle purges, so a
//! keyspace costs no thread of its own.
//!
//! Scheduling, in this order of preference:
//! 1. event deliveries (cheap, and listeners should hear promptly), one at
//!    a time per keyspace so its events stay in order;
//! 2. the periodic sweep (idle purge of obsolete files, due buffer trims,
//!    trees that became idle for idle compaction);
//! 3. flushes, the oldest sealed memtable first (by its WAL number), one at
//!    a time per keyspace;
//! 4. compaction work of the keyspace that may have some (it was woken since
//!    its last step found nothing): the one with the most L0 files first,
//!    since L0 is what stalls writes and its count costs nothing to read
//!    (a policy pick would build a view per keyspace); round-robin among
//!    equals, so a keyspace always busy cannot starve the others.
//!
//! Compactions never take the last worker (with two workers or more): one
//! stays free for flushes, so a long merge does not stall writes. Within a
//! keyspace, as before, merges run one at a time unless the policy allows
//! concurrent ones (then up to `max_background_compactions`, the keyspace's
//! `running` set keeping them apart).
//!
//! Locks: `sched` may be held while taking a tree's `state`, never the
//! other way round; waking (`Waker::notify_all`, called under `state`)
//! takes only `wake`, a leaf lock.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::{DbInner, Immutable};

/// Longest time between two sweeps.
const MAX_TICK: Duration = Duration::from_millis(500);

thread_local! {
    /// The tree whose job this pool worker runs (a listener may close the
    /// database or drop its keyspace from inside that job).
    static CURRENT: Cell<Option<u32>> = const { Cell::new(None) };
}

pub(crate) struct Pool {
    /// Worker threads, set by [`Pool::start`].
    workers: AtomicUsize,
    sched: Mutex<Sched>,
    /// Signalled on `sched` when a job ends (a keyspace being stopped waits for its jobs).
    job_done: Condvar,
    wake: Mutex<Wake>,
    wake_cv: Condvar,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Default)]
struct Wake {
    /// Trees woken since a worker last looked.
    trees: Vec<u32>,
    stop: bool,
}

struct Sched {
    slots: BTreeMap<u32, Slot>,
    /// Trees that may have work; a tree leaves when a look finds none.
    candidates: BTreeSet<u32>,
    /// Compaction jobs running, all keyspaces.
    compactions: usize,
    /// Round-robin cursor: compaction ties go to the first tree at or after it.
    next: u32,
    tick: Duration,
    next_sweep: Instant,
    /// The tree the sweep works on now.
    sweeping: Option<u32>,
    sweep_running: bool,
    stopping: bool,
}

struct Slot {
    tree: Arc<DbInner>,
    /// Being removed: no new job.
    leaving: bool,
    jobs: usize,
    flushing: bool,
    delivering: bool,
    compactions: usize,
    /// Compaction work may exist (woken since a step last found none).
    check: bool,
    /// Wakes absorbed so far: a step that found nothing clears `check` only
    /// if no wake came meanwhile.
    wakes: u64,
    last_trim: Instant,
}

enum Job {
    Deliver,
    Sweep,
    Flush(Immutable),
    Compact { trim: bool, wakes: u64 },
}

/// Trees with work a pick looks at past the first job it found (see `Pool::pick`).
const SCAN_BUDGET: usize = 64;

/// Workers for `opts`: `max_background_jobs`, raised to let
/// `max_background_compactions` merges run beside a flush (RocksDB, too,
/// honours the older option when it asks for more).
pub(crate) fn workers_for(opts: &crate::options::Options) -> usize {
    opts.max_background_jobs.max(opts.max_background_compactions.saturating_add(1)).clamp(1, 256)
}

/// A tree's handle for waking the pool (the field `DbInner::bg_cv`, named
/// for the per-tree condition variable it replaced).
pub(crate) struct Waker {
    pool: Arc<Pool>,
    id: u32,
}

impl Waker {
    pub(crate) fn new(pool: Arc<Pool>, id: u32) -> Waker {
        Waker { pool, id }
    }

    /// Tells the pool this tree may have work (a sealed memtable, events, a
    /// compaction). Cheap and safe under any engine lock.
    pub(crate) fn notify_all(&self) {
        self.pool.wake(self.id);
    }
}

impl Pool {
    /// A pool with no thread yet (see [`Pool::start`]).
    pub(crate) fn new() -> Arc<Pool> {
        Arc::new(Pool {
            workers: AtomicUsize::new(0),
            sched: Mutex::new(Sched {
                slots: BTreeMap::new(),
                candidates: BTreeSet::new(),
                compactions: 0,
                next: 0,
                tick: MAX_TICK,
                next_sweep: Instant::now() + MAX_TICK,
                sweeping: None,
                sweep_running: false,
                stopping: false,
            }),
            job_done: Condvar::new(),
            wake: Mutex::new(Wake::default()),
            wake_cv: Condvar::new(),
            handles: Mutex::new(Vec::new()),
        })
    }

    /// Starts `workers` threads (read-only opens never do).
    pub(crate) fn start(self: &Arc<Self>, workers: usize) -> std::io::Result<()> {
        let mut handles = self.handles.lock();
        self.workers.store(workers.max(1), Ordering::Relaxed);
        for i in handles.len()..workers.max(1) {
            let pool = self.clone();
            let name = format!("strata-bg-{i}");
            handles.push(std::thread::Builder::new().name(name).spawn(move || pool.work())?);
        }
        Ok(())
    }

    /// Compaction jobs that may run at once: all workers but one, which stays for flushes.
    fn compaction_cap(&self) -> usize {
        self.workers.load(Ordering::Relaxed).saturating_sub(1).max(1)
    }

    fn wake(&self, id: u32) {
        let mut w = self.wake.lock();
        if w.stop || self.workers.load(Ordering::Relaxed) == 0 {
            return; // read-only or closed: nothing would take it
        }
        if w.trees.last() != Some(&id) {
            w.trees.push(id);
        }
        drop(w);
        self.wake_cv.notify_all();
    }

    /// Gives `tree`'s background work to the pool.
    pub(crate) fn add(&self, tree: Arc<DbInner>) {
        let id = tree.id;
        let mut s = self.sched.lock();
        let trim = tree.policy.wants_trim().then_some(tree.opts.buffer_trim_interval);
        // Idle compaction: a sweep per threshold, but not more often than every 10 ms.
        let idle = tree.opts.idle_compaction.map(|d| d.max(Duration::from_millis(10)));
        for every in [trim, idle].into_iter().flatten() {
            let tick = every.min(MAX_TICK).max(Duration::from_millis(1));
            if tick < s.tick {
                s.tick = tick;
                s.next_sweep = s.next_sweep.min(Instant::now() + tick);
            }
        }
        let slot = Slot {
            tree,
            leaving: false,
            jobs: 0,
            flushing: false,
            delivering: false,
            compactions: 0,
            check: true,
            wakes: 0,
            last_trim: Instant::now(),
        };
        s.slots.insert(id, slot);
        s.candidates.insert(id);
        drop(s);
        self.wake(id);
    }

    /// Takes tree `id` out of the pool once its running jobs are done: no
    /// job runs on it after this returns.
    pub(crate) fn remove(&self, id: u32) {
        let own = usize::from(CURRENT.with(|c| c.get()) == Some(id));
        let mut s = self.sched.lock();
        let Some(slot) = s.slots.get_mut(&id) else { return };
        slot.leaving = true;
        while s.slots.get(&id).is_some_and(|t| t.jobs > own) || s.sweeping == Some(id) {
            self.job_done.wait(&mut s);
        }
        s.slots.remove(&id);
        s.candidates.remove(&id);
    }

    /// Stops and joins the workers (after every tree was removed).
    pub(crate) fn shutdown(&self) {
        self.sched.lock().stopping = true;
        self.wake.lock().stop = true;
        self.wake_cv.notify_all();
        let me = std::thread::current().id();
        let handles: Vec<_> = self.handles.lock().drain(..).collect();
        for h in handles {
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
    }

    fn work(self: Arc<Self>) {
        while let Some((tree, job)) = self.next_job() {
            let Some(tree) = tree else {
                self.sweep();
                self.job_ended(None, &job, true);
                continue;
            };
            CURRENT.with(|c| c.set(Some(tree.id)));
            let found = run(&tree, &job);
            CURRENT.with(|c| c.set(None));
            self.job_ended(Some(&tree), &job, found);
        }
    }

    /// Moves the wakes into `s`.
    fn absorb(&self, s: &mut Sched) {
        let trees = std::mem::take(&mut self.wake.lock().trees);
        for id in trees {
            if let Some(slot) = s.slots.get_mut(&id) {
                slot.check = true;
                slot.wakes += 1;
                s.candidates.insert(id);
            }
        }
    }

    /// Blocks until there is a job (`None`: the pool stops).
    fn next_job(&self) -> Option<(Option<Arc<DbInner>>, Job)> {
        loop {
            let mut s = self.sched.lock();
            self.absorb(&mut s);
            if s.stopping {
                return None;
            }
            if let Some(found) = self.pick(&mut s) {
                return Some(found);
            }
            let until = s.next_sweep;
            drop(s);
            let mut w = self.wake.lock();
            if w.trees.is_empty() && !w.stop {
                self.wake_cv.wait_until(&mut w, until);
            }
        }
    }

    fn pick(&self, s: &mut Sched) -> Option<(Option<Arc<DbInner>>, Job)> {
        let now = Instant::now();
        if !s.sweep_running && now >= s.next_sweep {
            s.sweep_running = true;
            s.next_sweep = now + s.tick;
            return Some((None, Job::Sweep));
        }
        let compaction_room = s.compactions < self.compaction_cap();
        // (oldest WAL, id) of the best flush; (L0 files, distance from the cursor, id) of the best compaction.
        let mut flush: Option<(u64, u32)> = None;
        let mut compact: Option<(usize, u32, u32)> = None;
        let mut idle = Vec::new();
        // From the cursor on, and no further than SCAN_BUDGET trees with work
        // past the first job found: after an open of thousands of keyspaces
        // every tree is a candidate, and a full scan per pick would make the
        // pool's start quadratic. With fewer busy trees the scan is whole.
        let mut with_work = 0;
        let from = s.next;
        for &id in s.candidates.range(from..).chain(s.candidates.range(..from)) {
            if with_work >= SCAN_BUDGET && (flush.is_some() || compact.is_some()) {
                break;
            }
            let Some(slot) = s.slots.get(&id) else {
                idle.push(id);
                continue;
            };
            if slot.leaving {
                idle.push(id);
                continue;
            }
            let t = &slot.tree;
            if !slot.delivering && t.events.has_pending() {
                let tree = t.clone();
                let slot = s.slots.get_mut(&id)?;
                slot.delivering = true;
                slot.jobs += 1;
                return Some((Some(tree), Job::Deliver));
            }
            let (oldest, stopped) = {
                let st = t.state.lock();
                let stopped = st.shutting_down || st.bg_error.is_some();
                (if stopped { None } else { st.imms.front().map(|i| i.wal) }, stopped)
            };
            let mut work = false;
            if let Some(wal) = oldest {
                work = true;
                if !slot.flushing && flush.is_none_or(|(w, _)| wal < w) {
                    flush = Some((wal, id));
                }
            }
            let paused = stopped || t.opts.disable_auto_compactions;
            if slot.check && !paused {
                work = true;
                if compaction_room && slot.compactions < t.compaction_threads() {
                    let l0 = t.versions.current().level_files(0);
                    let distance = id.wrapping_sub(s.next);
                    let better = match compact {
                        None => true,
                        Some((l, d, _)) => l0 > l || (l0 == l && distance < d),
                    };
                    if better {
                        compact = Some((l0, distance, id));
                    }
                }
            }
            if work {
                with_work += 1;
            } else if !slot.delivering {
                idle.push(id);
            }
        }
        for id in idle {
            s.candidates.remove(&id);
            if let Some(slot) = s.slots.get_mut(&id) {
                slot.check = false;
            }
        }
        if let Some(slot) = flush.and_then(|(_, id)| s.slots.get_mut(&id)) {
            let job = slot.tree.state.lock().imms.front().cloned();
            if let Some(job) = job {
                slot.flushing = true;
                slot.jobs += 1;
                return Some((Some(slot.tree.clone()), Job::Flush(job)));
            }
        }
        let (_, _, id) = compact?;
        let slot = s.slots.get_mut(&id)?;
        slot.compactions += 1;
        slot.jobs += 1;
        let interval = slot.tree.opts.buffer_trim_interval;
        let trim = slot.tree.policy.wants_trim() && slot.last_trim.elapsed() >= interval;
        if trim {
            slot.last_trim = Instant::now();
        }
        let found = (Some(slot.tree.clone()), Job::Compact { trim, wakes: slot.wakes });
        s.next = id.wrapping_add(1);
        s.compactions += 1;
        Some(found)
    }

    fn job_ended(&self, tree: Option<&Arc<DbInner>>, job: &Job, found: bool) {
        let mut s = self.sched.lock();
        self.absorb(&mut s);
        match job {
            Job::Sweep => s.sweep_running = false,
            Job::Compact { .. } => s.compactions -= 1,
            _ => {}
        }
        let id = tree.map_or(u32::MAX, |t| t.id);
        if let Some(slot) = tree.and_then(|_| s.slots.get_mut(&id)) {
            slot.jobs -= 1;
            match job {
                Job::Deliver => slot.delivering = false,
                Job::Flush(_) => slot.flushing = false,
                Job::Compact { wakes, .. } => {
                    slot.compactions -= 1;
                    if !found && slot.wakes == *wakes {
                        slot.check = false;
                    }
                }
                Job::Sweep => {}
            }
            s.candidates.insert(id);
        }
        drop(s);
        self.job_done.notify_all();
        // Freed capacity: sleeping workers look again.
        self.wake_cv.notify_all();
    }

    /// The sweep: purges every tree's obsolete files (those whose last
    /// reader went away while nothing ran) and marks due buffer trims and
    /// trees with idle compaction to do.
    fn sweep(&self) {
        let ids: Vec<u32> = self.sched.lock().slots.keys().copied().collect();
        for id in ids {
            let tree = {
                let mut s = self.sched.lock();
                let Some(slot) = s.slots.get_mut(&id).filter(|t| !t.leaving) else { continue };
                let tree = slot.tree.clone();
                let interval = tree.opts.buffer_trim_interval;
                let trim_due = tree.policy.wants_trim() && slot.last_trim.elapsed() >= interval;
                if trim_due || tree.idle_work_may_exist() {
                    slot.check = true;
                    s.candidates.insert(id);
                }
                s.sweeping = Some(id);
                tree
            };
            tree.purge_obsolete_files();
            self.sched.lock().sweeping = None;
            self.job_done.notify_all();
        }
    }
}

/// Runs one job; for a compaction, whether it found work.
fn run(tree: &Arc<DbInner>, job: &Job) -> bool {
    match job {
        Job::Deliver => tree.events.deliver(),
        Job::Sweep => {}
        Job::Flush(imm) => tree.flush_job(imm),
        Job::Compact { trim, .. } => return tree.compaction_job(*trim),
    }
    true
}
