//! A crash-simulating file system for tests. [`CrashVfs`] is a [`MemVfs`] that
//! counts every mutating operation, can "lose power" after the N-th one (every
//! later mutation fails, so the engine stops changing what is on disk), and
//! builds the post-crash disk image under a chosen [`CrashMode`]. It can also
//! fail one operation the way a disk does (a short write then `ENOSPC`, a sync
//! that wrote back part of the data then `EIO`) without losing power, so tests
//! see what the engine does with the error and what a later crash keeps.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::vfs::mem::Survivor;
use crate::vfs::{
    BufferedFile, FileLock, MemVfs, RandomAccessFile, RandomOpenOptions, RawFile, SequentialFile, Vfs,
    WritableFile,
};

/// What a simulated crash keeps. Seeded modes are deterministic per seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Power loss: only synced bytes survive, and directory operations (create,
    /// rename, remove) not followed by a `sync_dir` of their directory are undone.
    PowerLoss,
    /// Power loss after the device wrote back part of the un-synced state: each
    /// file keeps a random prefix of its un-synced tail, and each directory a
    /// random prefix of its un-synced operations.
    PartialWriteback {
        /// Seed of the random choices.
        seed: u64,
    },
    /// Like [`CrashMode::PartialWriteback`], and the last partially written unit
    /// (512, 1024 or 4096 bytes) past the synced prefix of each file is torn:
    /// its un-synced bytes become zeros or garbage, or the file is zero-extended
    /// to the unit's end. Synced bytes are never touched.
    TornWrite {
        /// Seed of the random choices.
        seed: u64,
    },
    /// The process died but the OS did not: everything written so far is kept.
    ProcessKill,
}

/// A deliberately wrong crash model, to prove that crash checkers catch the
/// violations they claim to catch. Never use it to test the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashFault {
    /// The image forgets the last `sync` before the crash: that file is cut back
    /// to what was synced before it.
    ForgetLastSync,
    /// A write hit by the I/O fault ([`CrashVfs::set_io_fault`]) stores all of
    /// its data before it reports `ENOSPC`, so a write the engine was told had
    /// failed is whole on disk.
    FailedWriteLands,
}

/// The kinds of operation [`CrashVfs`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrashOpKind {
    /// `create_dir_all`.
    CreateDir,
    /// `create` (a new or truncated file).
    Create,
    /// `WritableFile::append`.
    Append,
    /// `open_append` (an existing file reopened to append to it).
    OpenAppend,
    /// `WritableFile::sync`.
    Sync,
    /// `truncate` (an uncommitted append cut off).
    Truncate,
    /// `remove_file`.
    Remove,
    /// `rename`.
    Rename,
    /// `sync_dir`.
    SyncDir,
    /// `lock` (creates the lock file if missing).
    Lock,
}

/// One counted operation, as recorded by [`CrashVfs::op_log`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashOp {
    /// What it was.
    pub kind: CrashOpKind,
    /// The file or directory it acted on (the source of a rename).
    pub path: PathBuf,
}

#[derive(Default)]
struct Gate {
    /// Mutating operations performed so far.
    done: u64,
    /// Operations allowed before the power goes out; `None` = never.
    crash_after: Option<u64>,
    crashed: bool,
    log: Vec<CrashOp>,
    /// The last sync: its file and that file's synced length before it.
    last_sync: Option<(PathBuf, u64)>,
    fault: Option<CrashFault>,
    /// Files whose name starts with this are never torn.
    never_tear: Option<String>,
    /// The operation (1-based count) that fails with an I/O error, and the seed of its extent.
    io_fault: Option<(u64, u64)>,
    /// The operation the I/O fault hit, once it fired.
    io_fault_hit: Option<CrashOp>,
}

/// An in-memory [`Vfs`] that simulates power loss. Clones share the same files
/// and crash state. Mutating operations are serialized, so the operation
/// counter defines one global order even with background threads.
#[derive(Clone)]
pub struct CrashVfs {
    mem: MemVfs,
    gate: Arc<Mutex<Gate>>,
}

impl fmt::Debug for CrashVfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.gate.lock();
        f.debug_struct("CrashVfs")
            .field("ops", &g.done)
            .field("crash_after", &g.crash_after)
            .field("crashed", &g.crashed)
            .finish()
    }
}

