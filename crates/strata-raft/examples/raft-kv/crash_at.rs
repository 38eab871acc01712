//! `--crash-at STEP:N:MOMENT`: the node SIGKILLs itself at the `N`th time
//! (counting from 1, in this process) its storage reaches `MOMENT` of `STEP`
//! (see `strata_raft::hook`) — a kill -9 aimed at a chosen moment, for tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use strata_raft::hook::{Moment, Step, StepHook};

/// A parsed `STEP:N:MOMENT`.
#[derive(Clone, Copy, Debug)]
pub struct CrashAt {
    step: Step,
    nth: u64,
    moment: Moment,
}

impl std::str::FromStr for CrashAt {
    type Err = String;

    fn from_str(s: &str) -> Result<CrashAt, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let [step, nth, moment] = parts[..] else {
            return Err(format!("{s:?} is not STEP:N:MOMENT"));
        };
        let nth =
            nth.parse().ok().filter(|&n| n > 0).ok_or_else(|| format!("{nth:?} is not a count from 1"))?;
        Ok(CrashAt { step: step.parse()?, nth, moment: moment.parse()? })
    }
}

impl CrashAt {
    /// The hook that kills this process at the chosen moment.
    pub fn hook(self) -> StepHook {
        let seen = AtomicU64::new(0);
        Arc::new(move |step, moment| {
            if step == self.step
                && moment == self.moment
                && seen.fetch_add(1, Ordering::SeqCst) + 1 == self.nth
            {
                log::warn!("crash-at {}:{}:{}: SIGKILL", self.step, self.nth, self.moment);
                // SAFETY: kill(2) on our own pid; no memory is touched.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
        })
    }
}
