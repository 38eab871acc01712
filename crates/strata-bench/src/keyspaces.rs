//! `strata-bench keyspaces --count N`: what many keyspaces cost. Creates N
//! keyspaces with a few writes each, closes, reopens, and prints the time of
//! each step with the process's peak thread count and memory.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use strata::{Db, KeyspaceOptions, Options};

/// Flags of `strata-bench keyspaces`.
#[derive(Parser, Debug)]
#[command(name = "strata-bench keyspaces", about = "Create, close and reopen many keyspaces")]
pub struct KeyspacesArgs {
    /// Keyspaces to create.
    #[arg(long, default_value_t = 10_000)]
    pub count: usize,
    /// Writes into each keyspace.
    #[arg(long, default_value_t = 3)]
    pub writes: usize,
    /// Keyspaces per `Db::create_keyspaces` call (1: `create_keyspace`
    /// each, which rewrites the OPTIONS file every time).
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// `Options::max_background_jobs`.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Database directory (default: a fresh temporary one, removed after).
    #[arg(long)]
    pub db: Option<PathBuf>,
}

/// A field of `/proc/self/status` (`Threads`, `VmRSS`, `VmHWM`), its number.
fn status(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    line[field.len() + 1..].split_whitespace().next()?.parse().ok()
}

/// Samples the thread count every millisecond while alive; the peak since
/// the last [`Sampler::take`].
struct Sampler {
    peak: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Sampler {
        let peak = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(status("Threads").unwrap_or(0) as usize, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Sampler { peak, stop, thread: Some(thread) }
    }

    fn take(&self) -> usize {
        let now = status("Threads").unwrap_or(0) as usize;
        self.peak.swap(0, Ordering::Relaxed).max(now)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn report(step: &str, took: Duration, sampler: &Sampler) {
    let rss = status("VmRSS").unwrap_or(0) / 1024;
    let hwm = status("VmHWM").unwrap_or(0) / 1024;
    println!(
        "{step:<8} {:>9.3} s   peak threads {:>6}   RSS {rss:>6} MiB (peak {hwm} MiB)",
        took.as_secs_f64(),
        sampler.take()
    );
}

/// Runs `strata-bench keyspaces` with `args` (the words after `keyspaces`).
pub fn main(args: &[std::ffi::OsString]) -> strata::Result<()> {
    let args = match KeyspacesArgs::try_parse_from(
        std::iter::once(std::ffi::OsString::from("keyspaces")).chain(args.iter().cloned()),
    ) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    let tmp = tempfile::tempdir()?;
    let dir = args.db.clone().unwrap_or_else(|| tmp.path().join("db"));
    let opts = Options::default().with_max_background_jobs(args.jobs);
    println!(
        "{} keyspaces ({} per create call), {} writes each, max_background_jobs {}, in {}",
        args.count,
        args.batch.max(1),
        args.writes,
        args.jobs,
        dir.display()
    );
    let sampler = Sampler::start();
    sampler.take();
    let start = Instant::now();
    let db = Db::open(&dir, opts.clone())?;
    let batch = args.batch.max(1);
    for first in (0..args.count).step_by(batch) {
        let names: Vec<String> =
            (first..args.count.min(first + batch)).map(|i| format!("ks{i:06}")).collect();
        let made = if batch == 1 {
            vec![db.create_keyspace(&names[0], KeyspaceOptions::default())?]
        } else {
            db.create_keyspaces(names.iter().map(|n| (n, KeyspaceOptions::default())))?
        };
        for (ks, i) in made.iter().zip(first..) {
            for w in 0..args.writes {
                ks.put(format!("key{w}"), format!("value{i}-{w}"))?;
            }
        }
    }
    report("create", start.elapsed(), &sampler);
    let start = Instant::now();
    db.close()?;
    report("close", start.elapsed(), &sampler);
    let start = Instant::now();
    let db = Db::open(&dir, opts)?;
    report("reopen", start.elapsed(), &sampler);
    let last = db.keyspace(&format!("ks{:06}", args.count.saturating_sub(1)))?;
    if args.count > 0 && args.writes > 0 && last.get("key0")?.is_none() {
        return Err(strata::Error::corruption("a write was lost across the reopen"));
    }
    let start = Instant::now();
    db.close()?;
    report("close", start.elapsed(), &sampler);
    Ok(())
}
