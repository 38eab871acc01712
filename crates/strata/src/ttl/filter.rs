//! The compaction filter a [`crate::ttl::TtlDb`] installs: it removes
//! expired values and hands the rest, without their write time, to the
//! user's own filter if one was set (RocksDB's `TtlCompactionFilter`).

use std::sync::Arc;

use super::value::{split, stamp, Expiry};
use crate::compaction::{CompactionFilter, Decision};

pub(crate) struct TtlFilter {
    expiry: Arc<Expiry>,
    user: Option<Arc<dyn CompactionFilter>>,
    name: String,
}

impl TtlFilter {
    pub(crate) fn new(expiry: Arc<Expiry>, user: Option<Arc<dyn CompactionFilter>>) -> Self {
        let name = match &user {
            Some(u) => format!("ttl+{}", u.name()),
            None => "ttl".to_string(),
        };
        TtlFilter { expiry, user, name }
    }
}

impl CompactionFilter for TtlFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn filter(&self, level: usize, key: &[u8], stored: &[u8]) -> Decision {
        // A value without a write time was not written by TtlDb: reads report
        // it as corruption, and the filter leaves the evidence alone.
        let Ok((value, written)) = split(stored) else { return Decision::Keep };
        if self.expiry.expired(written, self.expiry.now()) {
            return Decision::Remove;
        }
        match self.user.as_ref().map(|u| u.filter(level, key, value)) {
            None | Some(Decision::Keep) => Decision::Keep,
            Some(Decision::Remove) => Decision::Remove,
            // The new value keeps the write time of the one it replaces.
            Some(Decision::ChangeValue(v)) => Decision::ChangeValue(stamp(&v, written)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ttl::ManualClock;

    #[test]
    fn expired_values_go_and_the_user_filter_sees_the_rest_unstamped() {
        let clock = Arc::new(ManualClock::new(100_000));
        let expiry = Arc::new(Expiry::new(Duration::from_secs(10), clock.clone()));
        let user = |_: usize, key: &[u8], value: &[u8]| match key {
            b"drop" => Decision::Remove,
            b"upper" => Decision::ChangeValue(value.to_ascii_uppercase()),
            _ => Decision::Keep,
        };
        let f = TtlFilter::new(expiry.clone(), Some(Arc::new(user)));
        assert_eq!(f.name(), "ttl+closure");
        assert_eq!(f.filter(1, b"keep", &stamp(b"v", 95_000)), Decision::Keep);
        assert_eq!(f.filter(1, b"old", &stamp(b"v", 80_000)), Decision::Remove);
        assert_eq!(f.filter(1, b"drop", &stamp(b"v", 95_000)), Decision::Remove);
        assert_eq!(f.filter(1, b"upper", &stamp(b"ab", 95_000)), Decision::ChangeValue(stamp(b"AB", 95_000)));
        assert_eq!(f.filter(1, b"short", b"abc"), Decision::Keep, "not a TTL value");
        clock.advance(Duration::from_secs(20));
        assert_eq!(f.filter(1, b"keep", &stamp(b"v", 95_000)), Decision::Remove, "the clock moved on");
        assert_eq!(TtlFilter::new(expiry, None).name(), "ttl");
    }
}
