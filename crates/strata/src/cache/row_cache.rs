//! A sharded LRU cache of point-lookup results keyed by (namespace, file id,
//! file state, user key), charged by bytes (RocksDB's `row_cache`). As with
//! the block cache, one cache's memory is shared by every keyspace of a
//! database, each reading through its own namespace ([`RowCache::share`]).
//!
//! An entry is the newest entry of a user key in one table file: a value or a
//! tombstone. Table files are immutable and file ids are never reused, so an
//! entry stays correct for as long as its file exists; writes never invalidate
//! anything. Only reads whose sequence sees the whole file may use it (see
//! `db/file_get.rs`). "Not in this file" is not cached: the bloom filter
//! already answers almost all of those without a block read, and caching the
//! rest would spend an entry on every file a get passes through on its way down.

use std::cell::Cell;
use std::fmt;
use std::mem::size_of;
use std::sync::Arc;

use crate::cache::handle::Namespaced;
use crate::cache::sharded::{Entries, ShardedLru};
use crate::cache::CacheStats;
use crate::key::ValueKind;

/// Bytes an entry costs beyond its key and value: the LRU node (key and value
/// handles, two list links), its slot in the LRU's hash table (two pointers),
/// the reference counts of the shared key and value (two each), and the key's
/// slot in the per-file index.
pub const ROW_OVERHEAD: usize = (size_of::<Key>() + size_of::<Row>() + 2 * size_of::<usize>())
    + 2 * size_of::<usize>()
    + 4 * size_of::<usize>()
    + size_of::<Key>();

/// A cached lookup result. The value is shared so a hit copies it out after
/// the shard lock is released.
struct Row {
    kind: ValueKind,
    value: Arc<[u8]>,
}

/// The cache key: the namespace, the file id and the file state (8 bytes
/// each, big-endian), then the user key. One allocation, shared by the LRU
/// and the per-file index.
type Key = Arc<[u8]>;

/// Bytes of a key before the user key.
const KEY_PREFIX: usize = 24;

/// The (namespace, file id) of a key.
fn file_of(key: &[u8]) -> (u64, u64) {
    let word = |i: usize| key.get(i..i + 8).map_or(0, |b| u64::from_be_bytes(b.try_into().unwrap_or([0; 8])));
    (word(0), word(8))
}

thread_local! {
    /// Reused buffer for the composite key of a lookup.
    static KEY_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Keys longer than this do not keep their scratch buffer alive between lookups.
const MAX_RETAINED_KEY_BUF: usize = 64 * 1024;

/// Runs `f` on the composite key of (`ns`, `file_id`, `state`, `user_key`).
fn with_key<R>(ns: u64, file_id: u64, state: u64, user_key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let mut buf = KEY_BUF.with(Cell::take);
    buf.clear();
    buf.extend_from_slice(&ns.to_be_bytes());
    buf.extend_from_slice(&file_id.to_be_bytes());
    buf.extend_from_slice(&state.to_be_bytes());
    buf.extend_from_slice(user_key);
    let r = f(&buf);
    if buf.capacity() <= MAX_RETAINED_KEY_BUF {
        KEY_BUF.with(|c| c.set(buf));
    }
    r
}

/// Rows keyed by their whole composite key, which the per-file index shares.
struct Rows;

impl Entries for Rows {
    type Key = Key;
    type Value = Row;
    type Member = Key;
    type MemberHash = std::hash::RandomState;

    fn file(key: &Key) -> (u64, u64) {
        file_of(key)
    }

    fn member(key: &Key) -> &Key {
        key
    }

    fn key(_: (u64, u64), key: Key) -> Key {
        key
    }

    fn charge(key: &Key, row: &Row) -> usize {
        RowCache::charge(key.len(), row.value.len())
    }
}

/// The row cache: an LRU by bytes, split into up to 16 shards by a hash of
/// the whole key. A value is a handle: it reads and writes its own namespace
/// of a store that [`RowCache::share`] hands to others.
pub struct RowCache(Namespaced<Rows>);

impl fmt::Debug for RowCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.debug("RowCache", f)
    }
}

