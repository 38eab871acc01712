//! Key bounds of iterators: the range a prefix covers, and a range narrowed by
//! `ReadOptions`' iterate bounds (inclusive lower, exclusive upper).

use std::ops::Bound;

/// The smallest key greater than every key that starts with `prefix`: the
/// prefix without its trailing 0xFF bytes, last byte incremented. `None` when
/// no key is (an empty prefix, or only 0xFF bytes): unbounded above. The
/// exclusive upper bound of a prefix scan
/// ([`ReadOptions::with_iterate_upper_bound`](crate::ReadOptions::with_iterate_upper_bound)).
///
/// # Examples
///
/// ```
/// assert_eq!(strata::prefix_successor(b"user:"), Some(b"user;".to_vec()));
/// assert_eq!(strata::prefix_successor(b"a\xff"), Some(b"b".to_vec()));
/// assert_eq!(strata::prefix_successor(b"\xff\xff"), None);
/// ```
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut succ = prefix[..=last].to_vec();
    succ[last] += 1;
    Some(succ)
}

/// Exactly the keys starting with `prefix`.
pub(crate) fn prefix_range(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (Bound::Included(prefix.to_vec()), prefix_successor(prefix).map_or(Bound::Unbounded, Bound::Excluded))
}

/// An owned copy of a range bound.
pub(crate) fn owned(b: Bound<&impl AsRef<[u8]>>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The tighter of a range's start and an inclusive lower bound.
pub(crate) fn narrow_lower(start: Bound<Vec<u8>>, lower: Option<&[u8]>) -> Bound<Vec<u8>> {
    let Some(l) = lower else { return start };
    let keep = match &start {
        // Excluded(k) with k >= l admits only keys > k >= l: already inside.
        Bound::Included(k) | Bound::Excluded(k) => k.as_slice() >= l,
        Bound::Unbounded => false,
    };
    if keep {
        start
    } else {
        Bound::Included(l.to_vec())
    }
}

/// The tighter of a range's end and an exclusive upper bound.
pub(crate) fn narrow_upper(end: Bound<Vec<u8>>, upper: Option<&[u8]>) -> Bound<Vec<u8>> {
    let Some(u) = upper else { return end };
    let keep = match &end {
        Bound::Included(k) => k.as_slice() < u,
        Bound::Excluded(k) => k.as_slice() <= u,
        Bound::Unbounded => false,
    };
    if keep {
        end
    } else {
        Bound::Excluded(u.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(k: &str) -> Bound<Vec<u8>> {
        Bound::Included(k.as_bytes().to_vec())
    }

    fn exc(k: &str) -> Bound<Vec<u8>> {
        Bound::Excluded(k.as_bytes().to_vec())
    }

    #[test]
    fn prefix_successor_increments_the_last_byte_below_0xff() {
        assert_eq!(prefix_successor(b"abc"), Some(b"abd".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\x00"), Some(b"\x01".to_vec()));
        assert_eq!(prefix_successor(b"\x01\xfe"), Some(b"\x01\xff".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }

    #[test]
    fn the_successor_bounds_exactly_the_prefixed_keys() {
        let keys: Vec<Vec<u8>> =
            [&b"a"[..], b"a\xff", b"a\xff\xff\x00", b"b", b"b\x00", b"\xff", b"\xff\x00", b""]
                .iter()
                .map(|k| k.to_vec())
                .collect();
        for prefix in [&b"a"[..], b"a\xff", b"\xff", b"", b"b"] {
            let (lo, hi) = prefix_range(prefix);
            for k in &keys {
                let inside = (lo.as_ref(), hi.as_ref());
                let in_range = std::ops::RangeBounds::contains(&inside, &k);
                assert_eq!(in_range, k.starts_with(prefix), "prefix {prefix:?}, key {k:?}");
            }
        }
    }

    #[test]
    fn narrowing_keeps_the_tighter_bound() {
        assert_eq!(narrow_lower(inc("c"), None), inc("c"));
        assert_eq!(narrow_lower(Bound::Unbounded, Some(b"c")), inc("c"));
        assert_eq!(narrow_lower(inc("a"), Some(b"c")), inc("c"));
        assert_eq!(narrow_lower(inc("d"), Some(b"c")), inc("d"));
        assert_eq!(narrow_lower(exc("b"), Some(b"c")), inc("c"));
        assert_eq!(narrow_lower(exc("c"), Some(b"c")), exc("c"), "(c, .. is inside [c, ..");
        assert_eq!(narrow_lower(inc("c"), Some(b"c")), inc("c"));

        assert_eq!(narrow_upper(exc("m"), None), exc("m"));
        assert_eq!(narrow_upper(Bound::Unbounded, Some(b"m")), exc("m"));
        assert_eq!(narrow_upper(inc("k"), Some(b"m")), inc("k"));
        assert_eq!(narrow_upper(inc("m"), Some(b"m")), exc("m"), "..=m reaches past ..m");
        assert_eq!(narrow_upper(inc("z"), Some(b"m")), exc("m"));
        assert_eq!(narrow_upper(exc("k"), Some(b"m")), exc("k"));
        assert_eq!(narrow_upper(exc("z"), Some(b"m")), exc("m"));
    }
}
