//! What to run: a plan of benchmark steps over engine rows and repetitions,
//! either from the command line or the default suite, and the loop that runs
//! it (repetitions interleaved A B A B …, each on a fresh database).

use crate::bench::{self, DbState};
use crate::cli::{engine_rows, parse_args, resolve_baseline, Args};
use crate::engine::{BenchResult, EngineConfig};
use crate::registry::open_engine;
use crate::report;
use crate::results::RunResult;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One benchmark in the plan, with the flags it runs under.
#[derive(Debug, Clone)]
pub struct Step {
    /// Benchmark name (one of [`crate::cli::BENCHMARKS`]).
    pub benchmark: String,
    /// Name in the report (differs when a benchmark runs twice with other flags).
    pub label: String,
    /// Flags for this step (engine options are taken from [`Plan::base`]).
    pub args: Args,
}

/// Everything a run does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Engine options, engines, policies, repetitions, baseline, db, out, quiet.
    pub base: Args,
    /// Benchmarks in order, all on the same database per engine row and repetition.
    pub steps: Vec<Step>,
}

/// Seconds of each `*whilewriting` step of the default suite (uniform reads).
pub const SUITE_RWW_SECS: f64 = 15.0;
/// Seconds of the default suite's mixed-workload time series (rangehot reads).
pub const SUITE_MIXED_SECS: f64 = 15.0;
/// Seconds of each row of the main job's compaction-buffer comparison.
pub const COMPARE_SECS: f64 = 10.0;
/// Seconds each such row first runs unmeasured on the bare device, so it
/// starts with a warm cache (the papers measure warm caches).
pub const COMPARE_WARMUP_SECS: f64 = 5.0;
/// Keys in the default suite (16-byte keys, 100-byte values, 8 MiB cache, 64 MiB
/// memtable): db_bench's 1 M fits the budget. Measured on 2 shared cores: about
/// 55 s for Strata alone, 1 min 46 s with the buffer comparison; each peer adds its share.
pub const SUITE_NUM: u64 = 1_000_000;
/// Reads of readrandom and seekrandom in the default suite.
pub const SUITE_READS: u64 = 1_000_000;
/// Writer rate of the default suite's `readwhilewriting` steps, bytes/s.
pub const SUITE_WRITE_RATE: u64 = 2 << 20;

impl Plan {
    /// The plan for explicit flags: `--benchmarks` in order, each with all flags.
    pub fn from_args(args: &Args) -> Plan {
        let steps = args
            .benchmarks
            .iter()
            .map(|b| Step { benchmark: b.clone(), label: b.clone(), args: args.clone() })
            .collect();
        Plan { base: args.clone(), steps }
    }

    /// The default main-job suite (no arguments): fillrandom, readrandom,
    /// seekrandom, readwhilewriting (rate-limited writer, uniform reads) and a
    /// rangehot mixed-workload time series, on every engine compiled in.
    pub fn default_suite() -> BenchResult<Plan> {
        let num = SUITE_NUM.to_string();
        let reads = SUITE_READS.to_string();
        let base = parse_args([
            "strata-bench",
            "--num",
            &num,
            "--reads",
            &reads,
            "--benchmarks=fillrandom,readrandom,seekrandom,readwhilewriting",
        ])
        .map_err(|e| e.to_string())?;
        let mut plan = Plan::from_args(&base);
        for step in &mut plan.steps {
            if step.benchmark == "readwhilewriting" {
                step.args.duration = SUITE_RWW_SECS;
                step.args.benchmark_write_rate_limit = SUITE_WRITE_RATE;
            }
        }
        let mut mixed = base.clone();
        mixed.duration = SUITE_MIXED_SECS;
        mixed.benchmark_write_rate_limit = SUITE_WRITE_RATE;
        mixed.read_dist = "rangehot".into();
        plan.steps.push(Step {
            benchmark: "readwhilewriting".into(),
            label: "readwhilewriting/rangehot".into(),
            args: mixed,
        });
        Ok(plan)
    }

