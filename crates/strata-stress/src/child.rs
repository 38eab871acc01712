//! The child: opens the database, prints `ready`, and runs one writer thread
//! per key range until it is killed. Every write is logged as an intent before
//! and an ack after (see `expected`). It never exits on its own; an error
//! exits with status 3 and the parent reports it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata::vfs::testing::{FaultConfig, FaultKind, FaultVfs};
use strata::{Db, Error, Keyspace, RealVfs, WriteBatch, WriteOptions};

use crate::args::Args;
use crate::config::{self, CycleConfig};
use crate::expected::{log_path, Change, ExpectedLog, KeyOp};
use crate::keyspaces::keyspace_of;

/// The key with global index `i`.
pub fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Runs the workload of `args.cycle`; returns only on an error.
pub fn run(args: &Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let dir = args.dir.as_deref().ok_or("--child needs --dir")?;
    let seed = args.seed.ok_or("--child needs --seed")?;
    let mut cfg = config::derive(seed, args.cycle, &args.policy, args.num_levels)?;
    let faults = (args.io_faults > 0.0).then(|| {
        let fc = FaultConfig::new(config::sub_seed(seed, args.cycle, 7))
            .with_rate(FaultKind::Write, args.io_faults)
            .with_rate(FaultKind::Sync, args.io_faults)
            .with_below_buffer_only(true);
        FaultVfs::new(Arc::new(RealVfs::new()), fc)
    });
    if let Some(f) = &faults {
        // Off while the database opens: a fault there is not what is tested.
        f.set_enabled(false);
        cfg.options = cfg.options.clone().with_vfs(Arc::new(f.clone()));
    }
    let (db, handles) = crate::keyspaces::open(&dir.join("db"), cfg.options_at(dir))?;
    let (db, ks) = (Arc::new(db), Arc::new(handles));
    if let Some(f) = &faults {
        let mut rng = SmallRng::seed_from_u64(config::sub_seed(seed, args.cycle, 8));
        if rng.gen_bool(0.5) {
            f.set_free_space(Some(rng.gen_range(0..(4u64 << 20))));
        }
        f.set_enabled(true);
    }
    println!("ready");
    std::io::stdout().flush()?;
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let (db, ks, cfg, args) = (Arc::clone(&db), Arc::clone(&ks), cfg.clone(), args.clone());
            let state = dir.join("state");
            std::thread::spawn(move || {
                if let Err(e) = writer(&db, &ks, &cfg, &args, seed, t, &state) {
                    eprintln!("child thread {t}: {e}");
                    std::process::exit(3);
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    if faults.is_some() {
        // Every writer stopped at a failed write: the cycle ends here.
        return Ok(ExitCode::from(FAULT_STOP));
    }
    Err("writer threads ended".into())
}

/// The child's exit status when injected faults stopped every writer.
pub const FAULT_STOP: u8 = 4;

fn writer(
    db: &Db,
    ks: &[Keyspace],
    cfg: &CycleConfig,
    args: &Args,
    seed: u64,
    t: usize,
    state: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = SmallRng::seed_from_u64(config::sub_seed(seed, args.cycle, 100 + t as u64));
    let mut log = ExpectedLog::create(&log_path(state, args.cycle, t))?;
    let base = t as u64 * args.keys_per_thread;
    for n in 0u64.. {
        let sync = rng.gen_bool(cfg.sync_ratio);
        let count = if rng.gen_bool(0.3) { rng.gen_range(2..=8) } else { 1 };
        let ops: Vec<KeyOp> = (0..count)
            .map(|j| {
                let i = rng.gen_range(0..args.keys_per_thread);
                let k = key(base + i);
                if rng.gen_ratio(1, 50) {
                    // A short range within this thread's keys.
                    let end = (i + rng.gen_range(1..=4)).min(args.keys_per_thread);
                    return (k, Change::DeleteRange(key(base + end)));
                }
                let change = match rng.gen_range(0..10) {
                    0 | 1 => Change::Delete,
                    // A short operand naming its write.
                    2 => Change::Merge(format!("c{}t{t}n{n}j{j}", args.cycle).into_bytes()),
                    _ => Change::Put(value(&mut rng, cfg, args.cycle, t, n, j)),
                };
                (k, change)
            })
            .collect();
        log.intent(n, sync, &ops)?;
        let wo = WriteOptions::default().with_sync(sync);
        let r = match &ops[..] {
            [(k, Change::Put(v))] => ks[keyspace_of(k)].put_opt(k, v, &wo),
            [(k, Change::Delete)] => ks[keyspace_of(k)].delete_opt(k, &wo),
            [(k, Change::Merge(v))] => ks[keyspace_of(k)].merge_opt(k, v, &wo),
            _ => {
                // One batch across the keyspaces its keys belong to.
                let mut batch = WriteBatch::new();
                for (k, change) in &ops {
                    let h = &ks[keyspace_of(k)];
                    match change {
                        Change::Put(v) => batch.put_cf(h, k, v),
                        Change::Delete => batch.delete_cf(h, k),
                        Change::Merge(v) => batch.merge_cf(h, k, v),
                        // A range spans every keyspace's share of it.
                        Change::DeleteRange(end) => {
                            for h in ks {
                                batch.delete_range_cf(h, k, end);
                            }
                        }
                    }
                }
                db.write_opt(batch, &wo)
            }
        };
        match r {
            Ok(()) => log.ack(n, sync)?,
            Err(e) if args.io_faults > 0.0 => {
                // A refusal (read-only) never reached the log; a failed sync may
                // have left the record on disk; any other failed write must not.
                let maybe = !matches!(e, Error::ReadOnly(_)) && e.to_string().contains("sync");
                log.failed(n, maybe)?;
                eprintln!("child thread {t}: write {n} failed under injected faults: {e}");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// A value naming its write, padded with letters (sometimes to a few KiB).
fn value(rng: &mut SmallRng, cfg: &CycleConfig, cycle: u64, t: usize, n: u64, j: usize) -> Vec<u8> {
    let mut v = format!("c{cycle}t{t}n{n}j{j}-").into_bytes();
    let len =
        if rng.gen_bool(cfg.big_value_ratio) { rng.gen_range(1000..4000) } else { rng.gen_range(0..120) };
    let fill = b'a' + rng.gen_range(0..26u8);
    v.resize(v.len() + len, fill);
    v
}
