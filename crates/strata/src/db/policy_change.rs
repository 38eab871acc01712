//! Reopening a tree under other per-tree options: every persisted option the
//! caller did not set keeps its recorded value, what the root MANIFEST
//! recorded is compared with the result, incompatible changes are refused, a
//! policy change normalizes the tree in one edit, and the new options are
//! recorded. See "Changing the compaction policy" in docs/ARCHITECTURE.md.

use std::path::Path;

use super::tree_open::Parts;
use crate::compaction::CompactionPolicy;
use crate::error::{Error, Result};
use crate::events::EventListener;
use crate::events::PolicyChangeInfo;
use crate::info_log::InfoLog;
use crate::keyspace_options::keep_recorded;
use crate::options::kinds::MAX_LEVELS;
use crate::options::{KeyspaceOptions, Options};
use crate::version::{BufferOp, KeyspaceOp, VersionEdit, VersionSet};

/// The options the default tree of the database in `dir` (which has a
/// CURRENT file) opens with: `opts` over what the root MANIFEST records for
/// it. Read before the tree is recovered, since they shape it (`num_levels`).
pub(crate) fn resolve_default(opts: Options, dir: &Path) -> Result<Options> {
    let root = VersionSet::load_read_only(opts.vfs.clone(), dir, MAX_LEVELS, |_, _| Ok(()))?;
    match root.default_options() {
        Some(bytes) => keep_recorded(&opts, &bytes, "the default keyspace"),
        // Written before options were recorded: the given ones are all there is.
        None => Ok(opts),
    }
}

/// `opts` with the options of each registered keyspace it names
/// (`Options::with_keyspace`) laid over the recorded ones, so handing back a
/// merge operator or a filter changes nothing else.
pub(super) fn keyspaces_over_recorded(opts: &Options, root: &VersionSet) -> Result<Options> {
    let mut o = opts.clone();
    if o.keyspaces.is_empty() {
        return Ok(o);
    }
    let registry: std::collections::HashMap<String, Vec<u8>> =
        root.keyspaces().into_values().map(|e| (e.name, e.options)).collect();
    for (name, ks) in std::sync::Arc::make_mut(&mut o.keyspaces).iter_mut() {
        if let Some(recorded) = registry.get(name) {
            *ks = ks.over_recorded(recorded, &format!("keyspace {name:?}"))?;
        }
    }
    Ok(o)
}

/// What the root MANIFEST recorded of a tree's options.
pub(super) struct Recorded {
    /// The policy's name (a custom policy's too).
    pub policy: String,
    /// The merge operator's name, if one was set.
    pub merge_operator: Option<String>,
    /// The persisted bytes.
    pub bytes: Vec<u8>,
}

impl Recorded {
    /// Reads persisted options; `whose` names the tree in the error.
    pub(super) fn decode(bytes: &[u8], whose: &str) -> Result<Recorded> {
        let (o, style) =
            KeyspaceOptions::decode(bytes).map_err(|e| Error::corruption(format!("{whose}: {e}")))?;
        Ok(Recorded {
            policy: style.name(),
            merge_operator: o.merge_operator_name().map(str::to_string),
            bytes: bytes.to_vec(),
        })
    }
}

/// Refuses a merge operator whose name differs from the recorded one: the
/// tree's operands were written for that operator. A missing operator is
/// allowed (RocksDB allows it): reading an operand then fails.
pub(super) fn check_merge_operator(tree: &str, recorded: &Recorded, given: &Options) -> Result<()> {
    if let (Some(r), Some(g)) = (&recorded.merge_operator, &given.merge_operator) {
        if r != g.name() {
            return Err(Error::invalid(format!(
                "[{tree}] was written with merge operator {r:?}, but the options give {:?}: \
                 the merge operator cannot be replaced by another",
                g.name()
            )));
        }
    }
    Ok(())
}

/// The persisted form of the per-tree settings of `opts`, keeping the
/// recorded merge operator's name when `opts` gives none.
pub(super) fn to_record(opts: &Options, recorded: Option<&Recorded>) -> Vec<u8> {
    KeyspaceOptions::from_options(opts)
        .with_recorded_merge_operator(recorded.and_then(|r| r.merge_operator.as_deref()))
        .encode()
}

