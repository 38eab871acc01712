//! YCSB's zipfian family: `ZipfianGenerator` (Gray et al., "Quickly
//! generating billion-record synthetic databases", SIGMOD 1994),
//! `ScrambledZipfianGenerator` and `SkewedLatestGenerator`.

use super::{fnv_hash64, KeyChooser};
use rand::rngs::SmallRng;
use rand::Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// YCSB's default zipfian constant (`zipfian_const`).
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// The item space YCSB's scrambled zipfian draws ranks from before hashing.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;

/// Terms summed one by one before the Euler–Maclaurin tail takes over.
const EXACT_TERMS: u64 = 10_000;

/// The generalized harmonic number `sum_{i=1..=n} 1 / i^theta` ("zetan").
/// Exact for the first 10 000 terms, Euler–Maclaurin beyond (relative error
/// far below 1e-12), so large item spaces cost no more than small ones.
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_range(0, n, theta)
}

/// `sum_{i=from+1..=to} 1 / i^theta`.
fn zeta_range(from: u64, to: u64, theta: f64) -> f64 {
    if to <= from {
        return 0.0;
    }
    let exact_to = to.min(from.saturating_add(EXACT_TERMS));
    let exact: f64 = (from + 1..=exact_to).map(|i| (i as f64).powf(-theta)).sum();
    if exact_to == to {
        exact
    } else {
        exact + euler_maclaurin(exact_to + 1, to, theta)
    }
}

/// `sum_{i=a..=b} i^-s` by Euler–Maclaurin with the B2 and B4 corrections
/// (a >= 10 000 makes the remainder negligible).
fn euler_maclaurin(a: u64, b: u64, s: f64) -> f64 {
    let (a, b) = (a as f64, b as f64);
    let integral =
        if (s - 1.0).abs() < 1e-12 { (b / a).ln() } else { (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s) };
    let f = |x: f64| x.powf(-s);
    let d1 = |x: f64| -s * x.powf(-s - 1.0);
    let d3 = |x: f64| -s * (s + 1.0) * (s + 2.0) * x.powf(-s - 3.0);
    integral + (f(a) + f(b)) / 2.0 + (d1(b) - d1(a)) / 12.0 - (d3(b) - d3(a)) / 720.0
}

/// YCSB's `ZipfianGenerator`: item 0 most popular, item `i` drawn with
/// probability about `1 / ((i+1)^theta * zeta(n))`. `zeta(n)` is computed once
/// and updated incrementally when the item count grows.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    half_pow_theta: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// Zipfian over `[0, n)` with constant `theta`. Gray's method needs
    /// `0 < theta < 1`; other values are clamped into that range (the CLI
    /// rejects them first). `n == 0` is treated as 1.
    pub fn new(n: u64, theta: f64) -> Self {
        let theta = if theta.is_finite() { theta.clamp(1e-6, 1.0 - 1e-6) } else { ZIPFIAN_CONSTANT };
        let items = n.max(1);
        let zetan = zeta(items, theta);
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2theta: zeta(2, theta),
            half_pow_theta: 0.5f64.powf(theta),
            zetan,
            eta: 0.0,
        };
        z.eta = z.eta_for(items);
        z
    }

    /// The number of items drawn from.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The normalizing constant `zeta(n, theta)` in use.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    fn eta_for(&self, n: u64) -> f64 {
        (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// Gray et al.'s inversion of one uniform draw `u` in `[0, 1)`.
    fn invert(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1;
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }
}

impl KeyChooser for Zipfian {
    fn next_index(&mut self, rng: &mut SmallRng) -> u64 {
        self.invert(rng.gen::<f64>())
    }

    /// Like YCSB's `nextLong(itemcount)`: growing adds the new terms to zetan;
    /// shrinking recomputes it. (YCSB keeps eta at the initial count — a known
    /// slip; here eta follows the current count, as in Gray et al.)
    fn set_item_count(&mut self, n: u64) {
        let n = n.max(1);
        if n == self.items {
            return;
        }
        self.zetan = if n > self.items && n - self.items <= EXACT_TERMS {
            self.zetan + zeta_range(self.items, n, self.theta)
        } else {
            zeta(n, self.theta)
        };
        self.items = n;
        self.eta = self.eta_for(n);
    }
}

/// YCSB's `ScrambledZipfianGenerator`: a zipfian rank over 10^10 items,
/// hashed with FNV-1a 64 and reduced mod `n`, so the popular items are spread
/// over the key space instead of being the lowest indices. (Because ranks are
/// folded mod `n`, its skew is milder than [`Zipfian`] over `n` items, exactly
/// as in YCSB.)
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    inner: Zipfian,
    n: u64,
}

impl ScrambledZipfian {
    /// Scrambled zipfian over `[0, n)` with constant `theta`.
    pub fn new(n: u64, theta: f64) -> Self {
        ScrambledZipfian { inner: Zipfian::new(SCRAMBLED_ITEM_COUNT, theta), n: n.max(1) }
    }

    /// The index that zipfian rank `rank` maps to.
    pub fn index_of_rank(&self, rank: u64) -> u64 {
        fnv_hash64(rank) % self.n
    }
}

impl KeyChooser for ScrambledZipfian {
    fn next_index(&mut self, rng: &mut SmallRng) -> u64 {
        let rank = self.inner.next_index(rng);
        self.index_of_rank(rank)
    }

    fn set_item_count(&mut self, n: u64) {
        self.n = n.max(1);
    }
}

/// YCSB's `SkewedLatestGenerator`: the most recently inserted items are the
/// most popular: `index = newest - zipfian(count)`, where `count` is read
/// from a counter of items inserted so far that inserting threads advance.
#[derive(Debug)]
pub struct Latest {
    counter: Arc<AtomicU64>,
    zipf: Zipfian,
}

impl Latest {
    /// Latest over the `counter.load()` items inserted so far (indices
    /// `0..count`), with zipfian constant `theta`.
    pub fn new(counter: Arc<AtomicU64>, theta: f64) -> Self {
        let count = counter.load(Ordering::Acquire);
        Latest { counter, zipf: Zipfian::new(count, theta) }
    }
}

impl KeyChooser for Latest {
    fn next_index(&mut self, rng: &mut SmallRng) -> u64 {
        let count = self.counter.load(Ordering::Acquire).max(1);
        self.zipf.set_item_count(count);
        count - 1 - self.zipf.next_index(rng)
    }
}
