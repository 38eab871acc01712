//! A bounded LRU of open tables, so the index and filter blocks of recently
//! used tables stay in memory without holding every file open. One LRU
//! (`OpenTables`) serves every tree of a database, so `max_open_files`
//! bounds the database's descriptors however many keyspaces it has (as
//! LevelDB's and RocksDB's table cache do); each tree reads it through a
//! [`TableCache`] of its own namespace, since file ids are per keyspace.
//! While the LRU holds a table, its handle is also pinned in the file
//! state's `TableSlot` (`table_slot.rs`), where reads find it without a lock.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::cache::handle::Namespaced;
use crate::cache::int_hash::IntHash;
use crate::cache::sharded::{Entries, ShardedLru};
use crate::cache::{BlockCache, MapBudget, TableSlot};
use crate::error::{Error, Result};
#[cfg(test)]
use crate::filename::table_path;
use crate::paths::TablePaths;
use crate::table::{SegmentMeta, Table};
use crate::vfs::{RandomAccessFile, RandomOpenOptions, Vfs};

/// A cached handle, the memory counter of the tree it belongs to, which it
/// gives its memory back to when the LRU lets go of it (whichever tree's
/// insert evicted it), and the file state's slot it is pinned in, emptied
/// then too.
struct Resident {
    table: Arc<Table>,
    memory: Arc<AtomicUsize>,
    /// INVARIANT: set and read under the shard lock; one slot at a time, so
    /// no other slot can keep the table open once the LRU lets go of it.
    slot: Mutex<Weak<TableSlot>>,
}

impl Resident {
    /// Pins the table in `slot` unless another live slot holds it.
    /// REQUIRES: under the shard lock.
    fn pin(&self, slot: &Arc<TableSlot>) {
        let mut held = self.slot.lock();
        if held.upgrade().is_none_or(|s| Arc::ptr_eq(&s, slot)) {
            *held = Arc::downgrade(slot);
            slot.pin(&self.table);
        }
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.get_mut().upgrade() {
            slot.unpin(&self.table);
        }
        self.memory.fetch_sub(self.table.memory_usage(), Ordering::Relaxed);
    }
}

/// Open tables keyed by (namespace, file id), each counted as one.
struct Handles;

impl Entries for Handles {
    type Key = (u64, u64);
    type Value = Resident;
    type Member = ();
    type MemberHash = IntHash;
    fn file(key: &(u64, u64)) -> (u64, u64) {
        *key
    }
    fn member(_: &(u64, u64)) -> &() {
        &()
    }
    fn key(file: (u64, u64), _: ()) -> (u64, u64) {
        file
    }
    fn charge(_: &(u64, u64), _: &Resident) -> usize {
        1
    }
    /// Reads through a slot skip the LRU, so a table read since it was last
    /// looked at gets a second chance instead of being closed as unused.
    fn spare(r: &Resident) -> bool {
        r.slot.lock().upgrade().is_some_and(|s| s.take_used())
    }
}

/// The open tables of a database: at most `capacity` of all its trees,
/// least recently used closed first. Clones share them.
#[derive(Clone)]
pub(crate) struct OpenTables(Arc<ShardedLru<Handles>>);

impl OpenTables {
    /// Room for `capacity` (at least 1) open tables.
    pub(crate) fn new(capacity: usize) -> OpenTables {
        OpenTables(Arc::new(ShardedLru::counted(capacity.max(1))))
    }
}

fn mix(key: (u64, u64)) -> u64 {
    key.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.1
}

/// One tree's view of the open tables: its directory, namespace and block
/// cache handle.
pub struct TableCache {
    vfs: Arc<dyn Vfs>,
    paths: Arc<TablePaths>,
    block_cache: Option<Arc<BlockCache>>,
    direct_reads: bool,
    /// This tree's namespace of the database's open tables.
    open: Namespaced<Handles>,
    /// Sum of `memory_usage()` of this tree's resident tables.
    memory: Arc<AtomicUsize>,
    /// With `mmap_reads`: the database's bound on mapped tables.
    maps: Option<Arc<MapBudget>>,
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
    /// A cache of up to `capacity` (at least 1) open tables of directory
    /// `dir`, of its own.
    pub fn new(
        vfs: Arc<dyn Vfs>,
        dir: PathBuf,
        capacity: usize,
        block_cache: Option<Arc<BlockCache>>,
        direct_reads: bool,
    ) -> Self {
        let paths = Arc::new(TablePaths::new(&dir, &[]));
        Self::with_paths(vfs, paths, &OpenTables::new(capacity), block_cache, direct_reads)
    }

