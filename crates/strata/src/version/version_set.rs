//! `VersionSet`: owns the current Version, the file-number and sequence
//! counters, and the MANIFEST; applies edits durably and recovers them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::filename::manifest_path;
use crate::key::SeqNum;
use crate::vfs::Vfs;

use super::buffer::BufferEntry;
use super::builder::Builder;
use super::edit::{BufferOp, KeyspaceOp, VersionEdit};
use super::file_meta::ObsoleteFiles;
use super::manifest::{read_current, read_manifest, set_current, ManifestWriter};
use super::policy_meta::{KeyspaceEntry, PolicyMeta};
use super::version::Version;

/// Highest level count a MANIFEST may describe (bounds memory on garbage input).
const MAX_LEVELS: usize = 64;

/// MANIFEST size above which `log_and_apply` starts a fresh one.
const DEFAULT_MAX_MANIFEST_SIZE: u64 = 64 << 20;

/// Where applied edits go.
enum Log {
    /// A read-only set: every apply is refused.
    ReadOnly,
    /// A recovered set that has written nothing yet: its first apply starts
    /// a fresh MANIFEST (a snapshot, then `CURRENT`), so an open that changes
    /// nothing in a tree writes nothing there (thousands of idle keyspaces
    /// open without a sync each). The recovered MANIFEST is never appended
    /// to: its last record may be torn.
    Deferred,
    Open(ManifestWriter),
}

/// The MANIFEST being appended to, guarded by the apply mutex.
struct Writer {
    log: Log,
    /// Set once a MANIFEST write failed: every later apply is refused.
    failed: Option<String>,
}

/// The tree's versions and the durable log of their changes.
pub struct VersionSet {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    num_levels: usize,
    current: ArcSwap<Version>,
    next_file_number: AtomicU64,
    last_sequence: AtomicU64,
    log_number: AtomicU64,
    manifest_number: AtomicU64,
    max_manifest_size: AtomicU64,
    obsolete: Arc<ObsoleteFiles>,
    meta: Mutex<PolicyMeta>,
    writer: Mutex<Writer>,
}

/// Counters and policy state restored from (or written to) a MANIFEST.
struct Restored {
    version: Version,
    next_file_number: u64,
    last_sequence: SeqNum,
    log_number: u64,
    meta: PolicyMeta,
    obsolete: Arc<ObsoleteFiles>,
}

impl VersionSet {
    /// Starts an empty tree in `dir` (which must exist): writes `MANIFEST-000001`
    /// holding a snapshot, syncs it, and installs `CURRENT`.
    pub fn create(vfs: Arc<dyn Vfs>, dir: &Path, num_levels: usize) -> Result<VersionSet> {
        check_num_levels(num_levels)?;
        let restored = Restored {
            version: Version { levels: vec![Default::default(); num_levels] },
            next_file_number: 1,
            last_sequence: 0,
            log_number: 0,
            meta: PolicyMeta::new(num_levels),
            obsolete: Arc::new(ObsoleteFiles::new()),
        };
        Self::install(vfs, dir, num_levels, restored)
    }

    /// Rebuilds the state from the MANIFEST named by `CURRENT`. Writes nothing:
    /// the first [`log_and_apply`](Self::log_and_apply) writes the state to a
    /// new MANIFEST and switches `CURRENT` to it. Deletes nothing: the caller
    /// removes old MANIFESTs and files not in [`VersionSet::live_files`].
    pub fn recover(vfs: Arc<dyn Vfs>, dir: &Path, num_levels: usize) -> Result<VersionSet> {
        Self::recover_checked(vfs, dir, num_levels, |_, _| Ok(()))
    }

    /// [`Self::recover`], running `check(version, log_number)` on the replayed
    /// state: an error is returned as is.
    pub fn recover_checked(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        num_levels: usize,
        check: impl FnOnce(&Version, u64) -> Result<()>,
    ) -> Result<VersionSet> {
        let number = read_current(&*vfs, dir)?;
        let restored = Self::replay(&vfs, dir, number, num_levels, check)?;
        Ok(Self::assemble(vfs, dir, num_levels, restored, number, Log::Deferred))
    }