    /// The main job's short compaction-buffer comparison (a small version of
    /// `scripts/lsbm-slow-device.sh`): 100 k 1 KiB records in the dLSM
    /// paper's proportions (L1 1 MiB, ratio 10: the last level holds ~89 %
    /// of the data), a 2 MB/s uniform update stream and 8 rangehot readers
    /// with direct I/O, under the buffer policies and their baselines
    /// (leveling, bLSM, stepped merge) plus the compiled-in peers. With
    /// `device_profile` (e.g. `hdd`), the timed step runs under it after a
    /// warm-up on the bare device; the load never does.
    pub fn buffer_comparison(device_profile: &str) -> BenchResult<Plan> {
        let policies = "leveled,blsm,lsbm,dlsm,tiered";
        let base = parse_args([
            "strata-bench".to_string(),
            "--num=100000".into(),
            "--value_size=1000".into(),
            format!("--cache_size={}", 16 << 20),
            format!("--write_buffer_size={}", 256 << 10),
            format!("--max_file_size={}", 1 << 20),
            format!("--max_bytes_for_level_base={}", 1 << 20),
            "--use_direct_reads".into(),
            format!("--policy={policies}"),
            "--benchmarks=filluniquerandom,waitforcompaction,readwhilewriting".into(),
            "--read_dist=rangehot".into(),
            "--threads=8".into(),
            format!("--duration={COMPARE_SECS}"),
            format!("--benchmark_write_rate_limit={}", 2 << 20),
            "--baseline=strata/leveled".into(),
            // The engine's 30 s default would never trim within a row this short,
            // leaving LSbM the whole load's untrimmed buffer to probe.
            "--buffer_trim_interval=2".into(),
        ])
        .map_err(|e| e.to_string())?;
        let mut plan = Plan::from_args(&base);
        for step in &mut plan.steps {
            if step.benchmark == "readwhilewriting" {
                step.label = "readwhilewriting/buffer".into();
                step.args.device_profile = device_profile.to_string();
                step.args.warmup_seconds = COMPARE_WARMUP_SECS;
            } else {
                // db_bench fills write `--num` keys per thread: load once, all of it.
                step.args.threads = 1;
                step.args.duration = 0.0;
            }
        }
        Ok(plan)
    }

    /// Key and value sizes for the header: db_bench's for db_bench benchmarks,
    /// YCSB's keys and record size for YCSB workloads (which ignore `--key_size`).
    pub fn sizes(&self) -> String {
        let is_ycsb = |s: &Step| s.benchmark.starts_with("ycsb");
        let mut parts = Vec::new();
        if self.steps.iter().any(|s| !is_ycsb(s)) {
            parts.push(format!("key {} B | value {} B", self.base.key_size, self.base.value_size()));
        }
        if self.steps.iter().any(is_ycsb) {
            let cfg = crate::bench::ycsb_config(&self.base);
            parts.push(format!(
                "YCSB keys user<hash> | record {} B ({} x {} B fields)",
                cfg.value_len(),
                cfg.field_count,
                cfg.field_length
            ));
        }
        parts.join(" | ")
    }

