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

/// LSbM and dLSM write each output file as at most this many parts
/// (super-files, LSbM paper §4.3): compaction works in big units, the trim
/// and gradual removal on the parts. `Options::with_buffer_min_part_size`
/// bounds a part from below.
const SUPER_FILE_PARTS: u64 = 4;
/// dLSM's smallest part unless the options set one. Measured under `hdd`
/// (docs/BENCHMARKS.md): whole 4 MiB files cost a third of dLSM's hits (each
/// gradual removal sends a quarter of the key space's hot reads to new
/// files), 256 KiB parts slowed its compaction and writes (more files, more
/// metadata reads per byte); 1 MiB parts did best in both shapes measured.
/// LSbM keeps four parts at every size: its trim keeps only well-cached
/// files, and whole 1 MiB files left it leveled's hit ratio under `hdd`.
const DLSM_MIN_PART_BYTES: u64 = 1 << 20;

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
            let min_part = opts.buffer_min_part_size.unwrap_or(match variant {
                BufferVariant::Lsbm => 1,
                BufferVariant::Dlsm => DLSM_MIN_PART_BYTES,
            });
            let parts = super_file_parts(shape.target_file_size, min_part);
            let blsm = BlsmPolicy::new(shape)?.with_super_files(parts);
            let policy = LsbmPolicy::new(blsm, variant, opts.buffer_trim_threshold);
            Arc::new(policy.with_last_level_buffer(opts.buffer_last_level))
        }
        CompactionStyle::Custom(p) => p.clone(),
    })
}

/// How many parts a super-file of `target` bytes is cut into: parts of at
/// least `min_part` bytes, at most [`SUPER_FILE_PARTS`].
fn super_file_parts(target: u64, min_part: u64) -> u64 {
    (target / min_part.max(1)).clamp(1, SUPER_FILE_PARTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_at_least_the_minimum_and_at_most_four() {
        let mib = 1 << 20;
        assert_eq!(super_file_parts(mib, mib), 1, "a 1 MiB target is one file, as under leveled");
        assert_eq!(super_file_parts(64 << 10, mib), 1);
        assert_eq!(super_file_parts(3 * mib, mib), 3);
        assert_eq!(super_file_parts(4 * mib, mib), 4, "the benchmarks' 4 MiB: 1 MiB parts");
        assert_eq!(super_file_parts(64 * mib, mib), 4, "the default 64 MiB: 16 MiB parts");
        assert_eq!(super_file_parts(8 << 10, 2 << 10), 4, "the test harnesses' small parts");
        assert_eq!(super_file_parts(mib, 0), 4, "never divides by zero");
    }
}
