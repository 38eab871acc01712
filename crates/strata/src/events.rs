//! Event listeners (RocksDB `EventListener`): what the background threads
//! report, and how it reaches user code. Events are queued by the thread that
//! saw them (possibly under an engine lock) and handed to the listeners by a
//! background thread holding no engine lock, so a listener may call back into
//! the database; a listener that panics is caught and logged.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// Receives what the background threads did (RocksDB `EventListener`). Every
/// method has an empty default body: implement the ones you need.
///
/// Methods run on a background thread of the database, outside its locks,
/// shortly after the event (the call that caused it may return first). A
/// listener may read (`get`, `stats`, iterators, snapshots); it must not
/// write or wait for background work (`flush`, `compact_range`,
/// `wait_for_compactions`): a write may wait for a flush or compaction that
/// the very thread running the listener has to do. A panic in a listener is
/// caught and logged; the database goes on.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use strata::{Db, EventListener, FlushInfo, MemVfs, Options};
///
/// #[derive(Default)]
/// struct CountFlushes(AtomicUsize);
/// impl EventListener for CountFlushes {
///     fn on_flush_completed(&self, info: &FlushInfo) {
///         assert_eq!(info.keyspace, "default");
///         self.0.fetch_add(1, Ordering::SeqCst);
///     }
/// }
///
/// let counter = Arc::new(CountFlushes::default());
/// let opts = Options::default().with_vfs(Arc::new(MemVfs::new())).with_event_listener(counter.clone());
/// let db = Db::open("/db", opts)?;
/// db.put("k", "v")?;
/// db.flush()?;
/// db.close()?; // delivers what is still queued
/// assert_eq!(counter.0.load(Ordering::SeqCst), 1);
/// # Ok::<(), strata::Error>(())
/// ```
pub trait EventListener: Send + Sync {
    /// A memtable was written to a table and installed.
    fn on_flush_completed(&self, _info: &FlushInfo) {}
    /// A compaction task (merge, move or drop) was installed.
    fn on_compaction_completed(&self, _info: &CompactionInfo) {}
    /// Writes to a keyspace went from normal to delayed or stopped, or back,
    /// or stay stalled for another cause.
    fn on_stall_conditions_changed(&self, _info: &StallInfo) {}
    /// A flush, compaction or WAL failure stopped writes (the keyspace is
    /// read-only from now on; reopen the database to recover).
    fn on_background_error(&self, _info: &BackgroundErrorInfo) {}
    /// A read-write open applied another compaction policy than the one the
    /// keyspace had recorded (the caller set it explicitly, see
    /// [`Options::with_compaction_style`](crate::Options::with_compaction_style)).
    /// Unlike the others, it is called on the opening thread, during
    /// `Db::open`, once the change is recorded.
    fn on_policy_changed(&self, _info: &PolicyChangeInfo) {}
}

/// A compaction policy changed at open ([`EventListener::on_policy_changed`]).
///
/// # Examples
///
/// ```
/// fn describe(info: &strata::PolicyChangeInfo) -> String {
///     format!("{}: {} -> {}", info.keyspace, info.old, info.new)
/// }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PolicyChangeInfo {
    /// The keyspace's name.
    pub keyspace: String,
    /// The recorded policy's name.
    pub old: String,
    /// The policy the keyspace runs with from now on.
    pub new: String,
}

/// A completed flush ([`EventListener::on_flush_completed`]).
///
/// # Examples
///
/// ```
/// fn describe(info: &strata::FlushInfo) -> String {
///     format!("{}: {} bytes in {:?} to L{}", info.keyspace, info.bytes_written, info.file_numbers, info.output_level)
/// }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FlushInfo {
    /// The keyspace's name (`"default"` for the default keyspace).
    pub keyspace: String,
    /// The level the tables went to (0 unless `max_mem_compaction_level` placed them lower).
    pub output_level: usize,
    /// File numbers of the tables written (empty if everything was deleted).
    pub file_numbers: Vec<u64>,
    /// Entries in the flushed memtable.
    pub entries: u64,
    /// Table bytes written.
    pub bytes_written: u64,
    /// Wall time of the flush.
    pub duration: Duration,
    /// Why the memtable was sealed.
    pub reason: FlushReason,
}

