//! What a [`FaultVfs`](super::FaultVfs) may fail: the operations ([`FaultOp`]) and their rate
//! classes ([`FaultKind`]), which paths ([`PathFilter`]), and at what seeded
//! random rates ([`FaultConfig`]).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::vfs::buffered::WRITE_BUFFER;

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
    /// `Vfs::file_size` and `Vfs::link_count` (a metadata read).
    FileSize,
    /// One OS write below the write buffer ([`RawFile::write`](crate::vfs::RawFile::write)): it writes a
    /// random strict prefix (a short write) and the file's next write fails.
    Write,
    /// The OS sync below the buffer ([`RawFile::sync`](crate::vfs::RawFile::sync)): the data was written
    /// back or not (seeded), then `EIO`.
    DataSync,
}

impl FaultOp {
    /// Every operation, in counter order.
    pub const ALL: [FaultOp; 15] = [
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
        FaultOp::Write,
        FaultOp::DataSync,
    ];

    /// The rate class this operation belongs to.
    pub fn kind(self) -> FaultKind {
        match self {
            FaultOp::Open | FaultOp::ReadAt | FaultOp::SequentialRead => FaultKind::Read,
            FaultOp::Append | FaultOp::Flush | FaultOp::Write => FaultKind::Write,
            FaultOp::Sync | FaultOp::SyncDir | FaultOp::DataSync => FaultKind::Sync,
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
            FaultOp::Write => "write",
            FaultOp::DataSync => "fdatasync",
        }
    }

    pub(super) fn index(self) -> usize {
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
    /// Appends, flushes and OS writes.
    Write,
    /// File, directory and OS syncs.
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

/// Random fault rates and their scope; see [`FaultVfs`](super::FaultVfs).
#[derive(Clone, Debug)]
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
    /// Paths faults may hit (random and armed ones alike; a full disk hits every path).
    pub filter: PathFilter,
    /// User-space write buffer of each file, in bytes (default
    /// [`WRITE_BUFFER`], as on the real file system; 0 writes every append through).
    pub write_buffer: usize,
    /// Random write and sync faults hit only the OS calls below the buffer
    /// (`Write`, `DataSync`), never `Append`, `Flush` or `Sync` above it, so
    /// every failure leaves the file as a real disk would.
    pub below_buffer_only: bool,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            seed: 0,
            read_rate: 0.0,
            write_rate: 0.0,
            sync_rate: 0.0,
            metadata_rate: 0.0,
            torn_writes: false,
            filter: PathFilter::all(),
            write_buffer: WRITE_BUFFER,
            below_buffer_only: false,
        }
    }
}

impl FaultConfig {
    /// No random faults, all paths; arm faults with
    /// [`FaultVfs::fail_after`](super::FaultVfs::fail_after).
    pub fn new(seed: u64) -> Self {
        FaultConfig { seed, ..Default::default() }
    }

    /// Makes random write and sync faults hit only the OS calls below the buffer.
    #[must_use]
    pub fn with_below_buffer_only(mut self, on: bool) -> Self {
        self.below_buffer_only = on;
        self
    }

    /// Sets each file's write-buffer size (0: no buffering).
    #[must_use]
    pub fn with_write_buffer(mut self, bytes: usize) -> Self {
        self.write_buffer = bytes;
        self
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

    pub(super) fn rate(&self, kind: FaultKind) -> f64 {
        match kind {
            FaultKind::Read => self.read_rate,
            FaultKind::Write => self.write_rate,
            FaultKind::Sync => self.sync_rate,
            FaultKind::Metadata => self.metadata_rate,
        }
    }
}