impl RowCache {
    /// A cache holding at most `capacity_bytes` of rows (keys, values and
    /// [`ROW_OVERHEAD`] each).
    ///
    /// # Examples
    ///
    /// ```
    /// let rows = strata::cache::RowCache::new(1 << 20);
    /// assert_eq!(rows.capacity(), 1 << 20);
    /// ```
    pub fn new(capacity_bytes: usize) -> Self {
        RowCache(Namespaced::new(Arc::new(ShardedLru::new(capacity_bytes))))
    }

    /// Another handle on the same memory with a namespace of its own: its
    /// file ids never meet this handle's, and one capacity bounds both.
    /// Dropping a handle drops its namespace's rows.
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::cache::RowCache;
    /// use strata::key::ValueKind;
    ///
    /// let a = RowCache::new(1 << 20);
    /// let b = a.share();
    /// a.insert(7, 0, b"k", ValueKind::Put, b"from a");
    /// b.insert(7, 0, b"k", ValueKind::Put, b"from b");
    /// assert_eq!(a.get(7, 0, b"k"), Some((ValueKind::Put, b"from a".to_vec())));
    /// assert_eq!(b.get(7, 0, b"k"), Some((ValueKind::Put, b"from b".to_vec())));
    /// assert_eq!((a.stats().entries, a.total_stats().entries), (1, 2));
    /// ```
    pub fn share(&self) -> RowCache {
        RowCache(self.0.share())
    }

    /// What a row with a composite key of `key_len` bytes and a value of
    /// `value_len` bytes is charged.
    pub fn charge(key_len: usize, value_len: usize) -> usize {
        key_len + value_len + ROW_OVERHEAD
    }

