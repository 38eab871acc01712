//! The operating system's file system (`std::fs`), with a user-space write
//! buffer ([`BufferedFile`]) and optional `O_DIRECT` random reads.

use std::cell::RefCell;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::buffered::{BufferedFile, RawFile, WRITE_BUFFER};
use super::{FileLock, FileMap, RandomAccessFile, RandomOpenOptions, SequentialFile, Vfs, WritableFile};
use crate::error::{Error, Result};

/// Alignment `O_DIRECT` requires of offsets, lengths and buffers (the logical
/// block size is at most this on every device we expect).
const DIRECT_ALIGN: usize = 4096;

/// Attaches the path to an I/O error, keeping its kind.
fn io_err(path: &Path, e: io::Error) -> Error {
    Error::Io(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealVfs;

impl RealVfs {
    /// Returns the real file system.
    pub fn new() -> Self {
        RealVfs
    }
}

impl Vfs for RealVfs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| io_err(dir, e))
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(BufferedFile::new(self.create_raw(path)?, path, WRITE_BUFFER)))
    }

    fn create_raw(&self, path: &Path) -> Result<Box<dyn RawFile>> {
        let file = File::create(path).map_err(|e| io_err(path, e))?;
        Ok(Box::new(RealRawFile { file, path: path.to_path_buf() }))
    }

    fn open_append_raw(&self, path: &Path) -> Result<(Box<dyn RawFile>, u64)> {
        let file = fs::OpenOptions::new().append(true).open(path).map_err(|e| io_err(path, e))?;
        let len = file.metadata().map_err(|e| io_err(path, e))?.len();
        Ok((Box::new(RealRawFile { file, path: path.to_path_buf() }), len))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let (raw, len) = self.open_append_raw(path)?;
        Ok(Box::new(BufferedFile::new(raw, path, WRITE_BUFFER).starting_at(len)))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let file = fs::OpenOptions::new().write(true).open(path).map_err(|e| io_err(path, e))?;
        let now = file.metadata().map_err(|e| io_err(path, e))?.len();
        if len > now {
            return Err(crate::Error::invalid(format!(
                "{}: cannot truncate {now} bytes to {len}",
                path.display()
            )));
        }
        file.set_len(len).map_err(|e| io_err(path, e))?;
        file.sync_all().map_err(|e| io_err(path, e))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = File::open(path).map_err(|e| io_err(path, e))?;
        Ok(Box::new(RealSequentialFile { file, path: path.to_path_buf() }))
    }

    fn open_random(&self, path: &Path, opts: RandomOpenOptions) -> Result<Arc<dyn RandomAccessFile>> {
        let file =
            if opts.direct { open_direct(path)? } else { File::open(path).map_err(|e| io_err(path, e))? };
        let len = file.metadata().map_err(|e| io_err(path, e))?.len();
        Ok(Arc::new(RealRandomFile { file, path: path.to_path_buf(), len, direct: opts.direct }))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path).map_err(|e| io_err(path, e))?.len())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| io_err(path, e))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        fs::remove_dir(dir).map_err(|e| io_err(dir, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| io_err(from, e))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| io_err(from, e))
    }

    fn link_count(&self, path: &Path) -> Result<u64> {
        let meta = fs::metadata(path).map_err(|e| io_err(path, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok(meta.nlink())
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            Ok(1)
        }
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| io_err(dir, e))? {
            let entry = entry.map_err(|e| io_err(dir, e))?;
            // Strata only creates UTF-8 names; anything else is not ours.
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io_err(dir, e))
    }

    /// A POSIX record lock (`fcntl(F_SETLK)`), as LevelDB and RocksDB take:
    /// unlike a `flock`, a child process never inherits it, so a process
    /// that spawns others while it opens and closes databases never sees its
    /// own closed database as locked. Record locks are per process, so the
    /// paths this process holds are also kept in a set (`HELD`).
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        // One name per file, however the caller spelled the path. Checked
        // before the file is opened: closing any descriptor of it would drop
        // the record lock this process may already hold.
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().ok_or_else(|| Error::invalid(format!("lock path {}", path.display())))?;
        let key = fs::canonicalize(parent).map_err(|e| io_err(parent, e))?.join(name);
        if !HELD.lock().insert(key.clone()) {
            return Err(Error::Locked(format!("{} (held by this process)", path.display())));
        }
        let opened = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path);
        let file = match opened {
            Ok(f) => f,
            Err(e) => {
                HELD.lock().remove(&key);
                return Err(io_err(path, e));
            }
        };
        let fd = file.as_raw_fd();
        let lock = RealFileLock { file: Some(file), key };
        // SAFETY: a plain `flock` struct, zeroed then filled, for a valid descriptor.
        let r = unsafe {
            let mut fl: libc::flock = std::mem::zeroed();
            fl.l_type = libc::F_WRLCK as _;
            fl.l_whence = libc::SEEK_SET as _;
            libc::fcntl(fd, libc::F_SETLK, &fl)
        };
        if r == 0 {
            return Ok(Box::new(lock));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EACCES) => Err(Error::Locked(path.display().to_string())),
            _ => Err(io_err(path, e)),
        }
    }
}

