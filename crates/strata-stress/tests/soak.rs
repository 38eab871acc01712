//! Runs the `strata-stress` binary: a short soak of kill -9 cycles must pass,
//! and the same soak with a planted lost write (`--inject-bug`) or a damaged
//! repaired copy (`--inject-repair-bug`) must fail.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_strata-stress");

/// Runs the binary with short child lifetimes; returns (success, stdout).
fn soak(extra: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(BIN)
        .args(["--duration", "240", "--threads", "3", "--keys-per-thread", "500"])
        .args(["--min-kill-ms", "50", "--max-kill-ms", "200", "--max-epoch-cycles", "8"])
        .arg("--dir")
        .arg(dir.path())
        .args(extra)
        .output()
        .expect("run strata-stress");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (out.status.success(), stdout)
}

/// The number after `name=` in the summary line.
fn summary_field(stdout: &str, name: &str) -> u64 {
    let line = stdout.lines().find(|l| l.starts_with("summary:")).expect("summary line");
    let field = line.split_whitespace().find_map(|f| f.strip_prefix(&format!("{name}="))).expect("field");
    field.parse().expect("number")
}

/// 32 kill -9 cycles across the built-in policies, every one verified.
#[test]
fn kill9_soak_cycles_verify() {
    let (ok, stdout) = soak(&["--cycles", "32", "--seed", "20261101"]);
    assert!(ok, "soak failed:\n{stdout}");
    assert_eq!(summary_field(&stdout, "cycles"), 32);
    assert_eq!(summary_field(&stdout, "failures"), 0);
    assert!(summary_field(&stdout, "acked_writes") > 0);
    assert!(summary_field(&stdout, "keys_verified") > 0);
    // Every cycle but one killed during the first open (no database yet) ran
    // both cross-checks: read-only open and repaired copy equal the reopen.
    let early = summary_field(&stdout, "killed_during_open");
    assert!(summary_field(&stdout, "read_only_checks") >= 32 - early, "{stdout}");
    assert!(summary_field(&stdout, "repair_checks") >= 32 - early, "{stdout}");
}

/// A key deleted from the repaired copy is caught by the repair check: exit 1,
/// a FAILURE line naming the seed and the difference, both directories kept.
#[test]
fn injected_repair_damage_fails_the_soak() {
    let (ok, stdout) = soak(&["--cycles", "10", "--seed", "5", "--inject-repair-bug"]);
    assert!(!ok, "the soak passed with a damaged repaired copy:\n{stdout}");
    assert!(stdout.contains("FAILURE: cycle") && stdout.contains("seed 5"), "{stdout}");
    assert!(stdout.contains("repaired copy differs from open"), "{stdout}");
    assert!(stdout.contains("kept: killed state in"), "{stdout}");
    assert_eq!(summary_field(&stdout, "failures"), 1);
}

/// `--no-repair-check` skips the copy and repair, not the read-only check.
#[test]
fn no_repair_check_skips_only_the_repair() {
    let (ok, stdout) = soak(&["--cycles", "4", "--seed", "9", "--no-repair-check", "--inject-repair-bug"]);
    assert!(ok, "soak failed:\n{stdout}");
    assert_eq!(summary_field(&stdout, "repair_checks"), 0);
    assert!(summary_field(&stdout, "read_only_checks") > 0, "{stdout}");
}

/// A planted lost write is caught: non-zero exit and a FAILURE line with the seed.
#[test]
fn injected_lost_write_fails_the_soak() {
    let (ok, stdout) = soak(&["--cycles", "10", "--seed", "5", "--inject-bug"]);
    assert!(!ok, "the soak passed with a planted lost write:\n{stdout}");
    assert!(stdout.contains("FAILURE: cycle") && stdout.contains("seed 5"), "{stdout}");
    assert!(stdout.contains("lost"), "{stdout}");
    assert_eq!(summary_field(&stdout, "failures"), 1);
}

/// Bad usage exits 2.
#[test]
fn bad_arguments_exit_2() {
    let out = Command::new(BIN).args(["--threads", "0", "--duration", "1"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
}

/// With disk failures injected (short writes, failed fdatasync, a full disk),
/// writes fail, the child stops by itself, and every cycle still verifies:
/// acknowledged writes survive and failed ones stay failed.
#[test]
fn io_fault_soak_cycles_verify() {
    let (ok, stdout) = soak(&["--cycles", "16", "--seed", "77", "--io-faults", "0.002"]);
    assert!(ok, "soak with I/O faults failed:\n{stdout}");
    assert_eq!(summary_field(&stdout, "failures"), 0);
    assert!(summary_field(&stdout, "failed_writes") > 0, "no fault fired:\n{stdout}");
    assert!(summary_field(&stdout, "repair_checks") > 0, "{stdout}");
    assert!(summary_field(&stdout, "acked_writes") > 0);
}

/// `--repair-check-every 2` repairs a copy in the even cycles only.
#[test]
fn repair_check_every_second_cycle() {
    let (ok, stdout) = soak(&["--cycles", "4", "--seed", "11", "--repair-check-every", "2"]);
    assert!(ok, "soak failed:\n{stdout}");
    assert!((1..=2).contains(&summary_field(&stdout, "repair_checks")), "{stdout}");
}