    /// Rebuilds the state from the MANIFEST named by `CURRENT` and writes
    /// nothing: every [`log_and_apply`](Self::log_and_apply) is refused with
    /// `ReadOnly` (for `Db::open_read_only`).
    pub fn load_read_only(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        num_levels: usize,
        check: impl FnOnce(&Version, u64) -> Result<()>,
    ) -> Result<VersionSet> {
        let number = read_current(&*vfs, dir)?;
        Self::load_read_only_at(vfs, dir, number, num_levels, check)
    }

    /// [`Self::load_read_only`] from `MANIFEST-<number>`, whatever `CURRENT`
    /// says (repair, when `CURRENT` is lost).
    pub(crate) fn load_read_only_at(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        number: u64,
        num_levels: usize,
        check: impl FnOnce(&Version, u64) -> Result<()>,
    ) -> Result<VersionSet> {
        let r = Self::replay(&vfs, dir, number, num_levels, check)?;
        Ok(Self::assemble(vfs, dir, num_levels, r, number, Log::ReadOnly))
    }

    /// An empty set that writes nothing and hands out file numbers from
    /// `next_file_number` (repair allocates its new files with it).
    pub(crate) fn scratch(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        num_levels: usize,
        next_file_number: u64,
    ) -> VersionSet {
        let r = Restored {
            version: Version { levels: vec![Default::default(); num_levels] },
            next_file_number,
            last_sequence: 0,
            log_number: 0,
            meta: PolicyMeta::new(num_levels),
            obsolete: Arc::new(ObsoleteFiles::new()),
        };
        Self::assemble(vfs, dir, num_levels, r, 0, Log::ReadOnly)
    }

    /// Replays `MANIFEST-<number>` and checks the result.
    fn replay(
        vfs: &Arc<dyn Vfs>,
        dir: &Path,
        number: u64,
        num_levels: usize,
        check: impl FnOnce(&Version, u64) -> Result<()>,
    ) -> Result<Restored> {
        check_num_levels(num_levels)?;
        let path = manifest_path(dir, number);
        let obsolete = Arc::new(ObsoleteFiles::new());
        // Replay with room for every level a MANIFEST may use, so a tree deeper than
        // requested is reported as such (InvalidArgument) rather than as corruption.
        let mut builder = Builder::new(MAX_LEVELS, obsolete.clone());
        let mut next_file_number = None;
        let (mut last_sequence, mut log_number) = (0, 0);
        let mut meta = PolicyMeta::new(MAX_LEVELS);
        let mut index = 0u64;
        let records = read_manifest(&**vfs, &path, |edit| {
            let at =
                |e: &dyn fmt::Display| Error::corruption(format!("{} record {index}: {e}", path.display()));
            builder.apply(&edit).map_err(|e| at(&e))?;
            next_file_number = next_file_number.max(edit.next_file_number);
            last_sequence = last_sequence.max(edit.last_sequence.unwrap_or(0));
            log_number = log_number.max(edit.log_number.unwrap_or(0));
            meta.apply(&edit).map_err(|e| at(&e))?;
            index += 1;
            Ok(())
        })?;
        if records == 0 {
            return Err(Error::corruption(format!("{} holds no records", path.display())));
        }
        let next = next_file_number
            .ok_or_else(|| Error::corruption(format!("{} records no next file number", path.display())))?;
        // Never hand out a number already on disk, even if the MANIFEST under-reports.
        let used = builder.max_number().max(number).max(log_number);
        let next_file_number = next.max(used.saturating_add(1));
        let version = builder.build(num_levels)?;
        check(&version, log_number)?;
        meta.compact_pointers.truncate(num_levels);
        Ok(Restored { version, next_file_number, last_sequence, log_number, meta, obsolete })
    }

    /// Writes `r` as the snapshot of a fresh MANIFEST, points `CURRENT` at it and
    /// builds the set around it.
    fn install(vfs: Arc<dyn Vfs>, dir: &Path, num_levels: usize, r: Restored) -> Result<VersionSet> {
        let number = r.next_file_number;
        let next_file_number = number + 1;
        let snapshot = snapshot(&r.version, r.log_number, next_file_number, r.last_sequence, &r.meta);
        let manifest = ManifestWriter::create(&*vfs, dir, number, &snapshot)?;
        set_current(&*vfs, dir, number)?;
        let mut r = r;
        r.next_file_number = next_file_number;
        Ok(Self::assemble(vfs, dir, num_levels, r, number, Log::Open(manifest)))
    }

