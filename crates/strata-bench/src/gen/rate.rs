//! Fixed-rate writer pacing (`--benchmark_write_rate_limit`).

use std::time::{Duration, Instant};

/// Holds a writer to `bytes_per_sec` over the long run. Each `wait` schedules
/// the caller against the instant of the first call (not per-operation
/// sleeps), so sleep overshoot does not accumulate into drift; a writer that
/// fell behind (e.g. stalled) catches up until it is back on schedule.
pub struct RateLimiter {
    bytes_per_sec: u64,
    start: Option<Instant>,
    total: u64,
}

impl RateLimiter {
    /// A limiter for `bytes_per_sec`; 0 means unlimited.
    pub fn new(bytes_per_sec: u64) -> Self {
        RateLimiter { bytes_per_sec, start: None, total: 0 }
    }

    /// Accounts `bytes` about to be written and sleeps until the schedule
    /// allows them.
    pub fn wait(&mut self, bytes: u64) {
        if self.bytes_per_sec == 0 {
            return;
        }
        let start = *self.start.get_or_insert_with(Instant::now);
        if let Some(d) = self.delay(bytes, start.elapsed()) {
            std::thread::sleep(d);
        }
    }

    /// Accounts `bytes` and returns how long a writer `elapsed` after the
    /// first call sleeps before writing them: none when unlimited, on
    /// schedule, or behind it (it catches up).
    pub(crate) fn delay(&mut self, bytes: u64, elapsed: Duration) -> Option<Duration> {
        if self.bytes_per_sec == 0 {
            return None;
        }
        self.total = self.total.saturating_add(bytes);
        let due = Duration::from_secs_f64(self.total as f64 / self.bytes_per_sec as f64);
        due.checked_sub(elapsed).filter(|d| !d.is_zero())
    }
}
