//! The sharded, namespaced LRU that the block cache, the row cache and the
//! open-table cache all are: entries charged by bytes (or counted), split into shards each under its own lock,
//! indexed per (namespace, file) so counting or dropping a file's entries
//! never scans a shard, with hit/miss/insert/eviction/invalidation counters
//! in total and per namespace.
//!
//! Hand-written on purpose, over `lru::LruCache` as the ordered map only:
//! what is charged, counted and dropped is the product itself (statistics
//! are API, and the LSbM trim reads exact per-file counts), so it is not
//! left to a caching crate's notion of weight or eviction.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

use lru::LruCache;
use parking_lot::Mutex;

use crate::cache::int_hash::IntHash;
use crate::cache::namespace::{Namespaces, NsCounts};

/// Most shards a cache is split into.
const MAX_SHARD_BITS: u32 = 4;
/// Smallest capacity per shard; smaller caches use fewer shards so a shard
/// still fits a reasonable number of entries.
const MIN_SHARD_CAPACITY: usize = 512 * 1024;
/// Smallest shard of a cache counted in entries (open tables).
const MIN_SHARD_ENTRIES: usize = 16;

/// Counters of a [`crate::cache::BlockCache`] or a [`crate::cache::RowCache`]
/// (a consistent sum over shards, each read under its lock); entries are
/// blocks or rows. A handle's `stats()` counts its own namespace's lookups and
/// entries; `total_stats()` the whole cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found the entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries inserted (replacements included; oversized entries not).
    pub inserts: u64,
    /// Entries pushed out to make room.
    pub evictions: u64,
    /// Resident entries dropped because their file (or keyspace) was deleted.
    pub invalidations: u64,
    /// Bytes charged by resident entries.
    pub usage_bytes: u64,
    /// Configured capacity in bytes (of the whole shared cache).
    pub capacity_bytes: u64,
    /// Resident entries.
    pub entries: u64,
}

/// What one cache stores: its keys, which name a (namespace, file), its
/// values, and what an entry is charged.
pub(crate) trait Entries {
    /// The LRU's key; it starts with a (namespace, file id).
    type Key: Hash + Eq;
    type Value;
    /// The part of a key the per-file index keeps (the rest is the file).
    type Member: Hash + Eq + Clone;
    /// How the per-file index hashes members (`IntHash` for integers; a
    /// byte key keeps the standard library's).
    type MemberHash: BuildHasher + Default;
    /// The (namespace, file id) of a key.
    fn file(key: &Self::Key) -> (u64, u64);
    fn member(key: &Self::Key) -> &Self::Member;
    /// The key of a file's indexed member.
    fn key(file: (u64, u64), member: Self::Member) -> Self::Key;
    /// Bytes an entry counts against the capacity.
    fn charge(key: &Self::Key, value: &Self::Value) -> usize;
    /// True if the least recently used entry should be kept once more, moved
    /// to the front instead of evicted (a second chance for entries read
    /// without going through the LRU); each entry is spared at most once
    /// per eviction.
    fn spare(_value: &Self::Value) -> bool {
        false
    }
}

/// The resident members of one (namespace, file).
type Members<E> = HashSet<<E as Entries>::Member, <E as Entries>::MemberHash>;

/// One independently locked part of the cache.
struct Shard<E: Entries> {
    lru: LruCache<E::Key, E::Value>,
    /// Resident members of each (namespace, file).
    by_file: HashMap<(u64, u64), Members<E>, IntHash>,
    usage: usize,
    capacity: usize,
    stats: CacheStats,
    /// The same counters per namespace.
    ns: NsCounts,
}

impl<E: Entries> Shard<E> {
    /// Accounts for an entry the LRU let go of (evicted).
    fn forget(&mut self, key: &E::Key, value: &E::Value) {
        let charge = E::charge(key, value);
        self.usage -= charge;
        let file = E::file(key);
        self.ns.remove_entry(file.0, charge);
        if let Some(set) = self.by_file.get_mut(&file) {
            set.remove(E::member(key));
            if set.is_empty() {
                self.by_file.remove(&file);
            }
        }
    }

