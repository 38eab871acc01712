//! What a paper's report is made of: experiments (a benchmark plan and the
//! claims read from its results), each claim set beside the paper's number.

use crate::results::{RunResult, StageSecs};

/// How big the runs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Tiny data sets that only exercise the generator (tests).
    Unit,
    /// Minutes per paper: every experiment at a reduced size.
    Quick,
    /// Toward the papers' sizes, within this machine's time.
    Full,
}

impl Scale {
    /// `unit`, `quick` or `full` of the three sizes.
    pub fn pick<T>(self, unit: T, quick: T, full: T) -> T {
        match self {
            Scale::Unit => unit,
            Scale::Quick => quick,
            Scale::Full => full,
        }
    }

    /// The flag that selects this scale, for the report's header.
    pub fn flag(self) -> &'static str {
        match self {
            Scale::Unit => " (unit scale)",
            Scale::Quick => " --quick",
            Scale::Full => "",
        }
    }
}

/// One paper's report.
pub struct Paper {
    /// Command-line name and file stem (`autumn`).
    pub name: &'static str,
    /// Title and what it covers, for the report's heading.
    pub title: &'static str,
    /// Where the paper measured (hardware, sizes), for the conditions line.
    pub paper_setup: &'static str,
    /// Experiments run here, in the paper's order.
    pub experiments: Vec<Experiment>,
    /// Figures and tables not run, each with why.
    pub not_run: Vec<(&'static str, &'static str)>,
}

/// One experiment: a plan and the claims read from its results.
pub struct Experiment {
    /// File stem of its chart and data (`fig2`).
    pub id: &'static str,
    /// Heading (`Figure 2: db_bench micro benchmark`).
    pub title: &'static str,
    /// How the run differs from the paper's (scale, device, cache).
    pub conditions: String,
    /// `strata-bench` flags of the run (`--benchmarks`, shape, rows), shown
    /// in the report as the command that reruns it alone.
    pub flags: String,
    /// Steps after `flags`' benchmarks, on the same databases, each with
    /// its own extra flags (a read distribution, a device profile).
    pub steps: Vec<StepSpec>,
    /// The claims, each one row of the report.
    pub claims: Vec<Claim>,
    /// The bars drawn like the paper's figure.
    pub chart: Chart,
}

/// A step of an experiment with flags of its own.
pub struct StepSpec {
    /// Its name in the results (a claim's benchmark).
    pub label: &'static str,
    /// Flags added to the experiment's for this step (`--benchmarks=` names
    /// the one benchmark it runs).
    pub flags: String,
}

/// A grouped bar chart: one group per benchmark, one bar per engine row.
pub struct Chart {
    /// Benchmarks on the x axis, in order.
    pub benchmarks: Vec<&'static str>,
    /// What the bars show.
    pub metric: Metric,
    /// Divide each bar by this row's value for the same benchmark (a
    /// speedup, as the PCP paper plots its Fig. 10(c) and (f)); `None`
    /// draws the metric itself.
    pub over: Option<&'static str>,
}

/// A number read from one result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// Mean latency per operation, µs (the Autumn paper's y axis).
    MeanLatency,
    /// Operations per second.
    Throughput,
    /// A step's own speed: for a full compaction (`compact`), the MB its
    /// compactions read per second (the PCP paper's compaction bandwidth,
    /// over the bytes each row's tree needed rewritten); for any other
    /// benchmark, operations per second.
    Speed,
    /// p99 latency of one YCSB operation type (`READ`, `SCAN`), µs.
    OpP99(&'static str),
    /// Block-cache hit ratio over the measured phase.
    HitRatio,
    /// Database size on disk at the end, bytes.
    DbBytes,
    /// Tables a point read searched, per get (the dLSM paper's disk
    /// accesses per read from disk).
    TablesPerGet,
    /// Tables an iterator seek opened, per seek (the dLSM paper's files
    /// scanned per range query).
    TablesPerSeek,
    /// One set of compaction stages' time over another's, within one
    /// result (the PCP paper's execution-time breakdown, Figs. 8–9); a claim
    /// on it has no baseline (see [`itself`]).
    StageRatio(Stages, Stages),
    /// Mean block-cache hit ratio of the samples after this many seconds
    /// (the dynamic workload's phase after the writes stop).
    HitRatioAfter(f64),
    /// Mean reads/s of the samples after this many seconds.
    ThroughputAfter(f64),
    /// SIMULATED drive (`--drive_model`): user MB written since open per
    /// second the drive was busy (a load's speed when the drive bounds it).
    DriveLoadMbPerSec,
    /// SIMULATED drive: seconds it was busy since open.
    DriveBusySecs,
    /// SIMULATED drive: milliseconds it was busy per operation of this benchmark.
    DriveMsPerOp,
    /// SIMULATED drive: operations of this benchmark per second it was busy.
    DriveOpsPerSec,
    /// The engine's write amplification since open (flushes and compactions).
    WriteAmp,
    /// SIMULATED drive: auxiliary write amplification since open.
    Awa,
    /// SIMULATED drive: multiplicative write amplification since open, the
    /// engine's write amplification (flushes and compactions, as the LWC
    /// slides count it) times the drive's auxiliary one.
    Mwa,
}

