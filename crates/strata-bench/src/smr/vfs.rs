//! [`SmrVfs`]: a [`Vfs`] that hands every call to another one (the data is
//! real) and shows each write and read to a simulated [`Drive`], so a run
//! measures what a shingled (or conventional) drive would have done with the
//! engine's I/O. Simulated: nothing is slowed down; the drive's busy seconds
//! are counted.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use strata::vfs::{
    BufferedFile, FileLock, RandomAccessFile, RandomOpenOptions, RawFile, SequentialFile, WritableFile,
    WRITE_BUFFER,
};
use strata::Vfs;

use super::model::{Drive, DriveConfig, DriveStats, FileId};

/// The drive and which file each name is.
#[derive(Debug)]
struct State {
    drive: Drive,
    names: HashMap<PathBuf, FileId>,
}

impl State {
    /// The drive's file for `path`, placing a file the drive has not seen
    /// (written before this VFS wrapped the directory) as it is now.
    fn id(&mut self, path: &Path, len: impl FnOnce() -> u64) -> FileId {
        if let Some(&id) = self.names.get(path) {
            return id;
        }
        let id = self.drive.adopt(len());
        self.names.insert(path.to_path_buf(), id);
        id
    }

    /// `path` no longer names its file; the file goes when no name is left.
    fn unlink(&mut self, path: &Path) {
        if let Some(id) = self.names.remove(path) {
            if !self.names.values().any(|&other| other == id) {
                self.drive.delete(id);
            }
        }
    }
}

type Shared = Arc<Mutex<State>>;

fn lock(state: &Shared) -> MutexGuard<'_, State> {
    // The model's counters stay usable if a panicking thread held the lock.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A simulated drive under another file system.
pub struct SmrVfs {
    inner: Arc<dyn Vfs>,
    state: Shared,
}

impl fmt::Debug for SmrVfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmrVfs").field("drive", &lock(&self.state).drive.config()).finish()
    }
}

impl SmrVfs {
    /// `inner` on a fresh simulated drive shaped by `cfg`.
    pub fn new(inner: Arc<dyn Vfs>, cfg: DriveConfig) -> Self {
        SmrVfs { inner, state: Arc::new(Mutex::new(State { drive: Drive::new(cfg), names: HashMap::new() })) }
    }

    /// What the drive did so far.
    pub fn stats(&self) -> DriveStats {
        lock(&self.state).drive.stats()
    }

    /// The drive's shape.
    pub fn config(&self) -> DriveConfig {
        lock(&self.state).drive.config()
    }
}

