//! An in-memory file system for tests. It tracks what a crash could lose: how
//! much of each file was synced, and which directory operations happened since
//! each directory was last synced.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::buffered::{BufferedFile, RawFile};
use super::{FileLock, RandomAccessFile, RandomOpenOptions, SequentialFile, Vfs, WritableFile};
use crate::error::{Error, Result};

/// One file's contents; shared by every handle open on it, like an inode.
#[derive(Debug, Default)]
struct MemFile {
    data: Vec<u8>,
    /// Prefix of `data` made durable by `sync`.
    synced_len: usize,
}

type FileRef = Arc<Mutex<MemFile>>;

/// A directory operation not yet made durable by `sync_dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirOp {
    /// A new file appeared at this path.
    Created(PathBuf),
    /// The file at this path was removed.
    Removed(PathBuf),
    /// A file moved, replacing whatever was at `to`.
    Renamed {
        /// Old path.
        from: PathBuf,
        /// New path.
        to: PathBuf,
    },
}

#[derive(Default)]
struct State {
    files: HashMap<PathBuf, FileRef>,
    dirs: HashSet<PathBuf>,
    locks: HashSet<PathBuf>,
    /// Per directory, operations since its last `sync_dir`, oldest first, each
    /// with the file it displaced (removed, or replaced by a rename) so that a
    /// crash can put it back.
    pending: HashMap<PathBuf, Vec<(DirOp, Option<FileRef>)>>,
}

impl State {
    fn file(&self, path: &Path) -> Result<FileRef> {
        self.files.get(path).cloned().ok_or_else(|| not_found(path))
    }

    fn dir_exists(&self, dir: &Path) -> bool {
        dir.as_os_str().is_empty() || dir.parent().is_none() || self.dirs.contains(dir)
    }

    fn check_parent(&self, path: &Path) -> Result<()> {
        match path.parent() {
            Some(dir) if !self.dir_exists(dir) => Err(not_found(dir)),
            _ => Ok(()),
        }
    }

    fn record(&mut self, path: &Path, op: DirOp, displaced: Option<FileRef>) {
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        self.pending.entry(dir).or_default().push((op, displaced));
    }
}

fn not_found(path: &Path) -> Error {
    Error::Io(io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    ))
}

/// An in-memory [`Vfs`]; clones share the same files.
#[derive(Clone, Default)]
pub struct MemVfs {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for MemVfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("MemVfs").field("files", &s.files.len()).field("dirs", &s.dirs.len()).finish()
    }
}

impl MemVfs {
    /// Returns an empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// XORs the byte at `offset` of a file with `xor` (test helper for corruption).
    pub fn corrupt_byte(&self, path: &Path, offset: u64, xor: u8) -> Result<()> {
        let file = self.state.lock().file(path)?;
        let mut f = file.lock();
        let b = usize::try_from(offset)
            .ok()
            .and_then(|o| f.data.get_mut(o))
            .ok_or_else(|| Error::invalid(format!("{}: offset {offset} is past the end", path.display())))?;
        *b ^= xor;
        Ok(())
    }

    /// Cuts a file to `len` bytes, or extends it with zeros (test helper).
    pub fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let file = self.state.lock().file(path)?;
        let mut f = file.lock();
        let len = usize::try_from(len).map_err(Error::invalid)?;
        f.data.resize(len, 0);
        f.synced_len = f.synced_len.min(len);
        Ok(())
    }

    /// Bytes of a file that a `sync` made durable.
    pub fn synced_len(&self, path: &Path) -> Result<u64> {
        let file = self.state.lock().file(path)?;
        let len = file.lock().synced_len;
        Ok(len as u64)
    }

    /// Marks up to `len` bytes of a file durable, as a device that wrote back
    /// part of the dirty data before failing a sync would (crash VFS).
    pub(super) fn write_back(&self, path: &Path, len: u64) -> Result<()> {
        let file = self.state.lock().file(path)?;
        let mut f = file.lock();
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(f.data.len());
        f.synced_len = f.synced_len.max(len);
        Ok(())
    }

    /// Directory operations in `dir` since its last `sync_dir`, oldest first.
    pub fn unsynced_dir_ops(&self, dir: &Path) -> Vec<DirOp> {
        let s = self.state.lock();
        s.pending.get(dir).map(|ops| ops.iter().map(|(op, _)| op.clone()).collect()).unwrap_or_default()
    }
}

/// Decides what survives a simulated power loss (see [`super::testing::CrashVfs`]).
pub(super) trait Survivor {
    /// How many of the `n` un-synced operations of `dir` (oldest first) reached
    /// the disk; the rest are undone, newest first.
    fn dir_ops_kept(&mut self, dir: &Path, n: usize) -> usize;
    /// The bytes of the file at `path` left on disk, given its contents and the
    /// prefix a `sync` made durable.
    fn file_bytes(&mut self, path: &Path, data: &[u8], synced_len: usize) -> Vec<u8>;
}

