//! Caches in front of table files: decoded data blocks keyed by (namespace,
//! file id, offset), point-lookup results keyed by (namespace, file id, user
//! key), and open table handles (which keep index and filter in memory). A
//! database has one block cache and one row cache; each keyspace reads them
//! through a handle of its own namespace, and so do the open tables
//! (`max_open_files` bounds the database's descriptors). All three are one
//! sharded LRU (`sharded.rs`) over their own keys and charges, read
//! through one kind of namespace handle (`handle.rs`).

pub mod block_cache;
mod handle;
mod int_hash;
mod map_budget;
mod namespace;
pub mod row_cache;
mod sharded;
pub mod table_cache;
mod table_slot;

pub use block_cache::{BlockCache, CacheStats};
pub(crate) use map_budget::{MapBudget, MapSlot};
pub use row_cache::RowCache;
pub use table_cache::TableCache;
pub(crate) use table_slot::TableSlot;
