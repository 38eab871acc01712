//! The write-ahead log, in LevelDB's log format: 32 KiB blocks of CRC-checked
//! physical records, a logical record split into FIRST/MIDDLE/LAST fragments
//! where it crosses blocks. The MANIFEST uses the same format. See
//! `docs/FORMAT.md` ("Write-ahead log") for the byte layout and recovery modes.

mod format;
mod needed;
mod reader;
mod writer;

pub use needed::{check_needed_wals, check_recorded_wals, TreeLog};
pub use reader::LogReader;
pub use writer::LogWriter;