    fn assemble(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        num_levels: usize,
        r: Restored,
        manifest_number: u64,
        log: Log,
    ) -> VersionSet {
        let failed = None;
        VersionSet {
            vfs,
            dir: dir.to_path_buf(),
            num_levels,
            current: ArcSwap::from_pointee(r.version),
            next_file_number: AtomicU64::new(r.next_file_number),
            last_sequence: AtomicU64::new(r.last_sequence),
            log_number: AtomicU64::new(r.log_number),
            manifest_number: AtomicU64::new(manifest_number),
            max_manifest_size: AtomicU64::new(DEFAULT_MAX_MANIFEST_SIZE),
            obsolete: r.obsolete,
            meta: Mutex::new(r.meta),
            writer: Mutex::new(Writer { log, failed }),
        }
    }

    /// Makes `other`'s current tree and counters this set's (a secondary
    /// instance catching up with a fresh read of its primary's MANIFEST).
    pub(crate) fn adopt(&self, other: &VersionSet) {
        self.current.store(other.current());
        self.last_sequence.store(other.last_sequence(), Ordering::SeqCst);
        self.mark_file_number_used(other.next_file_number.load(Ordering::SeqCst).saturating_sub(1));
        self.log_number.store(other.log_number(), Ordering::SeqCst);
    }

    /// The newest published Version (lock-free).
    pub fn current(&self) -> Arc<Version> {
        self.current.load_full()
    }

    /// Allocates a file number (also used for run ids).
    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// Makes sure `n` is never handed out again (e.g. a WAL number found on disk).
    pub fn mark_file_number_used(&self, n: u64) {
        self.next_file_number.fetch_max(n.saturating_add(1), Ordering::SeqCst);
    }

    /// The last sequence number used.
    pub fn last_sequence(&self) -> SeqNum {
        self.last_sequence.load(Ordering::SeqCst)
    }

    /// Sets the last sequence number used.
    pub fn set_last_sequence(&self, s: SeqNum) {
        self.last_sequence.store(s, Ordering::SeqCst);
    }

    /// WALs numbered `>=` this must be replayed at recovery.
    pub fn log_number(&self) -> u64 {
        self.log_number.load(Ordering::SeqCst)
    }

