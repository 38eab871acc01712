//! A bounded LRU of open tables, so the index and filter blocks of recently
//! used tables stay in memory without holding every file open.

use std::fmt;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lru::LruCache;
use parking_lot::Mutex;

use crate::cache::BlockCache;
use crate::error::{Error, Result};
#[cfg(test)]
use crate::filename::table_path;
use crate::paths::TablePaths;
use crate::table::{SegmentMeta, Table};
use crate::vfs::{RandomOpenOptions, Vfs};

struct Inner {
    lru: LruCache<u64, Arc<Table>>,
    /// Sum of `memory_usage()` of the cached tables.
    memory: usize,
}

/// Shards, so concurrent readers of different files rarely share a lock.
const SHARDS: usize = 8;

/// Open table handles, at most `capacity` of them, least recently used dropped first.
pub struct TableCache {
    vfs: Arc<dyn Vfs>,
    paths: Arc<TablePaths>,
    block_cache: Option<Arc<BlockCache>>,
    direct_reads: bool,
    shards: Vec<Mutex<Inner>>,
}

impl fmt::Debug for TableCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableCache")
            .field("paths", &self.paths.dirs())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl TableCache {
    /// A cache of up to `capacity` (at least 1) open tables of directory `dir`.
    pub fn new(
        vfs: Arc<dyn Vfs>,
        dir: PathBuf,
        capacity: usize,
        block_cache: Option<Arc<BlockCache>>,
        direct_reads: bool,
    ) -> Self {
        let paths = Arc::new(TablePaths::new(&dir, &[]));
        Self::with_paths(vfs, paths, capacity, block_cache, direct_reads)
    }

    /// [`Self::new`] for tables spread over `paths`.
    pub(crate) fn with_paths(
        vfs: Arc<dyn Vfs>,
        paths: Arc<TablePaths>,
        capacity: usize,
        block_cache: Option<Arc<BlockCache>>,
        direct_reads: bool,
    ) -> Self {
        // Equal shards whose total stays within `capacity` (small capacities
        // get fewer shards).
        let shards = capacity.clamp(1, SHARDS);
        let per_shard = NonZeroUsize::new(capacity / shards).unwrap_or(NonZeroUsize::MIN);
        TableCache {
            vfs,
            paths,
            block_cache,
            direct_reads,
            shards: (0..shards)
                .map(|_| Mutex::new(Inner { lru: LruCache::new(per_shard), memory: 0 }))
                .collect(),
        }
    }

    fn shard(&self, file_id: u64) -> &Mutex<Inner> {
        &self.shards[(file_id % self.shards.len() as u64) as usize]
    }

    /// The open table `file_id` (of `file_size` bytes, made of `segments` as
    /// the MANIFEST lists them), opening it on a miss. A cached handle opened
    /// at another size is not returned: segments were appended to the file
    /// since (or, for a reader of an older Version, the handle has segments it
    /// must not see). The table is opened again and the newest state is kept.
    pub fn get(&self, file_id: u64, file_size: u64, segments: &[SegmentMeta]) -> Result<Arc<Table>> {
        let shard = self.shard(file_id);
        if let Some(t) = shard.lock().lru.get(&file_id).filter(|t| t.file_size() == file_size) {
            return Ok(Arc::clone(t));
        }
        let path = self.paths.table(file_id);
        let file = self.vfs.open_random(&path, RandomOpenOptions { direct: self.direct_reads })?;
        let table = Table::open_segments(file, file_id, file_size, segments, self.block_cache.clone())
            .map_err(|e| name_file(e, &path))?;
        let table = Arc::new(table.with_path(&path));
        let mut inner = shard.lock();
        if let Some(t) = inner.lru.get(&file_id).filter(|t| t.file_size() == file_size) {
            return Ok(Arc::clone(t));
        }
        // An older state of the file (a reader of an older Version) is served
        // but does not replace the newer one.
        if inner.lru.peek(&file_id).is_some_and(|t| t.file_size() > file_size) {
            return Ok(table);
        }
        // `push` hands back the replaced handle of this file, or the evicted one.
        inner.memory += table.memory_usage();
        if let Some((_, evicted)) = inner.lru.push(file_id, Arc::clone(&table)) {
            inner.memory -= evicted.memory_usage();
        }
        Ok(table)
    }

    /// Opens table `file_id` without caching the handle or reading its blocks
    /// through the block cache, so every block comes from the file.
    pub fn open_uncached(&self, file_id: u64, file_size: u64, segments: &[SegmentMeta]) -> Result<Table> {
        let path = self.paths.table(file_id);
        let file = self.vfs.open_random(&path, RandomOpenOptions { direct: self.direct_reads })?;
        let table = Table::open_segments(file, file_id, file_size, segments, None)
            .map_err(|e| name_file(e, &path))?;
        Ok(table.with_path(&path))
    }

    /// Where the tables live.
    pub(crate) fn paths(&self) -> &Arc<TablePaths> {
        &self.paths
    }

    /// The block cache the tables read through, if any.
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }

    /// Drops the handle of `file_id` (e.g. its file was deleted). Its blocks
    /// stay in the block cache until [`BlockCache::invalidate_file`].
    pub fn evict(&self, file_id: u64) {
        let mut inner = self.shard(file_id).lock();
        if let Some(t) = inner.lru.pop(&file_id) {
            inner.memory -= t.memory_usage();
        }
    }

    /// Bytes of index and filter blocks held by the cached tables.
    pub fn memory_usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().memory).sum()
    }

    /// Number of cached tables.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().lru.len()).sum()
    }

    /// True when no table is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A corruption found opening a table, with the file's path in front.
