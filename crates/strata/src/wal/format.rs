//! Constants and header coding shared by the log writer and reader.

use crate::util::crc;

/// Logs are cut into blocks of this size; no physical record crosses a block boundary.
pub(crate) const BLOCK_SIZE: usize = 32 * 1024;

/// Physical record header: masked CRC32C (4) + payload length (2, LE) + type (1).
pub(crate) const HEADER_SIZE: usize = 7;

/// Type of a physical record. Type 0 is never written as a record: it marks
/// zero-filled block trailers and preallocated space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RecordType {
    /// A whole logical record.
    Full = 1,
    /// The first fragment of a logical record.
    First = 2,
    /// An inner fragment.
    Middle = 3,
    /// The final fragment.
    Last = 4,
}

impl RecordType {
    /// Decodes a type byte; `None` for 0 (padding) and unknown values.
    pub(crate) fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(RecordType::Full),
            2 => Some(RecordType::First),
            3 => Some(RecordType::Middle),
            4 => Some(RecordType::Last),
            _ => None,
        }
    }
}

/// Masked CRC32C of the type byte followed by the payload.
#[inline]
pub(crate) fn record_crc(typ: u8, payload: &[u8]) -> u32 {
    crc::mask(crc::crc32c_extend(crc::crc32c(&[typ]), payload))
}

/// Encodes a header for `payload` (at most `BLOCK_SIZE - HEADER_SIZE` bytes).
#[inline]
pub(crate) fn encode_header(typ: RecordType, payload: &[u8]) -> [u8; HEADER_SIZE] {
    debug_assert!(payload.len() <= BLOCK_SIZE - HEADER_SIZE);
    let mut h = [0u8; HEADER_SIZE];
    h[..4].copy_from_slice(&record_crc(typ as u8, payload).to_le_bytes());
    h[4..6].copy_from_slice(&(payload.len() as u16).to_le_bytes());
    h[6] = typ as u8;
    h
}

/// The physical record starting at `pos` of `block`, if it is intact: a known
/// type, a length that fits in the block, and a matching CRC. Returns the type
/// and the payload range.
#[inline]
pub(crate) fn parse_record(block: &[u8], pos: usize) -> Option<(RecordType, usize, usize)> {
    let h = block.get(pos..pos.checked_add(HEADER_SIZE)?)?;
    let typ = RecordType::from_u8(h[6])?;
    let len = u16::from_le_bytes([h[4], h[5]]) as usize;
    let start = pos + HEADER_SIZE;
    let payload = block.get(start..start + len)?;
    let stored = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    (record_crc(h[6], payload) == stored).then_some((typ, start, start + len))
}
