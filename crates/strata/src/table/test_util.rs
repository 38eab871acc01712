//! In-memory files for the table and cache tests.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::vfs::{RandomAccessFile, WritableFile};

/// A file whose bytes live in a shared vector; writable and randomly readable.
#[derive(Debug, Clone, Default)]
pub struct MemFile(pub Arc<Mutex<Vec<u8>>>);

impl MemFile {
    /// A readable file holding `bytes`.
    pub fn with(bytes: Vec<u8>) -> Arc<dyn RandomAccessFile> {
        Arc::new(MemFile(Arc::new(Mutex::new(bytes))))
    }
    /// A copy of the contents.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().clone()
    }
}

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

impl RandomAccessFile for MemFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let data = self.0.lock();
        let start = usize::try_from(offset).map_err(|_| Error::invalid("offset"))?;
        data.get(start..start.saturating_add(len))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Error::Io(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)))
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}
