//! What the MANIFEST keeps for the compaction policy besides the tree:
//! round-robin cursors and the policy's own state blob.

use crate::error::{Error, Result};

use super::edit::VersionEdit;

/// State persisted alongside the files, read by compaction policies.
#[derive(Clone, Debug)]
pub(crate) struct PolicyMeta {
    /// Per level: user key of the last compacted file's largest key.
    pub(crate) compact_pointers: Vec<Option<Vec<u8>>>,
    /// The policy's opaque state, as it last returned it.
    pub(crate) policy_state: Option<Vec<u8>>,
}

impl PolicyMeta {
    /// No cursors and no state, for `num_levels` levels.
    pub(crate) fn new(num_levels: usize) -> Self {
        PolicyMeta { compact_pointers: vec![None; num_levels], policy_state: None }
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
        Ok(())
    }
}