impl Default for CrashVfs {
    fn default() -> Self {
        Self::new()
    }
}

fn power_lost() -> Error {
    Error::Io(io::Error::other("simulated power loss"))
}

fn injected_io(path: &Path, errno: i32) -> Error {
    let e = io::Error::from_raw_os_error(errno);
    Error::Io(io::Error::new(e.kind(), format!("{}: {e} (injected)", path.display())))
}

impl CrashVfs {
    /// An empty file system that never crashes until told to.
    pub fn new() -> Self {
        Self::from_mem(MemVfs::new())
    }

    /// Wraps existing files, e.g. a post-crash image, to crash again (during recovery).
    pub fn from_mem(mem: MemVfs) -> Self {
        CrashVfs { mem, gate: Arc::default() }
    }

    /// The underlying files (reads and test helpers; mutations through it are not counted).
    pub fn mem(&self) -> &MemVfs {
        &self.mem
    }

    /// Lose power once `n` mutating operations have been performed (`Some(0)`:
    /// before the first); `None` disarms. Has no effect after the crash.
    pub fn set_crash_after(&self, n: Option<u64>) {
        self.gate.lock().crash_after = n;
    }

    /// Lose power now: every later mutating operation fails.
    pub fn crash_now(&self) {
        self.gate.lock().crashed = true;
    }

    /// True once the power is out.
    pub fn crashed(&self) -> bool {
        self.gate.lock().crashed
    }

    /// Mutating operations performed so far (failed ones after the crash are not counted).
    pub fn ops_done(&self) -> u64 {
        self.gate.lock().done
    }

    /// Every performed mutating operation, in order; index `i` is operation `i + 1`.
    pub fn op_log(&self) -> Vec<CrashOp> {
        self.gate.lock().log.clone()
    }

    /// Plants a deliberately wrong crash model (checker negative tests only).
    pub fn set_fault(&self, fault: Option<CrashFault>) {
        self.gate.lock().fault = fault;
    }

    /// Files whose name starts with `prefix` are cut but never torn by
    /// [`CrashMode::TornWrite`] (e.g. to tell which file's tearing an engine
    /// failure depends on). `None` tears every file.
    pub fn set_never_tear(&self, prefix: Option<&str>) {
        self.gate.lock().never_tear = prefix.map(str::to_string);
    }

    /// Fails mutating operation number `op` (1-based, counted like
    /// [`set_crash_after`](Self::set_crash_after)) with an I/O error instead of
    /// losing power: a write writes a seeded random strict prefix of its data,
    /// then it or the file's next write fails with `ENOSPC`; a sync makes a
    /// random prefix of the file's un-synced bytes durable, then fails with
    /// `EIO`; any other operation fails with `EIO` without taking effect. Later
    /// operations work. `None` disarms.
    pub fn set_io_fault(&self, fault: Option<(u64, u64)>) {
        let mut g = self.gate.lock();
        g.io_fault = fault;
        g.io_fault_hit = None;
    }

    /// The operation the I/O fault failed, once it has fired.
    pub fn io_fault_hit(&self) -> Option<CrashOp> {
        self.gate.lock().io_fault_hit.clone()
    }

    /// A new, independent file system holding what is on disk after a crash
    /// now (call it after [`crash_now`](Self::crash_now) or the crash point, once
    /// the engine has stopped). Calling it again with the same mode gives an
    /// identical copy.
    pub fn image(&self, mode: CrashMode) -> MemVfs {
        let g = self.gate.lock();
        let forget = match g.fault {
            Some(CrashFault::ForgetLastSync) => g.last_sync.clone(),
            Some(CrashFault::FailedWriteLands) | None => None,
        };
        let never_tear = g.never_tear.clone();
        drop(g);
        let mut s = Keeper::new(mode, forget, never_tear);
        self.mem.durable_image(&mut s)
    }

