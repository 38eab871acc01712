//! A [`Vfs`] wrapper that injects I/O errors, at seeded random rates or at
//! chosen operations, so tests can check what the engine does when the disk
//! fails (LevelDB's `FaultInjectionTestEnv`, RocksDB's `FaultInjectionTestFS`).
//!
//! Every injected error is [`Error::Io`] with a message starting
//! `injected fault: <op>`. Faults only fire while the wrapper is enabled, so a
//! test can open a database cleanly and then switch them on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileLock, RandomAccessFile, RandomOpenOptions, SequentialFile, Vfs, WritableFile};
use crate::error::{Error, Result};

/// One kind of file-system operation a fault can hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// `open_sequential` / `open_random`.
    Open,
    /// `RandomAccessFile::read_at`.
    ReadAt,
    /// `SequentialFile::read`.
    SequentialRead,
    /// `WritableFile::append`.
    Append,
    /// `WritableFile::flush`.
    Flush,
    /// `WritableFile::sync`.
    Sync,
    /// `Vfs::sync_dir`.
    SyncDir,
    /// `Vfs::create` and `Vfs::create_dir_all`.
    Create,
    /// `Vfs::rename`.
    Rename,
    /// `Vfs::remove_file`.
    Remove,
    /// `Vfs::list_dir`.
    ListDir,
    /// `Vfs::lock`.
    Lock,
    /// `Vfs::file_size`.
    FileSize,
}

impl FaultOp {
    /// Every operation, in counter order.
    pub const ALL: [FaultOp; 13] = [
        FaultOp::Open,
        FaultOp::ReadAt,
        FaultOp::SequentialRead,
        FaultOp::Append,
        FaultOp::Flush,
        FaultOp::Sync,
        FaultOp::SyncDir,
        FaultOp::Create,
        FaultOp::Rename,
        FaultOp::Remove,
        FaultOp::ListDir,
        FaultOp::Lock,
        FaultOp::FileSize,
    ];

    /// The rate class this operation belongs to.
    pub fn kind(self) -> FaultKind {
        match self {
            FaultOp::Open | FaultOp::ReadAt | FaultOp::SequentialRead => FaultKind::Read,
            FaultOp::Append | FaultOp::Flush => FaultKind::Write,
            FaultOp::Sync | FaultOp::SyncDir => FaultKind::Sync,
            FaultOp::Create
            | FaultOp::Rename
            | FaultOp::Remove
            | FaultOp::ListDir
            | FaultOp::Lock
            | FaultOp::FileSize => FaultKind::Metadata,
        }
    }

    /// The name used in error messages (`injected fault: sync`).
    pub fn name(self) -> &'static str {
        match self {
            FaultOp::Open => "open",
            FaultOp::ReadAt => "read_at",
            FaultOp::SequentialRead => "read",
            FaultOp::Append => "append",
            FaultOp::Flush => "flush",
            FaultOp::Sync => "sync",
            FaultOp::SyncDir => "sync_dir",
            FaultOp::Create => "create",
            FaultOp::Rename => "rename",
            FaultOp::Remove => "remove",
            FaultOp::ListDir => "list_dir",
            FaultOp::Lock => "lock",
            FaultOp::FileSize => "file_size",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for FaultOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Rate classes of [`FaultOp`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// Opening a file for reading, and reads.
    Read,
    /// Appends and flushes.
    Write,
    /// File and directory syncs.
    Sync,
    /// Create, rename, remove, list, lock, size.
    Metadata,
}

/// Which paths faults may hit; the others always pass through.
#[derive(Clone)]
pub struct PathFilter {
    pred: Arc<dyn Fn(&Path) -> bool + Send + Sync>,
    what: String,
}

impl PathFilter {
    /// Every path.
    pub fn all() -> Self {
        PathFilter::new("all paths", |_| true)
    }

    /// Paths for which `pred` is true; `what` describes them in `Debug` output.
    pub fn new(what: impl Into<String>, pred: impl Fn(&Path) -> bool + Send + Sync + 'static) -> Self {
        PathFilter { pred: Arc::new(pred), what: what.into() }
    }

    /// Files whose extension is `ext` (no dot), e.g. `"sst"` or `"log"`.
    pub fn extension(ext: &str) -> Self {
        let e = ext.to_string();
        PathFilter::new(format!("*.{ext}"), move |p| p.extension().is_some_and(|x| x == e.as_str()))
    }

    /// Files whose name starts with `prefix`, e.g. `"MANIFEST-"`.
    pub fn name_prefix(prefix: &str) -> Self {
        let pre = prefix.to_string();
        PathFilter::new(format!("{prefix}*"), move |p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(pre.as_str()))
        })
    }