impl Vfs for SmrVfs {
    fn create_dir_all(&self, dir: &Path) -> strata::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        Ok(Box::new(BufferedFile::new(self.create_raw(path)?, path, WRITE_BUFFER)))
    }

    fn create_raw(&self, path: &Path) -> strata::Result<Box<dyn RawFile>> {
        let raw = self.inner.create_raw(path)?;
        let mut st = lock(&self.state);
        st.unlink(path);
        let id = st.drive.create();
        st.names.insert(path.to_path_buf(), id);
        Ok(Box::new(SmrRaw { raw, id, state: self.state.clone() }))
    }

    fn open_append_raw(&self, path: &Path) -> strata::Result<(Box<dyn RawFile>, u64)> {
        let (raw, len) = self.inner.open_append_raw(path)?;
        let id = lock(&self.state).id(path, || len);
        Ok((Box::new(SmrRaw { raw, id, state: self.state.clone() }), len))
    }

    fn open_append(&self, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        let (raw, len) = self.open_append_raw(path)?;
        Ok(Box::new(BufferedFile::new(raw, path, WRITE_BUFFER).starting_at(len)))
    }

    fn truncate(&self, path: &Path, len: u64) -> strata::Result<()> {
        self.inner.truncate(path, len)?;
        let mut st = lock(&self.state);
        let id = st.id(path, || len);
        st.drive.truncate(id, len);
        Ok(())
    }

    fn open_sequential(&self, path: &Path) -> strata::Result<Box<dyn SequentialFile>> {
        let file = self.inner.open_sequential(path)?;
        let id = lock(&self.state).id(path, || self.inner.file_size(path).unwrap_or(0));
        Ok(Box::new(SmrSequential { file, id, at: 0, state: self.state.clone() }))
    }

    fn open_random(&self, path: &Path, opts: RandomOpenOptions) -> strata::Result<Arc<dyn RandomAccessFile>> {
        let file = self.inner.open_random(path, opts)?;
        let id = lock(&self.state).id(path, || file.len());
        Ok(Arc::new(SmrRandom { file, id, state: self.state.clone() }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn file_size(&self, path: &Path) -> strata::Result<u64> {
        self.inner.file_size(path)
    }

    fn remove_file(&self, path: &Path) -> strata::Result<()> {
        self.inner.remove_file(path)?;
        lock(&self.state).unlink(path);
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> strata::Result<()> {
        self.inner.remove_dir(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> strata::Result<()> {
        self.inner.rename(from, to)?;
        let mut st = lock(&self.state);
        st.unlink(to);
        if let Some(id) = st.names.remove(from) {
            st.names.insert(to.to_path_buf(), id);
        }
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> strata::Result<()> {
        self.inner.hard_link(from, to)?;
        let mut st = lock(&self.state);
        let id = st.id(from, || self.inner.file_size(from).unwrap_or(0));
        st.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn link_count(&self, path: &Path) -> strata::Result<u64> {
        self.inner.link_count(path)
    }

    fn list_dir(&self, dir: &Path) -> strata::Result<Vec<String>> {
        self.inner.list_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> strata::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> strata::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

/// A file being written: each OS write the engine's buffer makes is shown
/// to the drive.
struct SmrRaw {
    raw: Box<dyn RawFile>,
    id: FileId,
    state: Shared,
}

impl RawFile for SmrRaw {
    fn write(&mut self, data: &[u8]) -> strata::Result<usize> {
        let n = self.raw.write(data)?;
        lock(&self.state).drive.append(self.id, n as u64);
        Ok(n)
    }

    fn sync(&mut self) -> strata::Result<()> {
        self.raw.sync()
    }
}

/// A file read front to back (WAL and MANIFEST replay).
struct SmrSequential {
    file: Box<dyn SequentialFile>,
    id: FileId,
    at: u64,
    state: Shared,
}

impl SequentialFile for SmrSequential {
    fn read(&mut self, buf: &mut [u8]) -> strata::Result<usize> {
        let n = self.file.read(buf)?;
        lock(&self.state).drive.read(self.id, self.at, n as u64);
        self.at += n as u64;
        Ok(n)
    }
}

/// A table: every read the engine issues is one request to the drive (no
/// page cache: the database is taken to be much larger than memory).
struct SmrRandom {
    file: Arc<dyn RandomAccessFile>,
    id: FileId,
    state: Shared,
}

impl fmt::Debug for SmrRandom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmrRandom").field("file", &self.file).finish()
    }
}

impl RandomAccessFile for SmrRandom {
    fn read_at(&self, offset: u64, len: usize) -> strata::Result<Vec<u8>> {
        let out = self.file.read_at(offset, len)?;
        lock(&self.state).drive.read(self.id, offset, len as u64);
        Ok(out)
    }

    fn len(&self) -> u64 {
        self.file.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::{Placement, Shingled};
    use super::*;

    const MIB: u64 = 1 << 20;

    fn smr(placement: Placement) -> (tempfile::TempDir, SmrVfs) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let cfg = DriveConfig::desktop(Some(Shingled { band_size: 4 * MIB, cache_size: MIB }), placement, 0);
        (dir, SmrVfs::new(Arc::new(strata::RealVfs::new()), cfg))
    }

    #[test]
    fn the_drive_sees_what_the_engine_writes_and_the_data_is_real() -> strata::Result<()> {
        let (dir, vfs) = smr(Placement::FileSystem);
        let path = dir.path().join("a");
        let mut f = vfs.create(&path)?;
        f.append(&vec![7u8; 100_000])?;
        f.sync()?;
        drop(f);
        assert_eq!(vfs.stats().host_written, 100_000);
        let r = vfs.open_random(&path, RandomOpenOptions::default())?;
        assert_eq!(r.read_at(99_999, 1)?, vec![7]);
        assert_eq!(vfs.stats().host_read, 1);
        // An append reopens the same file on the drive.
        let mut f = vfs.open_append(&path)?;
        f.append(&[1, 2, 3])?;
        f.sync()?;
        drop(f);
        assert_eq!(vfs.stats().host_written, 100_003);
        assert_eq!(std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0), 100_003);
        Ok(())
    }

    #[test]
    fn a_name_removed_frees_its_space_once_no_link_is_left() -> strata::Result<()> {
        let (dir, vfs) = smr(Placement::BandPerFile);
        let (a, b, c) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
        let mut f = vfs.create(&a)?;
        f.append(&vec![0u8; MIB as usize])?;
        f.sync()?;
        drop(f);
        vfs.hard_link(&a, &b)?;
        vfs.remove_file(&a)?;
        // `b` still holds the band: a new file goes to another one, and
        // appending to `b` goes on at its write pointer (nothing cached).
        let mut g = vfs.create(&c)?;
        g.append(&[0u8; 10])?;
        g.sync()?;
        let mut f = vfs.open_append(&b)?;
        f.append(&[1u8; 10])?;
        f.sync()?;
        let s = vfs.stats();
        assert_eq!((s.cached, s.media_written), (0, s.host_written), "{s:?}");
        vfs.rename(&b, &a)?;
        vfs.remove_file(&a)?;
        Ok(())
    }
}
