//! How a [`crate::ttl::TtlDb`] stores a value: the user's bytes followed by
//! the write time, 8 bytes little-endian, in milliseconds since the Unix
//! epoch (FORMAT.md, *TTL values*); and when a stored value has expired.

use std::sync::Arc;
use std::time::Duration;

use super::clock::Clock;
use crate::error::{Error, Result};

/// Bytes of the write time after the user's value.
pub(crate) const STAMP_LEN: usize = 8;

/// `value` followed by its write time `millis`.
pub(crate) fn stamp(value: &[u8], millis: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(value.len() + STAMP_LEN);
    v.extend_from_slice(value);
    v.extend_from_slice(&millis.to_le_bytes());
    v
}

/// Splits a stored value into the user's value and its write time.
pub(crate) fn split(stored: &[u8]) -> Result<(&[u8], u64)> {
    let at = stored.len().checked_sub(STAMP_LEN).ok_or_else(|| {
        Error::corruption(format!(
            "a TTL value is at least {STAMP_LEN} bytes (its write time), this one has {}: \
             was the database written without TtlDb?",
            stored.len()
        ))
    })?;
    let (value, t) = stored.split_at(at);
    let mut b = [0u8; STAMP_LEN];
    b.copy_from_slice(t);
    Ok((value, u64::from_le_bytes(b)))
}

/// The TTL and the clock it is measured by, shared by a database's reads and
/// its compaction filter.
pub(crate) struct Expiry {
    ttl: Duration,
    /// Milliseconds a value lives; `None` for ever (a TTL of zero).
    ttl_millis: Option<u64>,
    clock: Arc<dyn Clock>,
}

impl Expiry {
    pub(crate) fn new(ttl: Duration, clock: Arc<dyn Clock>) -> Self {
        // Rounded up, so a TTL under a millisecond still keeps a value that long.
        let ttl_millis = (!ttl.is_zero()).then(|| crate::keyspace_options::ttl_millis(ttl));
        Expiry { ttl, ttl_millis, clock }
    }

    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    pub(crate) fn now(&self) -> u64 {
        self.clock.now_millis()
    }

    /// True if a value written at `written` has outlived the TTL at `now`
    /// (RocksDB's `IsStale`: strictly more than the TTL has passed).
    pub(crate) fn expired(&self, written: u64, now: u64) -> bool {
        self.ttl_millis.is_some_and(|ttl| now > written.saturating_add(ttl))
    }

    /// The user's value of `stored`, or `None` if it has expired at `now`.
    pub(crate) fn live<'v>(&self, stored: &'v [u8], now: u64) -> Result<Option<&'v [u8]>> {
        let (value, written) = split(stored)?;
        Ok((!self.expired(written, now)).then_some(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ttl::ManualClock;

    #[test]
    fn values_round_trip_and_short_ones_are_corruption() {
        let s = stamp(b"abc", 0x0102_0304_0506_0708);
        assert_eq!(s.len(), 3 + STAMP_LEN);
        assert_eq!(&s[3..], &[8, 7, 6, 5, 4, 3, 2, 1], "little-endian");
        assert_eq!(split(&s).unwrap(), (&b"abc"[..], 0x0102_0304_0506_0708));
        assert_eq!(split(&stamp(b"", 5)).unwrap(), (&b""[..], 5));
        assert!(split(b"short").unwrap_err().is_corruption());
    }

    #[test]
    fn a_value_expires_once_more_than_the_ttl_has_passed() {
        let e = Expiry::new(Duration::from_secs(10), Arc::new(ManualClock::new(0)));
        assert!(!e.expired(1_000, 11_000), "exactly the TTL");
        assert!(e.expired(1_000, 11_001));
        assert!(!e.expired(5_000, 1_000), "written after now (the clock went back)");
        assert!(!e.expired(u64::MAX, u64::MAX), "no overflow");
        let forever = Expiry::new(Duration::ZERO, Arc::new(ManualClock::new(0)));
        assert!(!forever.expired(0, u64::MAX));
        let tiny = Expiry::new(Duration::from_nanos(1), Arc::new(ManualClock::new(0)));
        assert!(!tiny.expired(7, 8) && tiny.expired(7, 9), "under a millisecond rounds up to one");
        assert_eq!(e.live(&stamp(b"v", 1_000), 2_000).unwrap(), Some(&b"v"[..]));
        assert_eq!(e.live(&stamp(b"v", 1_000), 20_000).unwrap(), None);
    }
}
