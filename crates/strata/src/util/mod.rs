//! Small helpers: the encodings the on-disk formats share, and prefetch hints.

pub mod coding;
pub mod crc;
pub(crate) mod prefetch;
