//! Delayed writes (RocksDB's `WriteController`): once a tree's L0 reaches
//! `level0_slowdown_writes_trigger`, its writes are paced to a byte rate,
//! `delayed_write_rate` at the trigger and 0.8 times less for every L0 file
//! beyond it (RocksDB lowers its delayed rate by that factor each time a
//! stall worsens). Writes run free until the pace is a millisecond behind,
//! then sleep it off, so a stall starts as a gentle slope instead of
//! LevelDB's fixed millisecond per write.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Sleeps shorter than this are owed, not taken: a sleep costs about as
/// much as a short write, and the debt is paid by the next longer one.
const MIN_SLEEP: Duration = Duration::from_millis(1);
/// The longest one write sleeps: a large batch at a low rate owes more,
/// which the writes after it pay (or a compaction that ends the stall
/// forgives), so no single write waits for minutes.
const MAX_SLEEP: Duration = Duration::from_millis(100);
/// Each L0 file past the slowdown trigger multiplies the rate by this.
const SLOWDOWN_STEP: f64 = 0.8;
/// The rate never falls below this many bytes per second.
const MIN_RATE: f64 = 16.0 * 1024.0;

pub(crate) struct WriteController {
    /// Bytes per second at the slowdown trigger (`Options::delayed_write_rate`).
    base_rate: u64,
    /// When the writes paced so far would have finished at their rate.
    /// INVARIANT: `None` whenever the tree is not delaying writes, so a new
    /// stall starts with no debt.
    paced_until: Mutex<Option<Instant>>,
}

impl WriteController {
    pub(crate) fn new(base_rate: u64) -> Self {
        WriteController { base_rate, paced_until: Mutex::new(None) }
    }

    /// The delayed rate with `beyond` L0 files past the slowdown trigger.
    fn rate(&self, beyond: usize) -> f64 {
        let steps = i32::try_from(beyond).unwrap_or(i32::MAX);
        (self.base_rate as f64 * SLOWDOWN_STEP.powi(steps)).max(MIN_RATE)
    }

    /// Paces a write of `bytes` at `now` with `beyond` L0 files past the
    /// trigger: returns how long it must sleep first (zero while the pace
    /// owes less than [`MIN_SLEEP`], at most [`MAX_SLEEP`]).
    pub(crate) fn delay(&self, bytes: usize, beyond: usize, now: Instant) -> Duration {
        let mut paced = self.paced_until.lock();
        let start = paced.filter(|t| *t > now).unwrap_or(now);
        let end = start + Duration::from_secs_f64(bytes as f64 / self.rate(beyond));
        *paced = Some(end);
        let owed = start - now;
        if owed >= MIN_SLEEP {
            owed.min(MAX_SLEEP)
        } else {
            Duration::ZERO
        }
    }

    /// The stall is over: the next one starts with no debt.
    pub(crate) fn clear(&self) {
        *self.paced_until.lock() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `d` in milliseconds, to a microsecond (rates are floating point).
    fn ms(d: Duration) -> f64 {
        (d.as_secs_f64() * 1e6).round() / 1e3
    }

    /// At 1 MB/s, 1 000-byte writes cost 1 ms each: the first two run free
    /// (the second owes 1 ms only once the first is paced), then each waits
    /// the pace; sleeping them off keeps the rate.
    #[test]
    fn writes_are_paced_to_the_rate_and_short_debts_are_owed() {
        let c = WriteController::new(1_000_000);
        let t0 = Instant::now();
        assert_eq!(c.delay(1_000, 0, t0), Duration::ZERO);
        assert_eq!(ms(c.delay(1_000, 0, t0)), 1.0);
        assert_eq!(ms(c.delay(1_000, 0, t0)), 2.0);
        // Time that passed pays the debt.
        assert_eq!(c.delay(1_000, 0, t0 + Duration::from_millis(10)), Duration::ZERO);
        // Less than a millisecond owed: no sleep, but the debt stays.
        let t1 = t0 + Duration::from_millis(20);
        assert_eq!(c.delay(500, 0, t1), Duration::ZERO);
        assert_eq!(c.delay(500, 0, t1), Duration::ZERO);
        assert_eq!(ms(c.delay(500, 0, t1)), 1.0);
    }

    #[test]
    fn each_file_past_the_trigger_slows_the_rate_by_a_fifth() {
        let c = WriteController::new(1_000_000);
        assert_eq!(c.rate(0), 1_000_000.0);
        assert!((c.rate(1) - 800_000.0).abs() < 1e-6);
        assert!((c.rate(3) - 512_000.0).abs() < 1e-6);
        assert_eq!(c.rate(100), MIN_RATE);
        let t0 = Instant::now();
        c.delay(801, 1, t0);
        assert_eq!(ms(c.delay(1, 1, t0)), 1.001, "801 B at 800 kB/s");
    }

    #[test]
    fn a_new_stall_starts_with_no_debt() {
        let c = WriteController::new(1_000_000);
        let t0 = Instant::now();
        c.delay(2_000_000_000, 0, t0);
        assert_eq!(c.delay(1, 0, t0), MAX_SLEEP, "a debt of 2 000 s is paid 100 ms per write");
        assert_eq!(c.delay(1, 0, t0 + Duration::from_secs(999)), MAX_SLEEP);
        c.clear();
        assert_eq!(c.delay(1, 0, t0), Duration::ZERO);
    }
}
