//! Prefix extractors (RocksDB `SliceTransform`, `Options::prefix_extractor`):
//! the prefix of a key that tables add to their bloom filter, so a prefix scan
//! can skip every table, or DTable segment, that holds no key of its prefix.

use std::fmt;

/// Maps a key to its prefix (RocksDB `SliceTransform`, rust-rocksdb
/// `SliceTransform`; set with [`crate::Options::with_prefix_extractor`]).
///
/// Tables add `transform(key)` of every key that is `in_domain` to their
/// filter and record `name()` in their properties; a prefix scan asks only
/// tables written with the same name. So an implementation must keep, for as
/// long as it has this name, RocksDB's contract:
/// - `transform(key)` is a prefix of `key`, and `transform(transform(key)) == transform(key)`;
/// - if `p` is in the domain, every key that starts with `p` is in the
///   domain and has the prefix `transform(p)` (a prefix scan of `p` asks the
///   filter for `transform(p)` alone).
///
/// A different behaviour needs a different name: tables written under the old
/// one are then never skipped, so the change is safe.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use strata::{Db, Options, PrefixExtractor};
///
/// /// The key up to and including its first ':' (keys without one are not in the domain).
/// #[derive(Debug)]
/// struct UpToColon;
///
/// impl PrefixExtractor for UpToColon {
///     fn name(&self) -> &str {
///         "example.UpToColon"
///     }
///     fn in_domain(&self, key: &[u8]) -> bool {
///         key.contains(&b':')
///     }
///     fn transform<'k>(&self, key: &'k [u8]) -> &'k [u8] {
///         key.iter().position(|&b| b == b':').map_or(key, |i| &key[..=i])
///     }
/// }
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default().with_prefix_extractor(Arc::new(UpToColon)))?;
/// db.put(b"user:1", b"ada")?;
/// db.flush()?;
/// assert_eq!(db.prefix_iterator("user:").count(), 1);
/// assert_eq!(db.prefix_iterator("order:").count(), 0);
/// # Ok::<(), strata::Error>(())
/// ```
pub trait PrefixExtractor: Send + Sync + fmt::Debug {
    /// The name tables record; it must change whenever the mapping does.
    fn name(&self) -> &str;
    /// True if `key` has a prefix (RocksDB `InDomain`).
    fn in_domain(&self, key: &[u8]) -> bool;
    /// The prefix of a key in the domain (RocksDB `Transform`).
    fn transform<'k>(&self, key: &'k [u8]) -> &'k [u8];
}

/// Extractors are equal when their names are: a name is the promise of a mapping.
impl PartialEq for dyn PrefixExtractor {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// The first `len` bytes of a key; shorter keys are not in the domain
/// (RocksDB `NewFixedPrefixTransform(len)`, rust-rocksdb
/// `SliceTransform::create_fixed_prefix`). Named `strata.FixedPrefix.<len>`.
///
/// # Examples
///
/// ```
/// use strata::{FixedPrefix, PrefixExtractor};
///
/// let p = FixedPrefix::new(4);
/// assert_eq!(p.name(), "strata.FixedPrefix.4");
/// assert_eq!(p.transform(b"user0042"), b"user");
/// assert!(!p.in_domain(b"usr"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct FixedPrefix {
    len: usize,
    name: String,
}

impl FixedPrefix {
    /// Prefixes of `len` bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::FixedPrefix;
    ///
    /// assert_eq!(FixedPrefix::new(8).len(), 8);
    /// ```
    pub fn new(len: usize) -> Self {
        FixedPrefix { len, name: format!("strata.FixedPrefix.{len}") }
    }

    /// The prefix length in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::FixedPrefix;
    ///
    /// assert_eq!(FixedPrefix::new(3).len(), 3);
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }
}

impl fmt::Debug for FixedPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl PrefixExtractor for FixedPrefix {
    fn name(&self) -> &str {
        &self.name
    }

    fn in_domain(&self, key: &[u8]) -> bool {
        key.len() >= self.len
    }

    fn transform<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        &key[..self.len.min(key.len())]
    }
}

/// The filter probe of a prefix scan: which extractor the tables must have
/// been written with, and the prefix to ask their filters for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrefixProbe {
    pub(crate) extractor: String,
    pub(crate) prefix: Vec<u8>,
}

impl PrefixProbe {
    /// The probe for a scan of exactly the keys starting with `scan_prefix`,
    /// or `None` when the filter cannot answer for it (outside the domain, or
    /// an extractor whose prefix of it is not a prefix of it).
    pub(crate) fn for_scan(extractor: &dyn PrefixExtractor, scan_prefix: &[u8]) -> Option<Self> {
        if !extractor.in_domain(scan_prefix) {
            return None;
        }
        let prefix = extractor.transform(scan_prefix);
        scan_prefix
            .starts_with(prefix)
            .then(|| PrefixProbe { extractor: extractor.name().to_owned(), prefix: prefix.to_vec() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_prefix_domain_and_transform() {
        let p = FixedPrefix::new(3);
        assert!(p.in_domain(b"abc") && p.in_domain(b"abcd") && !p.in_domain(b"ab"));
        assert_eq!(p.transform(b"abcdef"), b"abc");
        assert_eq!(p.transform(p.transform(b"abcdef")), b"abc");
        assert_eq!(p.transform(b"ab"), b"ab", "out of the domain: no panic");
        assert_eq!(format!("{p:?}"), "strata.FixedPrefix.3");
    }

    #[test]
    fn scan_probes_only_for_prefixes_in_the_domain() {
        let p = FixedPrefix::new(4);
        assert_eq!(PrefixProbe::for_scan(&p, b"use"), None, "shorter than the prefix");
        let probe = PrefixProbe::for_scan(&p, b"user12").unwrap();
        assert_eq!(
            (probe.extractor.as_str(), probe.prefix.as_slice()),
            ("strata.FixedPrefix.4", &b"user"[..])
        );
        let a: &dyn PrefixExtractor = &FixedPrefix::new(4);
        let b: &dyn PrefixExtractor = &FixedPrefix::new(5);
        assert!(a == a && a != b);
    }
}
