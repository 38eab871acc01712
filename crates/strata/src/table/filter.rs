//! The table's bloom filter over user keys.
//!
//! Payload: the bit array (`m` bytes, bit `i` is `byte[i / 8] >> (i % 8) & 1`)
//! followed by one byte `k`, the number of probes. Probe `i` of a key sets bit
//! `(h1 + i * h2) mod (8 * m)` where `h1`/`h2` are the low/high 32 bits of
//! `xxh3_64(user_key)`.

use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::prefix::PrefixExtractor;

/// Largest number of probes a filter may use.
const MAX_PROBES: u8 = 30;
/// Smallest bit array, so tiny tables still get a useful filter.
const MIN_BITS: usize = 64;

/// The hash every filter probe derives from.
#[inline]
pub fn filter_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// Probes for `bits_per_key`: `round(bits * ln 2)` clamped to `1..=30`.
pub fn num_probes(bits_per_key: f64) -> u8 {
    (bits_per_key * std::f64::consts::LN_2).round().clamp(1.0, MAX_PROBES as f64) as u8
}

/// Collects user-key hashes while a table is written.
#[derive(Debug)]
pub struct FilterBuilder {
    bits_per_key: f64,
    hashes: Vec<u64>,
}

impl FilterBuilder {
    /// A builder for a filter with `bits_per_key` bits per distinct user key (> 0).
    pub fn new(bits_per_key: f64) -> Self {
        FilterBuilder { bits_per_key, hashes: Vec::new() }
    }

    /// Adds a user key; the caller skips consecutive duplicates.
    pub fn add(&mut self, user_key: &[u8]) {
        self.hashes.push(filter_hash(user_key));
    }

    /// Encodes the filter payload.
    pub fn finish(&self) -> Vec<u8> {
        let wanted = (self.hashes.len() as f64 * self.bits_per_key).ceil();
        let nbits = if wanted.is_finite() && wanted < (usize::MAX / 2) as f64 {
            wanted as usize
        } else {
            usize::MAX / 2
        };
        let nbytes = nbits.max(MIN_BITS).div_ceil(8);
        let nbits = (nbytes * 8) as u64;
        let k = num_probes(self.bits_per_key);
        let mut out = vec![0u8; nbytes + 1];
        for &h in &self.hashes {
            let (h1, h2) = (h & 0xffff_ffff, h >> 32);
            for i in 0..k as u64 {
                let bit = (h1 + i * h2) % nbits;
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out[nbytes] = k;
        out
    }
}

/// What a table's filter holds, fed the table's distinct user keys in order:
/// each key (with whole-key filtering) and each distinct in-domain prefix.
/// The table builder and a filter rebuild (`filter_patch`) both feed it, so a
/// rebuilt filter holds exactly what the table's own did.
#[derive(Debug)]
pub(crate) struct FilterFeed {
    filter: FilterBuilder,
    whole_keys: bool,
    prefix: Option<Arc<dyn PrefixExtractor>>,
    /// The last prefix added (keys are sorted, so a prefix's keys are
    /// consecutive and it is added once).
    last_prefix: Option<Vec<u8>>,
}

impl FilterFeed {
    /// A feed for a filter of `bits_per_key` (> 0) holding whole keys if
    /// `whole_keys` and `prefix`'s prefixes if given.
    pub(crate) fn new(bits_per_key: f64, whole_keys: bool, prefix: Option<Arc<dyn PrefixExtractor>>) -> Self {
        FilterFeed { filter: FilterBuilder::new(bits_per_key), whole_keys, prefix, last_prefix: None }
    }

    /// Adds a user key; the caller skips consecutive duplicates.
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        if self.whole_keys {
            self.filter.add(user_key);
        }
        if let Some(p) = self.prefix.as_ref().filter(|p| p.in_domain(user_key)) {
            let prefix = p.transform(user_key);
            if self.last_prefix.as_deref() != Some(prefix) {
                self.filter.add(prefix);
                self.last_prefix = Some(prefix.to_vec());
            }
        }
    }

    /// Encodes the filter payload.
    pub(crate) fn finish(&self) -> Vec<u8> {
        self.filter.finish()
    }
}

/// A decoded filter held in memory by an open table.
#[derive(Debug, Clone)]
pub struct BloomFilter {
    bits: Vec<u8>,
    k: u8,
}

impl BloomFilter {
    /// Decodes a filter payload; a bad probe count or empty array is `Corruption`.
    pub fn new(mut payload: Vec<u8>) -> Result<Self> {
        match payload.pop() {
            Some(k) if (1..=MAX_PROBES).contains(&k) && !payload.is_empty() => {
                Ok(BloomFilter { bits: payload, k })
            }
            _ => Err(Error::corruption("malformed bloom filter block")),
        }
    }

    /// False only if `user_key` was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(filter_hash(user_key))
    }

