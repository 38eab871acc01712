//! Time-series charts like the papers' figures: one SVG per benchmark and
//! metric, x = seconds, one line per engine. SVG, because its text needs no
//! fonts on the machine (plotters' PNG text needs system fonts CI lacks).

use std::path::{Path, PathBuf};

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::results::{RunResult, Sample};

/// One plotted quantity.
struct Metric {
    /// File-name suffix: `<benchmark>-<key>.svg`.
    key: &'static str,
    title: &'static str,
    y_desc: &'static str,
    value: fn(&Sample) -> Option<f64>,
    /// Fixed y range top (e.g. 100 %), else scaled to the data.
    y_max: Option<f64>,
}

const METRICS: [Metric; 4] = [
    Metric {
        key: "hit_ratio",
        title: "block-cache hit ratio",
        y_desc: "hit ratio (%)",
        value: |s| s.hit_ratio.map(|h| h * 100.0),
        y_max: Some(100.0),
    },
    Metric {
        key: "read_throughput",
        title: "read throughput",
        y_desc: "reads / s",
        value: |s| Some(s.read_ops_per_sec),
        y_max: None,
    },
    Metric {
        key: "read_p99",
        title: "p99 read latency",
        y_desc: "p99 latency (µs)",
        value: |s| Some(s.read_p99_us),
        y_max: None,
    },
    Metric {
        key: "db_size",
        title: "database size on disk",
        y_desc: "size (MiB)",
        value: |s| Some(s.db_bytes as f64 / 1048576.0),
        y_max: None,
    },
];

pub(crate) const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Keeps file names portable whatever the benchmark is called.
fn file_stem(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}

/// 12500 -> "12.5k", for throughput axes; below 1, two significant digits
/// (0.26, 0.034), so small rates and ratios keep their differences.
pub(crate) fn short_number(v: f64) -> String {
    let a = v.abs();
    if a > 0.0 && a < 1.0 {
        let digits = (1 - a.log10().floor() as i32).clamp(1, 12) as usize;
        let s = format!("{v:.digits$}");
        return s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Per engine (in order of first appearance), the run of `benchmark` with
/// the median throughput among its repetitions that have samples.
pub fn median_runs<'a>(results: &'a [RunResult], benchmark: &str) -> Vec<&'a RunResult> {
    let mut engines: Vec<&str> = Vec::new();
    for r in results.iter().filter(|r| r.benchmark == benchmark && !r.samples.is_empty()) {
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
    }
    engines
        .into_iter()
        .filter_map(|e| {
            let mut runs: Vec<&RunResult> = results
                .iter()
                .filter(|r| r.benchmark == benchmark && r.engine == e && !r.samples.is_empty())
                .collect();
            runs.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
            runs.get((runs.len().max(1) - 1) / 2).copied()
        })
        .collect()
}

/// A white 960×540 SVG canvas at `path`.
pub(crate) fn canvas(path: &Path) -> Result<DrawingArea<SVGBackend<'_>, Shift>, String> {
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| format!("chart {}: {e}", path.display()))?;
    Ok(root)
}

/// The papers' chart frame on `root`: a caption, x over `x`, y from 0 to `y_top`.
pub(crate) fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    x: std::ops::Range<f64>,
    y_top: f64,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>, String> {
    ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(x, 0.0..y_top)
        .map_err(|e| format!("chart {caption}: {e}"))
}

fn draw(path: &Path, caption: &str, m: &Metric, lines: &[(String, Vec<(f64, f64)>)]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("chart {}: {e}", path.display());
    let x_max = lines.iter().flat_map(|(_, p)| p.iter().map(|&(x, _)| x)).fold(0.0, f64::max);
    let y_top = m.y_max.unwrap_or_else(|| {
        let y = lines.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)).fold(0.0, f64::max);
        y * 1.1
    });
    let x_max = if x_max > 0.0 { x_max } else { 1.0 };
    let y_top = if y_top > 0.0 { y_top } else { 1.0 };

    let root = canvas(path)?;
    let mut chart = frame(&root, caption, 0.0..x_max, y_top)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(m.y_desc)
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .y_label_formatter(&|v| short_number(*v))
        .x_label_formatter(&|v| short_number(*v))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (engine, points)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(engine.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3)));
    }
    finish(&root, &mut chart, SeriesLabelPosition::LowerRight, path)
}