impl Metric {
    /// Its value in `r`, if `r` reports it.
    pub fn of(self, r: &RunResult) -> Option<f64> {
        match self {
            Metric::MeanLatency => (r.mean_us > 0.0).then_some(r.mean_us),
            Metric::Throughput => (r.ops_per_sec > 0.0).then_some(r.ops_per_sec),
            Metric::Speed if r.benchmark == "compact" => r.compaction_mb_per_sec,
            Metric::Speed => Metric::Throughput.of(r),
            Metric::OpP99(op) => r.op_latencies.iter().find(|o| o.op == op).map(|o| o.p99_us),
            Metric::HitRatio => r.hit_ratio,
            Metric::DbBytes => (r.db_bytes > 0).then_some(r.db_bytes as f64),
            Metric::TablesPerGet => r.tables_per_get,
            Metric::TablesPerSeek => r.tables_per_seek,
            Metric::StageRatio(of, over) => {
                let s = r.stages?;
                (over.secs(&s) > 0.0).then(|| of.secs(&s) / over.secs(&s))
            }
            Metric::HitRatioAfter(t) => {
                mean(r.samples.iter().filter(|s| s.t_secs > t).filter_map(|s| s.hit_ratio))
            }
            Metric::ThroughputAfter(t) => {
                mean(r.samples.iter().filter(|s| s.t_secs > t).map(|s| s.read_ops_per_sec))
            }
            Metric::DriveLoadMbPerSec => r.drive.as_ref().map(|d| d.user_mb_per_sec()).filter(|v| *v > 0.0),
            Metric::DriveBusySecs => r.drive.as_ref().map(|d| d.stats.busy_secs),
            Metric::DriveMsPerOp => {
                let d = r.drive.as_ref()?;
                (r.ops > 0).then(|| d.this_benchmark.busy_secs * 1e3 / r.ops as f64)
            }
            Metric::DriveOpsPerSec => {
                r.drive.as_ref().map(|d| d.ops_per_busy_sec(r.ops)).filter(|v| *v > 0.0)
            }
            Metric::WriteAmp => r.write_amplification,
            Metric::Awa => r.drive.as_ref().map(|d| d.stats.awa()),
            Metric::Mwa => r.drive.as_ref().zip(r.write_amplification).map(|(d, wa)| d.stats.awa() * wa),
        }
    }

    /// Axis and column label.
    pub fn label(self) -> String {
        match self {
            Metric::MeanLatency => "mean latency (µs/op)".into(),
            Metric::Throughput => "throughput (ops/s)".into(),
            Metric::Speed => "ops/s; `compact`: MB compacted/s".into(),
            Metric::OpP99(op) => format!("{op} p99 latency (µs)"),
            Metric::HitRatio => "block-cache hit ratio".into(),
            Metric::DbBytes => "database size (bytes)".into(),
            Metric::TablesPerGet => "tables searched per get".into(),
            Metric::TablesPerSeek => "tables scanned per range query".into(),
            Metric::StageRatio(of, over) => {
                format!("{} ÷ {} time of its compactions", of.name(), over.name())
            }
            Metric::HitRatioAfter(t) => format!("mean hit ratio after {t} s"),
            Metric::ThroughputAfter(t) => format!("mean reads/s after {t} s"),
            Metric::DriveLoadMbPerSec => "user MB/s on the simulated drive".into(),
            Metric::DriveBusySecs => "simulated drive busy seconds".into(),
            Metric::DriveMsPerOp => "simulated drive ms per operation".into(),
            Metric::DriveOpsPerSec => "operations per simulated drive second".into(),
            Metric::WriteAmp => "write amplification (flushes and compactions)".into(),
            Metric::Awa => "auxiliary write amplification (simulated drive)".into(),
            Metric::Mwa => "multiplicative write amplification (simulated drive)".into(),
        }
    }

    /// True when a smaller value is better.
    pub fn lower_is_better(self) -> bool {
        !matches!(
            self,
            Metric::Throughput
                | Metric::Speed
                | Metric::HitRatio
                | Metric::HitRatioAfter(_)
                | Metric::ThroughputAfter(_)
                | Metric::DriveLoadMbPerSec
                | Metric::DriveOpsPerSec
        )
    }
}

