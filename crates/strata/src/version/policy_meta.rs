//! What the MANIFEST keeps for the compaction policy besides the tree:
//! round-robin cursors and the policy's own state blob, and (root MANIFEST
//! only) the keyspace registry.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::error::{Error, Result};

use super::edit::{KeyspaceOp, VersionEdit};

/// A registered keyspace: its name and persisted options.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyspaceEntry {
    /// The keyspace's name.
    pub name: String,
    /// Its options as persisted (`KeyspaceOptions` encoding).
    pub options: Vec<u8>,
}

/// The keyspace registry of a root MANIFEST: live keyspaces by id, and
/// their names, so a duplicate is found without a scan (a MANIFEST may
/// register tens of thousands).
#[derive(Clone, Debug, Default)]
pub(crate) struct Registry {
    pub(crate) by_id: BTreeMap<u32, KeyspaceEntry>,
    // INVARIANT: exactly the names of `by_id`'s entries.
    names: HashSet<String>,
}

/// State persisted alongside the files, read by compaction policies.
#[derive(Clone, Debug)]
pub(crate) struct PolicyMeta {
    /// Per level: user key of the last compacted file's largest key.
    pub(crate) compact_pointers: Vec<Option<Vec<u8>>>,
    /// The policy's opaque state, as it last returned it.
    pub(crate) policy_state: Option<Vec<u8>>,
    /// Live keyspaces (root MANIFEST only); shared, since every apply
    /// clones the state and few edits change the registry.
    pub(crate) keyspaces: Arc<Registry>,
    /// The next keyspace id; 0 while no keyspace was ever created.
    pub(crate) next_keyspace_id: u32,
    /// The default tree's persisted options (root MANIFEST only); `None` in
    /// databases written before they were recorded.
    pub(crate) default_options: Option<Vec<u8>>,
    /// The oldest WAL still needed, as last recorded (root MANIFEST of a
    /// database with keyspaces); `None` until first recorded.
    pub(crate) wal_floor: Option<u64>,
}

impl PolicyMeta {
    /// No cursors and no state, for `num_levels` levels.
    pub(crate) fn new(num_levels: usize) -> Self {
        PolicyMeta {
            compact_pointers: vec![None; num_levels],
            policy_state: None,
            keyspaces: Arc::default(),
            next_keyspace_id: 0,
            default_options: None,
            wal_floor: None,
        }
    }

    /// Takes the edit's cursors and blob; an empty blob clears the stored one.
    pub(crate) fn apply(&mut self, edit: &VersionEdit) -> Result<()> {
        for (l, key) in &edit.compact_pointers {
            let slot = self
                .compact_pointers
                .get_mut(*l)
                .ok_or_else(|| Error::invalid(format!("compact pointer for level {l} out of range")))?;
            *slot = Some(key.clone());
        }
        if let Some(state) = &edit.policy_state {
            self.policy_state = Some(state.clone()).filter(|s| !s.is_empty());
        }
        if !edit.keyspace_ops.is_empty() {
            let reg = Arc::make_mut(&mut self.keyspaces);
            for op in &edit.keyspace_ops {
                match op {
                    KeyspaceOp::Add { id, name, options } => {
                        if *id == 0 || reg.by_id.contains_key(id) || reg.names.contains(name) {
                            return Err(Error::invalid(format!("keyspace {id} ({name:?}) added twice")));
                        }
                        reg.names.insert(name.clone());
                        reg.by_id.insert(*id, KeyspaceEntry { name: name.clone(), options: options.clone() });
                        self.next_keyspace_id = self.next_keyspace_id.max(id.saturating_add(1));
                    }
                    KeyspaceOp::Drop { id } => {
                        let Some(gone) = reg.by_id.remove(id) else {
                            return Err(Error::invalid(format!(
                                "dropping keyspace {id}, which does not exist"
                            )));
                        };
                        reg.names.remove(&gone.name);
                    }
                    KeyspaceOp::SetOptions { id, options } => {
                        let entry = reg.by_id.get_mut(id).ok_or_else(|| {
                            Error::invalid(format!("setting options of keyspace {id}, which does not exist"))
                        })?;
                        entry.options = options.clone();
                    }
                }
            }
        }
        if let Some(n) = edit.next_keyspace_id {
            self.next_keyspace_id = self.next_keyspace_id.max(n);
        }
        if let Some(o) = &edit.default_options {
            self.default_options = Some(o.clone());
        }
        if let Some(n) = edit.wal_floor {
            self.wal_floor = Some(self.wal_floor.map_or(n, |f| f.max(n)));
        }
        Ok(())
    }
}