impl MemVfs {
    /// A new, independent file system holding what survives a power loss now:
    /// un-synced directory operations undone (beyond what `s` keeps), every
    /// file cut to what `s` keeps, everything in the result synced, no locks.
    /// Paths are visited in sorted order so a seeded `s` is deterministic.
    pub(super) fn durable_image(&self, s: &mut dyn Survivor) -> MemVfs {
        let st = self.state.lock();
        let mut files = st.files.clone();
        let mut dirs: Vec<&PathBuf> = st.pending.keys().collect();
        dirs.sort();
        for dir in dirs {
            let ops = &st.pending[dir];
            let keep = s.dir_ops_kept(dir, ops.len()).min(ops.len());
            for (op, displaced) in ops[keep..].iter().rev() {
                match op {
                    DirOp::Created(p) => {
                        files.remove(p);
                    }
                    DirOp::Removed(p) => {
                        if let Some(f) = displaced {
                            files.insert(p.clone(), Arc::clone(f));
                        }
                    }
                    // A cross-directory rename is undone with its target's directory.
                    DirOp::Renamed { from, to } if to.parent().unwrap_or(Path::new("")) == dir.as_path() => {
                        if let Some(f) = files.remove(to) {
                            files.insert(from.clone(), f);
                        }
                        if let Some(f) = displaced {
                            files.insert(to.clone(), Arc::clone(f));
                        }
                    }
                    DirOp::Renamed { .. } => {}
                }
            }
        }
        let mut paths: Vec<PathBuf> = files.keys().cloned().collect();
        paths.sort();
        let mut out = State { dirs: st.dirs.clone(), ..State::default() };
        drop(st);
        for path in paths {
            let f = files[&path].lock();
            let data = s.file_bytes(&path, &f.data, f.synced_len.min(f.data.len()));
            let synced_len = data.len();
            out.files.insert(path, Arc::new(Mutex::new(MemFile { data, synced_len })));
        }
        MemVfs { state: Arc::new(Mutex::new(out)) }
    }
}

impl Vfs for MemVfs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut s = self.state.lock();
        for d in dir.ancestors() {
            if s.files.contains_key(d) {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{}: is a file", d.display()),
                )));
            }
            if !d.as_os_str().is_empty() {
                s.dirs.insert(d.to_path_buf());
            }
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        // No buffer: an append is in the "OS" at once, as a process kill keeps it.
        Ok(Box::new(BufferedFile::new(self.create_raw(path)?, path, 0)))
    }

    fn create_raw(&self, path: &Path) -> Result<Box<dyn RawFile>> {
        let mut s = self.state.lock();
        s.check_parent(path)?;
        if s.dirs.contains(path) {
            return Err(Error::invalid(format!("{}: is a directory", path.display())));
        }
        let file = match s.files.get(path) {
            Some(f) => {
                // O_TRUNC: the same inode, emptied.
                let f = Arc::clone(f);
                let mut g = f.lock();
                g.data.clear();
                g.synced_len = 0;
                drop(g);
                f
            }
            None => {
                let f = FileRef::default();
                s.files.insert(path.to_path_buf(), Arc::clone(&f));
                s.record(path, DirOp::Created(path.to_path_buf()), None);
                f
            }
        };
        Ok(Box::new(MemRawFile { file }))
    }

    fn open_append_raw(&self, path: &Path) -> Result<(Box<dyn RawFile>, u64)> {
        // The same inode, kept whole: no directory operation, nothing truncated.
        let file = self.state.lock().file(path)?;
        let len = file.lock().data.len() as u64;
        Ok((Box::new(MemRawFile { file }), len))
    }

    /// The cut is durable at once. A real file system may lose an unsynced
    /// cut, which leaves the bytes past the recorded length a crash during
    /// the append itself leaves; the crash tests cover that state.
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let file = self.state.lock().file(path)?;
        let mut f = file.lock();
        let len = usize::try_from(len).map_err(|_| crate::Error::invalid("truncate length"))?;
        if len > f.data.len() {
            return Err(crate::Error::invalid(format!(
                "{}: cannot truncate {} bytes to {len}",
                path.display(),
                f.data.len()
            )));
        }
        f.data.truncate(len);
        f.synced_len = f.synced_len.min(len);
        Ok(())
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = self.state.lock().file(path)?;
        Ok(Box::new(MemSequentialFile { file, pos: 0 }))
    }

    fn open_random(&self, path: &Path, _opts: RandomOpenOptions) -> Result<Arc<dyn RandomAccessFile>> {
        let file = self.state.lock().file(path)?;
        Ok(Arc::new(MemRandomFile { file, path: path.to_path_buf() }))
    }

    fn exists(&self, path: &Path) -> bool {
        let s = self.state.lock();
        s.files.contains_key(path) || s.dirs.contains(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let file = self.state.lock().file(path)?;
        let len = file.lock().data.len();
        Ok(len as u64)
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        let mut s = self.state.lock();
        let old = s.files.remove(path).ok_or_else(|| not_found(path))?;
        s.record(path, DirOp::Removed(path.to_path_buf()), Some(old));
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        let mut s = self.state.lock();
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let child = |p: &PathBuf| p.parent() == Some(dir);
        if s.files.keys().any(child) || s.dirs.iter().any(child) {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                format!("{}: directory not empty", dir.display()),
            )));
        }
        // Not a crash-modelled operation: an image keeps or drops it with the parent's entries.
        s.dirs.remove(dir);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut s = self.state.lock();
        s.check_parent(to)?;
        let file = s.files.remove(from).ok_or_else(|| not_found(from))?;
        let replaced = s.files.insert(to.to_path_buf(), file);
        let op = DirOp::Renamed { from: from.to_path_buf(), to: to.to_path_buf() };
        s.record(to, op.clone(), replaced);
        if from.parent() != to.parent() {
            s.record(from, op, None);
        }
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        let s = self.state.lock();
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let children = s.files.keys().chain(s.dirs.iter()).filter(|p| p.parent() == Some(dir));
        Ok(children.filter_map(|p| p.file_name()?.to_str().map(str::to_string)).collect())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut s = self.state.lock();
        if !s.dir_exists(dir) {
            return Err(not_found(dir));
        }
        s.pending.remove(dir);
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut s = self.state.lock();
        s.check_parent(path)?;
        if !s.files.contains_key(path) {
            s.files.insert(path.to_path_buf(), FileRef::default());
            s.record(path, DirOp::Created(path.to_path_buf()), None);
        }
        if !s.locks.insert(path.to_path_buf()) {
            return Err(Error::Locked(path.display().to_string()));
        }
        Ok(Box::new(MemFileLock { state: Arc::clone(&self.state), path: path.to_path_buf() }))
    }
}