    /// Counts one mutating operation, or fails if the power is out. The guard
    /// is held while the operation runs so the count is its global position.
    fn admit(&self, kind: CrashOpKind, path: &Path) -> Result<MutexGuard<'_, Gate>> {
        self.admit_io(kind, path).and_then(|(g, fault)| match fault {
            Some(_) => Err(injected_io(path, libc::EIO)),
            None => Ok(g),
        })
    }

    /// [`admit`](Self::admit) for operations that fail in their own way when
    /// the I/O fault hits them: also returns the fault's seed then.
    fn admit_io(&self, kind: CrashOpKind, path: &Path) -> Result<(MutexGuard<'_, Gate>, Option<u64>)> {
        let mut g = self.gate.lock();
        if g.crashed || g.crash_after.is_some_and(|n| g.done >= n) {
            g.crashed = true;
            return Err(power_lost());
        }
        g.done += 1;
        let op = CrashOp { kind, path: path.to_path_buf() };
        let fault = match g.io_fault {
            Some((at, seed)) if at == g.done => {
                g.io_fault_hit = Some(op.clone());
                Some(seed)
            }
            _ => None,
        };
        g.log.push(op);
        Ok((g, fault))
    }
}

impl Vfs for CrashVfs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let _g = self.admit(CrashOpKind::CreateDir, dir)?;
        self.mem.create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(BufferedFile::new(self.create_raw(path)?, path, 0)))
    }

    fn create_raw(&self, path: &Path) -> Result<Box<dyn RawFile>> {
        let _g = self.admit(CrashOpKind::Create, path)?;
        let inner = self.mem.create_raw(path)?;
        Ok(Box::new(CrashFile { inner, path: path.to_path_buf(), vfs: self.clone(), enospc_next: false }))
    }

    fn open_append_raw(&self, path: &Path) -> Result<(Box<dyn RawFile>, u64)> {
        let _g = self.admit(CrashOpKind::OpenAppend, path)?;
        let (inner, len) = self.mem.open_append_raw(path)?;
        let file = CrashFile { inner, path: path.to_path_buf(), vfs: self.clone(), enospc_next: false };
        Ok((Box::new(file), len))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let _g = self.admit(CrashOpKind::Truncate, path)?;
        self.mem.truncate(path, len)
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.mem.open_sequential(path)
    }

    fn open_random(&self, path: &Path, opts: RandomOpenOptions) -> Result<Arc<dyn RandomAccessFile>> {
        self.mem.open_random(path, opts)
    }

    fn exists(&self, path: &Path) -> bool {
        self.mem.exists(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.mem.file_size(path)
    }

    fn link_count(&self, path: &Path) -> Result<u64> {
        self.mem.link_count(path)
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        let _g = self.admit(CrashOpKind::Remove, path)?;
        self.mem.remove_file(path)
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        let _g = self.admit(CrashOpKind::Remove, dir)?;
        self.mem.remove_dir(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let _g = self.admit(CrashOpKind::Rename, from)?;
        self.mem.rename(from, to)
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        self.mem.list_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let _g = self.admit(CrashOpKind::SyncDir, dir)?;
        self.mem.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let _g = self.admit(CrashOpKind::Lock, path)?;
        self.mem.lock(path)
    }
}

/// A file being written through a [`CrashVfs`] (below the write buffer).
struct CrashFile {
    inner: Box<dyn RawFile>,
    path: PathBuf,
    vfs: CrashVfs,
    /// A short write happened: the next write reports the full disk.
    enospc_next: bool,
}

impl RawFile for CrashFile {
    fn write(&mut self, data: &[u8]) -> Result<usize> {
        if std::mem::take(&mut self.enospc_next) {
            return Err(injected_io(&self.path, libc::ENOSPC));
        }
        let (g, fault) = self.vfs.admit_io(CrashOpKind::Append, &self.path)?;
        let Some(seed) = fault else { return self.inner.write(data) };
        if g.fault == Some(CrashFault::FailedWriteLands) {
            self.inner.write(data)?;
            return Err(injected_io(&self.path, libc::ENOSPC));
        }
        let keep = Rng(seed).upto(data.len().saturating_sub(1));
        if keep == 0 {
            return Err(injected_io(&self.path, libc::ENOSPC));
        }
        self.enospc_next = true;
        self.inner.write(&data[..keep])
    }

    fn sync(&mut self) -> Result<()> {
        let (mut g, fault) = self.vfs.admit_io(CrashOpKind::Sync, &self.path)?;
        let before = self.vfs.mem.synced_len(&self.path).unwrap_or(0);
        if let Some(seed) = fault {
            let len = self.vfs.mem.file_size(&self.path)?;
            let part = Rng(seed).upto(usize::try_from(len - before.min(len)).unwrap_or(0)) as u64;
            self.vfs.mem.write_back(&self.path, before + part)?;
            return Err(injected_io(&self.path, libc::EIO));
        }
        g.last_sync = Some((self.path.clone(), before));
        self.inner.sync()
    }
}

/// splitmix64: a tiny seeded generator, so the engine needs no `rand`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=n`.
    fn upto(&mut self, n: usize) -> usize {
        (self.next() % (n as u64 + 1)) as usize
    }
}

