//! What a benchmark run produces: one row per (engine, benchmark, repetition),
//! each with an optional per-interval time series.

/// One sampling interval of a time-series benchmark (`--stats_interval_seconds`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    /// Seconds since the measured phase started (end of the interval).
    pub t_secs: f64,
    /// Reads completed per second in this interval.
    pub read_ops_per_sec: f64,
    /// Writes completed per second in this interval.
    pub write_ops_per_sec: f64,
    /// Block-cache hit ratio in this interval, from the engine's counters.
    pub hit_ratio: Option<f64>,
    /// Median read latency in this interval, microseconds.
    pub read_p50_us: f64,
    /// 99th percentile read latency in this interval, microseconds.
    pub read_p99_us: f64,
    /// Database size on disk at the end of the interval, bytes.
    pub db_bytes: u64,
}

/// Latency summary of one YCSB operation type over a phase.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OpSummary {
    /// YCSB's name: `READ`, `UPDATE`, `INSERT`, `SCAN`, `READ-MODIFY-WRITE`;
    /// `BATCH` for multireadrandom's batches.
    pub op: String,
    /// Operations of this type.
    pub count: u64,
    /// READ and READ-MODIFY-WRITE: reads that found their key; SCAN: entries
    /// returned in total; BATCH: keys found in all batches; 0 for the others.
    pub found: u64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
    /// 99.9th percentile latency, microseconds.
    pub p999_us: f64,
}

/// The outcome of one benchmark on one engine.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    /// Engine name, e.g. `strata/leveled`.
    pub engine: String,
    /// Benchmark name, e.g. `readrandom`, `ycsb-a`.
    pub benchmark: String,
    /// Repetition index (0-based) when runs are interleaved.
    pub repetition: usize,
    /// Operations completed.
    pub ops: u64,
    /// Wall time in seconds.
    pub secs: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
    /// 99.9th percentile latency, microseconds.
    pub p999_us: f64,
    /// Mean latency, microseconds.
    #[serde(default)]
    pub mean_us: f64,
    /// Time writers were stalled since open, microseconds, if the engine reports it.
    #[serde(default)]
    pub stall_micros: Option<u64>,
    /// Deepest level holding data at the end, if the engine reports it.
    #[serde(default)]
    pub levels_in_use: Option<usize>,
    /// Write amplification at the end, if the engine reports it.
    pub write_amplification: Option<f64>,
    /// Block-cache hit ratio over the run, if the engine reports it.
    pub hit_ratio: Option<f64>,
    /// Size on disk at the end, bytes.
    pub db_bytes: u64,
    /// Bytes the compaction buffers add to the tree at the end, if the
    /// engine has buffers (see `EngineStats::buffer_bytes`).
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    /// Tables a point read searched, per get, over the benchmark, if the
    /// engine counts them (see `EngineStats::get_table_probes`).
    #[serde(default)]
    pub tables_per_get: Option<f64>,
    /// Tables an iterator seek opened to read (a range query's files
    /// scanned), over the benchmark, if the engine counts them (see
    /// `EngineStats::iter_tables_opened`).
    #[serde(default)]
    pub tables_per_seek: Option<f64>,
    /// Bytes compactions read during the benchmark per second of its wall
    /// time, MB/s, if the engine counts them and any compaction ran (a
    /// `compact` step's compaction bandwidth, whatever share of the tree the
    /// full compaction had to rewrite).
    #[serde(default)]
    pub compaction_mb_per_sec: Option<f64>,
    /// Where the benchmark's compactions spent their time, by stage, if
    /// the engine times them under one fixed pipeline (see `StageSecs`).
    #[serde(default)]
    pub stages: Option<StageSecs>,
    /// Reads that found their key (sanity check against the data set).
    pub found: u64,
    /// Time series, for benchmarks that sample.
    pub samples: Vec<Sample>,
    /// YCSB phases: latencies per operation type (those that ran);
    /// multireadrandom: its batches (`BATCH`).
    #[serde(default)]
    pub op_latencies: Vec<OpSummary>,
    /// The slow-device profile in force (`--device_profile`: limits, device, cgroup version);
    /// empty when none.
    #[serde(default)]
    pub device_profile: String,
    /// The simulated drive's counters since open, at the end (`--drive_model`).
    #[serde(default)]
    pub drive: Option<DriveResult>,
}

/// Seconds the compactions of one benchmark spent per stage (Strata's
/// `strata::compaction::stage_model::StageProfile` between two snapshots;
/// the PCP paper's steps S1, S2–S4, S5–S6 and S7).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StageSecs {
    /// Bytes the compactions read.
    pub bytes: u64,
    /// Reading the inputs (S1).
    pub read: f64,
    /// Verifying, decompressing and merging them (S2–S4).
    pub merge: f64,
    /// Compressing and checksumming the output blocks (S5–S6).
    pub compute: f64,
    /// Writing them, with each table's meta blocks and sync (S7).
    pub write: f64,
}

/// What the simulated drive (`--drive_model`) did under one engine, since open.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DriveResult {
    /// The model, e.g. `smr (band 40 MiB, cache 200 MiB, fs placement)`.
    pub model: String,
    /// Its counters since the database was opened.
    pub stats: crate::smr::DriveStats,
    /// Bytes the writes since open carried (keys and values).
    pub user_bytes: u64,
    /// Its counters over this benchmark alone.
    #[serde(default)]
    pub this_benchmark: crate::smr::DriveStats,
}

impl DriveResult {
    /// `after` (stats since open, at the end of a benchmark) with the
    /// benchmark's own counters: the difference from `before`.
    pub fn over(after: &DriveResult, before: Option<&DriveResult>) -> DriveResult {
        let this_benchmark = match before {
            Some(b) => after.stats.since(&b.stats),
            None => after.stats,
        };
        DriveResult { this_benchmark, ..after.clone() }
    }

    /// Operations per second of drive time in this benchmark (its speed if
    /// the drive is the bottleneck); 0 when the drive did nothing.
    pub fn ops_per_busy_sec(&self, ops: u64) -> f64 {
        if self.this_benchmark.busy_secs <= 0.0 {
            return 0.0;
        }
        ops as f64 / self.this_benchmark.busy_secs
    }

    /// User MB/s the drive sustains: user bytes over the seconds the drive
    /// was busy (the load's speed if the drive is the bottleneck).
    pub fn user_mb_per_sec(&self) -> f64 {
        if self.stats.busy_secs <= 0.0 {
            return 0.0;
        }
        self.user_bytes as f64 / 1e6 / self.stats.busy_secs
    }
}
