//! RocksDB (the `rocksdb` crate, linked against Debian's librocksdb 7.8.3)
//! with Strata's LSM shape, statistics on so cache and write counters can be
//! read back the same way Strata reports them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType, Options, SliceTransform,
    WriteOptions, DB, DEFAULT_COLUMN_FAMILY_NAME,
};

use super::{parse_ticker, Codec};
use crate::engine::{BenchResult, Engine, EngineConfig, EngineStats};
use crate::strata_defaults as sd;

/// A RocksDB database driven through the benchmark's [`Engine`] trait.
pub struct RocksDbEngine {
    db: DB,
    // Kept alive for `get_statistics`: the statistics object is shared with
    // the open DB.
    opts: Options,
    wo: WriteOptions,
    // Key + value bytes handed to put/delete: Strata's definition of user
    // bytes (RocksDB's own `rocksdb.bytes.written` adds batch headers).
    user_bytes: AtomicU64,
    mapping: String,
    path: PathBuf,
    /// `--prefix_size` (0: no prefix extractor) and `--total_order_seek`, for prefix scans.
    prefix_size: usize,
    total_order_seek: bool,
}

fn compression(codec: Codec) -> DBCompressionType {
    match codec {
        Codec::None => DBCompressionType::None,
        Codec::Lz4 => DBCompressionType::Lz4,
        Codec::Zstd => DBCompressionType::Zstd,
    }
}

impl RocksDbEngine {
    /// Opens (creating if needed) a RocksDB database with the benchmark's settings.
    pub fn open(cfg: &EngineConfig) -> BenchResult<Self> {
        let codec = Codec::parse(&cfg.compression)?;
        let mut table = BlockBasedOptions::default();
        if cfg.cache_size == 0 {
            // No block cache, as Strata's 0: an LRU of capacity 0 still takes
            // every block read (pinned while in use) and counts hits and misses.
            table.disable_cache();
        } else {
            let cache = Cache::new_lru_cache(cfg.cache_size).map_err(|e| format!("rocksdb cache: {e}"))?;
            table.set_block_cache(&cache);
        }
        table.set_block_size(sd::BLOCK_SIZE);
        table.set_block_restart_interval(sd::BLOCK_RESTART_INTERVAL);
        // 0 = no filter policy (RocksDB's default), as Strata's 0.
        if cfg.bloom_bits > 0.0 {
            // Full (not block-based) filters, as Strata's one filter per table.
            table.set_bloom_filter(cfg.bloom_bits, false);
        }

        let mut opts = Options::default();
        if cfg.row_cache_size > 0 {
            let rows =
                Cache::new_lru_cache(cfg.row_cache_size).map_err(|e| format!("rocksdb row cache: {e}"))?;
            opts.set_row_cache(&rows);
        }
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&table);
        opts.set_write_buffer_size(cfg.write_buffer_size);
        opts.set_max_write_buffer_number(sd::MAX_WRITE_BUFFER_NUMBER);
        opts.set_target_file_size_base(cfg.max_file_size);
        opts.set_compression_type(compression(codec));
        opts.set_use_direct_reads(cfg.use_direct_reads);
        opts.set_level_zero_file_num_compaction_trigger(sd::L0_COMPACTION_TRIGGER);
        opts.set_level_zero_slowdown_writes_trigger(sd::L0_SLOWDOWN_TRIGGER);
        opts.set_level_zero_stop_writes_trigger(sd::L0_STOP_TRIGGER);
        opts.set_max_bytes_for_level_base(cfg.max_bytes_for_level_base);
        opts.set_max_bytes_for_level_multiplier(cfg.level_multiplier);
        // Static level targets, as Strata's: 7.8's default, set so a newer
        // RocksDB (default true since 8.4) compares the same shape.
        opts.set_level_compaction_dynamic_level_bytes(false);
        opts.set_num_levels(sd::NUM_LEVELS);
        opts.set_max_open_files(sd::MAX_OPEN_FILES);
        // One flush and one compaction thread, like Strata's background pair.
        opts.set_max_background_jobs(2);
        opts.set_max_subcompactions(cfg.subcompactions.max(1));
        opts.enable_statistics();
        if cfg.prefix_size > 0 {
            // Full filters then hold prefixes beside whole keys (whole_key_filtering
            // stays true, RocksDB's default and Strata's).
            opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(cfg.prefix_size));
        }

        let mut mapping = format!(
            "rocksdb 7.8.3: block_cache={} row_cache={} filter_policy={} write_buffer_size={} \
             max_write_buffer_number={} target_file_size_base={} compression={:?} use_direct_reads={} \
             block_size={} block_restart_interval={} level0_triggers={}/{}/{} max_bytes_for_level_base={} \
             level_multiplier={} level_compaction_dynamic_level_bytes=false num_levels={} max_open_files={} max_background_jobs=2 \
             max_subcompactions={} cache_index_and_filter_blocks=false sync={} statistics=on \
             multireadrandom=batched_multi_get_cf prefix_extractor={} total_order_seek={}{}{}{}{}",
            if cfg.cache_size > 0 {
                format!("LRU({})", cfg.cache_size)
            } else {
                "none (no_block_cache=true)".into()
            },
            if cfg.row_cache_size > 0 { format!("LRU({})", cfg.row_cache_size) } else { "off".into() },
            if cfg.bloom_bits > 0.0 {
                format!("bloom_full(bits_per_key={})", cfg.bloom_bits)
            } else {
                "none".into()
            },
            cfg.write_buffer_size,
            sd::MAX_WRITE_BUFFER_NUMBER,
            cfg.max_file_size,
            compression(codec),
            cfg.use_direct_reads,
            sd::BLOCK_SIZE,
            sd::BLOCK_RESTART_INTERVAL,
            sd::L0_COMPACTION_TRIGGER,
            sd::L0_SLOWDOWN_TRIGGER,
            sd::L0_STOP_TRIGGER,
            cfg.max_bytes_for_level_base,
            cfg.level_multiplier,
            sd::NUM_LEVELS,
            sd::MAX_OPEN_FILES,
            cfg.subcompactions.max(1),
            cfg.sync,
            if cfg.prefix_size > 0 {
                format!("NewFixedPrefixTransform({}) (prefix scans: prefix_same_as_start)", cfg.prefix_size)
            } else {
                "none".into()
            },
            cfg.total_order_seek,
            if cfg.pin_slice { " pin_slice=true (get_pinned; multi-get values read in place)" } else { "" },
            if cfg.compaction_warmup {
                " compaction_warmup=UNSUPPORTED (prepopulate_block_cache loads flushed blocks only)"
            } else {
                ""
            },
            if cfg.seek_compaction { " seek_compaction=UNSUPPORTED (removed in RocksDB 3.2)" } else { "" },
            if cfg.max_mem_compaction_level > 0 {
                " max_mem_compaction_level=UNSUPPORTED (deprecated, unused: flushes go to L0)"
            } else {
                ""
            },
        );
        mapping.push_str(&cfg.peer_unsupported_notes());
        // Opened with the default column family named (and its options the
        // same), so its handle is there for batched_multi_get_cf.
        let cf = ColumnFamilyDescriptor::new(DEFAULT_COLUMN_FAMILY_NAME, opts.clone());
        let db = DB::open_cf_descriptors(&opts, &cfg.path, [cf])
            .map_err(|e| format!("rocksdb open {}: {e}", cfg.path.display()))?;
        let mut wo = WriteOptions::default();
        wo.set_sync(cfg.sync);
        Ok(RocksDbEngine {
            db,
            opts,
            wo,
            user_bytes: AtomicU64::new(0),
            mapping,
            path: cfg.path.clone(),
            prefix_size: cfg.prefix_size,
            total_order_seek: cfg.total_order_seek,
        })
    }
}