    /// (engine kind, policy, report row) for each engine row.
    pub fn rows(&self) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for kind in self.base.engine_kinds() {
            if kind == "strata" {
                for p in &self.base.policy {
                    out.push((kind.clone(), p.clone(), format!("strata/{p}")));
                }
            } else {
                out.push((kind.clone(), self.base.policy.first().cloned().unwrap_or_default(), kind.clone()));
            }
        }
        out
    }

    /// The baseline row the ratio column compares against.
    pub fn baseline(&self) -> Option<String> {
        let rows = engine_rows(&self.base.engine_kinds(), &self.base.policy);
        match &self.base.baseline {
            Some(b) => resolve_baseline(&rows, b),
            None => rows.first().cloned(),
        }
    }

    /// The engine configuration of one row in `dir` (`policy` as the row
    /// names it, with its `+pipeline` if it has one).
    pub(crate) fn engine_config(&self, dir: &Path, policy: &str) -> EngineConfig {
        let a = &self.base;
        let row_pipeline = crate::engine::split_pipeline(policy).1.map(crate::engine::split_subtask);
        // Both validated with the flags (`Args::validate`).
        let compaction_pipeline = match row_pipeline {
            Some((p, _)) => strata::CompactionPipeline::parse(p, a.compaction_threads).unwrap_or_default(),
            None => a.pipeline().unwrap_or_default(),
        };
        let compaction_subtask_bytes = match row_pipeline {
            Some((p, Some(bytes))) => {
                crate::engine::parse_subtask(p, bytes).unwrap_or(a.compaction_subtask_bytes)
            }
            _ => a.compaction_subtask_bytes,
        };
        EngineConfig {
            path: dir.to_path_buf(),
            cache_size: a.cache_size,
            row_cache_size: a.row_cache_size,
            compaction_warmup: a.compaction_warmup,
            buffer_read_misses: a.buffer_read_misses,
            buffer_dispatch: a.buffer_dispatch,
            buffer_last_level: a.buffer_last_level
                || crate::engine::split_pipeline(policy).0
                    == format!("dlsm@{}", crate::engine::DLSM_LAST_LEVEL),
            buffer_min_part_size: a.buffer_min_part_size,
            seek_compaction: a.seek_compaction,
            max_mem_compaction_level: a.max_mem_compaction_level,
            idle_compaction: (a.idle_compaction >= 0.0).then_some(a.idle_compaction),
            compaction_pipeline,
            compaction_subtask_bytes,
            subcompactions: a.subcompactions,
            bloom_bits: a.bloom_bits,
            bloom_allocation: a.bloom_allocation,
            write_buffer_size: a.write_buffer_size,
            max_file_size: a.max_file_size,
            compression: a.compression_type.clone(),
            use_direct_reads: a.use_direct_reads,
            mmap_reads: a.mmap_reads,
            max_bytes_for_level_base: a.max_bytes_for_level_base,
            buffer_trim_interval: a.buffer_trim_interval,
            level_multiplier: a.max_bytes_for_level_multiplier,
            garnering_c: a.garnering_c,
            policy: policy.to_string(),
            sync: a.sync,
            use_existing_db: a.use_existing_db,
            pin_slice: a.pin_slice,
            prefix_size: a.prefix_size,
            total_order_seek: a.total_order_seek,
            drive: a.drive(policy),
        }
    }
}

/// `strata/leveled` -> `strata-leveled` (a directory name).
fn dir_name(row: &str) -> String {
    row.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect()
}

