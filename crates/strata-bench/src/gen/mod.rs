//! Key and value generators shared by the db_bench and YCSB benchmarks: key
//! formats, value bytes with a chosen compressibility, key-choice
//! distributions (YCSB's zipfian family, uniform, the LSbM paper's hot range
//! and "latest" reads over recent writes) and a fixed-rate writer pacer.

mod dist;
mod keys;
mod rate;
mod recent;
mod value;
mod zipf;

pub use dist::{RangeHot, Uniform};
pub use keys::{fnv_hash64, format_key, format_key_into, write_decimal, KeyFormat};
pub use rate::RateLimiter;
pub use recent::{LatestOf, RecentWrites};
pub use value::ValueGen;
pub use zipf::{zeta, Latest, ScrambledZipfian, Zipfian, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT};

use std::sync::Arc;

/// Chooses key indices in `[0, n)`.
pub trait KeyChooser: Send {
    /// Draws the next key index.
    fn next_index(&mut self, rng: &mut rand::rngs::SmallRng) -> u64;

    /// Changes the number of items `n` the chooser draws from. Used by
    /// [`LatestOf`], whose item space (the ring of recent writes) grows; the
    /// default ignores it, for choosers whose space is fixed or self-managed.
    fn set_item_count(&mut self, _n: u64) {}
}

impl<K: KeyChooser + ?Sized> KeyChooser for Box<K> {
    fn next_index(&mut self, rng: &mut rand::rngs::SmallRng) -> u64 {
        (**self).next_index(rng)
    }
    fn set_item_count(&mut self, n: u64) {
        (**self).set_item_count(n)
    }
}

/// Names accepted by [`make_read_dist`] (`--read_dist`).
pub const READ_DISTS: &[&str] =
    &["uniform", "zipfian", "latest", "latest_zipfian", "latest_uniform", "latest_rangehot", "rangehot"];

/// Builds the read-key distribution named `name` over `[0, n)`:
/// `uniform`; `zipfian` (YCSB's scrambled zipfian, constant `zipf_const`);
/// `rangehot` (`hot_prob` of the reads in a contiguous hot range of
/// `hot_fraction * n` keys placed by `seed`); `latest_rangehot` (the dLSM
/// paper's Latest RangeHot: rangehot's reads over a key range that a timed
/// step's writer updates, so it holds the recent data); and over the recent
/// writes in `recent` (required for these): `latest` / `latest_zipfian`
/// (zipfian over recency, newest most popular), `latest_uniform`.
pub fn make_read_dist(
    name: &str,
    n: u64,
    zipf_const: f64,
    hot_fraction: f64,
    hot_prob: f64,
    seed: u64,
    recent: Option<Arc<RecentWrites>>,
) -> Result<Box<dyn KeyChooser>, String> {
    if n == 0 {
        return Err("read distribution needs at least one key (--num > 0)".into());
    }
    let needs_zipf = matches!(name, "zipfian" | "latest" | "latest_zipfian");
    if needs_zipf && !(zipf_const > 0.0 && zipf_const < 1.0) {
        return Err(format!("--zipf_const must be in (0, 1), got {zipf_const}"));
    }
    let needs_hot = matches!(name, "rangehot" | "latest_rangehot");
    if needs_hot && !(hot_fraction > 0.0 && hot_fraction <= 1.0) {
        return Err(format!("--hot_fraction must be in (0, 1], got {hot_fraction}"));
    }
    if needs_hot && !(0.0..=1.0).contains(&hot_prob) {
        return Err(format!("--hot_prob must be in [0, 1], got {hot_prob}"));
    }
    let ring = |recent: Option<Arc<RecentWrites>>| {
        recent.ok_or_else(|| format!("read distribution {name:?} needs the writer's recent-writes ring"))
    };
    Ok(match name {
        "uniform" => Box::new(Uniform::new(n)),
        "zipfian" => Box::new(ScrambledZipfian::new(n, zipf_const)),
        "rangehot" => Box::new(RangeHot::new(n, hot_fraction, hot_prob, seed)),
        "latest" | "latest_zipfian" => Box::new(LatestOf::new(Zipfian::new(n, zipf_const), n, ring(recent)?)),
        "latest_uniform" => Box::new(LatestOf::new(Uniform::new(n), n, ring(recent)?)),
        // The hot range is the recent data because the writer updates it
        // (`bench::timed`'s writer keys); reads are rangehot's.
        "latest_rangehot" => Box::new(RangeHot::new(n, hot_fraction, hot_prob, seed)),
        other => {
            return Err(format!("unknown read distribution {other:?}; valid: {}", READ_DISTS.join(", ")))
        }
    })
}

#[cfg(test)]
mod tests;
