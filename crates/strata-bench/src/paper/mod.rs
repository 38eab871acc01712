//! `strata-bench paper <name[,name...]|all> [--quick]`: runs the experiments a paper
//! reports that this machine can run and writes `docs/papers/<name>.md` (each
//! claim beside Strata's measurement, with the ratio of the two) and a bar
//! chart per experiment drawn like the paper's figure.

mod autumn;
mod buffer;
mod dlsm;
pub mod load;
mod lsbm;
mod lwc;
mod pcp;
pub mod render;
pub mod spec;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;

use crate::cli::{compiled_engines, parse_args};
use crate::results::RunResult;
use crate::suite::{run_plan, Plan, Step};
use render::ExperimentRun;
use spec::{Paper, Scale};

/// Papers this command reproduces, by name.
pub const PAPERS: &[&str] = &["autumn", "dlsm", "lsbm", "pcp", "lwc"];

/// Flags of `strata-bench paper`.
#[derive(Parser, Debug, Clone)]
#[command(name = "strata-bench paper", about = "Reproduce a paper's claims and write its report")]
pub struct PaperArgs {
    /// A paper (autumn, dlsm, lsbm, pcp, lwc), several separated by commas
    /// (`dlsm,lsbm`: the two share their experiment, run once), or `all`.
    pub name: String,
    /// Every experiment at a reduced size: minutes, not hours.
    #[arg(long)]
    pub quick: bool,
    /// Where the reports go.
    #[arg(long, default_value = "docs/papers")]
    pub out: PathBuf,
}

/// The paper named `name` at `scale`.
pub fn paper(name: &str, scale: Scale) -> Result<Paper, String> {
    match name {
        "autumn" => Ok(autumn::paper(scale)),
        "dlsm" => Ok(dlsm::paper(scale)),
        "lsbm" => Ok(lsbm::paper(scale)),
        "pcp" => Ok(pcp::paper(scale)),
        "lwc" => Ok(lwc::paper(scale)),
        n => Err(format!("unknown paper {n:?} (known: {}, all)", PAPERS.join(", "))),
    }
}

/// The papers `names` lists (`dlsm,lsbm`, or `all`), in its order, at `scale`.
pub fn papers(names: &str, scale: Scale) -> Result<Vec<Paper>, String> {
    let names: Vec<&str> = if names == "all" { PAPERS.to_vec() } else { names.split(',').collect() };
    names.iter().map(|n| paper(n, scale)).collect()
}

/// How long the machine is watched before each experiment for other work.
const LOAD_SAMPLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Results of the experiments already run in this invocation, by command, so
/// papers that share an experiment (dLSM and LSbM) run it once: the results,
/// the seconds the run took and the machine's load when it started.
pub type Ran = HashMap<String, (Vec<RunResult>, f64, load::Load)>;

/// Runs every experiment of `paper` (or takes its results from `ran`) and
/// writes `<out>/<name>.md`, its charts `<out>/<name>-<experiment>.svg` and
/// the data and time series under `<out>/data/<experiment>/`. Progress goes to
/// `log`. Returns the report's path.
pub fn run_paper(
    paper: &Paper,
    scale: Scale,
    out: &Path,
    ran: &mut Ran,
    log: &mut dyn Write,
) -> Result<PathBuf, String> {
    let io = |e: std::io::Error| e.to_string();
    std::fs::create_dir_all(out).map_err(|e| format!("create {}: {e}", out.display()))?;
    let mut load_before = None;
    let mut runs = Vec::new();
    for e in &paper.experiments {
        writeln!(log, "paper {}: {} ...", paper.name, e.title).map_err(io)?;
        let line = format!("strata-bench {} --quiet", e.flags);
        let args = parse_args(line.split_whitespace()).map_err(|err| format!("{}: {err}", e.id))?;
        let mut plan = Plan::from_args(&args);
        // A step's own `--benchmarks=` replaces the experiment's.
        let base: Vec<&str> = line.split_whitespace().filter(|f| !f.starts_with("--benchmarks=")).collect();
        for st in &e.steps {
            let line = format!("{} {}", base.join(" "), st.flags);
            let args = parse_args(line.split_whitespace()).map_err(|err| format!("{}: {err}", st.label))?;
            let benchmark =
                args.benchmarks.first().cloned().ok_or_else(|| format!("{}: no benchmark", st.label))?;
            plan.steps.push(Step { benchmark, label: st.label.to_string(), args });
        }
        let rows = plan.rows().into_iter().map(|r| r.2).collect();
        let key = std::iter::once(e.flags.as_str())
            .chain(e.steps.iter().map(|s| s.flags.as_str()))
            .collect::<Vec<_>>()
            .join(" | ");
        let (results, secs, load) = match ran.get(&key) {
            Some(done) => done.clone(),
            None => {
                let load = load::sample(LOAD_SAMPLE);
                let start = Instant::now();
                let results = run_plan(&plan, log)?;
                // A previous run's files (a step since renamed) must not sit beside this one's.
                let data = out.join("data").join(e.id);
                if data.exists() {
                    std::fs::remove_dir_all(&data).map_err(|e| format!("clear {}: {e}", data.display()))?;
                }
                crate::output::write_outputs(&data, &results)?;
                let done = (results, start.elapsed().as_secs_f64(), load);
                ran.insert(key, done.clone());
                done
            }
        };
        // The machine as the first experiment found it.
        load_before.get_or_insert(load);
        let run = ExperimentRun { experiment: e, results, rows, secs };
        let svg = out.join(format!("{}-{}.svg", paper.name, e.id));
        render::bar_chart(&svg, e.title, &e.chart, &run)?;
        runs.push(run);
    }
    let report = out.join(format!("{}.md", paper.name));
    let machine = render::Machine {
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before: load_before.unwrap_or_else(|| load::sample(LOAD_SAMPLE)),
        engines: compiled_engines(),
    };
    std::fs::write(&report, render::markdown(paper, &runs, scale, &machine))
        .map_err(|e| format!("write {}: {e}", report.display()))?;
    Ok(report)
}

/// `strata-bench paper ...`.
pub fn main(argv: &[std::ffi::OsString]) -> Result<(), String> {
    // `--help` prints and exits 0, a usage error exits 2, as the main command's flags.
    let args = match PaperArgs::try_parse_from(
        std::iter::once("strata-bench paper".into()).chain(argv.iter().cloned()),
    ) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    let scale = if args.quick { Scale::Quick } else { Scale::Full };
    let papers = papers(&args.name, scale)?;
    let stdout = std::io::stdout();
    let mut log = stdout.lock();
    let mut ran = Ran::new();
    for p in &papers {
        let report = run_paper(p, scale, &args.out, &mut ran, &mut log)?;
        writeln!(log, "wrote {}", report.display()).map_err(|e| e.to_string())?;
    }
    Ok(())
}
