//! db_bench's value generator (`RandomGenerator` in db_bench_tool.cc).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Pool size, as in db_bench: values are slices of it, so producing one costs
/// no random numbers.
const POOL_BYTES: usize = 1 << 20;
/// db_bench builds the pool from compressible pieces of this size.
const PIECE: usize = 100;

/// db_bench-style value generator: random printable bytes with a
/// compressibility of `compression_ratio` (db_bench default 0.5), served from
/// a pre-generated 1 MiB pool.
pub struct ValueGen {
    pool: Vec<u8>,
    pos: usize,
    rng: SmallRng,
    ratio: f64,
}

impl ValueGen {
    /// A generator whose pool is drawn from `seed`. Each 100-byte piece holds
    /// `compression_ratio * 100` random bytes repeated to fill it (db_bench's
    /// `CompressibleString`), so a compressor shrinks it to about that share.
    pub fn new(seed: u64, compression_ratio: f64) -> Self {
        let ratio = if compression_ratio.is_finite() { compression_ratio.clamp(0.0, 1.0) } else { 1.0 };
        let mut g = ValueGen {
            pool: Vec::with_capacity(POOL_BYTES),
            pos: 0,
            rng: SmallRng::seed_from_u64(seed),
            ratio,
        };
        g.grow(POOL_BYTES);
        g
    }

    /// Appends compressible pieces until the pool holds at least `bytes`.
    fn grow(&mut self, bytes: usize) {
        let raw_len = ((PIECE as f64 * self.ratio) as usize).max(1);
        let mut raw = vec![0u8; raw_len];
        while self.pool.len() < bytes {
            for b in raw.iter_mut() {
                *b = b' ' + self.rng.gen_range(0..95u8);
            }
            let mut left = PIECE;
            while left > 0 {
                let n = left.min(raw_len);
                self.pool.extend_from_slice(&raw[..n]);
                left -= n;
            }
        }
    }

    /// The next value of `len` bytes (a window into the pool; wraps around).
    pub fn next(&mut self, len: usize) -> &[u8] {
        if len > self.pool.len() {
            self.grow(len);
        }
        if self.pos + len > self.pool.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        &self.pool[start..start + len]
    }
}