    /// Number of the live MANIFEST (older ones may be deleted).
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number.load(Ordering::SeqCst)
    }

    /// Per-level round-robin cursors (`num_levels` entries).
    pub fn compact_pointers(&self) -> Vec<Option<Vec<u8>>> {
        self.meta.lock().compact_pointers.clone()
    }

    /// The policy's persisted blob, if any.
    pub fn policy_state(&self) -> Option<Vec<u8>> {
        self.meta.lock().policy_state.clone()
    }

    /// The keyspace registry (root MANIFEST): live keyspaces by id.
    pub fn keyspaces(&self) -> std::collections::BTreeMap<u32, KeyspaceEntry> {
        self.meta.lock().keyspaces.by_id.clone()
    }

    /// The WALs the root MANIFEST recorded as created, at or above its WAL
    /// floor: each must be on disk.
    pub fn recorded_wals(&self) -> Vec<u64> {
        self.meta.lock().wals.iter().copied().collect()
    }

    /// Whether the registry (root MANIFEST) has a live keyspace `name`.
    pub(crate) fn has_keyspace(&self, name: &str) -> bool {
        self.meta.lock().keyspaces.has_name(name)
    }

    /// The default tree's persisted options (root MANIFEST), if recorded.
    pub(crate) fn default_options(&self) -> Option<Vec<u8>> {
        self.meta.lock().default_options.clone()
    }

    /// The oldest WAL still needed, as last recorded (root MANIFEST of a
    /// database with keyspaces): it exists, and so does every tree's log WAL
    /// above it.
    pub fn wal_floor(&self) -> Option<u64> {
        self.meta.lock().wal_floor
    }

    /// The next keyspace id to hand out (ids start at 1 and are never reused).
    pub fn next_keyspace_id(&self) -> u32 {
        self.meta.lock().next_keyspace_id.max(1)
    }

    /// True once a keyspace was ever created in this (root) MANIFEST.
    pub fn ever_had_keyspaces(&self) -> bool {
        self.meta.lock().next_keyspace_id > 0
    }

    /// The queue of file ids that no Version references any more.
    pub fn obsolete_files(&self) -> Arc<ObsoleteFiles> {
        self.obsolete.clone()
    }

    /// Ids of the files of the current Version.
    pub fn live_files(&self) -> std::collections::HashSet<u64> {
        self.current().all_file_ids()
    }

    /// MANIFEST size above which the next apply starts a fresh one (tests shrink it).
    pub fn set_max_manifest_size(&self, bytes: u64) {
        self.max_manifest_size.store(bytes, Ordering::SeqCst);
    }

    /// Validates `edit` against the current Version, makes it durable in the
    /// MANIFEST, then publishes the resulting Version and marks the files it no
    /// longer lists obsolete. Fills in `next_file_number` (and `last_sequence` if
    /// unset). An invalid edit is `InvalidArgument` and changes nothing. A failed
    /// MANIFEST append or sync publishes nothing, returns that error, and makes
    /// every later call fail with `ReadOnly`. A failed rollover after a durable
    /// append still publishes (the edit is in both the old and the new MANIFEST)
    /// but also makes later calls fail with `ReadOnly`.
    pub fn log_and_apply(&self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        let mut w = self.writer.lock();
        if let Some(why) = &w.failed {
            return Err(Error::ReadOnly(why.clone()));
        }
        match w.log {
            Log::ReadOnly => return Err(Error::opened_read_only()),
            Log::Deferred => {
                if let Err(e) = self.roll_over(&mut w, &self.current()) {
                    w.failed = Some(format!("MANIFEST write failed: {e}"));
                    return Err(e);
                }
            }
            Log::Open(_) => {}
        }
        if let Some(n) = edit.next_file_number {
            self.next_file_number.fetch_max(n, Ordering::SeqCst);
        }
        let next = self.next_file_number.load(Ordering::SeqCst);
        edit.next_file_number = Some(next);
        edit.last_sequence = Some(edit.last_sequence.unwrap_or_else(|| self.last_sequence()));
        self.validate_numbers(&edit, next)?;

        let base = self.current();
        let mut builder = Builder::from_version(&base, self.obsolete.clone());
        let unlisted = builder.apply(&edit)?;
        let version = Arc::new(builder.build(self.num_levels)?);
        self.meta.lock().check(&edit)?;

        let Log::Open(manifest) = &mut w.log else {
            return Err(Error::opened_read_only());
        };
        let appended = manifest.append(&edit.encode()).map(|()| manifest.len());
        let manifest_len = match appended {
            Ok(len) => len,
            Err(e) => {
                w.failed = Some(format!("MANIFEST write failed: {e}"));
                return Err(e);
            }
        };
        if let Some(n) = edit.log_number {
            self.log_number.store(n, Ordering::SeqCst);
        }
        self.last_sequence.fetch_max(edit.last_sequence.unwrap_or(0), Ordering::SeqCst);
        // Checked above, and only this writer (under `writer`) changes it.
        if let Err(e) = self.meta.lock().apply(&edit) {
            w.failed = Some(format!("policy state diverged from the MANIFEST: {e}"));
            return Err(e);
        }
        if manifest_len > self.max_manifest_size.load(Ordering::SeqCst) {
            if let Err(e) = self.roll_over(&mut w, &version) {
                w.failed = Some(format!("MANIFEST rollover failed: {e}"));
            }
        }
        self.current.store(version.clone());
        for f in unlisted {
            f.mark_obsolete();
        }
        Ok(version)
    }

    /// Rejects numbers that were never allocated (they would be handed out again)
    /// and a log number that moves backwards.
    fn validate_numbers(&self, edit: &VersionEdit, next: u64) -> Result<()> {
        if let Some(n) = edit.log_number {
            if n < self.log_number() || n >= next {
                return Err(Error::invalid(format!("log number {n} outside {}..{next}", self.log_number())));
            }
        }
        for op in &edit.buffer_ops {
            let (l, run, table, file) = match op {
                BufferOp::Append { level, run, table, file } => (level, run, table, file.id),
                BufferOp::Remove { level, run, table, .. } | BufferOp::DropTable { level, run, table } => {
                    (level, run, table, 0)
                }
                BufferOp::Complete { level, run } => (level, run, &0, 0),
            };
            if *run >= next || *table >= next || file >= next {
                return Err(Error::invalid(format!(
                    "level {l} run {run} buffer table {table}: number not allocated (next is {next})"
                )));
            }
        }
        for (l, run, f) in &edit.new_files {
            if *run >= next || f.id >= next {
                return Err(Error::invalid(format!(
                    "level {l} run {run} file {}: number not allocated (next is {next})",
                    f.id
                )));
            }
        }
        Ok(())
    }

    /// The current Version and an edit rebuilding it, taken together under
    /// the MANIFEST lock so the log number and counters match that Version
    /// (a checkpoint writes the edit as its MANIFEST; holding the Version
    /// keeps its files on disk meanwhile).
    pub(crate) fn checkpoint_state(&self) -> (Arc<Version>, VersionEdit) {
        let _w = self.writer.lock();
        let version = self.current();
        let meta = self.meta.lock().clone();
        let next = self.next_file_number.load(Ordering::SeqCst);
        let snap = snapshot(&version, self.log_number(), next, self.last_sequence(), &meta);
        (version, snap)
    }

    /// Starts a new MANIFEST holding a snapshot of `version` and switches `CURRENT`.
    fn roll_over(&self, w: &mut Writer, version: &Version) -> Result<()> {
        let number = self.new_file_number();
        let meta = self.meta.lock().clone();
        let next = self.next_file_number.load(Ordering::SeqCst);
        let snap = snapshot(version, self.log_number(), next, self.last_sequence(), &meta);
        let manifest = ManifestWriter::create(&*self.vfs, &self.dir, number, &snap)?;
        set_current(&*self.vfs, &self.dir, number)?;
        self.manifest_number.store(manifest.number(), Ordering::SeqCst);
        w.log = Log::Open(manifest);
        Ok(())
    }
}