    /// True if faults may hit `path`.
    pub fn matches(&self, path: &Path) -> bool {
        (self.pred)(path)
    }
}

impl fmt::Debug for PathFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PathFilter({})", self.what)
    }
}

impl Default for PathFilter {
    fn default() -> Self {
        PathFilter::all()
    }
}

/// Random fault rates and their scope; see [`FaultVfs`].
#[derive(Clone, Debug, Default)]
pub struct FaultConfig {
    /// Seed of the generator that decides random faults.
    pub seed: u64,
    /// Probability that an open or read fails.
    pub read_rate: f64,
    /// Probability that an append or flush fails.
    pub write_rate: f64,
    /// Probability that a file or directory sync fails.
    pub sync_rate: f64,
    /// Probability that a create, rename, remove, list, lock or size query fails.
    pub metadata_rate: f64,
    /// A failed append first writes a random prefix of its data (a torn write),
    /// as a full disk or a dying device may.
    pub torn_writes: bool,
    /// Paths faults may hit (random and armed ones alike).
    pub filter: PathFilter,
}

impl FaultConfig {
    /// No random faults, all paths; arm faults with [`FaultVfs::fail_after`].
    pub fn new(seed: u64) -> Self {
        FaultConfig { seed, ..Default::default() }
    }

    /// The same `rate` for every kind of operation.
    #[must_use]
    pub fn with_all_rates(mut self, rate: f64) -> Self {
        self.read_rate = rate;
        self.write_rate = rate;
        self.sync_rate = rate;
        self.metadata_rate = rate;
        self
    }

    /// Sets the rate of one kind of operation.
    #[must_use]
    pub fn with_rate(mut self, kind: FaultKind, rate: f64) -> Self {
        *self.rate_mut(kind) = rate;
        self
    }

