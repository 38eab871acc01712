//! [`Options::validate`]: whether the options make sense together.

use super::kinds::{CompactionPipeline, CompressionType, MAX_LEVELS};
use super::Options;
use crate::error::{Error, Result};

impl Options {
    /// Checks that the options make sense together.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::invalid(m));
        if self.write_buffer_size < 4096 {
            return bad("write_buffer_size must be at least 4 KiB");
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number must be at least 2");
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return bad("level0_file_num_compaction_trigger must be at least 1");
        }
        if self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger
            || self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger
        {
            return bad("need level0 compaction trigger <= slowdown trigger <= stop trigger");
        }
        if !(2..=MAX_LEVELS).contains(&self.num_levels) {
            return bad("num_levels must be between 2 and 20");
        }
        if !(self.max_bytes_for_level_multiplier >= 2.0 && self.max_bytes_for_level_multiplier <= 1000.0) {
            return bad("max_bytes_for_level_multiplier must be between 2 and 1000");
        }
        if self.max_bytes_for_level_base < 4096 || self.target_file_size_base < 1024 {
            return bad("max_bytes_for_level_base must be >= 4 KiB and target_file_size_base >= 1 KiB");
        }
        if !(256..=(16 << 20)).contains(&self.block_size) {
            return bad("block_size must be between 256 B and 16 MiB");
        }
        if !(1..=1024).contains(&self.block_restart_interval) {
            return bad("block_restart_interval must be between 1 and 1024");
        }
        if !(self.bloom_bits_per_key >= 0.0 && self.bloom_bits_per_key <= 64.0) {
            return bad("bloom_bits_per_key must be between 0 and 64");
        }
        if self.prefix_extractor.as_ref().is_some_and(|p| p.name().is_empty() || p.name().len() > 255) {
            return bad("prefix_extractor name must be 1 to 255 bytes");
        }
        if self.max_manifest_file_size < 1024 {
            return bad("max_manifest_file_size must be at least 1 KiB");
        }
        if !(self.buffer_trim_threshold >= 0.0 && self.buffer_trim_threshold <= 1.0) {
            return bad("buffer_trim_threshold must be between 0 and 1");
        }
        if self.buffer_min_part_size == Some(0) {
            return bad("buffer_min_part_size must be above zero");
        }
        if self.buffer_trim_interval.is_zero() {
            return bad("buffer_trim_interval must be above zero");
        }
        if self.compaction_warmup && self.block_cache_capacity == 0 {
            return bad("compaction_warmup needs a block cache (block_cache_capacity > 0)");
        }
        if self.mmap_reads && self.use_direct_reads {
            return bad("mmap_reads and use_direct_reads exclude each other");
        }
        if self.delayed_write_rate == 0 {
            return bad("delayed_write_rate must be above 0");
        }
        if self.max_open_files < 16 {
            return bad("max_open_files must be at least 16");
        }
        if !(1..=256).contains(&self.max_background_jobs) {
            return bad("max_background_jobs must be between 1 and 256");
        }
        if let CompactionPipeline::Parallel { compute_threads: k }
        | CompactionPipeline::Auto { max_compute_threads: k } = self.compaction_pipeline
        {
            if !(1..=64).contains(&k) {
                return bad("compaction_pipeline compute_threads must be between 1 and 64");
            }
        }
        if !(1..=1 << 30).contains(&self.compaction_subtask_bytes) {
            return bad("compaction_subtask_bytes must be between 1 and 1 GiB");
        }
        if self.db_paths.len() > 16 {
            return bad("at most 16 db_paths");
        }
        for (i, p) in self.db_paths.iter().enumerate() {
            if p.as_os_str().is_empty() {
                return bad("a db_path is empty");
            }
            if self.db_paths[..i].contains(p) {
                return Err(Error::invalid(format!("db_path {} is given twice", p.display())));
            }
        }
        if !(1..=16).contains(&self.max_background_compactions) {
            return bad("max_background_compactions must be between 1 and 16");
        }
        if let CompressionType::Zstd(l) = self.compression {
            if !(1..=22).contains(&l) {
                return bad("zstd level must be between 1 and 22");
            }
        }
        Ok(())
    }
}