/// Applies a [`CrashMode`] (and a planted [`CrashFault`]) to each file and directory.
struct Keeper {
    mode: CrashMode,
    rng: Rng,
    forget: Option<(PathBuf, u64)>,
    never_tear: Option<String>,
}

impl Keeper {
    fn new(mode: CrashMode, forget: Option<(PathBuf, u64)>, never_tear: Option<String>) -> Self {
        let seed = match mode {
            CrashMode::PartialWriteback { seed } | CrashMode::TornWrite { seed } => seed,
            CrashMode::PowerLoss | CrashMode::ProcessKill => 0,
        };
        Keeper { mode, rng: Rng(seed ^ 0x5eed_c4a5), forget, never_tear }
    }

    /// Tears the last unit of `out` past `synced`.
    fn tear(&mut self, out: &mut Vec<u8>, synced: usize) {
        let unit = [512, 1024, 4096][self.rng.upto(2)];
        let end = out.len();
        let start = (end.saturating_sub(1) / unit * unit).max(synced);
        match self.rng.upto(3) {
            0 => out[start..].fill(0),
            1 => {
                for b in &mut out[start..] {
                    *b = self.rng.next() as u8;
                }
            }
            2 => out.resize(start.max(end.div_ceil(unit) * unit), 0),
            _ => {} // this unit made it intact
        }
    }
}

impl Survivor for Keeper {
    fn dir_ops_kept(&mut self, _dir: &Path, n: usize) -> usize {
        match self.mode {
            CrashMode::PowerLoss => 0,
            CrashMode::ProcessKill => n,
            CrashMode::PartialWriteback { .. } | CrashMode::TornWrite { .. } => self.rng.upto(n),
        }
    }

    fn file_bytes(&mut self, path: &Path, data: &[u8], mut synced: usize) -> Vec<u8> {
        if let Some((p, before)) = &self.forget {
            if p == path {
                synced = synced.min(usize::try_from(*before).unwrap_or(0));
            }
        }
        let keep = match self.mode {
            CrashMode::PowerLoss => synced,
            CrashMode::ProcessKill => data.len(),
            CrashMode::PartialWriteback { .. } | CrashMode::TornWrite { .. } => {
                synced + self.rng.upto(data.len() - synced)
            }
        };
        let mut out = data[..keep].to_vec();
        let spared = self
            .never_tear
            .as_deref()
            .is_some_and(|pre| path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(pre)));
        if matches!(self.mode, CrashMode::TornWrite { .. }) && keep > synced && !spared {
            self.tear(&mut out, synced);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (CrashVfs, PathBuf) {
        let vfs = CrashVfs::new();
        let dir = PathBuf::from("/db");
        vfs.create_dir_all(&dir).unwrap();
        vfs.sync_dir(Path::new("/")).unwrap();
        (vfs, dir)
    }

    fn read(vfs: &MemVfs, p: &Path) -> Option<Vec<u8>> {
        vfs.exists(p).then(|| vfs.read_file(p).unwrap())
    }

    /// A durable file reopened for append (an LWC segment appended to a
    /// table): a crash keeps every byte synced before the reopen, and of the
    /// appended tail what was synced, or (partial write-back) a prefix of it.
    #[test]
    fn a_torn_append_to_a_durable_file_keeps_the_durable_prefix() {
        let (vfs, dir) = setup();
        let a = dir.join("a");
        let mut w = vfs.create(&a).unwrap();
        w.append(b"durable").unwrap();
        w.sync().unwrap();
        drop(w);
        vfs.sync_dir(&dir).unwrap();
        let mut w = vfs.open_append(&a).unwrap();
        assert_eq!(w.len(), 7, "len counts the bytes already there");
        w.append(b"+segment-one").unwrap();
        w.sync().unwrap();
        w.append(b"+segment-two").unwrap();
        assert_eq!(w.len(), 31);
        assert_eq!(vfs.op_log().last().map(|o| o.kind), Some(CrashOpKind::Append));
        assert!(vfs.op_log().iter().any(|o| o.kind == CrashOpKind::OpenAppend));
        assert_eq!(read(&vfs.image(CrashMode::PowerLoss), &a).as_deref(), Some(&b"durable+segment-one"[..]));
        assert_eq!(
            read(&vfs.image(CrashMode::ProcessKill), &a).as_deref(),
            Some(&b"durable+segment-one+segment-two"[..])
        );
        let mut torn = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let got = read(&vfs.image(CrashMode::PartialWriteback { seed }), &a).unwrap();
            assert!(got.starts_with(b"durable+segment-one"), "{seed}: {got:?}");
            assert!(b"durable+segment-one+segment-two".starts_with(&got), "{seed}: {got:?}");
            torn.insert(got.len());
        }
        assert!(torn.len() > 2, "partial write-back tears the appended tail: {torn:?}");
        assert!(vfs.open_append(&dir.join("missing")).is_err());
    }

