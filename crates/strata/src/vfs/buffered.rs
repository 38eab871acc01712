//! The write path every file write takes: a user-space buffer ([`BufferedFile`])
//! over one OS file ([`RawFile`]). The buffer owns the failure rule, so every
//! VFS gets it: once a write or sync of a file fails, the file is never written
//! or synced again.
//!
//! Why: a failed `write` may have put part of the data in the file (a short
//! write, then `ENOSPC`). Writing the buffer again would append a second copy
//! after a torn prefix — a record the caller was told had failed would then be
//! in the log, behind bytes recovery stops at. And after a failed `fdatasync`
//! the kernel may have dropped the dirty pages it could not write, so a later
//! sync that succeeds proves nothing (PostgreSQL's fsync lesson). The file's
//! contents stay whatever the OS has; the engine goes read-only and recovery,
//! which drops a torn tail, decides what survives.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::WritableFile;
use crate::error::{Error, Result};

/// Bytes a [`BufferedFile`] over a real file collects before it writes them.
pub const WRITE_BUFFER: usize = 64 * 1024;

/// One open file at the OS level: each call is one system call's worth of work.
pub trait RawFile: Send + Sync {
    /// Writes a prefix of `data` at the end of the file (one `write(2)`) and
    /// returns its length, which may be shorter than `data` (a short write: the
    /// next call usually reports why). An error means this call wrote nothing.
    fn write(&mut self, data: &[u8]) -> Result<usize>;
    /// Makes everything written so far durable (`fdatasync(2)`).
    fn sync(&mut self) -> Result<()>;
}

/// A [`WritableFile`] that gathers appends in a buffer of `capacity` bytes
/// (0: every append goes straight to the [`RawFile`]) and refuses every write
/// and sync after the first failed one.
pub struct BufferedFile {
    raw: Box<dyn RawFile>,
    path: PathBuf,
    buf: Vec<u8>,
    capacity: usize,
    len: u64,
    /// Why the file stopped being written, once a write or sync failed.
    failed: Option<String>,
}

impl fmt::Debug for BufferedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferedFile")
            .field("path", &self.path)
            .field("buffered", &self.buf.len())
            .field("failed", &self.failed)
            .finish()
    }
}

impl BufferedFile {
    /// A file reopened for append: `len()` counts from `len`, the bytes the
    /// file already holds.
    #[must_use]
    pub fn starting_at(mut self, len: u64) -> Self {
        self.len = len;
        self
    }

    /// Buffers appends to `raw` (the file at `path`) up to `capacity` bytes.
    pub fn new(raw: Box<dyn RawFile>, path: &Path, capacity: usize) -> Self {
        BufferedFile {
            raw,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(capacity),
            capacity,
            len: 0,
            failed: None,
        }
    }

    /// Why the file is no longer written, if a write or sync failed.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    fn check(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(why) => Err(Error::Io(io::Error::other(format!(
                "{}: not written, an earlier write or sync of this file failed ({why})",
                self.path.display()
            )))),
        }
    }

    /// Remembers `e` as the reason the file is done, and returns it.
    fn fail(&mut self, e: Error) -> Error {
        self.failed.get_or_insert_with(|| e.to_string());
        // Whatever was buffered is abandoned: writing it later would put it
        // after bytes of unknown extent.
        self.buf = Vec::new();
        e
    }

    /// Writes all of `data`, retrying short writes until one fails.
    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        let mut done = 0;
        while done < data.len() {
            match self.raw.write(&data[done..]) {
                Ok(0) => {
                    let e = io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("{}: write wrote nothing", self.path.display()),
                    );
                    return Err(self.fail(Error::Io(e)));
                }
                Ok(n) => done += n,
                Err(Error::Io(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.fail(e)),
            }
        }
        Ok(())
    }

    fn write_buffer(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let r = self.write_all(&buf);
        if r.is_ok() {
            self.buf = buf;
            self.buf.clear();
        }
        r
    }
}

