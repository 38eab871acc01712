//! A sharded LRU cache of decoded blocks keyed by (namespace, file id, block
//! offset), charged by bytes, that knows which blocks of each file are
//! resident.
//!
//! One cache's memory is shared by every keyspace of a database: each tree
//! reads through its own handle ([`BlockCache::share`]), whose namespace is
//! part of every key, because file ids are per keyspace and two trees may
//! both have a table 7.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use lru::LruCache;
use parking_lot::Mutex;

use crate::cache::namespace::{Namespaces, NsCounts};
use crate::table::Block;

/// Most shards a cache is split into.
const MAX_SHARD_BITS: u32 = 4;
/// Smallest capacity per shard; smaller caches use fewer shards so a shard
/// still fits a reasonable number of blocks.
const MIN_SHARD_CAPACITY: usize = 512 * 1024;

/// Counters of a [`BlockCache`] or a [`crate::cache::RowCache`] (a consistent
/// sum over shards, each read under its lock); entries are blocks or rows.
/// A handle's [`BlockCache::stats`] counts its own namespace's lookups and
/// entries; [`BlockCache::total_stats`] the whole cache.
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

/// (namespace, file id, offset).
type Key = (u64, u64, u64);

/// One independently locked part of the cache.
struct Shard {
    lru: LruCache<Key, Arc<Block>>,
    /// Resident offsets of each (namespace, file), so per-file counts and
    /// invalidation never scan the whole shard.
    by_file: HashMap<(u64, u64), HashSet<u64>>,
    usage: usize,
    capacity: usize,
    stats: CacheStats,
    /// The same counters per namespace.
    ns: NsCounts,
}

impl Shard {
    fn forget(&mut self, (ns, file_id, offset): Key, block: &Block) {
        let charge = block.memory_size();
        self.usage -= charge;
        self.ns.remove_entry(ns, charge);
        if let Some(set) = self.by_file.get_mut(&(ns, file_id)) {
            set.remove(&offset);
            if set.is_empty() {
                self.by_file.remove(&(ns, file_id));
            }
        }
    }
}

/// The memory of a block cache, which any number of handles share.
struct Store {
    shards: Box<[Mutex<Shard>]>,
    shard_bits: u32,
    capacity: usize,
    namespaces: Namespaces,
}

/// The block cache: an LRU by bytes, split into up to 16 shards by a hash of
/// (namespace, file id, offset). A value is a handle: it reads and writes
/// its own namespace of a store that [`BlockCache::share`] hands to others.
pub struct BlockCache {
    store: Arc<Store>,
    ns: u64,
}

impl fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCache")
            .field("shards", &self.store.shards.len())
            .field("namespace", &self.ns)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Drop for BlockCache {
    /// A namespace nobody can read any more (a dropped keyspace) gives its
    /// memory back at once instead of aging out.
    fn drop(&mut self) {
        for shard in self.store.shards.iter() {
            let mut s = shard.lock();
            let files: Vec<(u64, u64)> = s.by_file.keys().filter(|(ns, _)| *ns == self.ns).copied().collect();
            for (ns, file) in files {
                for offset in s.by_file.remove(&(ns, file)).unwrap_or_default() {
                    if let Some(block) = s.lru.pop(&(ns, file, offset)) {
                        s.usage -= block.memory_size();
                        s.stats.invalidations += 1;
                    }
                }
            }
            s.ns.forget(self.ns);
        }
    }
}

impl BlockCache {
    /// A cache holding at most `capacity_bytes` of blocks.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = strata::cache::BlockCache::new(8 << 20);
    /// assert_eq!(cache.capacity(), 8 << 20);
    /// ```
    pub fn new(capacity_bytes: usize) -> Self {
        let mut shard_bits = 0;
        while shard_bits < MAX_SHARD_BITS && capacity_bytes >> (shard_bits + 1) >= MIN_SHARD_CAPACITY {
            shard_bits += 1;
        }
        let per_shard = capacity_bytes >> shard_bits;
        let shards = (0..1usize << shard_bits)
            .map(|_| {
                Mutex::new(Shard {
                    lru: LruCache::unbounded(),
                    by_file: HashMap::new(),
                    usage: 0,
                    capacity: per_shard,
                    stats: CacheStats::default(),
                    ns: NsCounts::default(),
                })
            })
            .collect();
        let store = Arc::new(Store {
            shards,
            shard_bits,
            capacity: capacity_bytes,
            namespaces: Namespaces::default(),
        });
        let ns = store.namespaces.next();
        BlockCache { store, ns }
    }