    /// The shard hash of a composite key.
    #[inline]
    fn mix(key: &[u8]) -> impl FnOnce() -> u64 + '_ {
        || u64::from(crate::util::crc::crc32c(key))
    }

    /// The cached newest entry of `user_key` in file `file_id` as it was in
    /// `state` (its length: a table appended to is another state, whose
    /// newest entry may differ), counting a hit or a miss; a tombstone comes
    /// back as `(ValueKind::Delete, empty)`.
    pub fn get(&self, file_id: u64, state: u64, user_key: &[u8]) -> Option<(ValueKind, Vec<u8>)> {
        self.get_shared(file_id, state, user_key).map(|(kind, value)| (kind, value.to_vec()))
    }

    /// [`Self::get`] sharing the cached bytes instead of copying them.
    pub(crate) fn get_shared(
        &self,
        file_id: u64,
        state: u64,
        user_key: &[u8],
    ) -> Option<(ValueKind, Arc<[u8]>)> {
        with_key(self.0.ns, file_id, state, user_key, |key| {
            self.0.store.get(Self::mix(key), self.0.ns, key, true, |r| (r.kind, Arc::clone(&r.value)))
        })
    }

    /// Caches the newest entry of `user_key` in file `file_id` in `state`, evicting least
    /// recently used rows (of any namespace) to stay within capacity. A row
    /// larger than a shard's capacity is not cached.
    pub fn insert(&self, file_id: u64, state: u64, user_key: &[u8], kind: ValueKind, value: &[u8]) {
        let key_len = KEY_PREFIX + user_key.len();
        let charge = Self::charge(key_len, value.len());
        let mut key = Vec::with_capacity(key_len);
        key.extend_from_slice(&self.0.ns.to_be_bytes());
        key.extend_from_slice(&file_id.to_be_bytes());
        key.extend_from_slice(&state.to_be_bytes());
        key.extend_from_slice(user_key);
        self.0.store.insert(Self::mix(&key), self.0.ns, charge, || {
            let key: Key = key.as_slice().into();
            (key, Row { kind, value: value.into() })
        });
    }

    /// Exact number of resident rows of `file_id`.
    pub fn resident_rows(&self, file_id: u64) -> u64 {
        self.0.resident(file_id)
    }

    /// Drops every resident row of a deleted file; returns how many were
    /// dropped (counted as invalidations, not evictions).
    pub fn invalidate_file(&self, file_id: u64) -> u64 {
        self.0.invalidate_file(file_id)
    }

    /// This handle's counters summed over all shards (`entries` counts
    /// rows): its lookups, and its namespace's inserts, evictions (by anyone's
    /// insert), invalidations and resident rows; `capacity_bytes` is the
    /// whole cache's.
    pub fn stats(&self) -> CacheStats {
        self.0.stats()
    }

    /// Counters of the whole cache, every namespace's, summed over all shards.
    ///
    /// # Examples
    ///
    /// ```
    /// let rows = strata::cache::RowCache::new(1 << 20);
    /// let other = rows.share();
    /// assert!(other.get(1, 0, b"k").is_none());
    /// assert_eq!((rows.stats().misses, rows.total_stats().misses), (0, 1));
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
    use std::collections::HashMap;

    fn user(i: u64) -> Vec<u8> {
        format!("user{i:04}").into_bytes()
    }

    #[test]
    fn shard_count_follows_capacity() {
        assert_eq!(RowCache::new(0).0.store.shard_count(), 1);
        assert_eq!(RowCache::new(1 << 20).0.store.shard_count(), 2);
        assert_eq!(RowCache::new(1 << 30).0.store.shard_count(), 16);
    }

    #[test]
    fn charges_are_exact_under_random_operations() {
        let mut rng = SmallRng::seed_from_u64(11);
        let cache = RowCache::new(1 << 20); // 2 shards of 512 KiB
        let resident =
            |f: u64, u: &[u8]| with_key(cache.0.ns, f, 0, u, |k| cache.0.store.contains(RowCache::mix(k), k));
        // Model of inserted rows (value lengths), pruned of evicted ones by
        // asking the LRU itself; usage and per-file counts must then agree.
        let mut model: HashMap<(u64, u64), (ValueKind, usize)> = HashMap::new();
        let reconcile = |model: &mut HashMap<(u64, u64), (ValueKind, usize)>| {
            model.retain(|&(f, u), _| resident(f, &user(u)));
            let usage: usize = model
                .iter()
                .map(|(&(_, u), &(_, len))| RowCache::charge(KEY_PREFIX + user(u).len(), len))
                .sum();
            let s = cache.stats();
            assert_eq!((s.usage_bytes, s.entries), (usage as u64, model.len() as u64));
            assert!(s.usage_bytes <= s.capacity_bytes);
            for f in 0..10 {
                let n = model.keys().filter(|(mf, _)| *mf == f).count() as u64;
                assert_eq!(cache.resident_rows(f), n);
            }
        };
        let (mut hits, mut misses, mut inserts, mut invalidations) = (0, 0, 0, 0);
        for step in 0..30_000u64 {
            let file = rng.gen_range(0..10u64);
            let u = rng.gen_range(0..600u64);
            match rng.gen_range(0..1000) {
                0..=499 => {
                    let kind = if rng.gen_ratio(1, 5) { ValueKind::Delete } else { ValueKind::Put };
                    let len = if kind == ValueKind::Put { rng.gen_range(0..4000) } else { 0 };
                    cache.insert(file, 0, &user(u), kind, &vec![u as u8; len]);
                    inserts += 1;
                    model.insert((file, u), (kind, len));
                }
                500..=997 => {
                    let got = cache.get(file, 0, &user(u));
                    let want = model.get(&(file, u)).filter(|_| resident(file, &user(u)));
                    assert_eq!(got.as_ref().map(|(k, v)| (*k, v.len())), want.copied());
                    if let Some((_, v)) = &got {
                        assert!(v.iter().all(|&b| b == u as u8));
                        hits += 1;
                    } else {
                        misses += 1;
                    }
                }
                _ => {
                    let before = cache.resident_rows(file);
                    let n = cache.invalidate_file(file);
                    assert_eq!(n, before);
                    assert_eq!(cache.resident_rows(file), 0);
                    model.retain(|&(f, _), _| f != file);
                    invalidations += n;
                }
            }
            if step % 500 == 0 {
                reconcile(&mut model);
            }
        }
        reconcile(&mut model);
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.inserts, s.invalidations), (hits, misses, inserts, invalidations));
        assert!(s.evictions > 0 && s.hits > 0 && s.invalidations > 0, "{s:?}");
    }

    #[test]
    fn lru_order_tombstones_oversized_rows_and_per_file_drop() {
        let one = RowCache::charge(KEY_PREFIX + user(0).len(), 10);
        let cache = RowCache::new(one * 3);
        for u in 0..3 {
            cache.insert(7, 0, &user(u), ValueKind::Put, &[b'x'; 10]);
        }
        assert!(cache.get(7, 0, &user(0)).is_some()); // 0 becomes most recent
        cache.insert(8, 0, &user(3), ValueKind::Put, &[b'y'; 10]); // evicts (7, 1)
        assert!(cache.get(7, 0, &user(1)).is_none());
        assert_eq!((cache.resident_rows(7), cache.resident_rows(8)), (2, 1));
        // The same user key in another file is another row.
        assert!(cache.get(8, 0, &user(0)).is_none());
        // Replacement: no eviction, charge follows the new value.
        cache.insert(8, 0, &user(3), ValueKind::Delete, &[]);
        assert_eq!(cache.get(8, 0, &user(3)), Some((ValueKind::Delete, Vec::new())));
        let s = cache.stats();
        assert_eq!(s.evictions, 1);
        assert_eq!(s.usage_bytes, (2 * one + RowCache::charge(KEY_PREFIX + user(3).len(), 0)) as u64);
        // Larger than the shard: not cached.
        cache.insert(9, 0, b"big", ValueKind::Put, &vec![0; one * 3]);
        assert_eq!(cache.resident_rows(9), 0);
        let s = cache.stats();
        assert_eq!((s.inserts, s.entries, s.hits, s.misses), (5, 3, 2, 2));
        // Dropping file 7 leaves file 8's row alone.
        assert_eq!(cache.invalidate_file(7), 2);
        assert_eq!(cache.invalidate_file(7), 0);
        assert!(cache.get(8, 0, &user(3)).is_some());
        let s = cache.stats();
        assert_eq!(
            (s.entries, s.invalidations, s.usage_bytes),
            (1, 2, RowCache::charge(KEY_PREFIX + user(3).len(), 0) as u64)
        );
        assert_eq!(cache.capacity(), one * 3);
        let zero = RowCache::new(0);
        zero.insert(1, 0, b"k", ValueKind::Put, b"v");
        assert!(zero.get(1, 0, b"k").is_none());
        // Empty user key and file ids that differ only in high bytes.
        cache.insert(u64::MAX, 0, b"", ValueKind::Put, b"e");
        assert_eq!(cache.get(u64::MAX, 0, b""), Some((ValueKind::Put, b"e".to_vec())));
        assert!(cache.get(u64::MAX >> 8, 0, b"").is_none());
    }

    /// Two handles of one cache with equal file ids: each reads its own
    /// rows, one capacity bounds both, and dropping a handle frees its rows.
    #[test]
    fn shared_handles_keep_equal_file_ids_apart() {
        let one = RowCache::charge(KEY_PREFIX + user(0).len(), 10);
        let a = RowCache::new(one * 4);
        let b = a.share();
        a.insert(7, 0, &user(0), ValueKind::Put, &[b'a'; 10]);
        assert!(b.get(7, 0, &user(0)).is_none());
        b.insert(7, 0, &user(0), ValueKind::Put, &[b'b'; 10]);
        assert_eq!(a.get(7, 0, &user(0)), Some((ValueKind::Put, vec![b'a'; 10])));
        assert_eq!(b.get(7, 0, &user(0)), Some((ValueKind::Put, vec![b'b'; 10])));
        for u in 1..4 {
            b.insert(7, 0, &user(u), ValueKind::Put, &[b'b'; 10]);
        }
        assert_eq!((a.resident_rows(7), b.resident_rows(7)), (0, 4), "a's row was the least recent");
        let (sa, sb, t) = (a.stats(), b.stats(), a.total_stats());
        assert_eq!((sa.evictions, sa.entries, sa.usage_bytes, sa.hits), (1, 0, 0, 1));
        assert_eq!((sb.entries, sb.usage_bytes as usize, sb.misses), (4, 4 * one, 1));
        assert_eq!((t.entries, t.usage_bytes as usize, t.hits, t.misses), (4, 4 * one, 2, 1));
        a.insert(7, 0, &user(9), ValueKind::Put, &[b'a'; 10]);
        assert_eq!(a.invalidate_file(7), 1);
        assert_eq!(b.resident_rows(7), 3);
        drop(b);
        let t = a.total_stats();
        assert_eq!((t.entries, t.usage_bytes), (0, 0));
    }
}
