//! Namespaces of a shared cache: each handle's id, and counters kept per id
//! in every shard, so a keyspace's stats are its own although the memory is
//! the database's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cache::int_hash::IntHash;
use crate::cache::CacheStats;

/// Hands out the namespace ids of one cache; never reused.
#[derive(Default)]
pub(crate) struct Namespaces(AtomicU64);

impl Namespaces {
    pub(crate) fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

/// One shard's counters per namespace (`capacity_bytes` unused).
#[derive(Default)]
pub(crate) struct NsCounts(HashMap<u64, CacheStats, IntHash>);

impl NsCounts {
    fn at(&mut self, ns: u64) -> &mut CacheStats {
        self.0.entry(ns).or_default()
    }

    pub(crate) fn lookup(&mut self, ns: u64, hit: bool) {
        let c = self.at(ns);
        c.hits += u64::from(hit);
        c.misses += u64::from(!hit);
    }

    /// A new resident entry of `charge` bytes.
    pub(crate) fn insert(&mut self, ns: u64, charge: usize) {
        let c = self.at(ns);
        c.inserts += 1;
        c.usage_bytes += charge as u64;
        c.entries += 1;
    }

    /// A resident entry of `charge` bytes left (evicted, invalidated, replaced).
    pub(crate) fn remove_entry(&mut self, ns: u64, charge: usize) {
        let c = self.at(ns);
        c.usage_bytes = c.usage_bytes.saturating_sub(charge as u64);
        c.entries = c.entries.saturating_sub(1);
    }

    pub(crate) fn evicted(&mut self, ns: u64) {
        self.at(ns).evictions += 1;
    }

    pub(crate) fn invalidated(&mut self, ns: u64) {
        self.at(ns).invalidations += 1;
    }

    /// Drops the counters of a namespace that is gone.
    pub(crate) fn forget(&mut self, ns: u64) {
        self.0.remove(&ns);
    }

    /// Adds this shard's counters of `ns` to `total` (all but capacity).
    pub(crate) fn add_to(&self, ns: u64, total: &mut CacheStats) {
        if let Some(c) = self.0.get(&ns) {
            total.hits += c.hits;
            total.misses += c.misses;
            total.inserts += c.inserts;
            total.evictions += c.evictions;
            total.invalidations += c.invalidations;
            total.usage_bytes += c.usage_bytes;
            total.entries += c.entries;
        }
    }
}
