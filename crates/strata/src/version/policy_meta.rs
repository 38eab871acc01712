//! What the MANIFEST keeps for the compaction policy besides the tree:
//! round-robin cursors and the policy's own state blob, and (root MANIFEST
//! only) the keyspace registry.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
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

impl Registry {
    /// Whether a live keyspace is named `name`.
    pub(crate) fn has_name(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// State persisted alongside the files, read by compaction policies.
#[derive(Clone, Debug)]
pub(crate) struct PolicyMeta {
    /// Per level: user key of the last compacted file's largest key.
    pub(crate) compact_pointers: Vec<Option<Vec<u8>>>,
    /// The policy's opaque state, as it last returned it.
    pub(crate) policy_state: Option<Vec<u8>>,
    /// Live keyspaces (root MANIFEST only); shared, so a copy of the state
    /// (a snapshot, a checkpoint) does not copy tens of thousands of entries.
    pub(crate) keyspaces: Arc<Registry>,
    /// The next keyspace id; 0 while no keyspace was ever created.
    pub(crate) next_keyspace_id: u32,
    /// The default tree's persisted options (root MANIFEST only); `None` in
    /// databases written before they were recorded.
    pub(crate) default_options: Option<Vec<u8>>,
    /// The oldest WAL still needed, as last recorded (root MANIFEST of a
    /// database with keyspaces); `None` until first recorded.
    pub(crate) wal_floor: Option<u64>,
    /// WALs recorded as created and not below the floor: each must be on disk.
    pub(crate) wals: BTreeSet<u64>,
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
            wals: BTreeSet::new(),
        }
    }

    /// Whether [`Self::apply`] would accept `edit`, without changing
    /// anything (so an apply after the edit is durable cannot fail, and the
    /// registry is never copied to try it).
    pub(crate) fn check(&self, edit: &VersionEdit) -> Result<()> {
        if let Some((l, _)) = edit.compact_pointers.iter().find(|(l, _)| *l >= self.compact_pointers.len()) {
            return Err(Error::invalid(format!("compact pointer for level {l} out of range")));
        }
        if edit.keyspace_ops.is_empty() {
            return Ok(());
        }
        // The registry as the ops before each one leave it: what they added
        // and dropped over the current one.
        let reg = &self.keyspaces;
        // By id, and by name: a snapshot adds every keyspace in one edit.
        let (mut added, mut dropped) = (HashMap::<u32, &str>::new(), HashMap::<u32, &str>::new());
        let (mut added_names, mut dropped_names) = (HashSet::<&str>::new(), HashSet::<&str>::new());
        let live = |id: &u32, added: &HashMap<u32, &str>, dropped: &HashMap<u32, &str>| {
            added.contains_key(id) || (reg.by_id.contains_key(id) && !dropped.contains_key(id))
        };
        for op in &edit.keyspace_ops {
            match op {
                KeyspaceOp::Add { id, name, .. } => {
                    let name_taken = added_names.contains(name.as_str())
                        || (reg.names.contains(name) && !dropped_names.contains(name.as_str()));
                    if *id == 0 || live(id, &added, &dropped) || name_taken {
                        return Err(Error::invalid(format!("keyspace {id} ({name:?}) added twice")));
                    }
                    added.insert(*id, name);
                    added_names.insert(name);
                }
                KeyspaceOp::Drop { id } => {
                    if !live(id, &added, &dropped) {
                        return Err(Error::invalid(format!("dropping keyspace {id}, which does not exist")));
                    }
                    match added.remove(id) {
                        Some(name) => {
                            added_names.remove(name);
                        }
                        None => {
                            let name = reg.by_id[id].name.as_str();
                            dropped.insert(*id, name);
                            dropped_names.insert(name);
                        }
                    }
                }
                KeyspaceOp::SetOptions { id, .. } => {
                    if !live(id, &added, &dropped) {
                        return Err(Error::invalid(format!(
                            "setting options of keyspace {id}, which does not exist"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes the edit's cursors and blob (an empty blob clears the stored
    /// one) and registry changes; an edit [`Self::check`] refuses changes nothing.
    pub(crate) fn apply(&mut self, edit: &VersionEdit) -> Result<()> {
        self.check(edit)?;
        for (l, key) in &edit.compact_pointers {
            self.compact_pointers[*l] = Some(key.clone());
        }
        if let Some(state) = &edit.policy_state {
            self.policy_state = Some(state.clone()).filter(|s| !s.is_empty());
        }
        if !edit.keyspace_ops.is_empty() {
            let reg = Arc::make_mut(&mut self.keyspaces);
            for op in &edit.keyspace_ops {
                match op {
                    KeyspaceOp::Add { id, name, options } => {
                        reg.names.insert(name.clone());
                        reg.by_id.insert(*id, KeyspaceEntry { name: name.clone(), options: options.clone() });
                        self.next_keyspace_id = self.next_keyspace_id.max(id.saturating_add(1));
                    }
                    KeyspaceOp::Drop { id } => {
                        if let Some(gone) = reg.by_id.remove(id) {
                            reg.names.remove(&gone.name);
                        }
                    }
                    KeyspaceOp::SetOptions { id, options } => {
                        if let Some(entry) = reg.by_id.get_mut(id) {
                            entry.options = options.clone();
                        }
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
        self.wals.extend(&edit.wals_created);
        if let Some(floor) = self.wal_floor {
            self.wals = self.wals.split_off(&floor);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(id: u32, name: &str) -> KeyspaceOp {
        KeyspaceOp::Add { id, name: name.into(), options: vec![id as u8] }
    }

    fn edit(ops: Vec<KeyspaceOp>) -> VersionEdit {
        VersionEdit { keyspace_ops: ops, ..Default::default() }
    }

    fn names(m: &PolicyMeta) -> Vec<(u32, String)> {
        m.keyspaces.by_id.iter().map(|(id, e)| (*id, e.name.clone())).collect()
    }

    /// The registry is checked without being copied; an edit it refuses
    /// changes nothing, whatever op of the edit is wrong.
    #[test]
    fn registry_edits_are_checked_op_by_op_and_refused_whole() {
        let mut m = PolicyMeta::new(3);
        m.apply(&edit(vec![add(1, "a"), add(2, "b")])).unwrap();
        let before = names(&m);
        for bad in [
            vec![add(3, "a")],
            vec![add(2, "c")],
            vec![add(3, "c"), add(4, "c")],
            vec![add(0, "z")],
            vec![KeyspaceOp::Drop { id: 9 }],
            vec![KeyspaceOp::Drop { id: 1 }, KeyspaceOp::Drop { id: 1 }],
            vec![add(3, "c"), KeyspaceOp::SetOptions { id: 5, options: vec![] }],
        ] {
            assert!(m.check(&edit(bad.clone())).is_err(), "{bad:?}");
            assert!(m.apply(&edit(bad)).is_err());
            assert_eq!(names(&m), before);
        }
        let pointer = VersionEdit { compact_pointers: vec![(3, b"k".to_vec())], ..Default::default() };
        assert!(m.apply(&pointer).is_err());
        // A name dropped earlier in the same edit may be taken again; an id
        // added and dropped in one edit leaves nothing.
        m.apply(&edit(vec![
            KeyspaceOp::Drop { id: 1 },
            add(3, "a"),
            add(4, "d"),
            KeyspaceOp::Drop { id: 4 },
        ]))
        .unwrap();
        assert_eq!(names(&m), vec![(2, "b".into()), (3, "a".into())]);
        assert!(m.keyspaces.has_name("a") && !m.keyspaces.has_name("d"));
        assert_eq!(m.next_keyspace_id, 5);
    }
}