impl WritableFile for BufferedFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.check()?;
        if self.buf.len() + data.len() > self.capacity {
            self.write_buffer()?;
        }
        if data.len() >= self.capacity {
            // Large appends skip the copy into the buffer.
            self.write_all(data)?;
        } else {
            self.buf.extend_from_slice(data);
        }
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.check()?;
        self.write_buffer()
    }

    fn sync(&mut self) -> Result<()> {
        self.check()?;
        self.write_buffer()?;
        match self.raw.sync() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for BufferedFile {
    fn drop(&mut self) {
        // Like closing a stdio stream: buffered bytes reach the OS, unless the
        // file failed. Errors cannot be reported from drop; callers that care
        // call flush or sync first.
        if self.failed.is_none() {
            let _ = self.write_buffer();
        }
    }
}

/// Adapts a [`WritableFile`] to a [`RawFile`] (each write appends and flushes
/// all of it), for file systems that only offer buffered files.
pub(crate) struct WritableAsRaw(pub(crate) Box<dyn WritableFile>);

impl RawFile for WritableAsRaw {
    fn write(&mut self, data: &[u8]) -> Result<usize> {
        self.0.append(data)?;
        self.0.flush()?;
        Ok(data.len())
    }

    fn sync(&mut self) -> Result<()> {
        self.0.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use parking_lot::Mutex;

    /// A raw file that accepts `room` bytes, then makes short writes and errors.
    #[derive(Clone, Default)]
    struct Disk {
        data: Arc<Mutex<Vec<u8>>>,
        room: Arc<Mutex<usize>>,
        syncs: Arc<Mutex<usize>>,
        fail_sync: Arc<Mutex<bool>>,
    }

    impl RawFile for Disk {
        fn write(&mut self, data: &[u8]) -> Result<usize> {
            let mut room = self.room.lock();
            if *room == 0 {
                return Err(Error::Io(io::Error::from_raw_os_error(libc::ENOSPC)));
            }
            let n = data.len().min(*room).min(7);
            *room -= n;
            self.data.lock().extend_from_slice(&data[..n]);
            Ok(n)
        }
        fn sync(&mut self) -> Result<()> {
            *self.syncs.lock() += 1;
            if *self.fail_sync.lock() {
                return Err(Error::Io(io::Error::other("EIO")));
            }
            Ok(())
        }
    }

    fn file(disk: &Disk, capacity: usize) -> BufferedFile {
        BufferedFile::new(Box::new(disk.clone()), Path::new("/f"), capacity)
    }

    #[test]
    fn short_writes_are_retried_until_everything_is_written() {
        let disk = Disk { room: Arc::new(Mutex::new(1000)), ..Default::default() };
        let mut f = file(&disk, 16);
        f.append(b"0123456789").unwrap();
        assert!(disk.data.lock().is_empty(), "still buffered");
        f.append(b"abcdefghijklmnopqrstuvwxyz").unwrap();
        f.sync().unwrap();
        assert_eq!(&disk.data.lock()[..], b"0123456789abcdefghijklmnopqrstuvwxyz");
        assert_eq!(f.len(), 36);
    }

    #[test]
    fn failed_write_is_never_written_again() {
        // The bug this guards: a failed write kept its buffer, and the sync at
        // close wrote it again after the torn prefix the failure left.
        let disk = Disk { room: Arc::new(Mutex::new(12)), ..Default::default() };
        let mut f = file(&disk, 64);
        f.append(b"first-record|").unwrap();
        f.flush().unwrap_err();
        let torn = disk.data.lock().clone();
        assert_eq!(torn, b"first-record");
        *disk.room.lock() = 1000; // space is freed
        let again = f.sync().unwrap_err();
        assert!(again.to_string().contains("earlier write or sync"), "{again}");
        assert!(f.append(b"x").is_err() && f.flush().is_err());
        assert_eq!(*disk.syncs.lock(), 0, "a failed file is never synced");
        assert!(f.failure().unwrap().contains("os error 28"), "{:?}", f.failure());
        drop(f);
        assert_eq!(*disk.data.lock(), torn, "drop writes nothing after a failure");
    }

    #[test]
    fn failed_sync_is_never_retried() {
        let disk = Disk { room: Arc::new(Mutex::new(1000)), ..Default::default() };
        let mut f = file(&disk, 0);
        f.append(b"abc").unwrap();
        assert_eq!(&disk.data.lock()[..], b"abc", "capacity 0 writes through");
        *disk.fail_sync.lock() = true;
        f.sync().unwrap_err();
        *disk.fail_sync.lock() = false;
        f.sync().unwrap_err();
        assert_eq!(*disk.syncs.lock(), 1);
    }

    #[test]
    fn drop_writes_what_is_buffered() {
        let disk = Disk { room: Arc::new(Mutex::new(1000)), ..Default::default() };
        let mut f = file(&disk, 64);
        f.append(b"abc").unwrap();
        drop(f);
        assert_eq!(&disk.data.lock()[..], b"abc");
    }
}
