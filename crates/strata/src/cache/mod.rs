//! Caches in front of table files: decoded data blocks keyed by (file id,
//! offset), and open table handles (which keep index and filter in memory).

pub mod block_cache;
pub mod table_cache;

pub use block_cache::{BlockCache, CacheStats};
pub use table_cache::TableCache;
