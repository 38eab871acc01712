//! A [`Vfs`] wrapper that injects I/O errors, at seeded random rates or at
//! chosen operations, so tests can check what the engine does when the disk
//! fails (LevelDB's `FaultInjectionTestEnv`, RocksDB's `FaultInjectionTestFS`).
//!
//! Every injected error is [`Error::Io`] with a message starting
//! `injected fault: <op>`, except a full disk, which is the OS's own `ENOSPC`.
//! Faults only fire while the wrapper is enabled, so a test can open a database
//! cleanly and then switch them on.
//!
//! Files are written through the engine's own [`BufferedFile`] over the inner
//! file system's raw files, so faults land at two depths: `Append`, `Flush` and
//! `Sync` fail the call the engine makes, while `Write` and `DataSync` (and a
//! full disk, [`FaultVfs::set_free_space`]) fail the OS call below the buffer,
//! where a real disk fails: a short write then an error, a sync after the data
//! was or was not written back.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::fault_config::{FaultConfig, FaultKind, FaultOp};
use crate::error::{Error, Result};
use crate::vfs::{
    BufferedFile, FileLock, RandomAccessFile, RandomOpenOptions, RawFile, SequentialFile, Vfs, WritableFile,
};

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
    /// Bytes the disk can still take, if limited.
    free: Mutex<Option<u64>>,
    /// OS writes refused or cut short by the full disk.
    disk_full: AtomicU64,
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
            let above = matches!(op, FaultOp::Append | FaultOp::Flush | FaultOp::Sync);
            if cfg.below_buffer_only && above {
                0.0
            } else {
                cfg.rate(op.kind())
            }
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
            free: Mutex::new(None),
            disk_full: AtomicU64::new(0),
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

    /// Zeroes the injected, seen and full-disk counters.
    pub fn reset_counters(&self) {
        for c in self.shared.injected.iter().chain(self.shared.seen.iter()) {
            c.store(0, Ordering::Relaxed);
        }
        self.shared.disk_full.store(0, Ordering::Relaxed);
    }

    /// Limits the bytes the disk can still take (`None`: unlimited). OS writes
    /// use it up, and one that does not fit writes what fits (a short write)
    /// while the next fails with `ENOSPC` (os error 28), as a full disk does;
    /// removing a file gives its size back. Applies to every path, enabled or not.
    pub fn set_free_space(&self, bytes: Option<u64>) {
        *self.shared.free.lock() = bytes;
    }

    /// Bytes the disk can still take, if limited.
    pub fn free_space(&self) -> Option<u64> {
        *self.shared.free.lock()
    }

    /// OS writes the full disk refused or cut short so far.
    pub fn disk_full_errors(&self) -> u64 {
        self.shared.disk_full.load(Ordering::Relaxed)
    }
}