/// Opens `path` for `O_DIRECT` reads, or explains that the file system refuses them.
fn open_direct(path: &Path) -> Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        match OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path) {
            Ok(f) => Ok(f),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Err(direct_unsupported(path)),
            Err(e) => Err(io_err(path, e)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(direct_unsupported(path))
    }
}

fn direct_unsupported(path: &Path) -> Error {
    Error::invalid(format!("{}: direct reads (O_DIRECT) are unsupported on this file system", path.display()))
}

/// A file written with one `write(2)` per call; [`BufferedFile`] buffers it.
struct RealRawFile {
    file: File,
    path: PathBuf,
}

impl RawFile for RealRawFile {
    fn write(&mut self, data: &[u8]) -> Result<usize> {
        loop {
            match self.file.write(data) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(&self.path, e)),
            }
        }
    }

    fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| io_err(&self.path, e))
    }
}

struct RealSequentialFile {
    file: File,
    path: PathBuf,
}

impl SequentialFile for RealSequentialFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            match self.file.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(&self.path, e)),
            }
        }
    }
}

#[derive(Debug)]
struct RealRandomFile {
    file: File,
    path: PathBuf,
    len: u64,
    direct: bool,
}

/// Most bytes of aligned buffer a thread keeps between direct reads: a point
/// read's block needs a few KiB; a larger read (a compaction's readahead
/// window) allocates its own, which its size amortizes.
const BOUNCE_KEEP: usize = 256 << 10;

