//! [`StepHook`]: a function called at two moments of every durable storage
//! step, so a test can aim a kill -9 at a chosen moment of a running node
//! (the `raft-kv` example's `--crash-at`). Without a hook nothing is called.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A storage step that writes durably.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// `RaftLogStorage::append`.
    Append,
    /// `RaftLogStorage::save_vote`.
    Vote,
    /// `RaftLogStorage::truncate`.
    Truncate,
    /// `RaftLogStorage::purge`.
    Purge,
    /// `RaftSnapshotBuilder::build_snapshot`.
    BuildSnapshot,
    /// `RaftStateMachine::install_snapshot`.
    InstallSnapshot,
}

/// When in a [`Step`] the hook is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Moment {
    /// The step's batch is built (and a snapshot step's file written and
    /// synced) but nothing of the batch is written.
    Before,
    /// The batch is written and synced; openraft has not been told.
    Durable,
}

/// Called with each step and moment, on the thread running the step.
pub type StepHook = Arc<dyn Fn(Step, Moment) + Send + Sync>;

/// Calls `hook`, if there is one.
pub(crate) fn call(hook: &Option<StepHook>, step: Step, moment: Moment) {
    if let Some(h) = hook {
        h(step, moment);
    }
}

const STEPS: [(Step, &str); 6] = [
    (Step::Append, "append"),
    (Step::Vote, "vote"),
    (Step::Truncate, "truncate"),
    (Step::Purge, "purge"),
    (Step::BuildSnapshot, "snapshot"),
    (Step::InstallSnapshot, "install"),
];

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = STEPS.iter().find(|(s, _)| s == self).map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

impl FromStr for Step {
    type Err = String;

    /// `append`, `vote`, `truncate`, `purge`, `snapshot` or `install`.
    fn from_str(s: &str) -> Result<Step, String> {
        STEPS.iter().find(|(_, n)| *n == s).map(|(step, _)| *step).ok_or_else(|| {
            let names: Vec<&str> = STEPS.iter().map(|(_, n)| *n).collect();
            format!("unknown step {s:?} (one of {})", names.join(", "))
        })
    }
}

impl fmt::Display for Moment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Moment::Before => "before",
            Moment::Durable => "durable",
        })
    }
}

impl FromStr for Moment {
    type Err = String;

    /// `before` or `durable`.
    fn from_str(s: &str) -> Result<Moment, String> {
        match s {
            "before" => Ok(Moment::Before),
            "durable" => Ok(Moment::Durable),
            _ => Err(format!("unknown moment {s:?} (before or durable)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (step, name) in STEPS {
            assert_eq!(step.to_string(), name);
            assert_eq!(name.parse::<Step>(), Ok(step));
        }
        for m in [Moment::Before, Moment::Durable] {
            assert_eq!(m.to_string().parse::<Moment>(), Ok(m));
        }
        assert!("apply".parse::<Step>().unwrap_err().contains("one of append"));
        assert!("after".parse::<Moment>().is_err());
    }
}
