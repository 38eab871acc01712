//! Progress on stderr: an indicatif bar on a terminal, plain lines otherwise
//! (so logs and pipes get a few readable lines, not control codes).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// A counter shown while a long command runs.
pub struct Progress {
    what: &'static str,
    bar: Option<ProgressBar>,
    last_line: std::cell::Cell<Instant>,
}

impl Progress {
    /// A bar for `total` items (a spinner when unknown).
    pub fn new(what: &'static str, total: Option<u64>) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = match total {
                Some(t) => ProgressBar::new(t).with_style(
                    ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({elapsed})")
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                ),
                None => ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template("{spinner} {msg}: {pos} ({per_sec}, {elapsed})")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                ),
            };
            bar.set_message(what);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress { what, bar, last_line: std::cell::Cell::new(Instant::now()) }
    }

    /// `n` items done.
    pub fn set(&self, n: u64) {
        match &self.bar {
            Some(b) => b.set_position(n),
            None if self.last_line.get().elapsed() >= Duration::from_secs(2) => {
                eprintln!("{}: {n}", self.what);
                self.last_line.set(Instant::now());
            }
            None => {}
        }
    }

    /// Done with `n` items: the bar goes, a plain summary line stays.
    pub fn finish(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        eprintln!("{}: {n} done", self.what);
    }
}
