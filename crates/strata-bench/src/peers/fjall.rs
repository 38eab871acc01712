//! fjall 2.x (pure-Rust LSM): one keyspace holding one partition.

use std::path::{Path, PathBuf};

use fjall::compaction::{Leveled, Strategy};
use fjall::{CompressionType, Config, Keyspace, PartitionCreateOptions, PartitionHandle, PersistMode};

use super::Codec;
use crate::engine::{BenchResult, Engine, EngineConfig, EngineStats};
use crate::strata_defaults as sd;

/// A fjall partition driven through the benchmark's [`Engine`] trait.
pub struct FjallEngine {
    keyspace: Keyspace,
    part: PartitionHandle,
    sync: bool,
    mapping: String,
    path: PathBuf,
}

fn err(e: fjall::Error) -> String {
    format!("fjall: {e}")
}

impl FjallEngine {
    /// Opens (creating if needed) a fjall keyspace with the benchmark's settings.
    pub fn open(cfg: &EngineConfig) -> BenchResult<Self> {
        let (compression, note) = match Codec::parse(&cfg.compression)? {
            Codec::None => (CompressionType::None, "none"),
            Codec::Lz4 => (CompressionType::Lz4, "lz4"),
            Codec::Zstd => (CompressionType::Lz4, "lz4 (UNSUPPORTED zstd: fjall 2 has lz4 and miniz only)"),
        };
        let memtable = u32::try_from(cfg.write_buffer_size)
            .map_err(|_| format!("fjall: write_buffer_size {} exceeds 4 GiB", cfg.write_buffer_size))?;
        let target_size = u32::try_from(cfg.max_file_size)
            .map_err(|_| format!("fjall: max_file_size {} exceeds 4 GiB", cfg.max_file_size))?;
        // fjall takes whole bits per key, at most 20.
        let bloom = (cfg.bloom_bits > 0.0).then(|| cfg.bloom_bits.round().min(20.0) as u8);
        let strategy = Leveled {
            l0_threshold: sd::L0_COMPACTION_TRIGGER as u8,
            target_size,
            // fjall takes a whole ratio.
            level_ratio: cfg.level_multiplier.round().clamp(1.0, 255.0) as u8,
        };
        // Room for an active and an immutable memtable, as the others (fjall
        // requires at least 1 MiB).
        let write_buffer = (cfg.write_buffer_size as u64 * sd::MAX_WRITE_BUFFER_NUMBER as u64).max(1 << 20);
        let keyspace = Config::new(&cfg.path)
            .cache_size(cfg.cache_size as u64)
            .max_write_buffer_size(write_buffer)
            // One flush and one compaction thread, like Strata.
            .flush_workers(1)
            .compaction_workers(1)
            .max_open_files(sd::MAX_OPEN_FILES as usize)
            .open()
            .map_err(err)?;
        let popts = PartitionCreateOptions::default()
            .max_memtable_size(memtable)
            .block_size(sd::BLOCK_SIZE as u32)
            .bloom_filter_bits(bloom)
            .compression(compression)
            .compaction_strategy(Strategy::Leveled(strategy));
        let part = keyspace.open_partition("bench", popts).map_err(err)?;
        let mut mapping = format!(
            "fjall 2.11: cache_size={} max_memtable_size={} max_write_buffer_size={} bloom_filter_bits={} \
             compression={} block_size={} leveled(l0_threshold={}, target_size={}, level_ratio={}; \
             level base = memtable x ratio, fixed by fjall) flush_workers=1 compaction_workers=1 \
             max_open_files={} sync={}{}{}{}{}{}",
            cfg.cache_size,
            memtable,
            write_buffer,
            bloom.map_or("off".to_string(), |b| b.to_string()),
            note,
            sd::BLOCK_SIZE,
            sd::L0_COMPACTION_TRIGGER,
            target_size,
            cfg.level_multiplier.round().clamp(1.0, 255.0),
            sd::MAX_OPEN_FILES,
            cfg.sync,
            if cfg.use_direct_reads {
                " use_direct_reads=UNSUPPORTED (reads use the page cache)"
            } else {
                ""
            },
            if cfg.row_cache_size > 0 { " row_cache=UNSUPPORTED (fjall has none)" } else { "" },
            if cfg.compaction_warmup { " compaction_warmup=UNSUPPORTED" } else { "" },
            if cfg.seek_compaction { " seek_compaction=UNSUPPORTED" } else { "" },
            if cfg.max_mem_compaction_level > 0 { " max_mem_compaction_level=UNSUPPORTED" } else { "" },
        );
        mapping.push_str(&cfg.peer_unsupported_notes());
        mapping.push_str(cfg.peer_subcompactions_note());
        mapping.push_str(&cfg.peer_prefix_note());
        if cfg.pin_slice {
            mapping.push_str(" pin_slice=true (get's Slice read in place)");
        }
        Ok(FjallEngine { keyspace, part, sync: cfg.sync, mapping, path: cfg.path.clone() })
    }

    fn after_write(&self) -> BenchResult<()> {
        if self.sync {
            // fdatasync the journal, like RocksDB's sync=true.
            self.keyspace.persist(PersistMode::SyncData).map_err(err)?;
        }
        Ok(())
    }
}

impl Engine for FjallEngine {
    fn name(&self) -> String {
        "fjall".to_string()
    }
    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
        self.part.insert(key, value).map_err(err)?;
        self.after_write()
    }
    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
        Ok(self.part.get(key).map_err(err)?.map(|v| v.to_vec()))
    }
    fn get_pinned(&self, key: &[u8]) -> BenchResult<Option<usize>> {
        // fjall's own value type (a shared slice): read in place, not copied out.
        Ok(self.part.get(key).map_err(err)?.map(|v| v.len()))
    }
    fn delete(&self, key: &[u8]) -> BenchResult<()> {
        self.part.remove(key).map_err(err)?;
        self.after_write()
    }
    fn scan_keep_last(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        n: usize,
        last: Option<&mut Vec<u8>>,
    ) -> BenchResult<(usize, usize)> {
        match end {
            Some(end) => {
                crate::engine::tally_scan(self.part.range(start..end).map(|kv| kv.map_err(err)), n, last)
            }
            None => crate::engine::tally_scan(self.part.range(start..).map(|kv| kv.map_err(err)), n, last),
        }
    }
    fn flush(&self) -> BenchResult<()> {
        self.part.rotate_memtable_and_wait().map_err(err)
    }
    fn stats(&self) -> EngineStats {
        // fjall 2 counts neither cache hits/misses nor bytes compacted.
        EngineStats::default()
    }
    fn stats_text(&self) -> String {
        format!(
            "fjall: segments={} flushes={} compactions={} time_compacting={:?} disk_space={} \
             journal_disk_space={} write_buffer={}",
            self.part.segment_count(),
            self.keyspace.flushes_completed(),
            self.keyspace.compactions_completed(),
            self.keyspace.time_compacting(),
            self.keyspace.disk_space(),
            self.keyspace.journal_disk_space(),
            self.keyspace.write_buffer_size(),
        )
    }
    fn option_mapping(&self) -> String {
        self.mapping.clone()
    }
    fn path(&self) -> &Path {
        &self.path
    }
}
