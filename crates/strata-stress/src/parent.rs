//! The parent: epochs of kill cycles on one database, each verified after
//! reopen, until the duration or cycle limit is reached.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::CompactionStyle;

use crate::args::Args;
use crate::config::{self, CycleConfig};
use crate::crosscheck::{self, Repaired};
use crate::expected::{log_path, read_log};
use crate::verify::{self, Model, Outcome};

/// Totals over the run.
#[derive(Debug, Default)]
struct Totals {
    cycles: u64,
    early_kills: u64,
    keys_checked: u64,
    acked: u64,
    synced: u64,
    pending: u64,
    pending_applied: u64,
    failed: u64,
    fault_stops: u64,
    read_only_checks: u64,
    repair_checks: u64,
    check_time: [Duration; 3],
}

/// What one cycle did besides verifying.
struct CycleDone {
    outcome: Outcome,
    /// Killed before the child finished opening.
    early: bool,
    /// The child stopped by itself under injected faults.
    fault_stop: bool,
    /// The read-only open was compared with the reopen.
    read_only_checked: bool,
    /// The repaired copy was compared with the reopen.
    repair_checked: bool,
    /// Time spent on the read-only open, the copies and the repair (with
    /// the copy's open and scan).
    check_time: [Duration; 3],
}

/// Runs the soak; exit status 1 if any cycle failed.
pub fn run(args: &Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if args.threads == 0 || args.keys_per_thread == 0 || args.min_kill_ms > args.max_kill_ms {
        eprintln!(
            "strata-stress: need --threads >= 1, --keys-per-thread >= 1, --min-kill-ms <= --max-kill-ms"
        );
        return Ok(ExitCode::from(2));
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    let mut tmp = None;
    let work: PathBuf = match &args.dir {
        Some(d) => d.clone(),
        None => tmp.insert(tempfile::tempdir()?).path().to_path_buf(),
    };
    std::fs::create_dir_all(work.join("state"))?;
    println!("strata-stress: seed={seed} dir={} threads={}", work.display(), args.threads);
    let policies = CompactionStyle::builtin_names();
    let deadline = Instant::now() + Duration::from_secs(args.duration);
    let mut rng = StdRng::seed_from_u64(config::sub_seed(seed, u64::MAX, 0));
    let (mut totals, mut truth, mut epoch_left) = (Totals::default(), Model::new(), 0u64);
    let (mut policy_idx, mut num_levels) = ((seed % policies.len() as u64) as usize, 7);
    let mut failed = false;
    while Instant::now() < deadline && (args.cycles == 0 || totals.cycles < args.cycles) {
        let cycle = totals.cycles;
        if epoch_left == 0 {
            // A new epoch: a fresh database under the next policy.
            policy_idx = (policy_idx + 1) % policies.len();
            num_levels = rng.gen_range(3..=7);
            epoch_left = rng.gen_range(1..=args.max_epoch_cycles.max(1));
            truth.clear();
            for d in std::iter::once("db".to_string())
                .chain((0..config::MAX_DATA_PATHS).map(|i| format!("data-{i}")))
            {
                if work.join(&d).exists() {
                    std::fs::remove_dir_all(work.join(&d))?;
                }
            }
        }
        let policy = policies[policy_idx];
        let cfg = config::derive(seed, cycle, policy, num_levels)?;
        match run_cycle(args, &work, seed, cycle, &cfg, policy, num_levels, &truth) {
            Ok(CycleDone { outcome, early, fault_stop, read_only_checked, repair_checked, check_time }) => {
                if args.verbose {
                    println!(
                        "cycle {cycle}: {} | acked {} (synced {}) pending {} (applied {}) keys {} | read-only {} repair {} ({:?} ms){}",
                        cfg.summary,
                        outcome.acked,
                        outcome.synced,
                        outcome.pending,
                        outcome.pending_applied,
                        outcome.observed.len(),
                        if read_only_checked { "same" } else { "skipped" },
                        if repair_checked { "same" } else { "skipped" },
                        check_time.map(|d| d.as_millis()),
                        if early { " [killed during open]" } else { "" }
                    );
                }
                totals.early_kills += u64::from(early);
                totals.read_only_checks += u64::from(read_only_checked);
                totals.repair_checks += u64::from(repair_checked);
                for (t, c) in totals.check_time.iter_mut().zip(check_time) {
                    *t += c;
                }
                totals.fault_stops += u64::from(fault_stop);
                totals.failed += outcome.failed;
                totals.keys_checked += outcome.keys_checked;
                totals.acked += outcome.acked;
                totals.synced += outcome.synced;
                totals.pending += outcome.pending;
                totals.pending_applied += outcome.pending_applied;
                truth = outcome.observed;
            }
            Err(msg) => {
                println!("FAILURE: cycle {cycle} seed {seed} ({}): {msg}", cfg.summary);
                println!("  reproduce (timing-dependent): strata-stress --seed {seed} --threads {} --keys-per-thread {} --min-kill-ms {} --max-kill-ms {} --duration <secs>", args.threads, args.keys_per_thread, args.min_kill_ms, args.max_kill_ms);
                failed = true;
                // Keep the directories for inspection.
                if let Some(t) = tmp.take() {
                    println!("  kept {}", t.keep().display());
                }
            }
        }
        totals.cycles += 1;
        epoch_left -= 1;
        if failed {
            break;
        }
    }
    let t = &totals;
    println!(
        "summary: cycles={} failures={} keys_verified={} acked_writes={} synced_writes={} pending_at_kill={} pending_applied={} killed_during_open={} failed_writes={} fault_stops={} read_only_checks={} repair_checks={} check_secs={:.1}/{:.1}/{:.1} seed={seed}",
        t.cycles,
        u8::from(failed),
        t.keys_checked,
        t.acked,
        t.synced,
        t.pending,
        t.pending_applied,
        t.early_kills,
        t.failed,
        t.fault_stops,
        t.read_only_checks,
        t.repair_checks,
        t.check_time[0].as_secs_f64(),
        t.check_time[1].as_secs_f64(),
        t.check_time[2].as_secs_f64()
    );
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// One cycle: spawn, kill, reopen, verify. Returns the outcome and whether the
/// kill came before the child finished opening.
#[allow(clippy::too_many_arguments)]
fn run_cycle(
    args: &Args,
    work: &Path,
    seed: u64,
    cycle: u64,
    cfg: &CycleConfig,
    policy: &str,
    num_levels: usize,
    truth: &Model,
) -> Result<CycleDone, String> {
    let state = work.join("state");
    let stderr_path = state.join("child.stderr");
    let stderr = std::fs::File::create(&stderr_path).map_err(|e| format!("child stderr file: {e}"))?;
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut child = Command::new(exe)
        .arg("--child")
        .arg("--dir")
        .arg(work)
        .args(["--seed", &seed.to_string(), "--cycle", &cycle.to_string(), "--policy", policy])
        .args(["--num-levels", &num_levels.to_string(), "--threads", &args.threads.to_string()])
        .args(["--keys-per-thread", &args.keys_per_thread.to_string()])
        .args(["--io-faults", &args.io_faults.to_string()])
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("spawn child: {e}"))?;
    let mut rng = StdRng::seed_from_u64(config::sub_seed(seed, cycle, 2));
    let early = rng.gen_bool(0.1);
    let killed = kill_at_random(&mut child, &mut rng, args, early);
    let child_err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let fault_stop = killed.map_err(|e| format!("{e}; child stderr: {child_err}"))?;
    let db_dir = work.join("db");
    let opts = cfg.options_at(work);
    // Without CURRENT the kill came during the first open: open creates the
    // database, while read-only open and repair rightly find none.
    let had_current = db_dir.join("CURRENT").exists();
    // Read-only first: it writes nothing, so the reopen still sees the killed state.
    let mut started = Instant::now();
    let mut check_time = [Duration::ZERO; 3];
    let mut lap = |i: usize| {
        check_time[i] = started.elapsed();
        started = Instant::now();
    };
    let read_only = crosscheck::read_only(&db_dir, &opts);
    lap(0);
    let repaired = if args.no_repair_check || !cycle.is_multiple_of(args.repair_check_every) {
        None
    } else {
        let (killed, copy) = (work.join("killed"), work.join("repaired"));
        crosscheck::copy_db(work, &killed).map_err(|e| format!("copy of the killed state: {e}"))?;
        crosscheck::copy_db(&killed, &copy).map_err(|e| format!("copy to repair: {e}"))?;
        lap(1);
        let r = crosscheck::repair_copy(&copy, cfg, args.inject_repair_bug)
            .map_err(|e| format!("repair check: {e}"))?;
        lap(2);
        Some(r)
    };
    let (_, registered) =
        crate::keyspaces::options_for(&db_dir, &opts).map_err(|e| format!("reopen failed: {e}"))?;
    let (db, ks) = crate::keyspaces::open(&db_dir, opts).map_err(|e| format!("reopen failed: {e}"))?;
    let opened = crosscheck::scan(&db, registered)?;
    let kept = || {
        format!(
            "; kept: killed state in {}, repaired copy in {}, reopened original in {}",
            work.join("killed").display(),
            work.join("repaired").display(),
            db_dir.display()
        )
    };
    let read_only_checked = match read_only {
        Ok(seen) => match crosscheck::diff("read-only open", &seen, &opened) {
            Some(d) => return Err(format!("{d}{}", kept())),
            None => true,
        },
        Err(e) if had_current => {
            return Err(format!("read-only open failed where open succeeded: {e}{}", kept()))
        }
        Err(_) => false,
    };
    let repair_checked = match repaired {
        Some(Repaired::Read(seen)) => match crosscheck::diff("repaired copy", &seen, &opened) {
            Some(d) => return Err(format!("{d}{}", kept())),
            None => true,
        },
        Some(Repaired::Failed(e)) if had_current => {
            return Err(format!("{e} where open succeeded{}", kept()))
        }
        Some(Repaired::Failed(_)) | None => false,
    };
    let logs =
        (0..args.threads).map(|t| read_log(&log_path(&state, cycle, t))).collect::<Result<Vec<_>, _>>()?;
    if args.inject_bug {
        inject_bug(&ks, truth, &logs, &mut rng)?;
    }
    let outcome = verify::verify(&ks, truth, &logs)?;
    drop(ks);
    db.close().map_err(|e| format!("close failed: {e}"))?;
    for t in 0..args.threads {
        let _ = std::fs::remove_file(log_path(&state, cycle, t));
    }
    Ok(CycleDone { outcome, early, fault_stop, read_only_checked, repair_checked, check_time })
}

/// Waits for `ready` (unless `early`), sleeps a random time and SIGKILLs the
/// child. An exit before the kill is an error (the child only stops on
/// failure), except the stop of `--io-faults`; returns whether that happened.
fn kill_at_random(child: &mut Child, rng: &mut StdRng, args: &Args, early: bool) -> Result<bool, String> {
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let delay = if early {
        Duration::from_millis(rng.gen_range(0..40))
    } else {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) if line.trim() == "ready" => {}
            Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = child.kill();
                let status = child.wait().map_err(|e| format!("wait: {e}"))?;
                return Err(format!("child failed before it was ready ({status})"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("child not ready after 120 s".into());
            }
        }
        Duration::from_millis(rng.gen_range(args.min_kill_ms..=args.max_kill_ms))
    };
    std::thread::sleep(delay);
    if let Some(status) = child.try_wait().map_err(|e| format!("try_wait: {e}"))? {
        if status.code() == Some(i32::from(crate::child::FAULT_STOP)) {
            return Ok(true);
        }
        return Err(format!("child exited by itself ({status})"));
    }
    child.kill().map_err(|e| format!("kill: {e}"))?;
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    // It may have stopped by itself between the check and the kill.
    Ok(status.code() == Some(i32::from(crate::child::FAULT_STOP)))
}

/// Test hook: deletes one acknowledged key, as a write-losing engine would.
fn inject_bug(
    ks: &[strata::Keyspace],
    truth: &Model,
    logs: &[Vec<crate::expected::LoggedWrite>],
    rng: &mut StdRng,
) -> Result<(), String> {
    let (definite, pending) = verify::expected(truth, logs);
    let candidates: Vec<&Vec<u8>> =
        definite.keys().filter(|k| !pending.iter().any(|p| p.contains_key(*k))).collect();
    if let Some(k) = candidates.get(rng.gen_range(0..candidates.len().max(1))) {
        ks[crate::keyspaces::keyspace_of(k)].delete(k).map_err(|e| format!("inject: {e}"))?;
    }
    Ok(())
}
