//! Small helpers: the encodings the on-disk formats share, and prefetch hints.

pub mod coding;
pub(crate) mod cpu_time;
pub mod crc;
pub(crate) mod prefetch;
