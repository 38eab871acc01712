//! A sharded LRU cache of decoded blocks keyed by (namespace, file id, block
//! offset), charged by bytes, that knows which blocks of each file are
//! resident.
//!
//! One cache's memory is shared by every keyspace of a database: each tree
//! reads through its own handle ([`BlockCache::share`]), whose namespace is
//! part of every key, because file ids are per keyspace and two trees may
//! both have a table 7.

use std::fmt;
use std::sync::Arc;

use crate::cache::handle::Namespaced;
use crate::cache::int_hash::IntHash;
pub use crate::cache::sharded::CacheStats;
use crate::cache::sharded::{Entries, ShardedLru};
use crate::table::Block;

/// (namespace, file id, offset).
type Key = (u64, u64, u64);

/// Blocks keyed by offset within their file, charged their memory size.
struct Blocks;

impl Entries for Blocks {
    type Key = Key;
    type Value = Arc<Block>;
    type Member = u64;
    type MemberHash = IntHash;

    fn file(&(ns, file_id, _): &Key) -> (u64, u64) {
        (ns, file_id)
    }

    fn member(key: &Key) -> &u64 {
        &key.2
    }

    fn key((ns, file_id): (u64, u64), offset: u64) -> Key {
        (ns, file_id, offset)
    }

    fn charge(_: &Key, block: &Arc<Block>) -> usize {
        block.memory_size()
    }
}

/// The block cache: an LRU by bytes, split into up to 16 shards by a hash of
/// (namespace, file id, offset). A value is a handle: it reads and writes
/// its own namespace of a store that [`BlockCache::share`] hands to others.
pub struct BlockCache(Namespaced<Blocks>);

impl fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.debug("BlockCache", f)
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
        BlockCache(Namespaced::new(Arc::new(ShardedLru::new(capacity_bytes))))
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
        BlockCache(self.0.share())
    }

    /// The shard hash of (namespace, file, offset).
    #[inline]
    fn mix(&self, file_id: u64, offset: u64) -> impl FnOnce() -> u64 {
        let ns = self.0.ns;
        move || file_id ^ offset.rotate_left(32) ^ ns.rotate_left(17)
    }

    /// The cached block at (file, offset), counting a hit or a miss.
    pub fn get(&self, file_id: u64, offset: u64) -> Option<Arc<Block>> {
        let ns = self.0.ns;
        self.0.store.get(self.mix(file_id, offset), ns, &(ns, file_id, offset), true, Arc::clone)
    }

    /// The cached block at (file, offset) if it is resident: a hit is counted,
    /// an absence is not a miss (the caller reads nothing instead).
    pub fn get_resident(&self, file_id: u64, offset: u64) -> Option<Arc<Block>> {
        let ns = self.0.ns;
        self.0.store.get(self.mix(file_id, offset), ns, &(ns, file_id, offset), false, Arc::clone)
    }

    /// The cached block at (file, offset) without counting a lookup or
    /// making it more recently used (for the compaction warm-up, which asks
    /// about blocks nobody is reading).
    pub fn peek(&self, file_id: u64, offset: u64) -> Option<Arc<Block>> {
        self.0.store.peek(self.mix(file_id, offset), &(self.0.ns, file_id, offset), Arc::clone)
    }

    /// Caches a block, evicting least recently used ones (of any namespace)
    /// to stay within capacity. A block larger than a shard's capacity is
    /// not cached (false).
    pub fn insert(&self, file_id: u64, offset: u64, block: Arc<Block>) -> bool {
        let charge = block.memory_size();
        let ns = self.0.ns;
        self.0.store.insert(self.mix(file_id, offset), ns, charge, || ((ns, file_id, offset), block))
    }

    /// Exact number of resident blocks of `file_id`.
    pub fn resident_blocks(&self, file_id: u64) -> u64 {
        self.0.resident(file_id)
    }

    /// Drops every resident block of a deleted file; returns how many were
    /// dropped (counted as invalidations, not evictions).
    pub fn invalidate_file(&self, file_id: u64) -> u64 {
        self.0.invalidate_file(file_id)
    }

    /// This handle's counters, summed over all shards: its lookups, and its
    /// namespace's inserts, evictions (by anyone's insert), invalidations and
    /// resident entries; `capacity_bytes` is the whole cache's.
    pub fn stats(&self) -> CacheStats {
        self.0.stats()
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
        self.0.store.total_stats()
    }

    /// Configured capacity in bytes (of the whole shared cache).
    pub fn capacity(&self) -> usize {
        self.0.store.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::{HashMap, HashSet};

    /// A block whose payload is `len` zero bytes plus one restart point.
    fn block(len: usize) -> Arc<Block> {
        let mut d = Vec::with_capacity(len + 8);
        d.resize(len, 0);
        d.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        Arc::new(Block::new(d).unwrap())
    }

    #[test]
    fn shard_count_follows_capacity() {
        assert_eq!(BlockCache::new(0).0.store.shard_count(), 1);
        assert_eq!(BlockCache::new(1 << 20).0.store.shard_count(), 2);
        assert_eq!(BlockCache::new(1 << 30).0.store.shard_count(), 16);
    }

    #[test]
    fn resident_counts_stay_exact_under_random_operations() {
        let mut rng = SmallRng::seed_from_u64(9);
        let cache = BlockCache::new(1 << 20); // 2 shards of 512 KiB
        let charge = block(4000).memory_size();
        let resident = |f: u64, o: u64| cache.0.store.contains(cache.mix(f, o), &(cache.0.ns, f, o));
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
