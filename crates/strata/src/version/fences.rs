//! Fence keys: the largest user keys of a sorted list of files, laid out for
//! a point read's binary search (LevelDB's and RocksDB's `LevelFilesBrief`).
//!
//! The keys sit side by side in one allocation, and each also has a *head*:
//! the eight bytes after the prefix every fence shares, as a big-endian
//! integer (`key::order_head`). A search for a key with that prefix compares
//! heads, one integer compare per step, and compares whole keys only where
//! heads tie. Keys of one run often share a long prefix (fixed-width numbers,
//! a table prefix), which is what makes a plain byte compare per step cost a
//! library call.

use crate::key::order_head;

/// A fence's or a searched key's head: eight bytes measured cheaper here
/// than sixteen (docs/BENCHMARKS.md).
fn head(rest: &[u8]) -> u64 {
    u64::from_be_bytes(order_head(rest))
}

/// Largest user keys of files in key order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fences {
    keys: Vec<u8>,
    /// INVARIANT: `ends[i]` is where fence `i`'s key ends in `keys`; sorted.
    ends: Vec<usize>,
    /// Length of the prefix all fence keys share.
    common: usize,
    /// INVARIANT: `heads[i] == head(&key(i)[common..])`, one per fence.
    heads: Vec<u64>,
}

impl Fences {
    /// Fences of `keys` (sorted ascending).
    pub(crate) fn new<'a>(keys: impl ExactSizeIterator<Item = &'a [u8]>) -> Self {
        let mut f = Fences { ends: Vec::with_capacity(keys.len()), ..Default::default() };
        for k in keys {
            f.keys.extend_from_slice(k);
            f.ends.push(f.keys.len());
        }
        if let Some(last) = f.len().checked_sub(1) {
            // Sorted keys share what the first and the last share.
            f.common = f.key(0).iter().zip(f.key(last)).take_while(|(a, b)| a == b).count();
        }
        f.heads = (0..f.ends.len()).map(|i| head(&f.key(i)[f.common..])).collect();
        f
    }

    /// How many fences there are.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Fence `i`'s key.
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// The first fence whose key is at least `key` (`len()` if none).
    pub(crate) fn first_at_least(&self, key: &[u8]) -> usize {
        let n = self.len();
        if n == 0 {
            return 0;
        }
        let prefix = &self.keys[..self.common];
        if key.get(..self.common) != Some(prefix) {
            // Without the shared prefix, `key` is below or above every fence.
            return if key < prefix { 0 } else { n };
        }
        let h = head(&key[self.common..]);
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let less = match self.heads[mid].cmp(&h) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Greater => false,
                std::cmp::Ordering::Equal => self.key(mid) < key,
            };
            if less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn check(keys: &[Vec<u8>], probes: &[Vec<u8>]) {
        let f = Fences::new(keys.iter().map(Vec::as_slice));
        assert_eq!(f.len(), keys.len());
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(f.key(i), k.as_slice());
        }
        for p in probes {
            let want = keys.partition_point(|k| k < p);
            assert_eq!(f.first_at_least(p), want, "probe {p:?} in {keys:?}");
        }
    }

    /// The head search answers as a search over whole keys: shared prefixes
    /// long and short, keys that end inside the head, zero bytes where a
    /// shorter key's padding is, probes inside and outside the prefix.
    #[test]
    fn heads_order_as_whole_keys_do() {
        let b = |s: &str| s.as_bytes().to_vec();
        check(&[], &[b(""), b("a")]);
        check(&[b("k")], &[b(""), b("j"), b("k"), b("k\0"), b("l")]);
        let numbers: Vec<Vec<u8>> = (0..50).map(|i| format!("{:016}", i * 7).into_bytes()).collect();
        let probes: Vec<Vec<u8>> = (0..400).map(|i| format!("{:016}", i).into_bytes()).collect();
        check(&numbers, &probes);
        let zeros = [
            b("p"),
            b("p\0"),
            b("p\0\0\0\0\0\0\0\0"),
            b("p\0\0\0\0\0\0\0\0\0x"),
            b("p\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"),
            b("p\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0x"),
            b("pa"),
        ];
        let mut probes = zeros.to_vec();
        let more = [
            b("p\0\0\0\0\0\0\0"),
            b("p\0\0\0\0\0\0\0\0\0"),
            b("p\0\0\0\0\0\0\0\0\0\0"),
            b("p\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"),
            b("p\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"),
            b("p\0a"),
            b("pb"),
        ];
        probes.extend(more.into_iter().chain([b(""), b("o"), b("q"), b("\u{ff}")]));
        check(&zeros, &probes);

        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..300 {
            let alphabet = rng.gen_range(1..4u8);
            let word = |rng: &mut SmallRng| {
                let prefix = if rng.gen_bool(0.8) { b"tbl/0000" as &[u8] } else { b"tbl/" };
                let mut w = prefix.to_vec();
                w.extend((0..rng.gen_range(0..30)).map(|_| rng.gen_range(0..alphabet)));
                w
            };
            let mut keys: Vec<Vec<u8>> = (0..rng.gen_range(1..20)).map(|_| word(&mut rng)).collect();
            keys.sort();
            keys.dedup();
            let mut probes: Vec<Vec<u8>> = (0..40).map(|_| word(&mut rng)).collect();
            probes.extend(keys.iter().cloned());
            probes.extend([b(""), b("t"), b("tbl/"), b("tbl/1"), b("u")]);
            check(&keys, &probes);
        }
    }
}