impl Vfs for FaultVfs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.shared.check(FaultOp::Create, dir)?;
        self.inner.create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let capacity = self.shared.cfg.lock().write_buffer;
        let file = BufferedFile::new(self.create_raw(path)?, path, capacity);
        Ok(Box::new(FaultWritable {
            inner: Box::new(file),
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn create_raw(&self, path: &Path) -> Result<Box<dyn RawFile>> {
        self.shared.check(FaultOp::Create, path)?;
        let inner = self.inner.create_raw(path)?;
        Ok(Box::new(FaultRaw { inner, path: path.to_path_buf(), shared: self.shared.clone(), pending: None }))
    }

    fn open_append_raw(&self, path: &Path) -> Result<(Box<dyn RawFile>, u64)> {
        self.shared.check(FaultOp::Open, path)?;
        let (inner, len) = self.inner.open_append_raw(path)?;
        Ok((
            Box::new(FaultRaw {
                inner,
                path: path.to_path_buf(),
                shared: self.shared.clone(),
                pending: None,
            }),
            len,
        ))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        // The cut is made durable: it fails like a sync.
        self.shared.check(FaultOp::Sync, path)?;
        self.inner.truncate(path, len)
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let capacity = self.shared.cfg.lock().write_buffer;
        let (raw, len) = self.open_append_raw(path)?;
        let file = BufferedFile::new(raw, path, capacity).starting_at(len);
        Ok(Box::new(FaultWritable {
            inner: Box::new(file),
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
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
        let size = self.inner.file_size(path).unwrap_or(0);
        self.inner.remove_file(path)?;
        if let Some(free) = self.shared.free.lock().as_mut() {
            *free = free.saturating_add(size);
        }
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.shared.check(FaultOp::Remove, dir)?;
        self.inner.remove_dir(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        // Either end matching the filter makes the rename eligible.
        if self.shared.should_fail(FaultOp::Rename, &[from, to]) {
            return Err(injected(FaultOp::Rename, to));
        }
        self.inner.rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.hard_link(from, to)
    }

    /// Fails like [`FaultOp::FileSize`]: both read a file's metadata.
    fn link_count(&self, path: &Path) -> Result<u64> {
        self.shared.check(FaultOp::FileSize, path)?;
        self.inner.link_count(path)
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

/// A raw file below the write buffer: OS-level faults and the full disk.
struct FaultRaw {
    inner: Box<dyn RawFile>,
    path: PathBuf,
    shared: Arc<Shared>,
    /// After a short write, the error the next write returns.
    pending: Option<Error>,
}

impl FaultRaw {
    fn enospc(&self) -> Error {
        let e = io::Error::from_raw_os_error(libc::ENOSPC);
        Error::Io(io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))
    }
}

impl RawFile for FaultRaw {
    fn write(&mut self, data: &[u8]) -> Result<usize> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let mut len = data.len();
        if self.shared.should_fail(FaultOp::Write, &[&self.path]) {
            len = (self.shared.next_u64() % data.len().max(1) as u64) as usize;
            if len == 0 {
                return Err(injected(FaultOp::Write, &self.path));
            }
            self.pending = Some(injected(FaultOp::Write, &self.path));
        }
        {
            let mut free = self.shared.free.lock();
            if let Some(free) = free.as_mut() {
                if (len as u64) > *free {
                    self.shared.disk_full.fetch_add(1, Ordering::Relaxed);
                    len = *free as usize;
                    if len == 0 {
                        return Err(self.enospc());
                    }
                    self.pending = Some(self.enospc());
                }
                *free -= len as u64;
            }
        }
        let n = self.inner.write(&data[..len])?;
        if n < len {
            // The inner file's own short write: give back what it did not use.
            if let Some(free) = self.shared.free.lock().as_mut() {
                *free += (len - n) as u64;
            }
        }
        Ok(n)
    }

    fn sync(&mut self) -> Result<()> {
        if self.shared.should_fail(FaultOp::DataSync, &[&self.path]) {
            // Write-back may or may not have happened before the device failed.
            if self.shared.next_u64().is_multiple_of(2) {
                let _ = self.inner.sync();
            }
            return Err(injected(FaultOp::DataSync, &self.path));
        }
        self.inner.sync()
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
    use crate::vfs::testing::PathFilter;
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
        let cfg = FaultConfig::new(7)
            .with_all_rates(1.0)
            .with_filter(PathFilter::extension("sst"))
            .with_write_buffer(0);
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
        let cfg = FaultConfig::new(3).with_torn_writes(true).with_write_buffer(0);
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

    #[test]
    fn os_write_fault_is_a_short_write_below_the_buffer_then_the_file_is_done() {
        let (vfs, mem, dir) = setup(FaultConfig::new(21));
        let p = dir.join("w.log");
        let mut f = vfs.create(&p).unwrap();
        f.append(b"acked|").unwrap();
        f.flush().unwrap();
        vfs.fail_next(FaultOp::Write);
        f.append(&[5u8; 300]).unwrap(); // buffered: the OS write comes at flush
        assert!(f.flush().is_err());
        let torn = mem.read_file(&p).unwrap();
        assert!(torn.len() < 306 && torn.starts_with(b"acked|"), "{}", torn.len());
        // Never written or synced again, even with the fault gone.
        assert!(f.sync().is_err() && f.append(b"x").is_err());
        drop(f);
        assert_eq!(mem.read_file(&p).unwrap(), torn);
        assert_eq!(vfs.injected(FaultOp::Write), 1);
        assert_eq!(mem.synced_len(&p).unwrap(), 0);
    }

    #[test]
    fn failed_fdatasync_is_never_retried() {
        let (vfs, mem, dir) = setup(FaultConfig::new(2));
        let p = dir.join("s.log");
        let mut f = vfs.create(&p).unwrap();
        f.append(b"abc").unwrap();
        vfs.fail_next(FaultOp::DataSync);
        assert!(f.sync().is_err());
        let synced = mem.synced_len(&p).unwrap();
        assert!(synced == 0 || synced == 3, "written back or not: {synced}");
        assert!(f.sync().is_err(), "a failed sync is not retried");
        assert_eq!(vfs.injected(FaultOp::DataSync), 1);
    }

    #[test]
    fn full_disk_cuts_the_write_at_the_limit_and_removal_frees_space() {
        let (vfs, mem, dir) = setup(FaultConfig::new(1).with_write_buffer(0));
        vfs.set_free_space(Some(10));
        let p = dir.join("a.sst");
        let mut f = vfs.create(&p).unwrap();
        f.append(b"1234").unwrap();
        let e = f.append(b"5678901234").unwrap_err();
        assert!(e.to_string().contains("os error 28"), "{e}");
        assert!(matches!(&e, Error::Io(io) if io.kind() == io::ErrorKind::StorageFull));
        assert_eq!(mem.read_file(&p).unwrap(), b"1234567890", "the write filled the disk to the byte");
        assert_eq!(vfs.free_space(), Some(0));
        assert_eq!(vfs.disk_full_errors(), 1);
        drop(f);
        vfs.remove_file(&p).unwrap();
        assert_eq!(vfs.free_space(), Some(10));
        let mut g = vfs.create(&dir.join("b.sst")).unwrap();
        g.append(b"0123456789").unwrap();
        g.sync().unwrap();
    }
}