struct MemRawFile {
    file: FileRef,
}

impl RawFile for MemRawFile {
    fn write(&mut self, data: &[u8]) -> Result<usize> {
        self.file.lock().data.extend_from_slice(data);
        Ok(data.len())
    }

    fn sync(&mut self) -> Result<()> {
        let mut f = self.file.lock();
        f.synced_len = f.data.len();
        Ok(())
    }
}

struct MemSequentialFile {
    file: FileRef,
    pos: usize,
}

impl SequentialFile for MemSequentialFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let f = self.file.lock();
        let rest = f.data.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}

struct MemRandomFile {
    file: FileRef,
    path: PathBuf,
}

impl fmt::Debug for MemRandomFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemRandomFile").field("path", &self.path).finish()
    }
}

impl RandomAccessFile for MemRandomFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let f = self.file.lock();
        usize::try_from(offset)
            .ok()
            .and_then(|o| f.data.get(o..o.checked_add(len)?))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                Error::corruption(format!(
                    "{}: read past end of file ({len} bytes at {offset}, file has {})",
                    self.path.display(),
                    f.data.len()
                ))
            })
    }

    fn len(&self) -> u64 {
        self.file.lock().data.len() as u64
    }
}

struct MemFileLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl fmt::Debug for MemFileLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemFileLock").field("path", &self.path).finish()
    }
}

impl FileLock for MemFileLock {}