    /// The tables spread over `paths`, kept open in `open` (shared with the
    /// database's other trees).
    pub(crate) fn with_paths(
        vfs: Arc<dyn Vfs>,
        paths: Arc<TablePaths>,
        open: &OpenTables,
        block_cache: Option<Arc<BlockCache>>,
        direct_reads: bool,
    ) -> Self {
        let open = Namespaced::new(Arc::clone(&open.0));
        TableCache { vfs, paths, block_cache, direct_reads, open, memory: Arc::default(), maps: None }
    }

    /// Tables opened from now on are memory-mapped while `maps` has room
    /// (`mmap_reads`), read with `pread` beyond it.
    pub(crate) fn with_maps(mut self, maps: Arc<MapBudget>) -> Self {
        self.maps = Some(maps);
        self
    }

    /// The open table `file_id` (of `file_size` bytes, made of `segments` as
    /// the MANIFEST lists them), opening it on a miss. A cached handle opened
    /// at another size is not returned: segments were appended to the file
    /// since (or, for a reader of an older Version, the handle has segments it
    /// must not see). The table is opened again and the newest state is kept.
    pub fn get(&self, file_id: u64, file_size: u64, segments: &[SegmentMeta]) -> Result<Arc<Table>> {
        self.lookup(None, file_id, file_size, segments)
    }

    /// [`Self::get`] for the file state whose slot is `slot`: answered from
    /// the slot while the cache holds the table, which a hit or an insert
    /// here pins there.
    pub(crate) fn get_via(
        &self,
        slot: &Arc<TableSlot>,
        file_id: u64,
        file_size: u64,
        segments: &[SegmentMeta],
    ) -> Result<Arc<Table>> {
        if let Some(t) = slot.get() {
            return Ok(t);
        }
        self.lookup(Some(slot), file_id, file_size, segments)
    }

    fn lookup(
        &self,
        slot: Option<&Arc<TableSlot>>,
        file_id: u64,
        file_size: u64,
        segments: &[SegmentMeta],
    ) -> Result<Arc<Table>> {
        let ns = self.open.ns;
        let key = (ns, file_id);
        let lru = &self.open.store;
        let hit = lru.get(
            || mix(key),
            ns,
            &key,
            true,
            |r| {
                (r.table.file_size() == file_size).then(|| {
                    if let Some(slot) = slot {
                        r.pin(slot);
                    }
                    Arc::clone(&r.table)
                })
            },
        );
        if let Some(t) = hit.flatten() {
            return Ok(t);
        }
        let path = self.paths.table(file_id);
        let file = self.vfs.open_random(&path, RandomOpenOptions { direct: self.direct_reads })?;
        let table =
            Table::open_segments(Arc::clone(&file), file_id, file_size, segments, self.block_cache.clone())
                .map_err(|e| name_file(e, &path))?;
        let table = Arc::new(self.map(table, &*file).with_path(&path));
        // An older state of the file (a reader of an older Version) is served
        // but does not replace the newer one.
        if lru.peek(|| mix(key), &key, |r| r.table.file_size() > file_size).unwrap_or(false) {
            return Ok(table);
        }
        self.memory.fetch_add(table.memory_usage(), Ordering::Relaxed);
        let resident =
            Resident { table: Arc::clone(&table), memory: Arc::clone(&self.memory), slot: Mutex::default() };
        lru.insert(
            || mix(key),
            ns,
            1,
            || {
                if let Some(slot) = slot {
                    resident.pin(slot);
                }
                (key, resident)
            },
        );
        Ok(table)
    }

    /// `table` reading through a map of `file` if the budget has room; any
    /// failure to map leaves it reading with `pread`. The map covers the
    /// table's recorded size, never bytes appended after it.
    fn map(&self, table: Table, file: &dyn RandomAccessFile) -> Table {
        let Some(slot) = self.maps.as_ref().and_then(|m| m.take()) else { return table };
        match file.map(table.file_size()) {
            Ok(Some(map)) => table.with_map(map, slot),
            Ok(None) => table,
            Err(e) => {
                log::debug!(target: "strata::table", "table {:06}: not mapped: {e}", table.file_id());
                table
            }
        }
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
        self.open.invalidate_file(file_id);
    }

    /// Bytes of index and filter blocks held by this tree's cached tables.
    pub fn memory_usage(&self) -> usize {
        self.memory.load(Ordering::Relaxed)
    }

    /// Number of this tree's cached tables.
    pub fn len(&self) -> usize {
        self.open.stats().entries as usize
    }

    /// True when no table of this tree is cached.
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
    use crate::iter::InternalIterator;
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

