//! Appends logical records to a log file, fragmenting them across blocks.

use super::format::{encode_header, RecordType, BLOCK_SIZE, HEADER_SIZE};
use crate::error::Result;
use crate::vfs::WritableFile;

/// Writes records in the log format to a [`WritableFile`].
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    /// Bytes already used in the current block.
    block_offset: usize,
    /// A write or sync failed: the file may end in a torn record.
    failed: bool,
}

impl LogWriter {
    /// Starts writing at the current end of `file` (normally a new, empty file).
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        LogWriter { file, block_offset, failed: false }
    }

    /// True once an append, flush or sync failed; the file is then never
    /// written again (see `vfs::BufferedFile`), so callers stop using it.
    pub fn failed(&self) -> bool {
        self.failed
    }

    fn track<T>(&mut self, r: Result<T>) -> Result<T> {
        self.failed |= r.is_err();
        r
    }

    /// Appends one logical record; it stays buffered until [`flush`](Self::flush) or [`sync`](Self::sync).
    pub fn add_record(&mut self, data: &[u8]) -> Result<()> {
        let r = self.append_fragments(data);
        self.track(r)
    }

    fn append_fragments(&mut self, data: &[u8]) -> Result<()> {
        let mut left = data;
        let mut first = true;
        loop {
            let room = BLOCK_SIZE - self.block_offset;
            if room < HEADER_SIZE {
                // Too small for a header: zero-fill the trailer, start a new block.
                const ZEROS: [u8; HEADER_SIZE] = [0; HEADER_SIZE];
                self.file.append(&ZEROS[..room])?;
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let (frag, rest) = left.split_at(left.len().min(avail));
            let last = rest.is_empty();
            let typ = match (first, last) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, false) => RecordType::Middle,
                (false, true) => RecordType::Last,
            };
            self.file.append(&encode_header(typ, frag))?;
            self.file.append(frag)?;
            self.block_offset += HEADER_SIZE + frag.len();
            if last {
                return Ok(());
            }
            left = rest;
            first = false;
        }
    }

    /// Pushes buffered records to the OS.
    pub fn flush(&mut self) -> Result<()> {
        let r = self.file.flush();
        self.track(r)
    }

    /// Flushes and makes the records durable.
    pub fn sync(&mut self) -> Result<()> {
        let r = self.file.sync();
        self.track(r)
    }

    /// Bytes written to the log so far (including headers and padding).
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// True if nothing was written.
    pub fn is_empty(&self) -> bool {
        self.file.is_empty()
    }
}