impl Engine for RocksDbEngine {
    fn name(&self) -> String {
        "rocksdb".to_string()
    }
    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
        self.user_bytes.fetch_add((key.len() + value.len()) as u64, Relaxed);
        self.db.put_opt(key, value, &self.wo).map_err(|e| e.to_string())
    }
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
        self.db.get(key).map_err(|e| e.to_string())
    }
    fn get_pinned(&self, key: &[u8]) -> BenchResult<Option<usize>> {
        Ok(self.db.get_pinned(key).map_err(|e| e.to_string())?.map(|v| v.len()))
    }
    fn multi_get(&self, keys: &[Vec<u8>], pinned: bool) -> BenchResult<(u64, u64)> {
        let cf = self
            .db
            .cf_handle(DEFAULT_COLUMN_FAMILY_NAME)
            .ok_or("rocksdb: no default column family handle")?;
        // RocksDB's batched MultiGet (db_bench --multiread_batched): values
        // come back pinned; without --pin_slice each found one is copied out,
        // as Strata's multi_get returns copies.
        let mut lens = Vec::with_capacity(keys.len());
        for r in self.db.batched_multi_get_cf(cf, keys, false) {
            let v = r.map_err(|e| e.to_string())?;
            lens.push(v.map(|v| if pinned { v.len() } else { std::hint::black_box(v.to_vec()).len() }));
        }
        Ok(crate::engine::tally_found(keys, &lens))
    }
    fn has_multi_get(&self) -> bool {
        true
    }
    fn delete(&self, key: &[u8]) -> BenchResult<()> {
        self.user_bytes.fetch_add(key.len() as u64, Relaxed);
        self.db.delete_opt(key, &self.wo).map_err(|e| e.to_string())
    }
    fn compact_all(&self) -> BenchResult<bool> {
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(true)
    }
    fn has_delete_range(&self) -> bool {
        true
    }
    fn delete_range(&self, start: &[u8], end: &[u8]) -> BenchResult<()> {
        let cf = self
            .db
            .cf_handle(DEFAULT_COLUMN_FAMILY_NAME)
            .ok_or("rocksdb: no default column family handle")?;
        self.user_bytes.fetch_add((start.len() + end.len()) as u64, Relaxed);
        self.db.delete_range_cf_opt(cf, start, end, &self.wo).map_err(|e| e.to_string())
    }
    fn scan_keep_last(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        n: usize,
        mut last: Option<&mut Vec<u8>>,
    ) -> BenchResult<(usize, usize)> {
        let mut it = match end {
            Some(end) => {
                let mut ro = rocksdb::ReadOptions::default();
                ro.set_iterate_upper_bound(end.to_vec());
                self.db.raw_iterator_opt(ro)
            }
            None => self.db.raw_iterator(),
        };
        it.seek(start);
        let (mut count, mut bytes) = (0, 0);
        while count < n {
            match (it.key(), it.value()) {
                (Some(k), Some(v)) => {
                    bytes += k.len() + v.len();
                    if count + 1 == n {
                        if let Some(l) = last.take() {
                            l.clear();
                            l.extend_from_slice(k);
                        }
                    }
                }
                _ => break,
            }
            count += 1;
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((count, bytes))
    }
    fn scan_prefix(&self, prefix: &[u8]) -> BenchResult<(usize, usize)> {
        // db_bench's prefix seek: prefix_same_as_start when the prefix is in
        // the extractor's domain, and the prefix's successor as the upper
        // bound either way (so without an extractor it is a range scan).
        let mut ro = rocksdb::ReadOptions::default();
        if let Some(end) = crate::engine::prefix_successor(prefix) {
            ro.set_iterate_upper_bound(end);
        }
        if self.prefix_size > 0 && prefix.len() >= self.prefix_size {
            ro.set_prefix_same_as_start(true);
        }
        ro.set_total_order_seek(self.total_order_seek);
        let mut it = self.db.raw_iterator_opt(ro);
        it.seek(prefix);
        let (mut count, mut bytes) = (0, 0);
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(prefix) {
                break;
            }
            count += 1;
            bytes += k.len() + v.len();
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((count, bytes))
    }
    fn flush(&self) -> BenchResult<()> {
        self.db.flush().map_err(|e| e.to_string())
    }
    fn stats(&self) -> EngineStats {
        let Some(text) = self.opts.get_statistics() else { return EngineStats::default() };
        let t = |name| parse_ticker(&text, name);
        let user = self.user_bytes.load(Relaxed);
        // Data-block tickers only: Strata's cache holds data blocks, and with
        // cache_index_and_filter_blocks=false neither does RocksDB's.
        let write_amplification = match (t("rocksdb.flush.write.bytes"), t("rocksdb.compact.write.bytes")) {
            (Some(f), Some(c)) if user > 0 => Some((f + c) as f64 / user as f64),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        EngineStats {
            cache_hits: t("rocksdb.block.cache.data.hit"),
            cache_misses: t("rocksdb.block.cache.data.miss"),
            write_amplification,
            stall_micros: t("rocksdb.stall.micros"),
            levels_in_use: (0..sd::NUM_LEVELS as usize)
                .filter(|l| {
                    let name = format!("rocksdb.num-files-at-level{l}");
                    self.db.property_int_value(&name).ok().flatten().unwrap_or(0) > 0
                })
                .max()
                .or(Some(0)),
            buffer_bytes: None,
            gets: None,
            get_table_probes: None,
            iter_seeks: None,
            iter_tables_opened: None,
            compaction_bytes_read: None,
            compaction_stages: None,
            // The simulated drive sits under Strata only.
            drive: None,
        }
    }
    fn wait_for_compactions(&self) -> BenchResult<()> {
        self.flush()?;
        // rust-rocksdb 0.20 has no WaitForCompact: poll until nothing is
        // pending or running three times in a row.
        let busy = |name: &str| self.db.property_int_value(name).ok().flatten().unwrap_or(0) > 0;
        let mut idle = 0;
        while idle < 3 {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let b = busy("rocksdb.compaction-pending")
                || busy("rocksdb.num-running-compactions")
                || busy("rocksdb.num-running-flushes");
            idle = if b { 0 } else { idle + 1 };
        }
        Ok(())
    }
    fn stats_text(&self) -> String {
        self.db.property_value("rocksdb.stats").ok().flatten().unwrap_or_default()
    }
    fn option_mapping(&self) -> String {
        self.mapping.clone()
    }
    fn path(&self) -> &Path {
        &self.path
    }
}
