//! The file-system layer. Every byte Strata reads or writes goes through a
//! [`Vfs`], so tests can run on memory, and crash simulation, fault injection and
//! device-latency simulation can wrap the real thing without touching the engine.
//! What ships: the [`Vfs`] trait, [`BufferedFile`], [`RealVfs`] and [`MemVfs`];
//! the failing file systems tests use are in [`testing`].

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use crate::error::Result;

mod buffered;
mod mem;
mod real;
pub mod testing;

pub use buffered::{BufferedFile, RawFile, WRITE_BUFFER};
pub use mem::{DirOp, MemVfs};
pub use real::RealVfs;

/// How a file is opened for random reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RandomOpenOptions {
    /// Bypass the OS page cache (`O_DIRECT`) where the platform allows it, so a
    /// block-cache miss really reaches the device. Ignored by in-memory VFSes.
    pub direct: bool,
}

/// A file being written sequentially (WAL, table, MANIFEST).
pub trait WritableFile: Send + Sync {
    /// Appends bytes (may stay buffered in user space until `flush`/`sync`).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Pushes buffered bytes to the OS (survives a process kill, not power loss).
    fn flush(&mut self) -> Result<()>;
    /// Flushes and makes the data durable (`fdatasync`).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// True if nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file read front to back (WAL and MANIFEST replay).
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes; returns 0 at end of file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
}

/// A file read at arbitrary offsets by many threads (tables).
pub trait RandomAccessFile: Send + Sync + Debug {
    /// Reads exactly `len` bytes at `offset`; reading past the end is an error.
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>>;
    /// The file's size in bytes.
    fn len(&self) -> u64;
    /// True for an empty file.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A read-only memory map of the file's first `len` bytes, or `None`
    /// where the file system does not map (the default: memory and test
    /// file systems, whose reads must all pass through `read_at` to be seen).
    /// The caller must never let the file shrink below `len` while the map
    /// lives (reading a page past the end of a file raises `SIGBUS`).
    fn map(&self, _len: u64) -> Result<Option<FileMap>> {
        Ok(None)
    }
}

/// A read-only memory map of the first bytes of a file (see
/// [`RandomAccessFile::map`]). Unmapped when dropped.
pub struct FileMap(memmap2::Mmap);

impl FileMap {
    /// Wraps a map a file system made.
    pub(crate) fn new(map: memmap2::Mmap) -> Self {
        FileMap(map)
    }

    /// The mapped bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Debug for FileMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileMap").field("len", &self.0.len()).finish()
    }
}

/// An exclusive lock on a file; released when dropped.
pub trait FileLock: Send + Sync + Debug {}

/// A file system.
pub trait Vfs: Send + Sync + Debug {
    /// Creates a directory and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Creates (or truncates) a file for writing.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) a file and returns it without a user-space
    /// buffer, one OS call per write, so a wrapper can inject faults below the
    /// buffer (see [`BufferedFile`]). The default adapts [`Vfs::create`].
    fn create_raw(&self, path: &Path) -> Result<Box<dyn RawFile>> {
        Ok(Box::new(buffered::WritableAsRaw(self.create(path)?)))
    }
    /// Opens an existing file to append at its end, without truncating it and
    /// without a user-space buffer; returns the file and its current length.
    /// Bytes appended are not durable until `sync`, whatever was durable
    /// before stays so. The default refuses: a file system that can append to
    /// an existing file says so.
    fn open_append_raw(&self, path: &Path) -> Result<(Box<dyn RawFile>, u64)> {
        Err(crate::error::Error::invalid(format!(
            "{}: this file system cannot reopen files for append",
            path.display()
        )))
    }
    /// [`Vfs::open_append_raw`] as a [`WritableFile`] whose `len()` starts at
    /// the file's length. The default adds no write buffer.
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let (raw, len) = self.open_append_raw(path)?;
        Ok(Box::new(BufferedFile::new(raw, path, 0).starting_at(len)))
    }
    /// Cuts an existing file to `len` bytes (no longer than it is) and makes
    /// the cut durable: the bytes of an append that never committed (a table
    /// segment the MANIFEST does not list). The default refuses, like
    /// [`Vfs::open_append_raw`].
    fn truncate(&self, path: &Path, _len: u64) -> Result<()> {
        Err(crate::Error::invalid(format!("{}: this file system cannot truncate files", path.display())))
    }
    /// Opens an existing file for sequential reading.
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Opens an existing file for random reads.
    fn open_random(&self, path: &Path, opts: RandomOpenOptions) -> Result<Arc<dyn RandomAccessFile>>;
    /// True if the path exists.
    fn exists(&self, path: &Path) -> bool;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Removes an empty directory. The default refuses: a file system that
    /// offers it says so.
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        Err(crate::error::Error::invalid(format!(
            "{}: this file system cannot remove directories",
            dir.display()
        )))
    }
    /// Atomically renames a file, replacing the target.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Gives the file `from` a second name `to` (a hard link; `to` must not
    /// exist), so a checkpoint shares a table instead of copying it. The
    /// default refuses, and callers then copy.
    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        Err(crate::error::Error::invalid(format!(
            "{} -> {}: this file system cannot hard-link files",
            from.display(),
            to.display()
        )))
    }
    /// How many names the file `path` has (its hard-link count). A table
    /// with more than one is shared with a checkpoint or backup, so an
    /// in-place append must copy it first. The default is 1: a file system
    /// that cannot hard-link has no shared files (one that implements
    /// [`Vfs::hard_link`] must implement this too).
    ///
    /// # Examples
    ///
    /// ```
    /// use strata::{RealVfs, Vfs};
    /// let dir = tempfile::tempdir()?;
    /// let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    /// let vfs = RealVfs::new();
    /// drop(vfs.create(&a)?);
    /// assert_eq!(vfs.link_count(&a)?, 1);
    /// vfs.hard_link(&a, &b)?;
    /// assert_eq!(vfs.link_count(&a)?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn link_count(&self, _path: &Path) -> Result<u64> {
        Ok(1)
    }
    /// Names (not paths) of the entries of a directory.
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>>;
    /// Makes creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (creating it); fails with
    /// [`crate::Error::Locked`] if another process or handle holds it.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;

    /// Reads a whole file.
    fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        let mut f = self.open_sequential(path)?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
}

/// Copies the first `len` bytes of `from` to a new file `to` (replacing one
/// there) and syncs it; `from` shorter than `len` is corruption.
pub(crate) fn copy_prefix(vfs: &dyn Vfs, from: &Path, to: &Path, len: u64) -> Result<()> {
    /// Copy chunk.
    const CHUNK: u64 = 1 << 20;
    let src = vfs.open_random(from, RandomOpenOptions::default())?;
    if src.len() < len {
        return Err(crate::Error::corruption(format!(
            "{}: {} bytes, {len} needed",
            from.display(),
            src.len()
        )));
    }
    let mut out = vfs.create(to)?;
    let mut at = 0;
    while at < len {
        let n = (len - at).min(CHUNK);
        out.append(&src.read_at(at, n as usize)?)?;
        at += n;
    }
    out.sync()
}