    /// Restricts faults to paths `filter` matches.
    #[must_use]
    pub fn with_filter(mut self, filter: PathFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Makes failed appends write a random prefix first.
    #[must_use]
    pub fn with_torn_writes(mut self, torn: bool) -> Self {
        self.torn_writes = torn;
        self
    }

    fn rate_mut(&mut self, kind: FaultKind) -> &mut f64 {
        match kind {
            FaultKind::Read => &mut self.read_rate,
            FaultKind::Write => &mut self.write_rate,
            FaultKind::Sync => &mut self.sync_rate,
            FaultKind::Metadata => &mut self.metadata_rate,
        }
    }

    fn rate(&self, kind: FaultKind) -> f64 {
        match kind {
            FaultKind::Read => self.read_rate,
            FaultKind::Write => self.write_rate,
            FaultKind::Sync => self.sync_rate,
            FaultKind::Metadata => self.metadata_rate,
        }
    }
}

const N_OPS: usize = FaultOp::ALL.len();

/// A fault armed for one operation: let `skip` matching calls pass, then fail `count`.
#[derive(Clone, Copy, Debug, Default)]
struct Armed {
    skip: u64,
    count: u64,
}

#[derive(Debug)]
struct Shared {
    enabled: AtomicBool,
    cfg: Mutex<FaultConfig>,
    /// splitmix64 state.
    rng: Mutex<u64>,
    armed: Mutex<[Armed; N_OPS]>,
    injected: [AtomicU64; N_OPS],
    seen: [AtomicU64; N_OPS],
}

impl Shared {
    fn next_u64(&self) -> u64 {
        let mut s = self.rng.lock();
        *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform float in `[0, 1)`.
    fn next_f64(&self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Counts the call and decides whether it fails; eligible if the filter
    /// matches any of `paths`.
    fn should_fail(&self, op: FaultOp, paths: &[&Path]) -> bool {
        self.seen[op.index()].fetch_add(1, Ordering::Relaxed);
        if !self.enabled.load(Ordering::Acquire) {
            return false;
        }
        let rate = {
            let cfg = self.cfg.lock();
            if !paths.iter().any(|p| cfg.filter.matches(p)) {
                return false;
            }
            cfg.rate(op.kind())
        };
        let armed_hit = {
            let mut armed = self.armed.lock();
            let a = &mut armed[op.index()];
            if a.count == 0 {
                false
            } else if a.skip > 0 {
                a.skip -= 1;
                false
            } else {
                a.count -= 1;
                true
            }
        };
        let hit = armed_hit || (rate > 0.0 && self.next_f64() < rate);
        if hit {
            self.injected[op.index()].fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    fn check(&self, op: FaultOp, path: &Path) -> Result<()> {
        if self.should_fail(op, &[path]) {
            Err(injected(op, path))
        } else {
            Ok(())
        }
    }
}

/// The error every injected fault returns.
fn injected(op: FaultOp, path: &Path) -> Error {
    Error::Io(io::Error::other(format!("injected fault: {op} ({})", path.display())))
}

/// Wraps any [`Vfs`] and makes chosen operations fail; clones share state, so
/// a test keeps one to steer the faults while the database owns another.
#[derive(Clone)]
pub struct FaultVfs {
    inner: Arc<dyn Vfs>,
    shared: Arc<Shared>,
}

impl fmt::Debug for FaultVfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultVfs")
            .field("inner", &self.inner)
            .field("enabled", &self.enabled())
            .field("injected", &self.injected_total())
            .finish()
    }
}

impl FaultVfs {
    /// Wraps `inner`; faults start enabled with `cfg`'s rates.
    pub fn new(inner: Arc<dyn Vfs>, cfg: FaultConfig) -> Self {
        let shared = Shared {
            enabled: AtomicBool::new(true),
            rng: Mutex::new(cfg.seed),
            cfg: Mutex::new(cfg),
            armed: Mutex::new([Armed::default(); N_OPS]),
            injected: std::array::from_fn(|_| AtomicU64::new(0)),
            seen: std::array::from_fn(|_| AtomicU64::new(0)),
        };
        FaultVfs { inner, shared: Arc::new(shared) }
    }

    /// The wrapped file system.
    pub fn inner(&self) -> &Arc<dyn Vfs> {
        &self.inner
    }

    /// Turns every fault (random and armed) on or off.
    pub fn set_enabled(&self, on: bool) {
        self.shared.enabled.store(on, Ordering::Release);
    }

    /// True while faults may fire.
    pub fn enabled(&self) -> bool {
        self.shared.enabled.load(Ordering::Acquire)
    }

    /// Replaces rates, filter and torn-write setting; reseeds the generator.
    pub fn set_config(&self, cfg: FaultConfig) {
        *self.shared.rng.lock() = cfg.seed;
        *self.shared.cfg.lock() = cfg;
    }

    /// The current configuration.
    pub fn config(&self) -> FaultConfig {
        self.shared.cfg.lock().clone()
    }

    /// Arms a deterministic fault: of the next calls of `op` on matching paths
    /// (while enabled), `skip` pass and then `count` fail. Replaces an earlier
    /// arming of `op`.
    pub fn fail_after(&self, op: FaultOp, skip: u64, count: u64) {
        self.shared.armed.lock()[op.index()] = Armed { skip, count };
    }

    /// Arms `op` to fail on its next matching call.
    pub fn fail_next(&self, op: FaultOp) {
        self.fail_after(op, 0, 1);
    }

    /// Disarms every armed fault.
    pub fn disarm(&self) {
        *self.shared.armed.lock() = [Armed::default(); N_OPS];
    }

    /// Armed faults of `op` that have not fired yet.
    pub fn armed_remaining(&self, op: FaultOp) -> u64 {
        self.shared.armed.lock()[op.index()].count
    }

    /// Faults injected into `op` so far.
    pub fn injected(&self, op: FaultOp) -> u64 {
        self.shared.injected[op.index()].load(Ordering::Relaxed)
    }

    /// Faults injected into operations of `kind` so far.
    pub fn injected_kind(&self, kind: FaultKind) -> u64 {
        FaultOp::ALL.iter().filter(|o| o.kind() == kind).map(|&o| self.injected(o)).sum()
    }

    /// Faults injected so far, all operations.
    pub fn injected_total(&self) -> u64 {
        FaultOp::ALL.iter().map(|&o| self.injected(o)).sum()
    }

    /// Calls of `op` seen so far, failed or not, on any path, enabled or not.
    pub fn seen(&self, op: FaultOp) -> u64 {
        self.shared.seen[op.index()].load(Ordering::Relaxed)
    }

    /// Zeroes the injected and seen counters.
    pub fn reset_counters(&self) {
        for c in self.shared.injected.iter().chain(self.shared.seen.iter()) {
            c.store(0, Ordering::Relaxed);
        }
    }
}

impl Vfs for FaultVfs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.shared.check(FaultOp::Create, dir)?;
        self.inner.create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.shared.check(FaultOp::Create, path)?;
        let file = self.inner.create(path)?;
        Ok(Box::new(FaultWritable { inner: file, path: path.to_path_buf(), shared: self.shared.clone() }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.shared.check(FaultOp::Open, path)?;
        let file = self.inner.open_sequential(path)?;
        Ok(Box::new(FaultSequential { inner: file, path: path.to_path_buf(), shared: self.shared.clone() }))
    }

    fn open_random(&self, path: &Path, opts: RandomOpenOptions) -> Result<Arc<dyn RandomAccessFile>> {
        self.shared.check(FaultOp::Open, path)?;
        let file = self.inner.open_random(path, opts)?;
        Ok(Arc::new(FaultRandom { inner: file, path: path.to_path_buf(), shared: self.shared.clone() }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.shared.check(FaultOp::FileSize, path)?;
        self.inner.file_size(path)
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        self.shared.check(FaultOp::Remove, path)?;
        self.inner.remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        // Either end matching the filter makes the rename eligible.
        if self.shared.should_fail(FaultOp::Rename, &[from, to]) {
            return Err(injected(FaultOp::Rename, to));
        }
        self.inner.rename(from, to)
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        self.shared.check(FaultOp::ListDir, dir)?;
        self.inner.list_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.shared.check(FaultOp::SyncDir, dir)?;
        self.inner.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.shared.check(FaultOp::Lock, path)?;
        self.inner.lock(path)
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.shared.should_fail(FaultOp::Append, &[&self.path]) {
            let torn = self.shared.cfg.lock().torn_writes;
            if torn && data.len() > 1 {
                let keep = (self.shared.next_u64() % data.len() as u64) as usize;
                // The torn prefix is best effort: the error that matters is the injected one.
                let _ = self.inner.append(&data[..keep]);
            }
            return Err(injected(FaultOp::Append, &self.path));
        }
        self.inner.append(data)
    }

    fn flush(&mut self) -> Result<()> {
        self.shared.check(FaultOp::Flush, &self.path)?;
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        self.shared.check(FaultOp::Sync, &self.path)?;
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

struct FaultSequential {
    inner: Box<dyn SequentialFile>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl SequentialFile for FaultSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.shared.check(FaultOp::SequentialRead, &self.path)?;
        self.inner.read(buf)
    }
}

struct FaultRandom {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl fmt::Debug for FaultRandom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultRandom").field("path", &self.path).finish()
    }
}

impl RandomAccessFile for FaultRandom {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.shared.check(FaultOp::ReadAt, &self.path)?;
        self.inner.read_at(offset, len)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemVfs;

    fn setup(cfg: FaultConfig) -> (FaultVfs, MemVfs, PathBuf) {
        let mem = MemVfs::new();
        let dir = PathBuf::from("/db");
        mem.create_dir_all(&dir).unwrap();
        (FaultVfs::new(Arc::new(mem.clone()), cfg), mem, dir)
    }

    fn is_injected(r: Result<()>, op: &str) -> bool {
        matches!(r, Err(Error::Io(e)) if e.to_string().starts_with(&format!("injected fault: {op}")))
    }

    #[test]
    fn armed_faults_fire_in_order_and_are_counted() {
        let (vfs, _mem, dir) = setup(FaultConfig::new(1));
        let mut f = vfs.create(&dir.join("a.log")).unwrap();
        vfs.fail_after(FaultOp::Sync, 1, 2);
        assert!(f.sync().is_ok());
        assert!(is_injected(f.sync(), "sync"));
        assert!(is_injected(f.sync(), "sync"));
        assert!(f.sync().is_ok());
        assert_eq!(vfs.injected(FaultOp::Sync), 2);
        assert_eq!(vfs.seen(FaultOp::Sync), 4);
        assert_eq!(vfs.injected_kind(FaultKind::Sync), 2);
        assert_eq!(vfs.injected_total(), 2);
        vfs.reset_counters();
        assert_eq!(vfs.injected_total(), 0);
    }

    #[test]
    fn disabled_faults_pass_through_and_filters_scope_them() {
        let cfg = FaultConfig::new(7).with_all_rates(1.0).with_filter(PathFilter::extension("sst"));
        let (vfs, mem, dir) = setup(cfg);
        let mut log = vfs.create(&dir.join("1.log")).unwrap();
        log.append(b"ok").unwrap();
        log.sync().unwrap();
        assert!(matches!(vfs.create(&dir.join("2.sst")), Err(Error::Io(_))));
        vfs.set_enabled(false);
        let mut sst = vfs.create(&dir.join("2.sst")).unwrap();
        sst.append(b"x").unwrap();
        vfs.set_enabled(true);
        assert!(is_injected(sst.append(b"y"), "append"));
        assert!(is_injected(sst.sync(), "sync"));
        assert!(vfs.open_random(&dir.join("2.sst"), RandomOpenOptions::default()).is_err());
        assert_eq!(mem.read_file(&dir.join("2.sst")).unwrap(), b"x");
        assert!(vfs.sync_dir(&dir).is_ok(), "the directory is not a *.sst path");
        let only_manifest =
            FaultConfig::new(7).with_all_rates(1.0).with_filter(PathFilter::name_prefix("MANIFEST-"));
        vfs.set_config(only_manifest);
        assert!(vfs.create(&dir.join("3.sst")).is_ok());
        assert!(vfs.create(&dir.join("MANIFEST-000003")).is_err());
    }

    #[test]
    fn torn_appends_leave_a_prefix_and_reads_can_fail() {
        let cfg = FaultConfig::new(3).with_torn_writes(true);
        let (vfs, mem, dir) = setup(cfg);
        let p = dir.join("t.log");
        let mut f = vfs.create(&p).unwrap();
        f.append(b"head-").unwrap();
        vfs.fail_next(FaultOp::Append);
        assert!(is_injected(f.append(&[7u8; 100]), "append"));
        let len = mem.file_size(&p).unwrap();
        assert!((5..105).contains(&len), "a strict prefix of the failed append, got {len}");
        vfs.fail_next(FaultOp::SequentialRead);
        let mut s = vfs.open_sequential(&p).unwrap();
        assert!(s.read(&mut [0u8; 4]).is_err());
        assert_eq!(s.read(&mut [0u8; 4]).unwrap(), 4);
        vfs.fail_next(FaultOp::ReadAt);
        let r = vfs.open_random(&p, RandomOpenOptions::default()).unwrap();
        assert!(r.read_at(0, 1).is_err());
        assert_eq!(r.read_at(0, 5).unwrap(), b"head-");
    }

    #[test]
    fn random_rates_are_seeded_and_metadata_ops_fail() {
        let count = |seed| {
            let (vfs, _mem, dir) = setup(FaultConfig::new(seed).with_rate(FaultKind::Metadata, 0.5));
            (0..200).filter(|i| vfs.create(&dir.join(format!("{i}"))).is_err()).count()
        };
        let a = count(11);
        assert_eq!(a, count(11), "same seed, same faults");
        assert!((50..150).contains(&a), "about half fail, got {a}");
        let (vfs, _mem, dir) = setup(FaultConfig::new(1));
        for op in [FaultOp::Rename, FaultOp::Remove, FaultOp::ListDir, FaultOp::Lock, FaultOp::FileSize] {
            vfs.fail_next(op);
        }
        vfs.create(&dir.join("x")).unwrap();
        assert!(is_injected(vfs.rename(&dir.join("x"), &dir.join("y")), "rename"));
        assert!(is_injected(vfs.remove_file(&dir.join("x")), "remove"));
        assert!(vfs.list_dir(&dir).is_err());
        assert!(vfs.lock(&dir.join("LOCK")).is_err());
        assert!(vfs.file_size(&dir.join("x")).is_err());
        assert_eq!(vfs.injected_kind(FaultKind::Metadata), 5);
        assert!(vfs.exists(&dir.join("x")));
    }
}