impl Drop for MemFileLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (MemVfs, PathBuf) {
        let vfs = MemVfs::new();
        let dir = PathBuf::from("/db");
        vfs.create_dir_all(&dir).unwrap();
        (vfs, dir)
    }

    fn write(vfs: &MemVfs, path: &Path, data: &[u8], sync: bool) {
        let mut w = vfs.create(path).unwrap();
        w.append(data).unwrap();
        if sync {
            w.sync().unwrap();
        }
    }

    #[test]
    fn files_round_trip_and_clones_share_state() {
        let (vfs, dir) = setup();
        let p = dir.join("a");
        let other = vfs.clone();
        let mut w = vfs.create(&p).unwrap();
        w.append(b"hello").unwrap();
        assert_eq!(w.len(), 5);
        assert_eq!(other.read_file(&p).unwrap(), b"hello");
        assert_eq!(other.synced_len(&p).unwrap(), 0);
        w.sync().unwrap();
        assert_eq!(other.synced_len(&p).unwrap(), 5);
        let r = other.open_random(&p, RandomOpenOptions { direct: true }).unwrap();
        assert_eq!(r.read_at(1, 3).unwrap(), b"ell");
        assert!(r.read_at(3, 3).unwrap_err().is_corruption());
        assert!(r.read_at(u64::MAX, 1).unwrap_err().is_corruption());
        assert_eq!(vfs.file_size(&p).unwrap(), 5);

        let mut s = vfs.open_sequential(&p).unwrap();
        let mut buf = [0u8; 2];
        assert_eq!(s.read(&mut buf).unwrap(), 2);
        assert_eq!(&buf, b"he");
        let mut rest = [0u8; 10];
        assert_eq!(s.read(&mut rest).unwrap(), 3);
        assert_eq!(s.read(&mut rest).unwrap(), 0);
    }

    #[test]
    fn missing_things_are_io_errors() {
        let (vfs, dir) = setup();
        let missing = dir.join("nope");
        assert!(matches!(vfs.open_sequential(&missing), Err(Error::Io(_))));
        assert!(matches!(vfs.file_size(&missing), Err(Error::Io(_))));
        assert!(matches!(vfs.remove_file(&missing), Err(Error::Io(_))));
        assert!(matches!(vfs.create(Path::new("/other/x")), Err(Error::Io(_))));
        assert!(matches!(vfs.list_dir(Path::new("/other")), Err(Error::Io(_))));
        assert!(matches!(vfs.corrupt_byte(&missing, 0, 1), Err(Error::Io(_))));
    }

    #[test]
    fn rename_replaces_and_list_dir_shows_direct_children() {
        let (vfs, dir) = setup();
        vfs.create_dir_all(&dir.join("sub/deeper")).unwrap();
        write(&vfs, &dir.join("x"), b"new", false);
        write(&vfs, &dir.join("y"), b"old", false);
        write(&vfs, &dir.join("sub/z"), b"", false);
        vfs.rename(&dir.join("x"), &dir.join("y")).unwrap();
        assert_eq!(vfs.read_file(&dir.join("y")).unwrap(), b"new");
        assert!(!vfs.exists(&dir.join("x")));
        let mut names = vfs.list_dir(&dir).unwrap();
        names.sort();
        assert_eq!(names, ["sub", "y"]);
        assert_eq!(vfs.list_dir(&dir.join("sub")).unwrap().len(), 2);
        vfs.remove_file(&dir.join("y")).unwrap();
        assert!(!vfs.exists(&dir.join("y")));
    }

    #[test]
    fn dir_ops_are_pending_until_sync_dir() {
        let (vfs, dir) = setup();
        write(&vfs, &dir.join("a"), b"1", true);
        write(&vfs, &dir.join("b"), b"2", true);
        // Re-creating an existing file truncates it; not a directory operation.
        write(&vfs, &dir.join("b"), b"3", false);
        assert_eq!(vfs.synced_len(&dir.join("b")).unwrap(), 0);
        vfs.rename(&dir.join("a"), &dir.join("c")).unwrap();
        vfs.remove_file(&dir.join("b")).unwrap();
        assert_eq!(
            vfs.unsynced_dir_ops(&dir),
            vec![
                DirOp::Created(dir.join("a")),
                DirOp::Created(dir.join("b")),
                DirOp::Renamed { from: dir.join("a"), to: dir.join("c") },
                DirOp::Removed(dir.join("b")),
            ]
        );
        vfs.sync_dir(&dir).unwrap();
        assert!(vfs.unsynced_dir_ops(&dir).is_empty());
    }

    #[test]
    fn locks_are_exclusive_while_held() {
        let (vfs, dir) = setup();
        let p = dir.join("LOCK");
        let l = vfs.lock(&p).unwrap();
        assert!(vfs.exists(&p));
        assert!(matches!(vfs.clone().lock(&p), Err(Error::Locked(_))));
        drop(l);
        let _again = vfs.lock(&p).unwrap();
    }

    #[test]
    fn corrupt_and_truncate_helpers() {
        let (vfs, dir) = setup();
        let p = dir.join("f");
        write(&vfs, &p, b"abcdef", true);
        vfs.corrupt_byte(&p, 1, 0x01).unwrap();
        assert_eq!(vfs.read_file(&p).unwrap(), b"accdef");
        assert!(matches!(vfs.corrupt_byte(&p, 6, 1), Err(Error::InvalidArgument(_))));
        vfs.truncate(&p, 3).unwrap();
        assert_eq!(vfs.read_file(&p).unwrap(), b"acc");
        assert_eq!(vfs.synced_len(&p).unwrap(), 3);
        vfs.truncate(&p, 5).unwrap();
        assert_eq!(vfs.read_file(&p).unwrap(), b"acc\0\0");
    }
}
