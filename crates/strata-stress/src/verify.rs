//! Verification after a kill: from the state before the cycle and the
//! expected-state logs, every key is either definitely known (its last write
//! was acknowledged, or it was not written this cycle) or maybe written (the
//! last, unacknowledged write of a thread touched it: old or new value are
//! both fine, but a pending batch must be all old or all new). The database
//! must hold exactly the definite values, one of the allowed ones for maybe
//! keys, and nothing else; point reads must agree with the scan.

use std::collections::{BTreeMap, BTreeSet};

use strata::Keyspace;

use crate::keyspaces::keyspace_of;

use crate::expected::{soak_merge, Change, LoggedWrite};

/// Key -> value of every present key.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A pending write's changes: key -> new value (`None` = deleted).
pub type Pending = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// What one verification covered.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Keys whose scan result and point read were checked.
    pub keys_checked: u64,
    /// Acknowledged writes this cycle (all must have survived).
    pub acked: u64,
    /// Of those, written with `sync`.
    pub synced: u64,
    /// Unacknowledged writes in flight at the kill.
    pub pending: u64,
    /// Of those, found applied after recovery.
    pub pending_applied: u64,
    /// Writes that returned an error under injected faults.
    pub failed: u64,
    /// The database's contents, the next cycle's starting state.
    pub observed: Model,
}

/// The definite state after the acked writes, and each thread's pending write.
pub fn expected(before: &Model, logs: &[Vec<LoggedWrite>]) -> (Model, Vec<Pending>) {
    let mut definite = before.clone();
    let mut pending = Vec::new();
    for log in logs {
        for w in log {
            // A key's new state after the write's ops in batch order; a merge
            // folds into what the batch or the acknowledged writes left (keys
            // belong to one thread, and only its last write may be pending).
            let mut target: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
            for (k, change) in &w.ops {
                if let Change::DeleteRange(end) = change {
                    // Every key in range the acknowledged writes or the batch so far left.
                    let present = definite.range(k.clone()..end.clone()).map(|(key, _)| key.clone());
                    let in_batch = target.range(k.clone()..end.clone()).map(|(key, _)| key.clone());
                    let doomed: Vec<Vec<u8>> = present.chain(in_batch).collect();
                    for key in doomed {
                        target.insert(key, None);
                    }
                    continue;
                }
                let new = match change {
                    Change::Put(v) => Some(v.clone()),
                    Change::Delete | Change::DeleteRange(_) => None,
                    Change::Merge(operand) => {
                        let old = target.get(k).cloned().unwrap_or_else(|| definite.get(k).cloned());
                        Some(soak_merge(old.as_deref(), operand))
                    }
                };
                target.insert(k.clone(), new);
            }
            if w.failed == Some(false) {
                // Refused before it reached the log: it must not be there.
                continue;
            }
            if w.acked {
                for (k, v) in target {
                    match v {
                        Some(v) => definite.insert(k, v),
                        None => definite.remove(&k),
                    };
                }
            } else {
                pending.push(target);
            }
        }
    }
    (definite, pending)
}

/// Checks the reopened database; `Err` describes the first violation.
pub fn verify(ks: &[Keyspace], before: &Model, logs: &[Vec<LoggedWrite>]) -> Result<Outcome, String> {
    let (definite, pending) = expected(before, logs);
    let mut out = Outcome::default();
    for w in logs.iter().flatten() {
        out.acked += u64::from(w.acked);
        out.synced += u64::from(w.acked && w.sync);
        out.pending += u64::from(!w.acked && w.failed != Some(false));
        out.failed += u64::from(w.failed.is_some());
    }
    // Every keyspace's scan; a key found outside its own keyspace is an error.
    for (i, h) in ks.iter().enumerate() {
        for kv in h.iter() {
            let (k, v) = kv.map_err(|e| format!("scan of {} failed: {e}", h.name()))?;
            if keyspace_of(&k) != i {
                return Err(format!("key {} found in keyspace {}", String::from_utf8_lossy(&k), h.name()));
            }
            out.observed.insert(k, v);
        }
    }
    let maybe: BTreeMap<&Vec<u8>, &Option<Vec<u8>>> = pending.iter().flatten().collect();
    let keys: BTreeSet<&Vec<u8>> =
        out.observed.keys().chain(definite.keys()).chain(maybe.keys().copied()).collect();
    for k in keys {
        let (obs, def) = (out.observed.get(k), definite.get(k));
        let show =
            |v: Option<&Vec<u8>>| v.map(|v| String::from_utf8_lossy(&v[..v.len().min(40)]).into_owned());
        let name = String::from_utf8_lossy(k);
        match maybe.get(k) {
            Some(new) if obs == def || obs == new.as_ref() => {}
            Some(new) => {
                return Err(format!(
                    "key {name}: found {:?}, expected the old {:?} or the pending {:?}",
                    show(obs),
                    show(def),
                    show(new.as_ref())
                ))
            }
            None if obs == def => {}
            None if obs.is_none() => {
                return Err(format!("key {name}: acknowledged value {:?} lost", show(def)))
            }
            None => return Err(format!("key {name}: found {:?}, expected {:?}", show(obs), show(def))),
        }
        let got = ks[keyspace_of(k)].get(k).map_err(|e| format!("get {name} failed: {e}"))?;
        if got.as_ref() != obs {
            return Err(format!(
                "key {name}: get returned {:?}, the scan {:?}",
                show(got.as_ref()),
                show(obs)
            ));
        }
        out.keys_checked += 1;
    }
    // A pending batch is atomic: all of its changes applied, or none.
    for p in &pending {
        let changed: Vec<bool> = p
            .iter()
            .filter(|(k, new)| definite.get(*k) != new.as_ref())
            .map(|(k, new)| out.observed.get(k) == new.as_ref())
            .collect();
        if changed.iter().any(|&c| c) {
            out.pending_applied += 1;
            if changed.iter().any(|&c| !c) {
                return Err(format!("a pending batch was applied partially: {changed:?}"));
            }
        }
    }
    Ok(out)
}