/// Runs the plan; progress lines (option mappings, db_bench-style summaries,
/// warnings, histograms) go to `log`.
pub fn run_plan(plan: &Plan, log: &mut dyn Write) -> BenchResult<Vec<RunResult>> {
    let io = |e: std::io::Error| e.to_string();
    // A fresh temporary directory unless --db is given; removed when done.
    let temp = match &plan.base.db {
        Some(_) => None,
        None => Some(tempfile::Builder::new().prefix("strata-bench-").tempdir().map_err(io)?),
    };
    let root: PathBuf = match (&plan.base.db, &temp) {
        (Some(db), _) => db.clone(),
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => return Err("no database directory".into()),
    };
    let mut results = Vec::new();
    for rep in 0..plan.base.repetitions {
        for (kind, policy, row) in plan.rows() {
            let dir = root.join(dir_name(&row));
            if !plan.base.use_existing_db && dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
            }
            std::fs::create_dir_all(&dir).map_err(io)?;
            let engine = open_engine(&kind, &plan.engine_config(&dir, policy.as_str()))?;
            if rep == 0 {
                writeln!(log, "{row}: {}", engine.option_mapping()).map_err(io)?;
            }
            let mut state = DbState::new(plan.base.use_existing_db);
            for step in &plan.steps {
                if step.args.warmup_seconds > 0.0 && bench::is_timed(&step.benchmark) {
                    let mut warm = step.args.clone();
                    warm.duration = step.args.warmup_seconds;
                    bench::run_benchmark(engine.as_ref(), &step.benchmark, &warm, &mut state)?;
                    state.warnings.clear();
                    writeln!(log, "{row}: {} warmed up for {} s", step.label, warm.duration).map_err(io)?;
                }
                let throttle = enter_device(&step.args, &dir)?;
                let device = throttle.as_ref().map_or_else(inherited_device, |t| t.description().to_string());
                if throttle.is_some() {
                    writeln!(log, "{row}: {} under device profile {device}", step.label).map_err(io)?;
                }
                let out = bench::run_benchmark(engine.as_ref(), &step.benchmark, &step.args, &mut state);
                drop(throttle);
                let out = out?;
                for w in state.warnings.drain(..) {
                    writeln!(log, "{row}: {w}").map_err(io)?;
                }
                let n = out.results.len();
                for (i, (mut r, latencies)) in out.results.into_iter().enumerate() {
                    r.engine = row.clone();
                    r.repetition = rep;
                    r.device_profile = device.clone();
                    // The main result (the last one) carries the step's label.
                    if i + 1 == n && !step.benchmark.starts_with("ycsb") {
                        r.benchmark = step.label.clone();
                    }
                    writeln!(log, "{}", report::db_bench_line(&r, if i + 1 == n { out.bytes } else { 0 }))
                        .map_err(io)?;
                    write!(log, "{}", report::ycsb_op_lines(&r)).map_err(io)?;
                    if let (true, Some(l)) = (step.args.histogram, &latencies) {
                        writeln!(log, "{}", report::format_histogram(&l.all)).map_err(io)?;
                        for (op, h) in &l.by_op {
                            writeln!(log, "[{op}] {}", report::format_histogram(h)).map_err(io)?;
                        }
                    }
                    results.push(r);
                }
            }
            let text = engine.stats_text();
            if !text.is_empty() && !plan.base.quiet {
                writeln!(log, "{row} statistics (repetition {rep}):\n{text}").map_err(io)?;
            }
            drop(engine);
            if temp.is_some() {
                // Free the disk space of finished rows (the next repetition starts fresh).
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    Ok(results)
}

/// `device profile: cloud (read 3000 IOPS, 125 MB/s) for readwhilewriting`
/// when any step runs under a slow-device profile.
fn device_header(plan: &Plan) -> Option<String> {
    let mut steps = Vec::new();
    let mut profile = None;
    for s in &plan.steps {
        if let Ok(Some(p)) = crate::device::lookup(&s.args.device_profile) {
            steps.push(s.label.as_str());
            profile = Some(p);
        }
    }
    let Some(p) = profile else {
        let inherited = inherited_device();
        return (!inherited.is_empty())
            .then(|| format!("device profile: {inherited} (from scripts/slow-device.sh)"));
    };
    let which = if steps.len() == plan.steps.len() { "every step".to_string() } else { steps.join(", ") };
    Some(format!("device profile: {} for {which} (cgroup limits on the database's disk)", p.describe()))
}

/// The profile `scripts/slow-device.sh` put this process under, if any.
fn inherited_device() -> String {
    std::env::var("STRATA_DEVICE_PROFILE").unwrap_or_default()
}

/// Moves the process under the step's slow-device profile, if it names one.
fn enter_device(args: &Args, dir: &Path) -> BenchResult<Option<crate::device::Throttle>> {
    let Some(profile) = crate::device::lookup(&args.device_profile)? else { return Ok(None) };
    let memory =
        if args.device_memory > 0 { args.device_memory } else { args.cache_size as u64 + (128 << 20) };
    let t = crate::device::Throttle::enter(&profile, dir, memory, true)
        .map_err(|e| format!("--device_profile={}: {e}", profile.name))?;
    Ok(Some(t))
}

/// db_bench's header block for the db_bench-style steps (YCSB workloads size
/// their own records): key and value sizes, entries, and the raw and expected
/// file sizes of `--num` entries.
fn size_header(plan: &Plan) -> Option<String> {
    if plan.steps.iter().all(|s| s.benchmark.starts_with("ycsb")) {
        return None;
    }
    let a = &plan.base;
    let (key, value) = (a.key_size as f64, a.value_size() as f64);
    let compressed = a.compression_type != "none";
    let stored = if compressed { value * a.compression_ratio } else { value };
    let after = if compressed {
        format!("{stored:.0} bytes after {} compression", a.compression_type)
    } else {
        "not compressed".to_string()
    };
    let mb = |per_entry: f64| per_entry * a.num as f64 / 1048576.0;
    Some(format!(
        "Keys:       {} bytes each\nValues:     {} bytes each ({after})\nEntries:    {}\n\
         RawSize:    {:.1} MB (estimated)\nFileSize:   {:.1} MB (estimated)\n",
        a.key_size,
        a.value_size(),
        a.num,
        mb(key + value),
        mb(key + stored)
    ))
}

/// Runs a plan end to end: prints the option mappings and summaries, the table
/// and time series, and writes `--out` files.
pub fn run_main(plan: &Plan) -> BenchResult<()> {
    let io = |e: std::io::Error| e.to_string();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let rows: Vec<String> = plan.rows().into_iter().map(|r| r.2).collect();
    let steps: Vec<&str> = plan.steps.iter().map(|s| s.label.as_str()).collect();
    writeln!(
        out,
        "strata-bench: engines {} | benchmarks {} | num {} | {} | repetitions {}",
        rows.join(","),
        steps.join(","),
        plan.base.num,
        plan.sizes(),
        plan.base.repetitions
    )
    .map_err(io)?;
    if let Some(block) = size_header(plan) {
        write!(out, "{block}").map_err(io)?;
    }
    if let Some(line) = device_header(plan) {
        writeln!(out, "{line}").map_err(io)?;
    }
    let results = run_plan(plan, &mut out)?;
    writeln!(out, "\n{}{}", report::format_table(&results, plan.baseline().as_deref()), report::TABLE_NOTE)
        .map_err(io)?;
    let ops = report::format_op_table(&results);
    if !ops.is_empty() {
        writeln!(out, "\nlatency per operation type (YCSB operations, multireadrandom batches; medians over repetitions):\n{ops}").map_err(io)?;
    }
    let drive = report::format_drive_table(&results);
    if !drive.is_empty() {
        writeln!(out, "\nsimulated drive (--drive_model):\n{drive}{}", report::DRIVE_NOTE).map_err(io)?;
    }
    let series = report::format_series(&results);
    if !series.is_empty() {
        writeln!(out, "time series (every {} s):{series}", plan.base.stats_interval_seconds).map_err(io)?;
    }
    if let Some(dir) = &plan.base.out {
        let files = crate::output::write_outputs(dir, &results)?;
        for f in files {
            writeln!(out, "wrote {}", f.display()).map_err(io)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn default_suite_has_the_main_job_steps() {
        let plan = Plan::default_suite().unwrap();
        let labels: Vec<&str> = plan.steps.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            ["fillrandom", "readrandom", "seekrandom", "readwhilewriting", "readwhilewriting/rangehot"]
        );
        let mixed = &plan.steps[4].args;
        assert_eq!((mixed.read_dist.as_str(), mixed.duration), ("rangehot", SUITE_MIXED_SECS));
        assert!(plan.steps[3].args.benchmark_write_rate_limit > 0);
        assert_eq!(plan.base.num, SUITE_NUM);
        assert!(plan.rows().iter().any(|r| r.2 == "strata/leveled"));
        let cmp = Plan::buffer_comparison("hdd").unwrap();
        assert_eq!(cmp.steps[2].args.device_profile, "hdd", "the timed step runs on the slow device");
        assert_eq!(cmp.steps[2].args.warmup_seconds, COMPARE_WARMUP_SECS, "after a warm-up");
        assert_eq!(cmp.steps[0].args.device_profile, "none", "the load does not");
        assert!(device_header(&cmp).unwrap().contains("150 IOPS"), "{:?}", device_header(&cmp));
        assert!(device_header(&plan).is_none() || !inherited_device().is_empty());
        let rows: Vec<String> = cmp.rows().into_iter().map(|r| r.2).collect();
        for p in ["leveled", "blsm", "lsbm", "dlsm", "tiered"] {
            assert!(rows.contains(&format!("strata/{p}")), "{rows:?}");
        }
        assert!(cmp.base.use_direct_reads && cmp.base.threads == 8);
        assert_eq!(cmp.steps[0].args.threads, 1, "the load writes each key once");
        assert_eq!(cmp.steps[0].args.duration, 0.0, "the load is not cut short");
        assert!(plan.steps[..3].iter().all(|s| s.args.duration == 0.0), "closed-loop steps run to the end");
    }

    #[test]
    fn size_header_is_db_bench_s_block() {
        let plan = |line: &str| Plan::from_args(&parse_args(line.split_whitespace()).unwrap());
        let h = size_header(&plan("x --benchmarks=fillrandom --num=1048576 --value_size=100")).unwrap();
        assert!(h.contains("Keys:       16 bytes each\n"), "{h}");
        assert!(h.contains("Values:     100 bytes each (not compressed)\n"), "{h}");
        assert!(h.contains("Entries:    1048576\n") && h.contains("RawSize:    116.0 MB"), "{h}");
        assert!(h.contains("FileSize:   116.0 MB"), "{h}");
        let lz4 = "x --benchmarks=fillrandom --num=1048576 --compression_type=lz4 --compression_ratio=0.5";
        let h = size_header(&plan(lz4)).unwrap();
        assert!(h.contains("(50 bytes after lz4 compression)") && h.contains("FileSize:   66.0 MB"), "{h}");
        assert!(size_header(&plan("x --benchmarks=ycsba")).is_none());
    }

    #[test]
    fn header_sizes_are_what_runs() {
        let plan = |line: &str| Plan::from_args(&parse_args(line.split_whitespace()).unwrap());
        assert_eq!(plan("x --benchmarks=fillrandom").sizes(), "key 16 B | value 100 B");
        let y = plan("x --benchmarks=ycsba,ycsbb").sizes();
        assert_eq!(y, "YCSB keys user<hash> | record 1000 B (10 x 100 B fields)");
        let both = plan("x --benchmarks=fillrandom,ycsbc --value_size=400").sizes();
        assert_eq!(both, "key 16 B | value 400 B | YCSB keys user<hash> | record 400 B (1 x 400 B fields)");
    }

    #[test]
    fn rows_and_baseline_from_flags() {
        let a =
            parse_args(["x", "--engines=strata", "--policy=leveled,leveling", "--baseline=strata/leveling"])
                .unwrap();
        let plan = Plan::from_args(&a);
        let rows: Vec<String> = plan.rows().into_iter().map(|r| r.2).collect();
        assert_eq!(rows, ["strata/leveled", "strata/leveling"]);
        assert_eq!(plan.baseline().as_deref(), Some("strata/leveling"));
        assert_eq!(dir_name("strata/leveled"), "strata-leveled");
    }

    /// `leveled+pcp:hdd` was refused ("unknown compaction pipeline pcp:hdd"),
    /// though a drive suffix is documented to come after a pipeline.
    #[test]
    fn a_row_takes_a_pipeline_a_subtask_size_and_a_drive_together() {
        let line = [
            "x",
            "--engines=strata",
            "--policy=leveled+pcp:hdd,leveled+c-ppcp/65536,leveled+c-ppcp",
            "--compaction_subtask_bytes=1048576",
        ];
        let plan = Plan::from_args(&parse_args(line).unwrap());
        let dir = Path::new("/tmp/x");
        let got: Vec<_> = (plan.rows().into_iter())
            .map(|(_, policy, _)| {
                let c = plan.engine_config(dir, &policy);
                (c.compaction_pipeline, c.compaction_subtask_bytes, c.drive.is_some())
            })
            .collect();
        use strata::CompactionPipeline as P;
        let parallel = P::Parallel { compute_threads: 2 };
        assert_eq!(
            got,
            [(P::Pipelined, 1 << 20, true), (parallel, 65536, false), (parallel, 1 << 20, false)]
        );
    }

    #[test]
    fn a_row_takes_its_own_pipeline_after_a_plus() {
        let line = [
            "x",
            "--engines=strata",
            "--policy=leveled,leveled+pcp,garnering@0.4+c-ppcp",
            "--compaction_threads=3",
        ];
        let plan = Plan::from_args(&parse_args(line).unwrap());
        let dir = Path::new("/tmp/x");
        let got: Vec<_> = plan
            .rows()
            .into_iter()
            .map(|(_, policy, row)| (row, plan.engine_config(dir, &policy).compaction_pipeline))
            .collect();
        use strata::CompactionPipeline as P;
        assert_eq!(
            got,
            [
                ("strata/leveled".to_string(), P::Sequential),
                ("strata/leveled+pcp".to_string(), P::Pipelined),
                ("strata/garnering@0.4+c-ppcp".to_string(), P::Parallel { compute_threads: 3 }),
            ]
        );
        let style = crate::engine::strata_style("garnering@0.4+c-ppcp", 0.8).unwrap();
        assert!(matches!(style, strata::CompactionStyle::Garnering { c } if c == 0.4), "{style:?}");
        for bad in ["leveled+fast", "leveled+", "leveled+pcp/65536"] {
            let e = parse_args(["x", "--engines=strata", &format!("--policy={bad}")]).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