    /// Reads through a file state's slot: the slot is pinned while the LRU
    /// holds the table and emptied when it lets go (an eviction, a deleted
    /// file, a newer state), so the bound on open tables holds; a table read
    /// through its slot gets a second chance at eviction, since those reads
    /// do not refresh the LRU.
    #[test]
    fn slots_pin_tables_the_lru_holds_and_only_those() {
        let vfs = Arc::new(MemVfs::new());
        let dir = PathBuf::from("/db");
        let sizes = write_tables(&*vfs, &dir, 8);
        let cache = TableCache::new(vfs.clone(), dir.clone(), 3, None, false);
        let slots: Vec<Arc<TableSlot>> = (0..8).map(|_| Arc::default()).collect();
        let get = |id: usize| cache.get_via(&slots[id], id as u64, sizes[id], &[]).unwrap();
        let pinned = || (0..8).filter(|&i| slots[i].is_pinned()).collect::<Vec<_>>();
        for id in 0..3 {
            check_get(&get(id), id as u64);
        }
        assert_eq!(pinned(), [0, 1, 2]);
        let lookups = cache.open.stats();
        let t1 = get(1);
        assert!(Arc::ptr_eq(&t1, &get(1)), "the pinned handle");
        assert_eq!(cache.open.stats().hits, lookups.hits, "a slot read takes no cache lookup");
        // Every table was used since it came in: the least recent goes.
        get(3);
        assert_eq!(pinned(), [1, 2, 3]);
        // Table 1 was read through its slot, so it outlives table 2.
        get(1);
        get(4);
        assert_eq!(pinned(), [1, 3, 4]);
        assert_eq!(cache.len(), 3);
        // A deleted file's slot empties with its handle.
        cache.evict(3);
        assert_eq!(pinned(), [1, 4]);
        // A newer state of a file replaces the handle, and the old state's slot empties.
        let file = vfs.create(&table_path(&dir, 4)).unwrap();
        let mut b = TableBuilder::new(file, TableBuilderOptions::default());
        for i in 0..300u64 {
            b.add(&make_internal_key(format!("t4k{i:03}").as_bytes(), i + 1, ValueKind::Put), b"v").unwrap();
        }
        let grown = b.finish().unwrap().file_size;
        let newer = Arc::new(TableSlot::default());
        let t = cache.get_via(&newer, 4, grown, &[]).unwrap();
        assert_eq!(t.file_size(), grown);
        assert!(newer.is_pinned());
        assert_eq!(pinned(), [1]);
        // Two states of one size share the handle; only one slot pins it.
        let twin = Arc::new(TableSlot::default());
        assert!(Arc::ptr_eq(&cache.get_via(&twin, 1, sizes[1], &[]).unwrap(), &t1));
        assert!(!twin.is_pinned());
        drop(slots);
        assert!(Arc::ptr_eq(&cache.get_via(&twin, 1, sizes[1], &[]).unwrap(), &t1));
        assert!(twin.is_pinned(), "once the pinning state is gone, another may pin");
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

    /// Mapped tables serve uncompressed blocks in place, never in the block
    /// cache; past the bound, tables read with `pread`; a slot comes back when
    /// its table handle goes. A file grown by an append after it was mapped
    /// still reads through the old map (only committed bytes are mapped).
    #[test]
    fn maps_within_the_bound_and_serves_blocks_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let vfs: Arc<dyn Vfs> = Arc::new(RealVfs::new());
        let sizes = write_tables(&*vfs, &dir, 3);
        let budget = MapBudget::new(2);
        let blocks = Arc::new(BlockCache::new(1 << 20));
        let cache = TableCache::new(vfs.clone(), dir.clone(), 8, Some(Arc::clone(&blocks)), false)
            .with_maps(Arc::clone(&budget));
        let tables: Vec<_> = (0..3).map(|id| cache.get(id, sizes[id as usize], &[]).unwrap()).collect();
        assert_eq!(tables.iter().map(|t| t.is_mapped()).collect::<Vec<_>>(), [true, true, false]);
        assert_eq!(budget.used(), 2);
        for (id, t) in tables.iter().enumerate() {
            check_get(t, id as u64);
            let mut ix = t.index_block().unwrap().iter();
            ix.seek_to_first().unwrap();
            let first = crate::table::format::BlockHandle::decode(ix.value()).unwrap();
            assert_eq!(t.read_block(first, BlockReadOptions::default()).unwrap().is_mapped(), id < 2);
        }
        assert_eq!(blocks.stats().inserts, 1, "only the pread table's (one) block is cached");
        // Bytes appended after the map (an uncommitted append) do not disturb it.
        let mut f = vfs.open_append(&table_path(&dir, 0)).unwrap();
        f.append(&[0xAB; 10_000]).unwrap();
        f.sync().unwrap();
        check_get(&tables[0], 0);
        drop(tables);
        cache.evict(0);
        assert_eq!(budget.used(), 1, "an evicted and dropped handle gives its slot back");
    }
}
