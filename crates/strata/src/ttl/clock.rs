//! Where a [`crate::ttl::TtlDb`] gets the time: the system clock, or a clock
//! tests move by hand.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The time source of a [`crate::ttl::TtlDb`] (RocksDB's `SystemClock`, which
/// DBWithTTL reads through its `Env`).
///
/// # Examples
///
/// ```
/// use strata::ttl::{Clock, SystemClock};
///
/// assert!(SystemClock.now_millis() > 1_600_000_000_000, "after September 2020");
/// ```
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> u64;
}

/// The operating system's wall clock (a time before the Unix epoch reads as 0).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use strata::ttl::{SystemClock, TtlDb};
/// use strata::Options;
///
/// let dir = tempfile::tempdir()?;
/// let db = TtlDb::open_with_clock(dir.path(), Options::default(), Duration::from_secs(60), Arc::new(SystemClock))?;
/// db.put(b"k", b"v")?;
/// assert_eq!(db.get(b"k")?.as_deref(), Some(&b"v"[..]));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> u64 {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    }
}

/// A clock that moves only when told to (RocksDB tests' `MockSystemClock`),
/// so tests of expiry never sleep. Share it through an `Arc` to keep moving
/// it after handing it to [`crate::ttl::TtlDb::open_with_clock`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use strata::ttl::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_000);
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(clock.now_millis(), 3_000);
/// clock.set_millis(10);
/// assert_eq!(clock.now_millis(), 10);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    millis: AtomicU64,
}

impl ManualClock {
    /// A clock reading `millis` milliseconds since the Unix epoch.
    pub fn new(millis: u64) -> Self {
        ManualClock { millis: AtomicU64::new(millis) }
    }

    /// Moves the clock forward by `by` (saturating at `u64::MAX` milliseconds).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        let _ = self.millis.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |m| Some(m.saturating_add(by)));
    }

    /// Sets the clock to `millis` milliseconds since the Unix epoch (it may go back).
    pub fn set_millis(&self, millis: u64) {
        self.millis.store(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> u64 {
        self.millis.load(Ordering::SeqCst)
    }
}