/// The edit that makes the tree of `versions` fit `policy` after a policy
/// change: every compaction buffer dropped when `policy` keeps none (a
/// buffer holds copies of data its run already has, see `version/buffer.rs`,
/// so nothing is lost; its files become obsolete), and the previous policy's
/// state blob cleared. Compact pointers stay: they only choose where a
/// leveled round-robin starts. Idempotent: on a normalized tree it is empty.
pub(super) fn normalization(versions: &VersionSet, policy: &dyn CompactionPolicy) -> VersionEdit {
    let mut edit = VersionEdit::default();
    if !policy.keeps_compaction_buffers() {
        for (l, level) in versions.current().levels.iter().enumerate() {
            for b in &level.buffers {
                for t in &b.tables {
                    edit.buffer_ops.push(BufferOp::DropTable { level: l, run: b.run, table: t.id });
                }
            }
        }
    }
    if versions.policy_state().is_some() {
        edit.policy_state = Some(Vec::new());
    }
    edit
}

fn log_change(tree: &str, from: &str, to: &str, edit: &VersionEdit) {
    log::info!(
        target: "strata::recovery",
        "[{tree}] compaction policy changed from {from} to {to}: {} buffer table(s) dropped, policy state {}",
        edit.buffer_ops.len(),
        if edit.policy_state.is_some() { "cleared" } else { "empty" }
    );
}

/// Tells the listeners of `opts` and the info log that the policy of `tree`
/// changed. Called during the open, which holds no engine lock and has no
/// handle out yet.
fn report_change(opts: &Options, info_log: Option<&InfoLog>, tree: &str, old: &str, new: &str) {
    let info = PolicyChangeInfo { keyspace: tree.to_string(), old: old.to_string(), new: new.to_string() };
    opts.listeners.policy_changed(&info);
    if let Some(l) = info_log {
        l.on_policy_changed(&info);
    }
}

/// The default tree at a read-write open, before any background work:
/// refuses an incompatible merge operator, normalizes the tree if the
/// policy changed, and records the options when they differ from the
/// recorded ones, all in one edit of the root MANIFEST. `created`: the
/// database was just created (nothing recorded yet, by design).
pub(super) fn reconcile_default(
    versions: &VersionSet,
    opts: &Options,
    policy: &dyn CompactionPolicy,
    created: bool,
    info_log: Option<&InfoLog>,
) -> Result<()> {
    let recorded = versions.default_options().map(|b| Recorded::decode(&b, "default options")).transpose()?;
    let given = opts.compaction_style.name();
    let mut edit = VersionEdit::default();
    let mut changed_from = None;
    match &recorded {
        Some(r) => {
            check_merge_operator("default", r, opts)?;
            if r.policy != given {
                edit = normalization(versions, policy);
                log_change("default", &r.policy, &given, &edit);
                changed_from = Some(&r.policy);
            }
        }
        None if !created => log::info!(
            target: "strata::recovery",
            "[default] no recorded options (written before they were recorded): taking policy {given} \
             as the database's policy"
        ),
        None => {}
    }
    let record = to_record(opts, recorded.as_ref());
    if recorded.as_ref().map(|r| &r.bytes) != Some(&record) {
        edit.default_options = Some(record);
    }
    if edit != VersionEdit::default() {
        versions.log_and_apply(edit)?;
    }
    if let Some(old) = changed_from {
        report_change(opts, info_log, "default", old, &given);
    }
    Ok(())
}

/// Keyspace `id` at a read-write open, before any background work: if its
/// policy changed, normalizes its tree (its own MANIFEST) first, then
/// records the given options in the root registry when the open gave
/// options (`Options::with_keyspace`) that differ. A crash in between
/// leaves the old options recorded; the next open under the new policy
/// normalizes again (an empty edit) and records them.
pub(super) fn reconcile_keyspace(
    root: &VersionSet,
    t: &Parts,
    recorded: &Recorded,
    given_options: bool,
    info_log: Option<&InfoLog>,
) -> Result<()> {
    let (id, name, tree, opts, policy) = (t.id, &t.name, &t.versions, &t.opts, t.policy.as_ref());
    let given = opts.compaction_style.name();
    if recorded.policy != given {
        let edit = normalization(tree, policy);
        log_change(name, &recorded.policy, &given, &edit);
        if edit != VersionEdit::default() {
            tree.log_and_apply(edit)?;
        }
    }
    let record = to_record(opts, Some(recorded));
    if given_options && record != recorded.bytes {
        let edit = VersionEdit {
            keyspace_ops: vec![KeyspaceOp::SetOptions { id, options: record }],
            ..VersionEdit::default()
        };
        root.log_and_apply(edit)?;
    }
    if recorded.policy != given {
        report_change(opts, info_log, name, &recorded.policy, &given);
    }
    Ok(())
}
