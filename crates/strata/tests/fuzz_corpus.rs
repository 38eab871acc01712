//! Replays every committed fuzz input (`fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/`) through the same target bodies cargo-fuzz
//! runs, so the normal suite covers each target's corpus without libFuzzer.
//! The bodies live in `fuzz/src/` and are included here as a module.

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod fuzz;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every file under `fuzz/<kind>/<target>/`, sorted (missing dir = none).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fuzz_dir().join(kind).join(target))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs `body` on each file; returns the files that panicked.
fn replay(body: fn(&[u8]), files: &[PathBuf]) -> Vec<String> {
    let mut failed = Vec::new();
    for f in files {
        let data = std::fs::read(f).expect("read corpus file");
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            failed.push(f.display().to_string());
        }
    }
    failed
}

fn replay_target(name: &str) {
    let (_, body) = fuzz::TARGETS.iter().find(|(n, _)| *n == name).expect("known target");
    let corpus = inputs("corpus", name);
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{name}/ is empty: seed it with cargo fuzz (docs/RELIABILITY.md)"
    );
    let regressions = inputs("regressions", name);
    let failed = replay(*body, &[corpus.clone(), regressions.clone()].concat());
    assert!(failed.is_empty(), "{name}: {} inputs failed: {failed:?}", failed.len());
    eprintln!("{name}: {} corpus + {} regression inputs replayed", corpus.len(), regressions.len());
}

#[test]
fn corpus_block() {
    replay_target("block");
}

#[test]
fn corpus_table() {
    replay_target("table");
}

#[test]
fn corpus_wal() {
    replay_target("wal");
}

#[test]
fn corpus_manifest() {
    replay_target("manifest");
}

#[test]
fn corpus_ops() {
    replay_target("ops");
}

#[test]
fn every_target_has_a_replay_test() {
    let names: Vec<_> = fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["block", "table", "wal", "manifest", "ops"]);
}

/// The replay reports a panicking input instead of passing.
#[test]
fn replay_reports_a_failing_input() {
    fn picky(data: &[u8]) {
        assert!(!data.starts_with(b"boom"), "planted failure");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, bad) = (dir.path().join("good"), dir.path().join("bad"));
    std::fs::write(&good, b"fine").expect("write");
    std::fs::write(&bad, b"boom!").expect("write");
    assert_eq!(replay(picky, &[good, bad.clone()]), vec![bad.display().to_string()]);
}

/// The op fuzzer's model check catches a database that lost a write, under every policy.
#[test]
fn ops_model_check_catches_a_divergence() {
    let data: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
    for name in strata::CompactionStyle::builtin_names() {
        fuzz::ops::run_checked(&data, name, false);
        let planted = std::panic::catch_unwind(|| fuzz::ops::run_checked(&data, name, true));
        assert!(planted.is_err(), "{name}: a planted model divergence went unnoticed");
    }
}