    /// Drops every resident entry of `file` from the LRU and the usage;
    /// `each` sees every charge dropped. Returns how many.
    fn drop_file(&mut self, file: (u64, u64), mut each: impl FnMut(&mut Self, usize)) -> u64 {
        let Some(members) = self.by_file.remove(&file) else { return 0 };
        let mut dropped = 0;
        for member in members {
            let key = E::key(file, member);
            if let Some(value) = self.lru.pop(&key) {
                let charge = E::charge(&key, &value);
                self.usage -= charge;
                self.stats.invalidations += 1;
                each(self, charge);
                dropped += 1;
            }
        }
        dropped
    }
}

/// The memory of one cache, which any number of namespaced handles share.
/// Operations take `mix`, the caller's hash of the key, asked for only when
/// there is more than one shard; the shard is its top bits after a
/// multiplicative spread.
pub(crate) struct ShardedLru<E: Entries> {
    shards: Box<[Mutex<Shard<E>>]>,
    shard_bits: u32,
    capacity: usize,
    namespaces: Namespaces,
}

impl<E: Entries> ShardedLru<E> {
    /// Up to 16 shards, fewer for a small capacity (in bytes).
    pub(crate) fn new(capacity: usize) -> Self {
        Self::with_min_shard(capacity, MIN_SHARD_CAPACITY)
    }

    /// A cache whose entries each count 1 (`Entries::charge`), of `capacity`
    /// entries: shards of at least [`MIN_SHARD_ENTRIES`].
    pub(crate) fn counted(capacity: usize) -> Self {
        Self::with_min_shard(capacity, MIN_SHARD_ENTRIES)
    }

    fn with_min_shard(capacity: usize, min_shard: usize) -> Self {
        let mut shard_bits = 0;
        while shard_bits < MAX_SHARD_BITS && capacity >> (shard_bits + 1) >= min_shard {
            shard_bits += 1;
        }
        let per_shard = capacity >> shard_bits;
        let shards = (0..1usize << shard_bits)
            .map(|_| {
                Mutex::new(Shard {
                    lru: LruCache::unbounded(),
                    by_file: HashMap::default(),
                    usage: 0,
                    capacity: per_shard,
                    stats: CacheStats::default(),
                    ns: NsCounts::default(),
                })
            })
            .collect();
        ShardedLru { shards, shard_bits, capacity, namespaces: Namespaces::default() }
    }

    /// A namespace id never handed out before.
    pub(crate) fn new_namespace(&self) -> u64 {
        self.namespaces.next()
    }

    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Configured capacity in bytes (of all shards).
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    #[inline]
    fn shard(&self, mix: impl FnOnce() -> u64) -> &Mutex<Shard<E>> {
        let bits = self.shard_bits;
        if bits == 0 {
            return &self.shards[0];
        }
        &self.shards[(mix().wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize]
    }

    /// Looks `key` up for namespace `ns`, making it the most recent and
    /// counting a hit, and a miss if `count_miss`; `f` reads the value under
    /// the shard lock.
    #[inline]
    pub(crate) fn get<Q, R>(
        &self,
        mix: impl FnOnce() -> u64,
        ns: u64,
        key: &Q,
        count_miss: bool,
        f: impl FnOnce(&E::Value) -> R,
    ) -> Option<R>
    where
        E::Key: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut s = self.shard(mix).lock();
        let found = s.lru.get(key).map(f);
        let hit = found.is_some();
        if hit || count_miss {
            s.stats.hits += u64::from(hit);
            s.stats.misses += u64::from(!hit);
            s.ns.lookup(ns, hit);
        }
        found
    }