fn name_file(e: Error, path: &Path) -> Error {
    match e {
        Error::Corruption(msg) => Error::Corruption(format!("{}: {msg}", path.display())),
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{lookup_key, make_internal_key, ValueKind};
    use crate::table::{BlockReadOptions, TableBuilder, TableBuilderOptions};
    use crate::vfs::{MemVfs, RealVfs};

    /// Writes tables 0..n with 100 keys each into `dir`; returns their sizes.
    fn write_tables(vfs: &dyn Vfs, dir: &std::path::Path, n: u64) -> Vec<u64> {
        vfs.create_dir_all(dir).unwrap();
        (0..n)
            .map(|id| {
                let file = vfs.create(&table_path(dir, id)).unwrap();
                let mut b = TableBuilder::new(file, TableBuilderOptions::default());
                for i in 0..100u64 {
                    b.add(
                        &make_internal_key(format!("t{id}k{i:03}").as_bytes(), i + 1, ValueKind::Put),
                        b"v",
                    )
                    .unwrap();
                }
                b.finish().unwrap().file_size
            })
            .collect()
    }

    fn check_get(t: &Table, id: u64) {
        let got =
            t.get(&lookup_key(format!("t{id}k050").as_bytes(), 1000), BlockReadOptions::default()).unwrap();
        assert_eq!(got, Some((ValueKind::Put, b"v".to_vec())));
    }

    #[test]
    fn bounded_lru_of_open_tables() {
        let vfs = Arc::new(MemVfs::new());
        let dir = PathBuf::from("/db");
        let sizes = write_tables(&*vfs, &dir, 10);
        let cache =
            TableCache::new(vfs.clone(), dir.clone(), 3, Some(Arc::new(BlockCache::new(1 << 20))), false);
        assert!(cache.is_empty());
        let mut handles = Vec::new();
        for id in 0..10u64 {
            let t = cache.get(id, sizes[id as usize], &[]).unwrap();
            check_get(&t, id);
            assert!(cache.len() <= 3);
            handles.push(t);
        }
        // The most recent three are resident (same handle), older ones were dropped.
        for id in 7..10 {
            assert!(Arc::ptr_eq(&cache.get(id, sizes[id as usize], &[]).unwrap(), &handles[id as usize]));
        }
        let one = handles[9].memory_usage();
        assert_eq!(cache.memory_usage(), 3 * one);
        cache.evict(8);
        assert_eq!((cache.len(), cache.memory_usage()), (2, 2 * one));
        assert!(!Arc::ptr_eq(&cache.get(8, sizes[8], &[]).unwrap(), &handles[8]));
        assert!(!Arc::ptr_eq(&cache.get(0, sizes[0], &[]).unwrap(), &handles[0]));
        assert_eq!((cache.len(), cache.memory_usage()), (3, 3 * one));
        // Missing files and wrong sizes are errors, and are not cached.
        assert!(cache.get(99, 1000, &[]).is_err());
        assert!(cache.get(1, sizes[1] - 1, &[]).unwrap_err().is_corruption());
        assert_eq!(cache.len(), 3);
        // Capacity 0 behaves as 1.
        let tiny = TableCache::new(vfs, dir, 0, None, false);
        tiny.get(0, sizes[0], &[]).unwrap();
        tiny.get(1, sizes[1], &[]).unwrap();
        assert_eq!(tiny.len(), 1);
    }

    /// Regression: a hit ignored the size it was asked for, so after a file
    /// grew (an append) readers got the old footer and index.
    #[test]
    fn a_hit_with_another_size_reopens_the_table() {
        let vfs = Arc::new(MemVfs::new());
        let dir = PathBuf::from("/db");
        let sizes = write_tables(&*vfs, &dir, 2);
        let cache = TableCache::new(vfs.clone(), dir.clone(), 8, None, false);
        let old = cache.get(1, sizes[1], &[]).unwrap();
        // The same file number, now a longer table (table 0's larger twin).
        let file = vfs.create(&table_path(&dir, 1)).unwrap();
        let mut b = TableBuilder::new(file, TableBuilderOptions::default());
        for i in 0..300u64 {
            b.add(&make_internal_key(format!("t1k{i:03}").as_bytes(), i + 1, ValueKind::Put), b"w").unwrap();
        }
        let grown = b.finish().unwrap().file_size;
        assert!(grown > sizes[1]);
        let new = cache.get(1, grown, &[]).unwrap();
        assert!(!Arc::ptr_eq(&old, &new));
        assert_eq!(new.file_size(), grown);
        let got = new.get(&lookup_key(b"t1k250", 1000), BlockReadOptions::default()).unwrap();
        assert_eq!(got, Some((ValueKind::Put, b"w".to_vec())));
        assert_eq!(
            (cache.len(), cache.memory_usage()),
            (1, new.memory_usage()),
            "the old handle is replaced"
        );
        assert!(Arc::ptr_eq(&cache.get(1, grown, &[]).unwrap(), &new), "and the new one is a hit");
    }

    #[test]
    fn reads_real_files_with_and_without_direct_io() {
        let tmp = tempfile::tempdir().unwrap();
        let vfs: Arc<dyn Vfs> = Arc::new(RealVfs::new());
        let sizes = write_tables(&*vfs, tmp.path(), 2);
        for direct in [false, true] {
            let cache = TableCache::new(vfs.clone(), tmp.path().to_path_buf(), 4, None, direct);
            for id in 0..2 {
                check_get(&cache.get(id, sizes[id as usize], &[]).unwrap(), id);
            }
        }
    }
}
