//! A handle on one namespace of a shared [`ShardedLru`]: what each cache a
//! keyspace reads through is (blocks, rows, open tables). Handles of one
//! store never see each other's entries, one capacity bounds them all, and a
//! handle that goes takes its namespace's entries with it.

use std::fmt;
use std::sync::Arc;

use crate::cache::sharded::{CacheStats, Entries, ShardedLru};

pub(crate) struct Namespaced<E: Entries> {
    pub(crate) store: Arc<ShardedLru<E>>,
    /// INVARIANT: handed out by `store` to this handle alone.
    pub(crate) ns: u64,
}

impl<E: Entries> Namespaced<E> {
    /// A handle of a namespace of its own in `store`.
    pub(crate) fn new(store: Arc<ShardedLru<E>>) -> Self {
        let ns = store.new_namespace();
        Namespaced { store, ns }
    }

    /// Another handle on the same store, with a new namespace.
    pub(crate) fn share(&self) -> Self {
        Self::new(Arc::clone(&self.store))
    }

    /// Exact number of this namespace's resident entries of `file_id`.
    pub(crate) fn resident(&self, file_id: u64) -> u64 {
        self.store.resident(self.ns, file_id)
    }

    /// Drops this namespace's entries of `file_id`; returns how many.
    pub(crate) fn invalidate_file(&self, file_id: u64) -> u64 {
        self.store.invalidate_file(self.ns, file_id)
    }

    /// This namespace's counters; `capacity_bytes` is the whole store's.
    pub(crate) fn stats(&self) -> CacheStats {
        self.store.stats(self.ns)
    }

    /// `Debug` of the cache type `name` around this handle.
    pub(crate) fn debug(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("shards", &self.store.shard_count())
            .field("namespace", &self.ns)
            .field("stats", &self.stats())
            .finish()
    }
}

impl<E: Entries> Drop for Namespaced<E> {
    /// A namespace nobody can read any more (a dropped keyspace, a closed
    /// database) gives its memory back at once instead of aging out.
    fn drop(&mut self) {
        self.store.drop_namespace(self.ns);
    }
}