/// An edit that rebuilds the whole state from nothing.
fn snapshot(
    v: &Version,
    log_number: u64,
    next_file_number: u64,
    last: SeqNum,
    meta: &PolicyMeta,
) -> VersionEdit {
    let mut new_files = Vec::new();
    let mut buffer_ops = Vec::new();
    for (l, level) in v.levels.iter().enumerate() {
        for run in &level.runs {
            new_files.extend(run.files.iter().map(|f| (l, run.id, f.to_new_file())));
        }
        for b in &level.buffers {
            // Oldest table first: each op creates its table as the newest.
            for t in b.tables.iter().rev() {
                for e in t.entries() {
                    let (level, run, table) = (l, b.run, t.id);
                    buffer_ops.push(match e {
                        BufferEntry::Present(f) => {
                            BufferOp::Append { level, run, table, file: f.to_new_file() }
                        }
                        BufferEntry::Removed { smallest, largest } => {
                            BufferOp::Remove { level, run, table, lo: smallest.clone(), hi: largest.clone() }
                        }
                    });
                }
            }
            if b.complete {
                buffer_ops.push(BufferOp::Complete { level: l, run: b.run });
            }
        }
    }
    VersionEdit {
        log_number: Some(log_number),
        next_file_number: Some(next_file_number),
        last_sequence: Some(last),
        deleted_files: Vec::new(),
        new_files,
        compact_pointers: (meta.compact_pointers.iter().enumerate())
            .filter_map(|(l, k)| Some((l, k.clone()?)))
            .collect(),
        policy_state: meta.policy_state.clone(),
        buffer_ops,
        keyspace_ops: (meta.keyspaces.by_id.iter())
            .map(|(id, e)| KeyspaceOp::Add { id: *id, name: e.name.clone(), options: e.options.clone() })
            .collect(),
        // Only databases that ever created a keyspace write the registry.
        next_keyspace_id: (meta.next_keyspace_id > 0).then_some(meta.next_keyspace_id),
        default_options: meta.default_options.clone(),
        wal_floor: meta.wal_floor,
        wals_created: meta.wals.iter().copied().collect(),
    }
}

fn check_num_levels(n: usize) -> Result<()> {
    if n == 0 || n > MAX_LEVELS {
        return Err(Error::invalid(format!("num_levels must be in 1..={MAX_LEVELS}, got {n}")));
    }
    Ok(())
}

impl fmt::Debug for VersionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VersionSet")
            .field("dir", &self.dir)
            .field("num_levels", &self.num_levels)
            .field("manifest_number", &self.manifest_number())
            .field("next_file_number", &self.next_file_number.load(Ordering::SeqCst))
            .field("last_sequence", &self.last_sequence())
            .field("log_number", &self.log_number())
            .finish()
    }
}

#[cfg(test)]
#[path = "version_set_tests.rs"]
mod tests;