thread_local! {
    /// This thread's aligned buffer for direct reads, zeroed when it grows
    /// rather than on every read (zeroing two buffers per block read was most
    /// of a cache miss's instructions under `use_direct_reads`).
    static BOUNCE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl RealRandomFile {
    /// Reads `len` bytes at `offset` through an aligned bounce buffer, as
    /// `O_DIRECT` demands aligned offsets, lengths and memory.
    fn read_direct(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let align = DIRECT_ALIGN as u64;
        let start = offset / align * align;
        let end = (offset + len as u64).div_ceil(align) * align;
        let span = usize::try_from(end - start).map_err(Error::invalid)?;
        // Room for an aligned window of `span` bytes wherever the buffer starts.
        let need = span + DIRECT_ALIGN;
        if need > BOUNCE_KEEP {
            return self.read_aligned(&mut vec![0u8; need], start, span, offset, len);
        }
        BOUNCE.with(|b| {
            let mut raw = b.borrow_mut();
            if raw.len() < need {
                *raw = vec![0u8; need.max(16 << 10)];
            }
            self.read_aligned(&mut raw, start, span, offset, len)
        })
    }

    /// The direct read of [`Self::read_direct`] into `raw`: `span` aligned
    /// bytes from `start`, of which the `len` at `offset` are returned.
    fn read_aligned(
        &self,
        raw: &mut [u8],
        start: u64,
        span: usize,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>> {
        let pad = raw.as_ptr().align_offset(DIRECT_ALIGN);
        let window = raw.get_mut(pad..pad + span).ok_or_else(|| Error::invalid("aligned buffer"))?;
        let want = (offset - start) as usize + len;
        let mut got = 0usize;
        while got < want {
            // `got` stays a multiple of the alignment: only the read that hits
            // end of file returns a partial block, and it ends the loop.
            match self.file.read_at(&mut window[got..], start + got as u64) {
                Ok(0) => {
                    return Err(Error::corruption(format!("{}: read past end of file", self.path.display())))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    return Err(direct_unsupported(&self.path))
                }
                Err(e) => return Err(io_err(&self.path, e)),
            }
        }
        let from = (offset - start) as usize;
        Ok(window[from..from + len].to_vec())
    }
}

impl RandomAccessFile for RealRandomFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        if offset.checked_add(len as u64).is_none_or(|end| end > self.len) {
            return Err(Error::corruption(format!(
                "{}: read past end of file ({len} bytes at {offset}, file has {})",
                self.path.display(),
                self.len
            )));
        }
        if self.direct {
            return self.read_direct(offset, len);
        }
        pread_exact(&self.file, offset, len).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                Error::corruption(format!("{}: read past end of file", self.path.display()))
            } else {
                io_err(&self.path, e)
            }
        })
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn map(&self, len: u64) -> Result<Option<FileMap>> {
        if len == 0 || len > self.len {
            return Ok(None);
        }
        let bytes = usize::try_from(len).map_err(Error::invalid)?;
        // SAFETY: the map is read-only and covers `len` bytes the file had
        // when opened; the caller maps only a table's committed size. Strata
        // never rewrites a table's bytes in place, cuts a table only past its
        // newest committed size (an uncommitted append, which no map covers),
        // and gives a shared table a new inode before changing it (see
        // docs/FORMAT.md, "Memory-mapped reads"); appends past `len` leave the
        // mapped pages as they are. A process outside Strata that truncates
        // the file breaks this, as it would LevelDB's.
        let map = unsafe { memmap2::MmapOptions::new().len(bytes).map(&self.file) }
            .map_err(|e| io_err(&self.path, e))?;
        // Point reads touch one block per table: read-around wastes the page cache.
        let _ = map.advise(memmap2::Advice::Random);
        Ok(Some(FileMap::new(map)))
    }
}

/// `len` bytes at `offset` into a new buffer that is not zeroed first: on a
/// point read served by the page cache, zeroing the block buffer before
/// `pread` overwrote it measured 6 % of the read's CPU time.
fn pread_exact(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(len);
    while out.len() < len {
        let at = offset + out.len() as u64;
        let at = libc::off_t::try_from(at).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let want = len - out.len();
        let spare = &mut out.spare_capacity_mut()[..want];
        // SAFETY: the kernel writes at most `spare.len()` bytes into memory this
        // vector owns; no `&[u8]` over uninitialised bytes is ever formed.
        let n = unsafe { libc::pread(file.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len(), at) };
        match n {
            0 => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            // SAFETY: `pread` initialised the next `n` bytes (n <= spare.len()).
            n => unsafe { out.set_len(out.len() + n as usize) },
        }
    }
    Ok(out)
}

/// The LOCK files this process holds (canonical paths): a second open in
/// this process would be granted the same record lock (LevelDB's `LockTable`).
static HELD: parking_lot::Mutex<std::collections::BTreeSet<PathBuf>> =
    parking_lot::Mutex::new(std::collections::BTreeSet::new());

/// Holds the OS lock until dropped (closing the file releases it). `File`'s
/// Debug output names the path.
#[derive(Debug)]
struct RealFileLock {
    // INVARIANT: `Some` until dropped.
    file: Option<File>,
    key: PathBuf,
}

impl Drop for RealFileLock {
    fn drop(&mut self) {
        // Closed first: closing any descriptor of the file drops this
        // process's record locks on it, so a later holder must not open it
        // before this one is closed.
        drop(self.file.take());
        HELD.lock().remove(&self.key);
    }
}