/// Why a memtable was sealed and flushed (RocksDB `FlushReason`).
///
/// # Examples
///
/// ```
/// assert_eq!(strata::FlushReason::Manual.to_string(), "manual flush");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlushReason {
    /// The active memtable reached `write_buffer_size`.
    MemtableFull,
    /// `Db::flush` or `Keyspace::flush`.
    Manual,
    /// The WALs passed `max_total_wal_size` and this memtable held the oldest.
    WalSize,
    /// `close` flushed writes made without the WAL.
    Shutdown,
}

impl FlushReason {
    /// The reason as the statistics and the info log print it.
    pub fn as_str(self) -> &'static str {
        match self {
            FlushReason::MemtableFull => "memtable full",
            FlushReason::Manual => "manual flush",
            FlushReason::WalSize => "WAL size limit",
            FlushReason::Shutdown => "shutdown",
        }
    }
}

impl fmt::Display for FlushReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A completed compaction task ([`EventListener::on_compaction_completed`]).
///
/// # Examples
///
/// ```
/// fn amplification(info: &strata::CompactionInfo) -> f64 {
///     info.bytes_written as f64 / info.bytes_read.max(1) as f64
/// }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CompactionInfo {
    /// The keyspace's name.
    pub keyspace: String,
    /// The compaction policy's name (`"leveled"`, `"tiered"`, ...).
    pub policy: String,
    /// `"merge"`, `"move"`, `"append"`, `"refilter"` (a filter rebuilt, Monkey) or `"drop"`.
    pub kind: &'static str,
    /// Why the policy chose it.
    pub reason: &'static str,
    /// Levels the input files came from, ascending.
    pub input_levels: Vec<usize>,
    /// Level the output went to.
    pub output_level: usize,
    /// File numbers taken out of the tree.
    pub input_files: Vec<u64>,
    /// File numbers put into the tree (a move's are its inputs).
    pub output_files: Vec<u64>,
    /// Bytes read from input tables.
    pub bytes_read: u64,
    /// Bytes written to output tables.
    pub bytes_written: u64,
    /// Wall time of the task.
    pub duration: Duration,
}

/// Whether writes to a keyspace run freely, are slowed down or wait.
///
/// # Examples
///
/// ```
/// use strata::StallCondition;
/// assert_eq!(StallCondition::Stopped.to_string(), "stopped");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StallCondition {
    /// No stall.
    Normal,
    /// Writes are paced to `delayed_write_rate` (`level0_slowdown_writes_trigger` reached).
    Delayed,
    /// Writes wait for a flush or compaction.
    Stopped,
}

impl fmt::Display for StallCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StallCondition::Normal => "normal",
            StallCondition::Delayed => "delayed",
            StallCondition::Stopped => "stopped",
        })
    }
}

/// Why writes are delayed or stopped.
///
/// # Examples
///
/// ```
/// use strata::StallCause;
/// assert_eq!(StallCause::L0Files.to_string(), "too many L0 files");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StallCause {
    /// L0 reached `level0_slowdown_writes_trigger` or `level0_stop_writes_trigger`.
    L0Files,
    /// The memtable is full and `max_write_buffer_number` memtables wait for flush.
    Memtables,
}

impl fmt::Display for StallCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StallCause::L0Files => "too many L0 files",
            StallCause::Memtables => "too many memtables",
        })
    }
}