    #[test]
    fn power_loss_keeps_synced_bytes_and_synced_entries_only() {
        let (vfs, dir) = setup();
        let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
        let mut w = vfs.create(&a).unwrap();
        w.append(b"durable").unwrap();
        w.sync().unwrap();
        w.append(b"-lost").unwrap();
        vfs.sync_dir(&dir).unwrap();
        let mut w2 = vfs.create(&b).unwrap();
        w2.append(b"never named").unwrap();
        w2.sync().unwrap();
        vfs.rename(&a, &c).unwrap();
        let img = vfs.image(CrashMode::PowerLoss);
        assert_eq!(read(&img, &a).as_deref(), Some(&b"durable"[..]), "rename undone");
        assert_eq!(read(&img, &b), None, "un-synced creation vanishes");
        assert_eq!(read(&img, &c), None);
        let all = vfs.image(CrashMode::ProcessKill);
        assert_eq!(read(&all, &c).as_deref(), Some(&b"durable-lost"[..]));
        assert_eq!(read(&all, &b).as_deref(), Some(&b"never named"[..]));
        // Images are independent of the source and of each other.
        img.remove_file(&a).unwrap();
        assert!(vfs.image(CrashMode::PowerLoss).exists(&a));
    }

    #[test]
    fn removal_and_replacing_rename_come_back() {
        let (vfs, dir) = setup();
        let (cur, tmp, old) = (dir.join("CURRENT"), dir.join("tmp"), dir.join("old"));
        for (p, d) in [(&cur, &b"one"[..]), (&old, b"gone")] {
            let mut w = vfs.create(p).unwrap();
            w.append(d).unwrap();
            w.sync().unwrap();
        }
        vfs.sync_dir(&dir).unwrap();
        let mut w = vfs.create(&tmp).unwrap();
        w.append(b"two").unwrap();
        w.sync().unwrap();
        vfs.rename(&tmp, &cur).unwrap();
        vfs.remove_file(&old).unwrap();
        let img = vfs.image(CrashMode::PowerLoss);
        assert_eq!(read(&img, &cur).as_deref(), Some(&b"one"[..]));
        assert_eq!(read(&img, &old).as_deref(), Some(&b"gone"[..]));
        assert!(!img.exists(&tmp));
        vfs.sync_dir(&dir).unwrap();
        let img = vfs.image(CrashMode::PowerLoss);
        assert_eq!(read(&img, &cur).as_deref(), Some(&b"two"[..]));
        assert!(!img.exists(&old));
    }

