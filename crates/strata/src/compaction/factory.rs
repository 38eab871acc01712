//! Builds the [`CompactionPolicy`] a tree's options name.

use std::sync::Arc;

use crate::compaction::blsm::BlsmPolicy;
use crate::compaction::garnering::GarneringPolicy;
use crate::compaction::leveled::{LeveledConfig, LeveledPolicy};
use crate::compaction::lsbm::{BufferVariant, LsbmPolicy};
use crate::compaction::lwc::{LwcConfig, LwcPolicy};
use crate::compaction::policy::CompactionPolicy;
use crate::compaction::style::CompactionStyle;
use crate::compaction::tiered::TieredPolicy;
use crate::error::Result;
use crate::options::Options;

/// LSbM writes files of a quarter of `target_file_size_base` and drains them
/// four at a time (super-files, LSbM paper §4.3): compaction works in big
/// units, the trim on small files. dLSM has no trim and writes whole files,
/// as its paper does, so a get walks as few tables as leveling's.
const SUPER_FILE_PARTS: u64 = 4;

/// The policy `opts` name, built with their level shape.
pub(crate) fn make_policy(opts: &Options) -> Result<Arc<dyn CompactionPolicy>> {
    let shape = LeveledConfig {
        num_levels: opts.num_levels,
        l0_trigger: opts.level0_file_num_compaction_trigger,
        max_bytes_for_level_base: opts.max_bytes_for_level_base,
        multiplier: opts.max_bytes_for_level_multiplier,
        target_file_size: opts.target_file_size_base,
    };
    Ok(match &opts.compaction_style {
        CompactionStyle::Leveled => Arc::new(LeveledPolicy::new(shape)?),
        CompactionStyle::Blsm => Arc::new(BlsmPolicy::new(shape)?),
        CompactionStyle::Tiered => Arc::new(TieredPolicy::new(shape)?),
        CompactionStyle::Garnering { c } => Arc::new(GarneringPolicy::new(shape, *c)?),
        CompactionStyle::Lwc { max_segments } => {
            Arc::new(LwcPolicy::new(LwcConfig { max_segments: *max_segments, ..LwcConfig::new(shape) })?)
        }
        CompactionStyle::Lsbm | CompactionStyle::Dlsm => {
            let variant = if matches!(opts.compaction_style, CompactionStyle::Lsbm) {
                BufferVariant::Lsbm
            } else {
                BufferVariant::Dlsm
            };
            let parts = if variant == BufferVariant::Lsbm { SUPER_FILE_PARTS } else { 1 };
            let blsm = BlsmPolicy::new(shape)?.with_super_files(parts);
            let policy = LsbmPolicy::new(blsm, variant, opts.buffer_trim_threshold);
            Arc::new(policy.with_last_level_buffer(opts.buffer_last_level))
        }
        CompactionStyle::Custom(p) => p.clone(),
    })
}
