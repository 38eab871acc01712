//! CRC32C with LevelDB's masking, so that a CRC stored inside checksummed data
//! does not checksum to a fixed point.

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC32C of `a` followed by `b`.
#[inline]
pub fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// Masks a CRC before it is stored.
#[inline]
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
#[inline]
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    #[test]
    fn mask_round_trips() {
        for c in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(super::unmask(super::mask(c)), c);
            assert_ne!(super::mask(c), c);
        }
    }
}