    #[test]
    fn crash_point_stops_every_later_mutation() {
        let (vfs, dir) = setup();
        assert_eq!(vfs.ops_done(), 2);
        vfs.set_crash_after(Some(4));
        let mut w = vfs.create(&dir.join("f")).unwrap();
        w.append(b"x").unwrap();
        assert!(!vfs.crashed());
        assert!(matches!(w.sync(), Err(Error::Io(_))));
        assert!(vfs.crashed());
        assert!(w.append(b"y").is_err());
        assert!(vfs.sync_dir(&dir).is_err() && vfs.create(&dir.join("g")).is_err());
        assert!(vfs.lock(&dir.join("LOCK")).is_err());
        assert_eq!(vfs.ops_done(), 4);
        let kinds: Vec<CrashOpKind> = vfs.op_log().iter().map(|o| o.kind).collect();
        assert_eq!(
            kinds,
            [CrashOpKind::CreateDir, CrashOpKind::SyncDir, CrashOpKind::Create, CrashOpKind::Append]
        );
        assert_eq!(vfs.read_file(&dir.join("f")).unwrap(), b"x", "reads still work");
    }

    #[test]
    fn seeded_modes_are_deterministic_and_never_touch_synced_bytes() {
        for seed in 0..200 {
            let (vfs, dir) = setup();
            let p = dir.join("log");
            let mut w = vfs.create(&p).unwrap();
            w.append(&[7u8; 3000]).unwrap();
            w.sync().unwrap();
            vfs.sync_dir(&dir).unwrap();
            w.append(&[9u8; 5000]).unwrap();
            for mode in [CrashMode::PartialWriteback { seed }, CrashMode::TornWrite { seed }] {
                let a = vfs.image(mode).read_file(&p).unwrap();
                assert_eq!(a, vfs.image(mode).read_file(&p).unwrap());
                assert!(a.len() >= 3000 && a[..3000].iter().all(|&b| b == 7), "seed {seed} {mode:?}");
                if let CrashMode::PartialWriteback { .. } = mode {
                    assert!(a.len() <= 8000 && a[3000..].iter().all(|&b| b == 9));
                }
            }
        }
    }

    #[test]
    fn forget_last_sync_fault_drops_the_last_synced_append() {
        let (vfs, dir) = setup();
        let p = dir.join("wal");
        let mut w = vfs.create(&p).unwrap();
        vfs.sync_dir(&dir).unwrap();
        w.append(b"first").unwrap();
        w.sync().unwrap();
        w.append(b"second").unwrap();
        w.sync().unwrap();
        assert_eq!(vfs.image(CrashMode::PowerLoss).read_file(&p).unwrap(), b"firstsecond");
        vfs.set_fault(Some(CrashFault::ForgetLastSync));
        assert_eq!(vfs.image(CrashMode::PowerLoss).read_file(&p).unwrap(), b"first");
    }

    #[test]
    fn io_fault_is_a_short_write_then_enospc_or_a_partial_write_back_then_eio() {
        let (vfs, dir) = setup();
        let p = dir.join("log");
        let mut w = vfs.create(&p).unwrap();
        w.append(&[1u8; 100]).unwrap();
        w.sync().unwrap();
        vfs.sync_dir(&dir).unwrap();
        let next = vfs.ops_done() + 1;
        vfs.set_io_fault(Some((next, 3)));
        let e = w.append(&[2u8; 100]).unwrap_err();
        assert!(e.to_string().contains("No space left on device"), "{e}");
        assert_eq!(vfs.io_fault_hit().unwrap().kind, CrashOpKind::Append);
        let len = vfs.mem().file_size(&p).unwrap();
        assert!((100..200).contains(&len), "a strict prefix: {len}");
        assert!(w.sync().is_err(), "the file failed: never synced again");
        assert!(!vfs.crashed(), "an I/O fault is not a power loss");

        let q = dir.join("other");
        let mut w2 = vfs.create(&q).unwrap();
        w2.append(&[3u8; 1000]).unwrap();
        vfs.set_io_fault(Some((vfs.ops_done() + 1, 9)));
        assert!(w2.sync().unwrap_err().to_string().contains("Input/output error"));
        assert_eq!(vfs.io_fault_hit().unwrap().kind, CrashOpKind::Sync);
        assert!(vfs.mem().synced_len(&q).unwrap() <= 1000);
        vfs.set_io_fault(Some((vfs.ops_done() + 1, 1)));
        assert!(vfs.remove_file(&q).is_err() && vfs.exists(&q), "other operations fail without effect");
    }
}