impl FileLock for RealFileLock {}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, RealVfs) {
        (tempfile::tempdir().unwrap(), RealVfs::new())
    }

    #[test]
    fn reopened_for_append_the_file_keeps_its_bytes() {
        let (dir, vfs) = setup();
        let p = dir.path().join("f");
        let mut w = vfs.create(&p).unwrap();
        w.append(b"table").unwrap();
        w.sync().unwrap();
        drop(w);
        let mut w = vfs.open_append(&p).unwrap();
        assert_eq!(w.len(), 5);
        w.append(b"+segment").unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 13);
        drop(w);
        assert_eq!(vfs.read_file(&p).unwrap(), b"table+segment");
        assert!(vfs.open_append(&dir.path().join("missing")).is_err(), "append never creates");
    }

    #[test]
    fn write_buffer_flush_and_read_back() {
        let (dir, vfs) = setup();
        let p = dir.path().join("f");
        let mut w = vfs.create(&p).unwrap();
        assert!(w.is_empty());
        w.append(b"hello ").unwrap();
        // Still in the user-space buffer.
        assert_eq!(vfs.file_size(&p).unwrap(), 0);
        w.flush().unwrap();
        assert_eq!(vfs.file_size(&p).unwrap(), 6);
        let big = vec![7u8; 3 * WRITE_BUFFER + 5];
        w.append(&big).unwrap();
        w.append(b"end").unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 6 + big.len() as u64 + 3);
        drop(w);
        let all = vfs.read_file(&p).unwrap();
        assert_eq!(&all[..6], b"hello ");
        assert_eq!(&all[6..6 + big.len()], &big[..]);
        assert_eq!(&all[all.len() - 3..], b"end");

        let r = vfs.open_random(&p, RandomOpenOptions::default()).unwrap();
        assert_eq!(r.len(), all.len() as u64);
        assert_eq!(r.read_at(2, 4).unwrap(), b"llo ");
        assert!(r.read_at(r.len() - 1, 2).unwrap_err().is_corruption());
        assert!(r.read_at(u64::MAX, 2).unwrap_err().is_corruption());
        assert_eq!(r.read_at(r.len(), 0).unwrap(), b"");
    }

    #[test]
    fn drop_flushes_buffer() {
        let (dir, vfs) = setup();
        let p = dir.path().join("f");
        let mut w = vfs.create(&p).unwrap();
        w.append(b"abc").unwrap();
        drop(w);
        assert_eq!(vfs.read_file(&p).unwrap(), b"abc");
    }

    #[test]
    fn direct_reads_match_buffered_or_are_refused() {
        let (dir, vfs) = setup();
        let p = dir.path().join("t");
        let data: Vec<u8> = (0..3 * DIRECT_ALIGN as u32 + 123).map(|i| (i * 31 % 251) as u8).collect();
        let mut w = vfs.create(&p).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        drop(w);
        match vfs.open_random(&p, RandomOpenOptions { direct: true }) {
            Ok(r) => {
                for (off, len) in [(0, 1), (1, 4095), (4095, 2), (4096, 4096), (100, 12000), (12000, 411)] {
                    match r.read_at(off, len) {
                        Ok(got) => assert_eq!(got, &data[off as usize..off as usize + len]),
                        Err(Error::InvalidArgument(msg)) => assert!(msg.contains("direct")),
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
                assert!(r.read_at(data.len() as u64 - 2, 3).unwrap_err().is_corruption());
            }
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.contains("direct") && msg.contains(&p.display().to_string()))
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }

    /// Direct reads of every size against the bytes written: small ones
    /// through the thread's reused buffer (before and after it grows, so
    /// stale bytes of an earlier read would show), large ones through their own.
    #[test]
    fn direct_reads_of_any_size_reuse_no_stale_bytes() {
        let (dir, vfs) = setup();
        let p = dir.path().join("big");
        let data: Vec<u8> =
            (0..600 * 1024 + 77u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let mut w = vfs.create(&p).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        drop(w);
        let r = match vfs.open_random(&p, RandomOpenOptions { direct: true }) {
            Ok(r) => r,
            Err(Error::InvalidArgument(msg)) if msg.contains("direct") => return,
            Err(e) => panic!("unexpected {e}"),
        };
        let n = data.len() as u64;
        let reads = [
            (5, 100),
            (4097, 8191),
            (123, 200 << 10),
            (7, 3),
            (0, 300 << 10),
            (n - 4000, 4000),
            (0, data.len()),
            (n - 1, 1),
            (1, 252 << 10),
        ];
        for (off, len) in reads {
            match r.read_at(off, len) {
                Ok(got) => assert!(got == data[off as usize..off as usize + len], "{len} bytes at {off}"),
                Err(Error::InvalidArgument(msg)) => assert!(msg.contains("direct")),
                Err(e) => panic!("unexpected {e}"),
            }
        }
    }

    #[test]
    fn dir_ops_rename_remove_list() {
        let (dir, vfs) = setup();
        let sub = dir.path().join("a/b");
        vfs.create_dir_all(&sub).unwrap();
        for n in ["x", "y"] {
            let mut w = vfs.create(&sub.join(n)).unwrap();
            w.append(n.as_bytes()).unwrap();
            w.flush().unwrap();
        }
        vfs.rename(&sub.join("x"), &sub.join("y")).unwrap();
        assert_eq!(vfs.read_file(&sub.join("y")).unwrap(), b"x");
        assert!(!vfs.exists(&sub.join("x")));
        vfs.sync_dir(&sub).unwrap();
        assert_eq!(vfs.list_dir(&sub).unwrap(), vec!["y".to_string()]);
        vfs.remove_file(&sub.join("y")).unwrap();
        assert!(
            matches!(vfs.remove_file(&sub.join("y")), Err(Error::Io(e)) if e.kind() == io::ErrorKind::NotFound)
        );
        assert!(matches!(vfs.open_sequential(&sub.join("nope")), Err(Error::Io(_))));
        assert!(matches!(vfs.file_size(&sub.join("nope")), Err(Error::Io(_))));
    }

    #[test]
    fn lock_is_exclusive_until_dropped() {
        let (dir, vfs) = setup();
        let p = dir.path().join("LOCK");
        let l = vfs.lock(&p).unwrap();
        assert!(matches!(vfs.lock(&p), Err(Error::Locked(_))));
        // Another spelling of the same file is the same lock.
        let other = dir.path().join(".").join("LOCK");
        assert!(matches!(vfs.lock(&other), Err(Error::Locked(_))));
        drop(l);
        let _again = vfs.lock(&p).unwrap();
    }

    /// Regression: the LOCK was a `flock`, which a child process spawned by
    /// any thread shares until its exec, so a database closed in that window
    /// still looked locked (the CLI tests met it). A record lock is never
    /// inherited.
    #[test]
    fn a_child_between_fork_and_exec_does_not_keep_a_released_lock() {
        use std::os::unix::process::CommandExt;
        let (dir, vfs) = setup();
        let p = dir.path().join("LOCK");
        let held = vfs.lock(&p).unwrap();
        let (mut ready, mut go) = ([0; 2], [0; 2]);
        // SAFETY: two plain pipes.
        assert_eq!(unsafe { libc::pipe(ready.as_mut_ptr()) + libc::pipe(go.as_mut_ptr()) }, 0);
        let mut cmd = std::process::Command::new("true");
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let mut b = [1u8];
                libc::write(ready[1], b.as_ptr().cast(), 1);
                libc::read(go[0], b.as_mut_ptr().cast(), 1);
                Ok(())
            });
        }
        let child = std::thread::spawn(move || cmd.status());
        let mut b = [0u8];
        // SAFETY: reading one byte into a local buffer.
        assert_eq!(unsafe { libc::read(ready[0], b.as_mut_ptr().cast(), 1) }, 1, "the child forked");
        // The child now holds a copy of every descriptor, the LOCK's included.
        drop(held);
        let again = vfs.lock(&p);
        // SAFETY: writing one byte from a local buffer.
        unsafe { libc::write(go[1], b.as_ptr().cast(), 1) };
        child.join().unwrap().unwrap();
        assert!(again.is_ok(), "{again:?}");
    }
}
