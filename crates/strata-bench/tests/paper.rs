//! `strata-bench paper` at unit scale: every experiment of a report runs, every
//! claim gets a measured ratio, and the page and its charts are written.

use std::path::Path;

use strata_bench::paper::spec::Scale;
use strata_bench::paper::{paper, papers, run_paper, Ran, PAPERS};

#[test]
fn the_autumn_report_has_a_measured_row_for_every_claim() {
    let out = tempfile::tempdir().unwrap();
    check_report("autumn", "# Autumn", out.path(), &mut Ran::new());
}

#[test]
fn the_pcp_report_has_a_row_per_pipeline_and_a_measured_row_for_every_claim() {
    let out = tempfile::tempdir().unwrap();
    // A file of an earlier run (a step since renamed) does not survive the new one.
    let stale = out.path().join("data/inserts/renamed_step-hit_ratio.svg");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(&stale, "<svg/>").unwrap();
    let (text, log) = check_report("pcp", "# PCP", out.path(), &mut Ran::new());
    assert!(!stale.exists(), "a stale chart was left beside the new run's");
    for row in ["strata/leveled+scp", "strata/leveled+pcp", "strata/leveled+c-ppcp", "strata/leveled+auto"] {
        assert!(text.contains(&format!("| {row}")), "row {row} in the page:\n{text}");
    }
    assert!(log.contains("compaction_pipeline=pcp"), "the pcp row ran the pipeline:\n{log}");
    // Figs. 8–9: scp's stage breakdown, measured (check_report saw a ratio in every row).
    assert!(text.contains("(computation ÷ read and write time of its compactions)"), "{text}");
    // Fig. 11(a): one c-ppcp row per sub-task size, each run with its own size.
    for bytes in [65536, 524288, 4194304] {
        assert!(text.contains(&format!("| strata/leveled+c-ppcp/{bytes}")), "sub-task row {bytes}:\n{text}");
        assert!(
            log.contains(&format!("compaction_subtask_bytes={bytes} ")),
            "sub-task size {bytes} ran:\n{log}"
        );
    }
}

/// dLSM and LSbM share their experiment: run in one invocation, it runs once.
#[test]
fn the_dlsm_and_lsbm_reports_share_one_run_and_measure_every_claim() {
    let out = tempfile::tempdir().unwrap();
    let mut ran = Ran::new();
    let (text, log) = check_report("dlsm", "# dLSM", out.path(), &mut ran);
    assert!(log.contains("filluniquerandom"), "dLSM's report ran the experiment");
    assert!(text.contains("then, on the same databases"), "its steps are listed");
    assert!(text.contains("](data/buffer/rangehot-hit_ratio.svg)"), "time series linked:\n{text}");
    assert!(
        text.contains("`ranges` strata/tiered ÷ `strata/blsm` (tables scanned per range query"),
        "{text}"
    );
    // Fig. 14: the same databases' range queries after a full compaction over before it.
    assert!(text.contains("`ranges_after_full` strata/dlsm ÷ `ranges_before_full` strata/dlsm"), "{text}");
    let (_, log) = check_report("lsbm", "# LSbM", out.path(), &mut ran);
    assert!(!log.contains("filluniquerandom"), "LSbM's report reused the run:\n{log}");
}

/// Runs `name` at unit scale into `out` and checks its page, charts and data;
/// returns the page and the run's log.
fn check_report(name: &str, heading: &str, out: &Path, ran: &mut Ran) -> (String, String) {
    let p = paper(name, Scale::Unit).unwrap();
    let mut log = Vec::new();
    let report = run_paper(&p, Scale::Unit, out, ran, &mut log).unwrap();
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with(heading), "{text}");
    for e in &p.experiments {
        let svg = out.join(format!("{name}-{}.svg", e.id));
        let chart = std::fs::read_to_string(&svg).unwrap();
        assert!(chart.contains("<svg") && chart.contains("<rect"), "bars in {}", svg.display());
        assert!(text.contains(&format!("]({name}-{}.svg)", e.id)), "chart linked");
        assert!(out.join("data").join(e.id).join("results.csv").exists());
        for link in text.split("](").skip(1).filter_map(|l| l.split(')').next()) {
            assert!(out.join(link).exists(), "{link} linked but not written");
        }
        assert!(text.contains(&format!("strata-bench {}", e.flags)), "the command is shown");
    }
    // Claim rows: the third cell names the two sides of the ratio.
    let claims: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| ") && l.split('|').nth(3).is_some_and(|c| c.contains('÷')))
        .collect();
    let expected: usize = p.experiments.iter().map(|e| e.claims.len()).sum();
    assert_eq!(claims.len(), expected, "one row per claim:\n{text}");
    for row in claims {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | figure | claim | compared | paper | Strata | Strata ÷ paper | holds |
        assert!(cells[5].parse::<f64>().is_ok(), "measured ratio in {row}");
        assert!(cells[7] == "yes" || cells[7] == "**no**", "verdict in {row}");
    }
    assert!(text.contains("## Not run here"));
    (text, String::from_utf8(log).unwrap())
}

/// The LWC slides' report runs every row on the simulated drive and reports
/// its counters.
#[test]
fn the_lwc_report_measures_every_claim_on_the_simulated_drive() {
    let out = tempfile::tempdir().unwrap();
    let (text, log) = check_report("lwc", "# LWC-tree", out.path(), &mut Ran::new());
    for row in ["strata/leveled", "strata/leveled:hdd", "strata/smrdb", "strata/lwc", "strata/lwc:smr@2"] {
        assert!(
            text.contains(&format!("| {row}")),
            "row {row} in the page:
{text}"
        );
    }
    assert!(text.contains("SIMULATED"), "the page says the drive is simulated");
    assert!(log.contains("drive_model=smr (band 1 MiB") && log.contains("band placement"), "{log}");
    assert!(log.contains("drive_model=hdd"), "the LDB-HDD row ran on a conventional drive:\n{log}");
    assert!(log.contains("smrdb: compaction_style=tiered num_levels=2 target_file_size_base=band"), "{log}");
}

#[test]
fn unknown_papers_are_refused_by_name() {
    for name in ["autumn", "dlsm", "lsbm", "pcp", "lwc"] {
        assert!(PAPERS.contains(&name) && paper(name, Scale::Quick).is_ok(), "{name}");
    }
    let unknown = paper("nope", Scale::Quick).err().unwrap();
    assert!(unknown.contains("unknown paper") && unknown.contains("autumn"), "{unknown}");
    // A list runs the named papers in its order; one unknown name refuses the list.
    let names =
        |list: &str| papers(list, Scale::Quick).map(|ps| ps.iter().map(|p| p.name).collect::<Vec<_>>());
    assert_eq!(names("dlsm,lsbm").unwrap(), ["dlsm", "lsbm"]);
    assert_eq!(names("all").unwrap(), PAPERS);
    assert!(names("dlsm,nope").unwrap_err().contains("\"nope\""));
}