/// A change of a keyspace's stall condition ([`EventListener::on_stall_conditions_changed`]).
///
/// # Examples
///
/// ```
/// use strata::{StallCondition, StallInfo};
/// fn stopped(info: &StallInfo) -> bool {
///     info.current == StallCondition::Stopped
/// }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StallInfo {
    /// The keyspace's name.
    pub keyspace: String,
    /// The condition before.
    pub previous: StallCondition,
    /// The condition now.
    pub current: StallCondition,
    /// Why, unless `current` is normal.
    pub cause: Option<StallCause>,
    /// L0 files when the change was seen.
    pub l0_files: usize,
    /// Immutable memtables waiting for flush when the change was seen.
    pub immutable_memtables: usize,
}

/// What failed in the background.
///
/// # Examples
///
/// ```
/// assert_eq!(strata::BackgroundErrorReason::Flush.to_string(), "flush");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackgroundErrorReason {
    /// Writing or installing a flushed table.
    Flush,
    /// A compaction (background or manual) or buffer trim.
    Compaction,
    /// Writing, syncing or creating a WAL.
    Wal,
    /// Anything else (starting a keyspace's threads).
    Other,
}

impl fmt::Display for BackgroundErrorReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackgroundErrorReason::Flush => "flush",
            BackgroundErrorReason::Compaction => "compaction",
            BackgroundErrorReason::Wal => "wal",
            BackgroundErrorReason::Other => "other",
        })
    }
}

/// A failure that stopped writes ([`EventListener::on_background_error`]).
///
/// # Examples
///
/// ```
/// fn alert(info: &strata::BackgroundErrorInfo) -> String {
///     format!("{} stopped by a {} failure: {}", info.keyspace, info.reason, info.error)
/// }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BackgroundErrorInfo {
    /// The keyspace's name.
    pub keyspace: String,
    /// What failed.
    pub reason: BackgroundErrorReason,
    /// The error, as `Stats::background_error` shows it.
    pub error: String,
}

/// A stall condition and its cause in one byte: condition << 2 | cause.
fn stall_code((condition, cause): (StallCondition, Option<StallCause>)) -> u8 {
    let cause = match cause {
        None => 0,
        Some(StallCause::L0Files) => 1,
        Some(StallCause::Memtables) => 2,
    };
    (condition as u8) << 2 | cause
}

/// The listeners an `Options` carries (its `Debug` shows how many).
#[derive(Clone, Default)]
pub(crate) struct Listeners(pub(crate) Vec<Arc<dyn EventListener>>);

impl Listeners {
    /// Hands a policy change to every listener at once: it happens during
    /// the open, before any background thread exists.
    pub(crate) fn policy_changed(&self, info: &PolicyChangeInfo) {
        for l in &self.0 {
            if catch_unwind(AssertUnwindSafe(|| l.on_policy_changed(info))).is_err() {
                log::error!(target: "strata::events", "event listener panicked in on_policy_changed; ignored");
            }
        }
    }
}

impl fmt::Debug for Listeners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} listener(s)", self.0.len())
    }
}

pub(crate) enum Event {
    Flush(FlushInfo),
    Compaction(CompactionInfo),
    Stall(StallInfo),
    BackgroundError(BackgroundErrorInfo),
}

impl Event {
    fn name(&self) -> &'static str {
        match self {
            Event::Flush(_) => "on_flush_completed",
            Event::Compaction(_) => "on_compaction_completed",
            Event::Stall(_) => "on_stall_conditions_changed",
            Event::BackgroundError(_) => "on_background_error",
        }
    }

    fn send(&self, l: &dyn EventListener) {
        match self {
            Event::Flush(i) => l.on_flush_completed(i),
            Event::Compaction(i) => l.on_compaction_completed(i),
            Event::Stall(i) => l.on_stall_conditions_changed(i),
            Event::BackgroundError(i) => l.on_background_error(i),
        }
    }
}

/// One tree's queue of events and its last stall condition.
pub(crate) struct EventHub {
    listeners: Vec<Arc<dyn EventListener>>,
    pending: Mutex<VecDeque<Event>>,
    /// Held while delivering, so events reach listeners in queue order.
    delivering: Mutex<()>,
    /// The last stall condition and cause seen (`stall_code`).
    stall: AtomicU8,
}

