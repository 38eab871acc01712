//! In-memory files for feeding fuzz bytes to the table and log readers.

use std::sync::{Arc, Mutex, PoisonError};

use strata::vfs::{RandomAccessFile, SequentialFile, WritableFile};
use strata::Result;

/// A growable in-memory file: writable (shared buffer) and randomly readable.
#[derive(Debug, Clone, Default)]
pub struct MemFile(pub Arc<Mutex<Vec<u8>>>);

impl MemFile {
    /// A readable file holding `bytes`.
    pub fn with(bytes: Vec<u8>) -> Arc<dyn RandomAccessFile> {
        Arc::new(MemFile(Arc::new(Mutex::new(bytes))))
    }

    /// A copy of the contents.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len() as u64
    }
}

impl RandomAccessFile for MemFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let data = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        usize::try_from(offset)
            .ok()
            .and_then(|start| data.get(start..start.checked_add(len)?))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| strata::Error::Io(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)))
    }
    fn len(&self) -> u64 {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len() as u64
    }
}

/// A sequential reader over bytes that returns at most `chunk` bytes per read
/// (short reads are allowed by the `SequentialFile` contract).
pub struct ChunkedReader {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
}

impl ChunkedReader {
    /// Reads `data` in pieces of at most `chunk` bytes (0 means unlimited).
    pub fn new(data: Vec<u8>, chunk: usize) -> Self {
        ChunkedReader { data, pos: 0, chunk: if chunk == 0 { usize::MAX } else { chunk } }
    }
}

impl SequentialFile for ChunkedReader {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = buf.len().min(self.chunk).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
