//! Per-cycle randomized options. Parent and child derive the same ones from
//! (seed, cycle, epoch policy, epoch levels), so nothing needs to be passed
//! beyond those numbers.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use strata::{CompactionPipeline, CompactionStyle, CompressionType, Options, WalRecoveryMode};

/// What one cycle runs with.
#[derive(Debug, Clone)]
pub struct CycleConfig {
    /// Database options (policy and level count fixed per epoch).
    pub options: Options,
    /// Probability that a write is synced.
    pub sync_ratio: f64,
    /// Probability that a value is large (forces memtable switches).
    pub big_value_ratio: f64,
    /// Short human-readable summary for logs.
    pub summary: String,
    /// Data paths `data-i` next to the database, in this cycle's order (none:
    /// tables in the database directory).
    pub data_paths: Vec<usize>,
}

impl CycleConfig {
    /// The options with the data paths under `work` (the directory holding `db`).
    pub fn options_at(&self, work: &std::path::Path) -> Options {
        self.options.clone().with_db_paths(self.data_paths.iter().map(|i| work.join(format!("data-{i}"))))
    }
}

/// Most data paths an epoch uses (`data-0` .. `data-2`).
pub const MAX_DATA_PATHS: usize = 3;

/// A seed for one purpose of one cycle, independent of the others.
pub fn sub_seed(seed: u64, cycle: u64, purpose: u64) -> u64 {
    // SplitMix64 finalizer over the three inputs.
    let mut z =
        seed ^ cycle.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ purpose.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The options of `cycle`.
pub fn derive(seed: u64, cycle: u64, policy: &str, num_levels: usize) -> strata::Result<CycleConfig> {
    let mut rng = StdRng::seed_from_u64(sub_seed(seed, cycle, 1));
    let write_buffer = 4096usize << rng.gen_range(0..5);
    let l0 = rng.gen_range(1..=4usize);
    let slowdown = l0 + rng.gen_range(2..12);
    let compression = match rng.gen_range(0..3) {
        0 => CompressionType::None,
        1 => CompressionType::Lz4,
        _ => CompressionType::Zstd(rng.gen_range(1..4)),
    };
    let wal_mode = if rng.gen_bool(0.8) {
        WalRecoveryMode::TolerateCorruptedTailRecords
    } else {
        WalRecoveryMode::PointInTimeRecovery
    };
    let cache = if rng.gen_bool(0.2) { 0 } else { 1 << 20 };
    let row_cache = if rng.gen_bool(0.3) { 64 << 10 } else { 0 };
    let warmup = cache > 0 && rng.gen_bool(0.3);
    let pipeline = match rng.gen_range(0..4) {
        0 => CompactionPipeline::Sequential,
        1 => CompactionPipeline::Pipelined,
        2 => CompactionPipeline::Parallel { compute_threads: rng.gen_range(2..=3) },
        _ => CompactionPipeline::Auto { max_compute_threads: 2 },
    };
    let merges = rng.gen_range(1..=3usize);
    let subtask_bytes = [1usize << 10, 16 << 10, 512 << 10][rng.gen_range(0..3)];
    // The number of data paths is fixed per epoch (policy and level count are
    // too); their order changes every cycle, which open must survive.
    let epoch = policy.bytes().fold(num_levels as u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)));
    let n_paths = [0usize, 2, MAX_DATA_PATHS][(sub_seed(seed, epoch, 11) % 3) as usize];
    let mut data_paths: Vec<usize> = (0..n_paths).collect();
    data_paths.shuffle(&mut rng);
    let options = Options::default()
        .with_merge_operator(crate::expected::soak_merge_operator())
        .with_compaction_style(CompactionStyle::from_name(policy)?)
        .with_num_levels(num_levels)
        .with_write_buffer_size(write_buffer)
        .with_max_write_buffer_number(rng.gen_range(2..=4))
        .with_level0_file_num_compaction_trigger(l0)
        .with_level0_slowdown_writes_trigger(slowdown)
        .with_level0_stop_writes_trigger(slowdown + rng.gen_range(2..12))
        .with_target_file_size_base(2048 << rng.gen_range(0..5))
        .with_max_bytes_for_level_base(16384 << rng.gen_range(0..5))
        .with_max_bytes_for_level_multiplier(f64::from(rng.gen_range(2..=10)))
        .with_block_size(256 << rng.gen_range(0..5))
        .with_block_restart_interval(rng.gen_range(1..=16))
        .with_bloom_bits_per_key(if rng.gen_bool(0.8) { 10.0 } else { 0.0 })
        .with_compression(compression)
        .with_block_cache_capacity(cache)
        .with_row_cache(row_cache)
        .with_compaction_warmup(warmup)
        .with_paranoid_checks(rng.gen_bool(0.7))
        .with_wal_recovery_mode(wal_mode)
        .with_disable_auto_compactions(rng.gen_bool(0.05))
        .with_compaction_pipeline(pipeline)
        .with_compaction_subtask_bytes(subtask_bytes)
        .with_max_background_compactions(merges);
    options.validate()?;
    let sync_ratio = [0.0, 0.1, 0.5, 1.0][rng.gen_range(0..4)];
    let big_value_ratio = [0.0, 0.01, 0.05][rng.gen_range(0..3)];
    let summary = format!(
        "policy={policy} levels={num_levels} wbuf={write_buffer} l0={l0} comp={compression:?} wal={wal_mode:?} sync={sync_ratio} row_cache={row_cache} warmup={warmup} pipeline={} subtask_bytes={subtask_bytes} merges={} data_paths={data_paths:?}",
        pipeline.name(),
        merges
    );
    Ok(CycleConfig { options, sync_ratio, big_value_ratio, summary, data_paths })
}