impl EventHub {
    /// `last` (the database's info log `LOG`) hears every event after the
    /// user's listeners.
    pub(crate) fn new(listeners: &Listeners, last: Option<Arc<impl EventListener + 'static>>) -> Self {
        let mut listeners = listeners.0.clone();
        listeners.extend(last.map(|l| l as Arc<dyn EventListener>));
        EventHub {
            listeners,
            pending: Mutex::new(VecDeque::new()),
            delivering: Mutex::new(()),
            stall: AtomicU8::new(stall_code((StallCondition::Normal, None))),
        }
    }

    /// Queues an event for the listeners (nothing without any). Safe under engine locks.
    pub(crate) fn push(&self, event: Event) {
        if !self.listeners.is_empty() {
            self.pending.lock().push_back(event);
        }
    }

    pub(crate) fn has_pending(&self) -> bool {
        // While another thread delivers, it takes these too.
        !self.listeners.is_empty() && !self.delivering.is_locked() && !self.pending.lock().is_empty()
    }

    /// Hands queued events to the listeners, in order. Callers hold no engine
    /// lock. If another thread is delivering, it takes these too.
    pub(crate) fn deliver(&self) {
        if self.listeners.is_empty() {
            return;
        }
        loop {
            let Some(guard) = self.delivering.try_lock() else { return };
            loop {
                let Some(event) = self.pending.lock().pop_front() else { break };
                for l in &self.listeners {
                    if catch_unwind(AssertUnwindSafe(|| event.send(l.as_ref()))).is_err() {
                        log::error!(target: "strata::events", "event listener panicked in {}; ignored", event.name());
                    }
                }
            }
            drop(guard);
            // An event queued while the lock was held but after the queue
            // looked empty would wait for the next delivery: look again.
            if self.pending.lock().is_empty() {
                return;
            }
        }
    }

    /// Records the stall condition now seen; on a change of condition or
    /// cause, logs it and queues an event. Returns whether it changed. Cheap
    /// when nothing changed (the write path calls it for each write group).
    /// True while the last stall condition seen holds writes back (delayed
    /// or stopped).
    pub(crate) fn writes_held_back(&self) -> bool {
        self.stall.load(Ordering::Acquire) >> 2 != StallCondition::Normal as u8
    }

    pub(crate) fn stall_seen(
        &self,
        keyspace: &str,
        now: (StallCondition, Option<StallCause>),
        l0: usize,
        imms: usize,
    ) -> bool {
        let (current, cause) = now;
        let code = stall_code(now);
        if self.stall.load(Ordering::Acquire) == code {
            return false;
        }
        let prev = self.stall.swap(code, Ordering::AcqRel);
        if prev == code {
            return false;
        }
        let previous = match prev >> 2 {
            0 => StallCondition::Normal,
            1 => StallCondition::Delayed,
            _ => StallCondition::Stopped,
        };
        match cause {
            Some(c) => log::info!(
                target: "strata::stall",
                "[{keyspace}] write stall {current} (was {previous}): {c}, {l0} L0 files, {imms} immutable memtables"
            ),
            None => log::info!(target: "strata::stall", "[{keyspace}] write stall over (was {previous})"),
        }
        self.push(Event::Stall(StallInfo {
            keyspace: keyspace.to_string(),
            previous,
            current,
            cause,
            l0_files: l0,
            immutable_memtables: imms,
        }));
        true
    }

    /// Logs a failure that stopped writes and queues its event. Callers call
    /// it once, when the error is first set.
    pub(crate) fn background_error(&self, keyspace: &str, reason: BackgroundErrorReason, error: &str) {
        log::error!(target: "strata::background", "[{keyspace}] {reason} failed, writes stopped: {error}");
        self.push(Event::BackgroundError(BackgroundErrorInfo {
            keyspace: keyspace.to_string(),
            reason,
            error: error.to_string(),
        }));
    }
}
