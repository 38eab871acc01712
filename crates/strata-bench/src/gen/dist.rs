//! Uniform keys and the LSbM paper's hot-range distribution.

use super::KeyChooser;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ops::Range;

/// Uniform over `[0, n)`.
#[derive(Debug, Clone)]
pub struct Uniform {
    n: u64,
}

impl Uniform {
    /// Uniform over `[0, n)` (`n == 0` always yields 0).
    pub fn new(n: u64) -> Self {
        Uniform { n }
    }
}

impl KeyChooser for Uniform {
    fn next_index(&mut self, rng: &mut SmallRng) -> u64 {
        if self.n == 0 {
            0
        } else {
            rng.gen_range(0..self.n)
        }
    }

    fn set_item_count(&mut self, n: u64) {
        self.n = n;
    }
}

/// LSbM paper's range-hot reads: with probability `hot_prob` a key uniform
/// inside a contiguous hot range of `hot_fraction * n` keys, else a key
/// uniform outside it. The range's place is drawn from `seed` and kept (as a
/// fraction of the key space) when the item count changes.
#[derive(Debug, Clone)]
pub struct RangeHot {
    n: u64,
    hot_fraction: f64,
    hot_prob: f64,
    start_frac: f64,
    hot: Range<u64>,
}

impl RangeHot {
    /// Hot range of `hot_fraction * n` keys (at least one) receiving
    /// `hot_prob` of the draws; paper defaults 0.15 and 0.98.
    pub fn new(n: u64, hot_fraction: f64, hot_prob: f64, seed: u64) -> Self {
        let start_frac = SmallRng::seed_from_u64(seed).gen::<f64>();
        let mut r =
            RangeHot { n: 0, hot_fraction: hot_fraction.clamp(0.0, 1.0), hot_prob, start_frac, hot: 0..0 };
        r.set_item_count(n);
        r
    }

    /// The hot range of key indices.
    pub fn hot_range(&self) -> Range<u64> {
        self.hot.clone()
    }
}

impl KeyChooser for RangeHot {
    fn next_index(&mut self, rng: &mut SmallRng) -> u64 {
        let hot_len = self.hot.end - self.hot.start;
        let cold_len = self.n - hot_len;
        if cold_len == 0 || rng.gen::<f64>() < self.hot_prob {
            self.hot.start + rng.gen_range(0..hot_len)
        } else {
            // A uniform position among the cold keys, skipping over the hot range.
            let x = rng.gen_range(0..cold_len);
            if x >= self.hot.start {
                x + hot_len
            } else {
                x
            }
        }
    }

    fn set_item_count(&mut self, n: u64) {
        let n = n.max(1);
        let hot_len = ((n as f64 * self.hot_fraction).round() as u64).clamp(1, n);
        let start = ((n - hot_len) as f64 * self.start_frac) as u64;
        let start = start.min(n - hot_len);
        self.n = n;
        self.hot = start..start + hot_len;
    }
}
