//! Caches in front of table files: decoded data blocks keyed by (file id,
//! offset), point-lookup results keyed by (file id, user key), and open table
//! handles (which keep index and filter in memory).

pub mod block_cache;
pub mod row_cache;
pub mod table_cache;

pub use block_cache::{BlockCache, CacheStats};
pub use row_cache::RowCache;
pub use table_cache::TableCache;
