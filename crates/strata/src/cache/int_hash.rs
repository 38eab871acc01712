//! A multiplicative hash for the caches' integer keys (namespace, file id,
//! offset): several times cheaper than the standard library's SipHash on the
//! lookup path, and the keys are ours, not an attacker's, so there is no
//! flooding to defend against.

use std::hash::{BuildHasherDefault, Hasher};

/// Hashes each `u64` written with one xor and one multiply (Fibonacci
/// hashing's constant); bytes, which these keys never write, one at a time.
#[derive(Default)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    /// The product's high bits, which depend on every bit written, rotated
    /// down to where a table picks its bucket: the low bits of a product
    /// depend only on the low bits written, and block offsets that are
    /// multiples of a power of two would share them.
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The hasher of maps keyed by the caches' integers.
pub(crate) type IntHash = BuildHasherDefault<IntHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    /// Keys that differ only in one part hash apart, in the low bits a
    /// table's buckets use and the top bits it tags them with, also when
    /// they are multiples of a power of two (regression: without the final
    /// rotation, offsets every 4 KiB shared their low 12 bits).
    #[test]
    fn nearby_keys_spread() {
        let h = IntHash::default();
        let mut low = HashSet::new();
        let mut top = HashSet::new();
        for step in [4133, 4096, 65_536] {
            low.clear();
            top.clear();
            for i in 0..4096u64 {
                let hash = h.hash_one((1u64, 7u64, i * step));
                low.insert(hash & 0xfff);
                top.insert(hash >> 57);
            }
            assert!(low.len() > 2000, "offsets every {step} B: {} distinct low 12 bits of 4096", low.len());
            assert!(top.len() > 120, "offsets every {step} B: {} distinct top 7 bits", top.len());
        }
        assert_ne!(h.hash_one((1u64, 2u64, 3u64)), h.hash_one((1u64, 3u64, 2u64)));
        assert_ne!(h.hash_one((0u64, 5u64)), h.hash_one((5u64, 0u64)));
    }
}