/// Draws `chart`'s legend at `at` and writes `root` to `path`.
pub(crate) fn finish<'a, 'b: 'a>(
    root: &DrawingArea<SVGBackend<'b>, Shift>,
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    at: SeriesLabelPosition,
    path: &Path,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("chart {}: {e}", path.display());
    chart
        .configure_series_labels()
        .position(at)
        .label_font(("sans-serif", 16))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

/// Draws, for every benchmark with samples, `<benchmark>-{hit_ratio,
/// read_throughput,read_p99,db_size}.svg` in `dir` (the median repetition
/// of each engine). An engine with no value for a metric (e.g. LevelDB's
/// hit ratio) is left out of that chart and named in its title; a chart
/// with no line is skipped.
pub fn write_charts(dir: &Path, results: &[RunResult]) -> Result<Vec<PathBuf>, String> {
    let mut benchmarks: Vec<&str> = Vec::new();
    for r in results.iter().filter(|r| !r.samples.is_empty()) {
        if !benchmarks.contains(&r.benchmark.as_str()) {
            benchmarks.push(&r.benchmark);
        }
    }
    let mut written = Vec::new();
    for benchmark in benchmarks {
        let runs = median_runs(results, benchmark);
        for m in &METRICS {
            let (lines, missing): (Vec<_>, Vec<_>) = runs
                .iter()
                .map(|r| {
                    let pts: Vec<(f64, f64)> =
                        r.samples.iter().filter_map(|s| Some((s.t_secs, (m.value)(s)?))).collect();
                    (r.engine.clone(), pts)
                })
                .partition(|(_, pts)| !pts.is_empty());
            if lines.is_empty() {
                continue;
            }
            let mut caption = format!("{benchmark}: {}", m.title);
            if !missing.is_empty() {
                // Say who is absent, so a missing line is not read as zero.
                let names: Vec<&str> = missing.iter().map(|(e, _)| e.as_str()).collect();
                caption.push_str(&format!(" (not reported by {})", names.join(", ")));
            }
            let path = dir.join(format!("{}-{}.svg", file_stem(benchmark), m.key));
            draw(&path, &caption, m, &lines)?;
            written.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(engine: &str, rep: usize, ops_per_sec: f64) -> RunResult {
        RunResult {
            engine: engine.into(),
            benchmark: "b".into(),
            repetition: rep,
            ops_per_sec,
            samples: vec![Sample::default()],
            ..RunResult::default()
        }
    }

    #[test]
    fn picks_median_repetition_per_engine() {
        let rs =
            vec![run("x", 0, 5.0), run("y", 0, 1.0), run("x", 1, 9.0), run("x", 2, 7.0), run("y", 1, 2.0)];
        let m = median_runs(&rs, "b");
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].engine.as_str(), m[0].repetition), ("x", 2));
        // Even count: the lower middle.
        assert_eq!((m[1].engine.as_str(), m[1].repetition), ("y", 0));
    }

    #[test]
    fn formats_axis_numbers_and_names() {
        assert_eq!(short_number(125_000.0), "125k");
        assert_eq!(short_number(2_500_000.0), "2.5M");
        assert_eq!(short_number(1_500.0), "1.5k");
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(0.26), "0.26");
        assert_eq!(short_number(0.2), "0.2");
        assert_eq!(short_number(0.0344), "0.034");
        assert_eq!(short_number(0.96), "0.96");
        assert_eq!(short_number(-0.5), "-0.5");
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(5.0), "5");
        assert_eq!(file_stem("ycsb/a b"), "ycsb_a_b");
    }
}
