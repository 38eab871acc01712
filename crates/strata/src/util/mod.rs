//! Small encoding helpers shared by the on-disk formats.

pub mod coding;
pub mod crc;