/// What the paper says, as a ratio of the technique's row to its baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PaperValue {
    /// A number the paper reports (or that its reported numbers give).
    Ratio(f64),
    /// Only a direction: the ratio is below 1.
    Below1,
    /// Only a direction: the ratio is above 1.
    Above1,
}

/// Sets of compaction stages, by the PCP paper's steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stages {
    /// Reading the inputs (S1).
    Read,
    /// Writing the outputs (S7).
    Write,
    /// Reading and writing (S1 and S7).
    Io,
    /// The computation between: verifying, decompressing, merging,
    /// compressing and checksumming (S2–S6).
    Cpu,
}

impl Stages {
    fn secs(self, s: &StageSecs) -> f64 {
        match self {
            Stages::Read => s.read,
            Stages::Write => s.write,
            Stages::Io => s.read + s.write,
            Stages::Cpu => s.merge + s.compute,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Stages::Read => "read",
            Stages::Write => "write",
            Stages::Io => "read and write",
            Stages::Cpu => "computation",
        }
    }
}

/// One side of a claim's ratio: a benchmark (or step label) on an engine row.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// Benchmark or step label (`readrandom`, `ycsb-c`, `rangehot`).
    pub benchmark: String,
    /// Engine row (`strata/garnering@0.8`, `rocksdb`).
    pub row: String,
}

/// `benchmark` on `row`.
pub fn side(benchmark: &str, row: &str) -> Side {
    Side { benchmark: benchmark.to_string(), row: row.to_string() }
}

/// The baseline side of a claim whose metric is already a ratio within the
/// technique's result ([`Metric::StageRatio`]): it divides by 1.
pub fn itself() -> Side {
    side("", "")
}

/// One claim of the paper, checked against one ratio measured here.
pub struct Claim {
    /// Which figure or table (`Fig. 2(b)`).
    pub figure: &'static str,
    /// The claim in the paper's words and numbers.
    pub text: String,
    /// The paper's ratio.
    pub paper: PaperValue,
    /// The technique's side of the ratio.
    pub of: Side,
    /// The baseline's side (usually the same benchmark on the baseline row).
    pub over: Side,
    /// What is compared.
    pub metric: Metric,
}

impl Claim {
    /// `of / over` of the metric, medians over repetitions; `None` when
    /// either side did not report it.
    pub fn measured(&self, results: &[RunResult]) -> Option<f64> {
        let of = median(results, &self.of.benchmark, &self.of.row, self.metric)?;
        if self.over == itself() {
            return Some(of);
        }
        let over = median(results, &self.over.benchmark, &self.over.row, self.metric)?;
        (over > 0.0).then(|| of / over)
    }
}

/// The mean of `xs`, `None` when empty.
fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = xs.fold((0u32, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| sum / f64::from(n))
}

/// Median of `metric` over the repetitions of `benchmark` on `engine`.
pub fn median(results: &[RunResult], benchmark: &str, engine: &str, metric: Metric) -> Option<f64> {
    let mut v: Vec<f64> = results
        .iter()
        .filter(|r| r.benchmark == benchmark && r.engine == engine)
        .filter_map(|r| metric.of(r))
        .collect();
    v.sort_by(f64::total_cmp);
    v.get((v.len().max(1) - 1) / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stage ratio is read within one result, and a claim on it divides
    /// by no baseline; a result without stage times reports none.
    #[test]
    fn stage_ratios_are_read_within_one_result() {
        let stages = StageSecs { bytes: 1, read: 1.0, merge: 2.0, compute: 4.0, write: 3.0 };
        let r = RunResult {
            engine: "strata/leveled+scp".into(),
            benchmark: "compact".into(),
            stages: Some(stages),
            ..Default::default()
        };
        assert_eq!(Metric::StageRatio(Stages::Cpu, Stages::Io).of(&r), Some(1.5));
        assert_eq!(Metric::StageRatio(Stages::Write, Stages::Read).of(&r), Some(3.0));
        let claim = Claim {
            figure: "Fig. 8",
            text: String::new(),
            paper: PaperValue::Ratio(1.5),
            of: side("compact", "strata/leveled+scp"),
            over: itself(),
            metric: Metric::StageRatio(Stages::Read, Stages::Write),
        };
        let other = RunResult { engine: "strata/leveled+pcp".into(), ..r.clone() };
        assert_eq!(claim.measured(&[other, r.clone()]), Some(1.0 / 3.0));
        let untimed = RunResult { stages: None, ..r };
        assert_eq!(claim.measured(&[untimed]), None);
    }
}