    /// Reads `key` without counting or promoting it.
    pub(crate) fn peek<Q, R>(
        &self,
        mix: impl FnOnce() -> u64,
        key: &Q,
        f: impl FnOnce(&E::Value) -> R,
    ) -> Option<R>
    where
        E::Key: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard(mix).lock().lru.peek(key).map(f)
    }

    #[cfg(test)]
    pub(crate) fn contains<Q>(&self, mix: impl FnOnce() -> u64, key: &Q) -> bool
    where
        E::Key: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard(mix).lock().lru.contains(key)
    }

    /// Caches the entry `make` builds (under the shard lock, so nothing is
    /// built for an entry too large to keep), charged `charge` bytes, for
    /// namespace `ns`; evicts least recently used entries of any namespace to
    /// stay within the shard's capacity. An entry larger than a shard is not
    /// cached (false).
    pub(crate) fn insert(
        &self,
        mix: impl FnOnce() -> u64,
        ns: u64,
        charge: usize,
        make: impl FnOnce() -> (E::Key, E::Value),
    ) -> bool {
        let mut s = self.shard(mix).lock();
        if charge > s.capacity {
            return false;
        }
        let (key, value) = make();
        let file = E::file(&key);
        let member = E::member(&key).clone();
        match s.lru.push(key, value) {
            Some((key, old)) => {
                let old = E::charge(&key, &old);
                s.usage -= old;
                s.ns.remove_entry(ns, old);
            }
            None => {
                s.by_file.entry(file).or_default().insert(member);
            }
        }
        s.usage += charge;
        s.stats.inserts += 1;
        s.ns.insert(ns, charge);
        let mut spared = 0;
        while s.usage > s.capacity {
            let Some((key, victim)) = s.lru.pop_lru() else { break };
            if spared <= s.lru.len() && E::spare(&victim) {
                spared += 1;
                s.lru.push(key, victim);
                continue;
            }
            s.forget(&key, &victim);
            s.stats.evictions += 1;
            s.ns.evicted(E::file(&key).0);
        }
        true
    }

    /// Exact number of resident entries of (`ns`, `file_id`).
    pub(crate) fn resident(&self, ns: u64, file_id: u64) -> u64 {
        let file = (ns, file_id);
        self.shards.iter().map(|s| s.lock().by_file.get(&file).map_or(0, |set| set.len() as u64)).sum()
    }

    /// Drops every resident entry of a deleted file, shard by shard; returns
    /// how many (counted as invalidations, not evictions).
    pub(crate) fn invalidate_file(&self, ns: u64, file_id: u64) -> u64 {
        let mut dropped = 0;
        for shard in self.shards.iter() {
            dropped += shard.lock().drop_file((ns, file_id), |s, charge| {
                s.ns.remove_entry(ns, charge);
                s.ns.invalidated(ns);
            });
        }
        dropped
    }

    /// Drops a namespace nobody can read any more (a dropped keyspace), its
    /// entries and its counters, so its memory comes back at once instead of
    /// aging out. Counted as invalidations in the totals only.
    pub(crate) fn drop_namespace(&self, ns: u64) {
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            let files: Vec<(u64, u64)> = s.by_file.keys().filter(|(n, _)| *n == ns).copied().collect();
            for file in files {
                s.drop_file(file, |_, _| {});
            }
            s.ns.forget(ns);
        }
    }

    /// Namespace `ns`'s counters, summed over all shards; `capacity_bytes`
    /// is the whole cache's.
    pub(crate) fn stats(&self, ns: u64) -> CacheStats {
        let mut total = CacheStats { capacity_bytes: self.capacity as u64, ..CacheStats::default() };
        for shard in self.shards.iter() {
            shard.lock().ns.add_to(ns, &mut total);
        }
        total
    }

    /// Counters of the whole cache, every namespace's, summed over all shards.
    pub(crate) fn total_stats(&self) -> CacheStats {
        let mut total = CacheStats { capacity_bytes: self.capacity as u64, ..CacheStats::default() };
        for shard in self.shards.iter() {
            let s = shard.lock();
            total.hits += s.stats.hits;
            total.misses += s.stats.misses;
            total.inserts += s.stats.inserts;
            total.evictions += s.stats.evictions;
            total.invalidations += s.stats.invalidations;
            total.usage_bytes += s.usage as u64;
            total.entries += s.lru.len() as u64;
        }
        total
    }
}