    /// Another handle on the same memory with a namespace of its own (RocksDB
    /// column families sharing one `Cache`): its file ids never meet this
    /// handle's, and one capacity bounds both. Dropping a handle drops its
    /// namespace's blocks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strata::cache::BlockCache;
    ///
    /// let a = BlockCache::new(1 << 20);
    /// let b = a.share();
    /// let block = || Arc::new(strata::table::Block::new(vec![0, 0, 0, 0, 1, 0, 0, 0]).unwrap());
    /// a.insert(7, 0, block());
    /// assert!(b.get(7, 0).is_none(), "file 7 of another namespace");
    /// b.insert(7, 0, block());
    /// assert_eq!((a.stats().entries, b.stats().entries, a.total_stats().entries), (1, 1, 2));
    /// drop(b);
    /// assert_eq!(a.total_stats().entries, 1);
    /// ```
    pub fn share(&self) -> BlockCache {
        BlockCache { store: Arc::clone(&self.store), ns: self.store.namespaces.next() }
    }

    fn shard(&self, file_id: u64, offset: u64) -> &Mutex<Shard> {
        let h =
            (file_id ^ offset.rotate_left(32) ^ self.ns.rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let bits = self.store.shard_bits;
        let i = if bits == 0 { 0 } else { (h >> (64 - bits)) as usize };
        &self.store.shards[i]
    }

    /// The cached block at (file, offset), counting a hit or a miss.
    pub fn get(&self, file_id: u64, offset: u64) -> Option<Arc<Block>> {
        let mut s = self.shard(file_id, offset).lock();
        let found = s.lru.get(&(self.ns, file_id, offset)).cloned();
        let hit = found.is_some();
        s.stats.hits += u64::from(hit);
        s.stats.misses += u64::from(!hit);
        s.ns.lookup(self.ns, hit);
        found
    }

    /// The cached block at (file, offset) if it is resident: a hit is counted,
    /// an absence is not a miss (the caller reads nothing instead).
    pub fn get_resident(&self, file_id: u64, offset: u64) -> Option<Arc<Block>> {
        let mut s = self.shard(file_id, offset).lock();
        let found = s.lru.get(&(self.ns, file_id, offset)).cloned();
        if found.is_some() {
            s.stats.hits += 1;
            s.ns.lookup(self.ns, true);
        }
        found
    }

    /// The cached block at (file, offset) without counting a lookup or
    /// making it more recently used (for the compaction warm-up, which asks
    /// about blocks nobody is reading).
    pub fn peek(&self, file_id: u64, offset: u64) -> Option<Arc<Block>> {
        self.shard(file_id, offset).lock().lru.peek(&(self.ns, file_id, offset)).cloned()
    }

    /// Caches a block, evicting least recently used ones (of any namespace)
    /// to stay within capacity. A block larger than a shard's capacity is
    /// not cached (false).
    pub fn insert(&self, file_id: u64, offset: u64, block: Arc<Block>) -> bool {
        let charge = block.memory_size();
        let mut s = self.shard(file_id, offset).lock();
        if charge > s.capacity {
            return false;
        }
        match s.lru.put((self.ns, file_id, offset), block) {
            Some(old) => {
                let old = old.memory_size();
                s.usage -= old;
                s.ns.remove_entry(self.ns, old);
            }
            None => {
                s.by_file.entry((self.ns, file_id)).or_default().insert(offset);
            }
        }
        s.usage += charge;
        s.stats.inserts += 1;
        s.ns.insert(self.ns, charge);
        while s.usage > s.capacity {
            let Some((key, victim)) = s.lru.pop_lru() else { break };
            s.forget(key, &victim);
            s.stats.evictions += 1;
            s.ns.evicted(key.0);
        }
        true
    }

    /// Exact number of resident blocks of `file_id`.
    pub fn resident_blocks(&self, file_id: u64) -> u64 {
        let key = (self.ns, file_id);
        self.store.shards.iter().map(|s| s.lock().by_file.get(&key).map_or(0, |set| set.len() as u64)).sum()
    }

    /// Drops every resident block of a deleted file; returns how many were
    /// dropped (counted as invalidations, not evictions).
    pub fn invalidate_file(&self, file_id: u64) -> u64 {
        let mut dropped = 0;
        for shard in self.store.shards.iter() {
            let mut s = shard.lock();
            let Some(offsets) = s.by_file.remove(&(self.ns, file_id)) else { continue };
            for offset in offsets {
                if let Some(block) = s.lru.pop(&(self.ns, file_id, offset)) {
                    let charge = block.memory_size();
                    s.usage -= charge;
                    s.stats.invalidations += 1;
                    s.ns.remove_entry(self.ns, charge);
                    s.ns.invalidated(self.ns);
                    dropped += 1;
                }
            }
        }
        dropped
    }

    /// This handle's counters, summed over all shards: its lookups, and its
    /// namespace's inserts, evictions (by anyone's insert), invalidations and
    /// resident entries; `capacity_bytes` is the whole cache's.
    pub fn stats(&self) -> CacheStats {
        let mut total = CacheStats { capacity_bytes: self.store.capacity as u64, ..CacheStats::default() };
        for shard in self.store.shards.iter() {
            shard.lock().ns.add_to(self.ns, &mut total);
        }
        total
    }

    /// Counters of the whole cache, every namespace's, summed over all shards.
    ///
    /// # Examples
    ///
    /// ```
    /// let cache = strata::cache::BlockCache::new(1 << 20);
    /// let other = cache.share();
    /// assert!(other.get(1, 0).is_none());
    /// assert_eq!((cache.stats().misses, cache.total_stats().misses), (0, 1));
    /// ```
    pub fn total_stats(&self) -> CacheStats {
        let mut total = CacheStats { capacity_bytes: self.store.capacity as u64, ..CacheStats::default() };
        for shard in self.store.shards.iter() {
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

    /// Configured capacity in bytes (of the whole shared cache).
    pub fn capacity(&self) -> usize {
        self.store.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A block whose payload is `len` zero bytes plus one restart point.
    fn block(len: usize) -> Arc<Block> {
        let mut d = Vec::with_capacity(len + 8);
        d.resize(len, 0);
        d.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        Arc::new(Block::new(d).unwrap())
    }

    #[test]
    fn shard_count_follows_capacity() {
        assert_eq!(BlockCache::new(0).store.shards.len(), 1);
        assert_eq!(BlockCache::new(1 << 20).store.shards.len(), 2);
        assert_eq!(BlockCache::new(1 << 30).store.shards.len(), 16);
    }

    #[test]
    fn resident_counts_stay_exact_under_random_operations() {
        let mut rng = SmallRng::seed_from_u64(9);
        let cache = BlockCache::new(1 << 20); // 2 shards of 512 KiB
        let charge = block(4000).memory_size();
        let resident = |f: u64, o: u64| cache.shard(f, o).lock().lru.contains(&(cache.ns, f, o));
        // Model of inserted blocks, pruned of evicted ones by asking the LRU itself;
        // the per-file index must then agree with it exactly.
        let mut model: HashMap<u64, HashSet<u64>> = HashMap::new();
        let reconcile = |model: &mut HashMap<u64, HashSet<u64>>, f: u64| {
            let set = model.entry(f).or_default();
            set.retain(|&o| resident(f, o));
            assert_eq!(cache.resident_blocks(f), set.len() as u64);
        };
        let (mut hits, mut misses, mut inserts, mut new_inserts, mut invalidations) = (0, 0, 0, 0, 0);
        for _ in 0..20_000u64 {
            let file = rng.gen_range(0..20u64);
            let offset = rng.gen_range(0..100u64) * 4096;
            reconcile(&mut model, file);
            match rng.gen_range(0..50) {
                0..=29 => {
                    new_inserts += u64::from(!resident(file, offset));
                    cache.insert(file, offset, block(4000));
                    inserts += 1;
                    model.entry(file).or_default().insert(offset);
                }
                30..=48 => {
                    let hit = cache.get(file, offset).is_some();
                    assert_eq!(hit, model[&file].contains(&offset));
                    if hit {
                        hits += 1;
                    } else {
                        misses += 1;
                    }
                }
                _ => {
                    let n = cache.invalidate_file(file);
                    assert_eq!(n, model.remove(&file).map_or(0, |s| s.len() as u64));
                    invalidations += n;
                    assert_eq!(cache.resident_blocks(file), 0);
                }
            }
            reconcile(&mut model, file);
        }
        for f in 0..20 {
            reconcile(&mut model, f);
        }
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.inserts, s.invalidations), (hits, misses, inserts, invalidations));
        assert!(s.evictions > 0);
        assert_eq!(s.entries, new_inserts - s.evictions - s.invalidations);
        assert!(s.usage_bytes <= s.capacity_bytes);
        assert_eq!(s.usage_bytes, s.entries * charge as u64);
        assert_eq!((0..20).map(|f| cache.resident_blocks(f)).sum::<u64>(), s.entries);
    }

    #[test]
    fn lru_order_oversized_blocks_and_replacement() {
        let one = block(100).memory_size();
        let cache = BlockCache::new(one * 3);
        for off in 0..3 {
            cache.insert(7, off, block(100));
        }
        assert!(cache.get(7, 0).is_some()); // 0 becomes most recent
        assert!(cache.peek(7, 1).is_some() && cache.peek(7, 9).is_none()); // counts nothing, promotes nothing
        cache.insert(7, 3, block(100)); // evicts 1
        assert!(cache.get(7, 1).is_none());
        assert_eq!(cache.resident_blocks(7), 3);
        cache.insert(7, 3, block(100)); // replacement: no eviction
        assert_eq!(cache.stats().evictions, 1);
        assert!(!cache.insert(8, 0, block(one * 3))); // larger than the shard: not cached
        assert_eq!(cache.resident_blocks(8), 0);
        let s = cache.stats();
        assert_eq!((s.inserts, s.entries, s.usage_bytes, s.hits, s.misses), (5, 3, 3 * one as u64, 1, 1));
        assert_eq!(cache.invalidate_file(7), 3);
        let s = cache.stats();
        assert_eq!((s.entries, s.usage_bytes, s.invalidations, s.evictions), (0, 0, 3, 1));
        assert_eq!(cache.capacity(), one * 3);
        let zero = BlockCache::new(0);
        zero.insert(1, 0, block(1));
        assert!(zero.get(1, 0).is_none());
    }

    /// Two handles of one cache with equal file ids: each sees only its own
    /// blocks, one capacity bounds both, per-handle counters add up to the
    /// totals, and dropping a handle frees its blocks.
    #[test]
    fn shared_handles_keep_equal_file_ids_apart() {
        let one = block(100).memory_size();
        let a = BlockCache::new(one * 4);
        let b = a.share();
        let (block_a, block_b) = (block(100), block(100));
        a.insert(7, 0, Arc::clone(&block_a));
        assert!(b.get(7, 0).is_none() && b.peek(7, 0).is_none() && b.get_resident(7, 0).is_none());
        b.insert(7, 0, Arc::clone(&block_b));
        assert!(Arc::ptr_eq(&a.get(7, 0).unwrap(), &block_a));
        assert!(Arc::ptr_eq(&b.get(7, 0).unwrap(), &block_b));
        assert_eq!((a.resident_blocks(7), b.resident_blocks(7)), (1, 1));
        // b fills the shared capacity: a's block is the least recently used to go.
        for off in 1..4 {
            b.insert(7, off, block(100));
        }
        assert_eq!((a.resident_blocks(7), b.resident_blocks(7)), (0, 4));
        let (sa, sb, t) = (a.stats(), b.stats(), a.total_stats());
        assert_eq!((sa.evictions, sa.entries, sa.usage_bytes), (1, 0, 0));
        assert_eq!((sb.entries, sb.usage_bytes as usize, sb.capacity_bytes as usize), (4, 4 * one, 4 * one));
        assert_eq!(
            (sa.hits + sb.hits, sa.misses + sb.misses, sa.inserts + sb.inserts),
            (t.hits, t.misses, t.inserts)
        );
        assert_eq!((t.entries, t.usage_bytes as usize, t.evictions), (4, 4 * one, 1));
        // Invalidating a's file 7 leaves b's file 7 alone.
        a.insert(7, 9, block(100));
        assert_eq!(a.invalidate_file(7), 1);
        assert_eq!(b.resident_blocks(7), 3);
        drop(b);
        let t = a.total_stats();
        assert_eq!((t.entries, t.usage_bytes), (0, 0));
    }
}
