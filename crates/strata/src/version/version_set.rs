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
                for e in &t.entries {
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
mod tests {
    use super::*;
    use crate::filename::current_path;
    use crate::key::{make_internal_key, ValueKind};
    use crate::version::{NewFile, Version};
    use crate::vfs::{FileLock, MemVfs, RandomAccessFile, RandomOpenOptions, SequentialFile, WritableFile};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::AtomicBool;

    const DIR: &str = "/db";

    fn nf(id: u64, lo: &str, hi: &str) -> NewFile {
        NewFile {
            id,
            size: 1000 + id,
            smallest: make_internal_key(lo.as_bytes(), id + 1, ValueKind::Put),
            largest: make_internal_key(hi.as_bytes(), id, ValueKind::Delete),
            num_entries: 10,
            num_deletions: 1,
            smallest_seq: id,
            largest_seq: id + 1,
            // Some files as older MANIFESTs recorded them, without bloom bits.
            bloom_bits_per_key: (!id.is_multiple_of(4)).then_some(id as f64 / 8.0),
            segments: Vec::new(),
            num_range_dels: id % 3,
        }
    }

    fn mem() -> Arc<MemVfs> {
        let vfs = Arc::new(MemVfs::new());
        vfs.create_dir_all(Path::new(DIR)).unwrap();
        vfs
    }

    /// Level -> [(run id, [file])], comparable across recoveries.
    type Layout = Vec<Vec<(u64, Vec<NewFile>)>>;

    fn layout(v: &Version) -> Layout {
        v.levels
            .iter()
            .map(|l| {
                l.runs.iter().map(|r| (r.id, r.files.iter().map(|f| f.to_new_file()).collect())).collect()
            })
            .collect()
    }

    fn add(vs: &VersionSet, level: usize, run: u64, f: NewFile) -> Result<Arc<Version>> {
        vs.log_and_apply(VersionEdit { new_files: vec![(level, run, f)], ..Default::default() })
    }

    /// A MemVfs whose file syncs (or file creations) fail while the flag is set.
    #[derive(Debug, Default)]
    struct FailingVfs {
        inner: MemVfs,
        fail_sync: Arc<AtomicBool>,
        fail_create: AtomicBool,
    }

    struct FailingFile(Box<dyn WritableFile>, Arc<AtomicBool>);

    impl WritableFile for FailingFile {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.0.append(data)
        }
        fn flush(&mut self) -> Result<()> {
            self.0.flush()
        }
        fn sync(&mut self) -> Result<()> {
            if self.1.load(Ordering::SeqCst) {
                return Err(Error::Io(std::io::Error::other("injected sync failure")));
            }
            self.0.sync()
        }
        fn len(&self) -> u64 {
            self.0.len()
        }
    }

    impl Vfs for FailingVfs {
        fn create_dir_all(&self, dir: &Path) -> Result<()> {
            self.inner.create_dir_all(dir)
        }
        fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
            if self.fail_create.load(Ordering::SeqCst) {
                return Err(Error::Io(std::io::Error::other("injected create failure")));
            }
            Ok(Box::new(FailingFile(self.inner.create(path)?, self.fail_sync.clone())))
        }
        fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
            self.inner.open_sequential(path)
        }
        fn open_random(&self, path: &Path, opts: RandomOpenOptions) -> Result<Arc<dyn RandomAccessFile>> {
            self.inner.open_random(path, opts)
        }
        fn exists(&self, path: &Path) -> bool {
            self.inner.exists(path)
        }
        fn file_size(&self, path: &Path) -> Result<u64> {
            self.inner.file_size(path)
        }
        fn remove_file(&self, path: &Path) -> Result<()> {
            self.inner.remove_file(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> Result<()> {
            self.inner.rename(from, to)
        }
        fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
            self.inner.list_dir(dir)
        }
        fn sync_dir(&self, dir: &Path) -> Result<()> {
            self.inner.sync_dir(dir)
        }
        fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
            self.inner.lock(path)
        }
        fn open_append_raw(&self, path: &Path) -> Result<(Box<dyn crate::vfs::RawFile>, u64)> {
            self.inner.open_append_raw(path)
        }
        fn truncate(&self, path: &Path, len: u64) -> Result<()> {
            self.inner.truncate(path, len)
        }
    }

    #[test]
    fn create_apply_recover_keeps_everything() {
        let vfs = mem();
        let dir = Path::new(DIR);
        let vs = VersionSet::create(vfs.clone(), dir, 4).unwrap();
        assert_eq!(vs.manifest_number(), 1);
        assert_eq!(read_current(&*vfs, dir).unwrap(), 1);
        let (r0, f0, r1, f1, f2, wal) = (
            vs.new_file_number(),
            vs.new_file_number(),
            vs.new_file_number(),
            vs.new_file_number(),
            vs.new_file_number(),
            vs.new_file_number(),
        );
        vs.set_last_sequence(42);
        vs.log_and_apply(VersionEdit {
            log_number: Some(wal),
            new_files: vec![(0, r0, nf(f0, "a", "m")), (1, r1, nf(f1, "a", "c")), (1, r1, nf(f2, "d", "f"))],
            compact_pointers: vec![(1, b"c".to_vec())],
            policy_state: Some(b"blob".to_vec()),
            ..Default::default()
        })
        .unwrap();
        vs.log_and_apply(VersionEdit {
            deleted_files: vec![(0, r0, f0)],
            compact_pointers: vec![(2, b"q".to_vec()), (1, b"d".to_vec())],
            last_sequence: Some(50),
            ..Default::default()
        })
        .unwrap();
        vs.mark_file_number_used(100);
        assert_eq!(vs.new_file_number(), 101);
        let before = layout(&vs.current());
        assert_eq!(vs.last_sequence(), 50);
        assert_eq!(vs.live_files(), std::collections::HashSet::from([f1, f2]));
        let next = vs.new_file_number();
        // The counter is only persisted by the next apply.
        vs.log_and_apply(VersionEdit::default()).unwrap();
        drop(vs);

        let vs = VersionSet::recover(vfs.clone(), dir, 4).unwrap();
        assert_eq!(layout(&vs.current()), before);
        assert_eq!(vs.last_sequence(), 50);
        assert_eq!(vs.log_number(), wal);
        assert_eq!(vs.compact_pointers(), vec![None, Some(b"d".to_vec()), Some(b"q".to_vec()), None]);
        assert_eq!(vs.policy_state(), Some(b"blob".to_vec()));
        // Recovery wrote nothing; the first apply writes a fresh MANIFEST with
        // a number never handed out before.
        let recovered = vs.manifest_number();
        assert_eq!(read_current(&*vfs, dir).unwrap(), recovered);
        vs.log_and_apply(VersionEdit::default()).unwrap();
        assert!(vs.manifest_number() > next);
        assert_eq!(read_current(&*vfs, dir).unwrap(), vs.manifest_number());
        assert!(vs.new_file_number() > vs.manifest_number());
        vs.current().check_invariants().unwrap();
        // More levels than stored is fine; the new ones are empty.
        drop(vs);
        let vs = VersionSet::recover(vfs.clone(), dir, 6).unwrap();
        assert_eq!(vs.current().num_levels(), 6);
        assert_eq!(vs.compact_pointers().len(), 6);
        drop(vs);
        // Fewer levels than the tree uses is InvalidArgument; fewer than allocated but unused is fine.
        assert!(matches!(VersionSet::recover(vfs.clone(), dir, 1), Err(Error::InvalidArgument(_))));
        assert_eq!(VersionSet::recover(vfs, dir, 2).unwrap().current().level_files(1), 2);
    }

    #[test]
    fn empty_policy_state_clears_it() {
        let vfs = mem();
        let vs = VersionSet::create(vfs.clone(), Path::new(DIR), 2).unwrap();
        vs.log_and_apply(VersionEdit { policy_state: Some(vec![1]), ..Default::default() }).unwrap();
        vs.log_and_apply(VersionEdit { policy_state: Some(vec![]), ..Default::default() }).unwrap();
        assert_eq!(vs.policy_state(), None);
        drop(vs);
        assert_eq!(VersionSet::recover(vfs, Path::new(DIR), 2).unwrap().policy_state(), None);
    }

    #[test]
    fn rollover_keeps_state() {
        let vfs = mem();
        let dir = Path::new(DIR);
        let vs = VersionSet::create(vfs.clone(), dir, 3).unwrap();
        vs.set_max_manifest_size(300);
        let mut manifests = std::collections::HashSet::new();
        for i in 0..40u64 {
            let (run, id) = (vs.new_file_number(), vs.new_file_number());
            let k = format!("k{i:03}");
            vs.log_and_apply(VersionEdit {
                new_files: vec![(0, run, nf(id, &k, &k))],
                compact_pointers: vec![(2, k.into_bytes())],
                policy_state: Some(vec![i as u8]),
                ..Default::default()
            })
            .unwrap();
            manifests.insert(vs.manifest_number());
            // Everything CURRENT points at is durable: the MANIFEST's bytes and the
            // directory entries (new MANIFEST, CURRENT rename).
            let live = manifest_path(dir, vs.manifest_number());
            assert_eq!(vfs.synced_len(&live).unwrap(), vfs.file_size(&live).unwrap());
            assert!(vfs.unsynced_dir_ops(dir).is_empty());
        }
        assert!(manifests.len() > 3, "rolled over {} times", manifests.len() - 1);
        assert_eq!(read_current(&*vfs, dir).unwrap(), vs.manifest_number());
        let before = layout(&vs.current());
        drop(vs);
        let vs = VersionSet::recover(vfs, dir, 3).unwrap();
        assert_eq!(layout(&vs.current()), before);
        assert_eq!(vs.current().levels[0].runs.len(), 40);
        assert_eq!(vs.compact_pointers()[2], Some(b"k039".to_vec()));
        assert_eq!(vs.policy_state(), Some(vec![39]));
    }

    #[test]
    fn torn_last_record_is_dropped_and_earlier_edits_kept() {
        let vfs = mem();
        let dir = Path::new(DIR);
        let vs = VersionSet::create(vfs.clone(), dir, 2).unwrap();
        let (r, a, b) = (vs.new_file_number(), vs.new_file_number(), vs.new_file_number());
        add(&vs, 1, r, nf(a, "a", "b")).unwrap();
        let kept = layout(&vs.current());
        add(&vs, 1, r, nf(b, "c", "d")).unwrap();
        let path = manifest_path(dir, vs.manifest_number());
        drop(vs);
        vfs.truncate(&path, vfs.file_size(&path).unwrap() - 3).unwrap();
        let vs = VersionSet::recover(vfs.clone(), dir, 2).unwrap();
        assert_eq!(layout(&vs.current()), kept);

        // Damage followed by intact records is not a torn tail: Corruption.
        add(&vs, 1, r, nf(b, "c", "d")).unwrap();
        let path = manifest_path(dir, vs.manifest_number());
        drop(vs);
        vfs.corrupt_byte(&path, 10, 0x40).unwrap();
        assert!(VersionSet::recover(vfs, dir, 2).unwrap_err().is_corruption());
    }

    #[test]
    fn recovery_of_an_idle_tree_writes_nothing() {
        let vfs = mem();
        let dir = Path::new(DIR);
        let vs = VersionSet::create(vfs.clone(), dir, 2).unwrap();
        vs.mark_file_number_used(9);
        add(&vs, 1, 3, nf(4, "a", "c")).unwrap();
        drop(vs);
        let before = vfs.list_dir(dir).unwrap();
        let manifest = manifest_path(dir, read_current(&*vfs, dir).unwrap());
        let bytes = vfs.file_size(&manifest).unwrap();
        let vs = VersionSet::recover(vfs.clone(), dir, 2).unwrap();
        assert_eq!(vfs.list_dir(dir).unwrap(), before);
        assert_eq!(vfs.file_size(&manifest).unwrap(), bytes);
        // A torn last record is never appended to: the first apply starts a new MANIFEST.
        add(&vs, 1, 5, nf(6, "d", "f")).unwrap();
        assert_ne!(manifest_path(dir, vs.manifest_number()), manifest);
        assert_eq!(vfs.file_size(&manifest).unwrap(), bytes);
        drop(vs);
        assert_eq!(VersionSet::recover(vfs, dir, 2).unwrap().current().level_files(1), 2);
    }

    #[test]
    fn version_set_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<VersionSet>();
        check::<Version>();
    }

    #[test]
    fn bad_current_is_corruption() {
        let vfs = mem();
        let dir = Path::new(DIR);
        drop(VersionSet::create(vfs.clone(), dir, 2).unwrap());
        let write_current = |s: &[u8]| {
            let mut f = vfs.create(&current_path(dir)).unwrap();
            f.append(s).unwrap();
        };
        write_current(b"MANIFEST-000001");
        assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
        write_current(b"MANIFEST-000077\n");
        assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
        vfs.remove_file(&current_path(dir)).unwrap();
        assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
        write_current(b"MANIFEST-000001\n");
        VersionSet::recover(vfs.clone(), dir, 2).unwrap();
        // An empty MANIFEST, or one whose edit deletes a file that is not there.
        let path = manifest_path(dir, 500);
        drop(vfs.create(&path).unwrap());
        set_current(&*vfs, dir, 500).unwrap();
        assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
        let mut w = ManifestWriter::create(
            &*vfs,
            dir,
            501,
            &VersionEdit { next_file_number: Some(9), ..Default::default() },
        )
        .unwrap();
        w.append(&VersionEdit { deleted_files: vec![(1, 2, 3)], ..Default::default() }.encode()).unwrap();
        set_current(&*vfs, dir, 501).unwrap();
        assert!(VersionSet::recover(vfs.clone(), dir, 2).unwrap_err().is_corruption());
        // No next file number at all.
        drop(ManifestWriter::create(&*vfs, dir, 502, &VersionEdit::default()).unwrap());
        set_current(&*vfs, dir, 502).unwrap();
        assert!(VersionSet::recover(vfs, dir, 2).unwrap_err().is_corruption());
    }

    #[test]
    fn deleted_file_is_queued_only_after_last_version_drops() {
        let vs = VersionSet::create(mem(), Path::new(DIR), 3).unwrap();
        let q = vs.obsolete_files();
        let (r1, a, r2, b) =
            (vs.new_file_number(), vs.new_file_number(), vs.new_file_number(), vs.new_file_number());
        add(&vs, 1, r1, nf(a, "a", "b")).unwrap();
        add(&vs, 2, r2, nf(b, "a", "b")).unwrap();
        let pinned = vs.current();
        let v =
            vs.log_and_apply(VersionEdit { deleted_files: vec![(1, r1, a)], ..Default::default() }).unwrap();
        assert!(!v.all_file_ids().contains(&a));
        assert!(q.take().is_empty(), "an old version still lists the file");
        drop(v);
        drop(pinned);
        assert_eq!(q.take(), vec![a]);
        drop(vs);
        assert!(q.take().is_empty(), "live files are never queued at shutdown");
    }

    #[test]
    fn moved_or_shared_files_are_not_queued() {
        let vs = VersionSet::create(mem(), Path::new(DIR), 3).unwrap();
        let q = vs.obsolete_files();
        let (r1, r2, r3, f) =
            (vs.new_file_number(), vs.new_file_number(), vs.new_file_number(), vs.new_file_number());
        add(&vs, 1, r1, nf(f, "a", "b")).unwrap();
        let old = vs.current();
        // Trivial move L1 -> L2 in one edit.
        vs.log_and_apply(VersionEdit {
            deleted_files: vec![(1, r1, f)],
            new_files: vec![(2, r2, old.levels[1].runs[0].files[0].to_new_file())],
            ..Default::default()
        })
        .unwrap();
        let moved = vs.current();
        assert!(Arc::ptr_eq(&old.levels[1].runs[0].files[0], &moved.levels[2].runs[0].files[0]));
        drop(old);
        // Also listed in a second run, then dropped from one of them.
        add(&vs, 1, r3, nf(f, "a", "b")).unwrap();
        vs.log_and_apply(VersionEdit { deleted_files: vec![(2, r2, f)], ..Default::default() }).unwrap();
        drop(moved);
        assert!(q.take().is_empty());
        assert_eq!(vs.live_files(), std::collections::HashSet::from([f]));
        vs.log_and_apply(VersionEdit { deleted_files: vec![(1, r3, f)], ..Default::default() }).unwrap();
        assert_eq!(q.take(), vec![f]);
    }

    #[test]
    fn invalid_edits_change_nothing() {
        let vfs = mem();
        let dir = Path::new(DIR);
        let vs = VersionSet::create(vfs.clone(), dir, 3).unwrap();
        let (r, a, b) = (vs.new_file_number(), vs.new_file_number(), vs.new_file_number());
        add(&vs, 1, r, nf(a, "a", "c")).unwrap();
        let before = layout(&vs.current());
        let invalid = |res: Result<Arc<Version>>| matches!(res, Err(Error::InvalidArgument(_)));
        assert!(invalid(add(&vs, 1, r, nf(b, "c", "d"))), "overlapping files in a run");
        assert!(invalid(add(&vs, 3, r, nf(b, "x", "y"))), "level out of range");
        assert!(invalid(add(&vs, 1, 999, nf(b, "x", "y"))), "run id never allocated");
        assert!(invalid(add(&vs, 2, r, nf(999, "x", "y"))), "file id never allocated");
        assert!(invalid(vs.log_and_apply(VersionEdit { log_number: Some(999), ..Default::default() })));
        assert!(invalid(
            vs.log_and_apply(VersionEdit { compact_pointers: vec![(3, vec![])], ..Default::default() })
        ));
        assert!(invalid(
            vs.log_and_apply(VersionEdit { deleted_files: vec![(1, r, b)], ..Default::default() })
        ));
        vs.log_and_apply(VersionEdit { log_number: Some(a), ..Default::default() }).unwrap();
        assert!(
            invalid(vs.log_and_apply(VersionEdit { log_number: Some(r), ..Default::default() })),
            "backwards"
        );
        assert_eq!(layout(&vs.current()), before);
        add(&vs, 1, r, nf(b, "d", "e")).unwrap();
        drop(vs);
        assert_eq!(VersionSet::recover(vfs, dir, 3).unwrap().current().level_files(1), 2);
        assert!(matches!(VersionSet::create(mem(), dir, 0), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn failed_manifest_sync_stops_all_later_applies() {
        let failing = Arc::new(FailingVfs::default());
        let fail = failing.fail_sync.clone();
        failing.create_dir_all(Path::new(DIR)).unwrap();
        let vs = VersionSet::create(failing, Path::new(DIR), 2).unwrap();
        let (r, a) = (vs.new_file_number(), vs.new_file_number());
        fail.store(true, Ordering::SeqCst);
        assert!(matches!(add(&vs, 1, r, nf(a, "a", "b")), Err(Error::Io(_))));
        assert!(vs.current().all_file_ids().is_empty(), "nothing published");
        fail.store(false, Ordering::SeqCst);
        assert!(matches!(add(&vs, 1, r, nf(a, "a", "b")), Err(Error::ReadOnly(_))));
        assert!(matches!(vs.log_and_apply(VersionEdit::default()), Err(Error::ReadOnly(_))));
    }

    #[test]
    fn failed_rollover_publishes_then_stops() {
        let failing = Arc::new(FailingVfs::default());
        let vfs: Arc<dyn Vfs> = failing.clone();
        let dir = Path::new(DIR);
        vfs.create_dir_all(dir).unwrap();
        let vs = VersionSet::create(vfs.clone(), dir, 2).unwrap();
        let (r, a) = (vs.new_file_number(), vs.new_file_number());
        vs.set_max_manifest_size(1);
        // The append to the open MANIFEST succeeds; creating the next one fails.
        failing.fail_create.store(true, Ordering::SeqCst);
        let v = add(&vs, 1, r, nf(a, "a", "b")).unwrap();
        assert!(v.all_file_ids().contains(&a));
        assert!(vs.current().all_file_ids().contains(&a));
        failing.fail_create.store(false, Ordering::SeqCst);
        assert!(matches!(vs.log_and_apply(VersionEdit::default()), Err(Error::ReadOnly(_))));
        drop(vs);
        // The edit is durable in the old MANIFEST, which CURRENT still names.
        assert!(VersionSet::recover(vfs, dir, 2).unwrap().live_files().contains(&a));
    }

    #[test]
    fn random_edits_survive_recovery() {
        let mut rng = SmallRng::seed_from_u64(3);
        let vfs = mem();
        let dir = Path::new(DIR);
        let mut vs = VersionSet::create(vfs.clone(), dir, 4).unwrap();
        vs.set_max_manifest_size(2000);
        for step in 0..150 {
            let v = vs.current();
            let mut edit = VersionEdit::default();
            // Delete a few random files from random runs.
            for (l, level) in v.levels.iter().enumerate() {
                for run in &level.runs {
                    for f in &run.files {
                        if rng.gen_bool(0.1) {
                            edit.deleted_files.push((l, run.id, f.id));
                        }
                    }
                }
            }
            // Add a new run of disjoint files, sometimes re-listing a live file elsewhere.
            let l = rng.gen_range(0..4);
            let run = vs.new_file_number();
            let mut k = rng.gen_range(0..50u32) * 10;
            for _ in 0..rng.gen_range(1..4) {
                let id = vs.new_file_number();
                edit.new_files.push((l, run, nf(id, &format!("{k:04}"), &format!("{:04}", k + 5))));
                k += 10;
            }
            if let Some(f) = v.levels.iter().flat_map(|l| &l.runs).flat_map(|r| &r.files).next() {
                edit.new_files.push((rng.gen_range(0..4), vs.new_file_number(), f.to_new_file()));
            }
            vs.log_and_apply(edit).unwrap().check_invariants().unwrap();
            if step % 50 == 49 {
                let before = layout(&vs.current());
                drop(vs);
                vs = VersionSet::recover(vfs.clone(), dir, 4).unwrap();
                vs.set_max_manifest_size(2000);
                assert_eq!(layout(&vs.current()), before);
            }
        }
    }
}