    /// [`Self::may_contain`] for a key whose [`filter_hash`] is `h`: a read
    /// computes it once for every filter it asks (they all use the same hash).
    #[inline]
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        self.bits_of(h)
            .all(|bit| self.bits.get((bit / 8) as usize).is_some_and(|b| b & (1 << (bit % 8)) != 0))
    }

    /// Prefetches the cache lines [`Self::may_contain_hash`] reads for `h`,
    /// so a batch can ask for all its keys' lines before testing any.
    #[inline]
    pub(crate) fn prefetch_hash(&self, h: u64) {
        for bit in self.bits_of(h) {
            crate::util::prefetch::prefetch_line(self.bits.as_ptr().wrapping_add((bit / 8) as usize));
        }
    }

    /// The bit positions probed for hash `h`: `(h1 + i * h2) mod nbits`,
    /// stepped by `h2 mod nbits` so a probe costs two divisions, not `k`.
    #[inline]
    fn bits_of(&self, h: u64) -> impl Iterator<Item = u64> {
        let nbits = (self.bits.len() as u64).saturating_mul(8);
        let (mut bit, step) = ((h & 0xffff_ffff) % nbits, (h >> 32) % nbits);
        (0..self.k).map(move |_| {
            let at = bit;
            // bit + step, mod nbits, without overflow (both are < nbits).
            bit = if bit >= nbits - step { bit - (nbits - step) } else { bit + step };
            at
        })
    }

    /// Bytes held in memory.
    pub fn memory_size(&self) -> usize {
        self.bits.capacity() + std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(keys: impl Iterator<Item = Vec<u8>>, bits: f64) -> BloomFilter {
        let mut b = FilterBuilder::new(bits);
        for k in keys {
            b.add(&k);
        }
        BloomFilter::new(b.finish()).unwrap()
    }

    #[test]
    fn probes_follow_the_formula() {
        assert_eq!(num_probes(10.0), 7);
        assert_eq!(num_probes(0.3), 1);
        assert_eq!(num_probes(5.5), 4);
        assert_eq!(num_probes(100.0), 30);
    }

    #[test]
    fn false_positive_rate_near_theory_and_no_false_negatives() {
        let n = 20_000u32;
        for (bits, max_rate) in [(10.0, 0.0125), (4.5, 0.12)] {
            let f = build((0..n).map(|i| format!("key{i}").into_bytes()), bits);
            for i in 0..n {
                assert!(f.may_contain(format!("key{i}").as_bytes()));
            }
            let fp = (0..n).filter(|i| f.may_contain(format!("absent{i}").as_bytes())).count();
            let rate = fp as f64 / n as f64;
            let k = num_probes(bits) as f64;
            let theory = (1.0 - (-k / bits).exp()).powf(k);
            assert!(rate < max_rate && rate < theory * 1.5, "bits {bits}: rate {rate} theory {theory}");
        }
    }

    proptest::proptest! {
        /// The hashed probe (and its prefetch, a hint) answers what the
        /// per-key probe answers, for added and other keys alike.
        #[test]
        fn hashed_probe_answers_like_the_key_probe(
            added in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..6), 0..60),
            asked in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..6), 1..60),
            bits in 0.5f64..16.0,
        ) {
            let mut b = FilterBuilder::new(bits);
            for k in &added {
                b.add(k);
            }
            let payload = b.finish();
            let f = BloomFilter::new(payload.clone()).unwrap();
            // The payload read as the module doc defines it.
            let (k, m) = (u64::from(payload[payload.len() - 1]), (payload.len() - 1) as u64 * 8);
            let reference = |key: &[u8]| {
                let h = xxh3_64(key);
                (0..k).all(|i| {
                    let bit = ((h & 0xffff_ffff) + i * (h >> 32)) % m;
                    payload[(bit / 8) as usize] >> (bit % 8) & 1 == 1
                })
            };
            for key in added.iter().chain(&asked) {
                let h = filter_hash(key);
                f.prefetch_hash(h);
                proptest::prop_assert_eq!(f.may_contain_hash(h), reference(key));
                proptest::prop_assert_eq!(f.may_contain(key), reference(key));
            }
            for k in &added {
                proptest::prop_assert!(f.may_contain_hash(filter_hash(k)));
            }
        }
    }

    #[test]
    fn tiny_and_empty_filters() {
        let f = build(std::iter::empty(), 10.0);
        assert!(!f.may_contain(b"x"));
        let f = build(std::iter::once(b"only".to_vec()), 0.5);
        assert!(f.may_contain(b"only"));
        assert!(BloomFilter::new(vec![]).is_err());
        assert!(BloomFilter::new(vec![7]).is_err());
        assert!(BloomFilter::new(vec![0, 0, 31]).is_err());
        assert!(BloomFilter::new(vec![0, 0, 0]).is_err());
    }
}
