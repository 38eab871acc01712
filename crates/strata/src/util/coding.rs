//! Fixed-width little-endian and LEB128 varint encoding. Decoders never panic:
//! they return `None` on truncated or overlong input and callers map that to
//! `Error::Corruption`.

/// Appends a little-endian u32.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian u64.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads a little-endian u32 at the start of `src`.
#[inline]
pub fn decode_fixed32(src: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(src.get(..4)?.try_into().ok()?))
}

/// Reads a little-endian u64 at the start of `src`.
#[inline]
pub fn decode_fixed64(src: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(src.get(..8)?.try_into().ok()?))
}

/// Appends `v` as a varint (1–10 bytes).
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends `v` as a varint (1–5 bytes).
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, v as u64)
}

/// Decodes a varint u64; returns the value and the bytes consumed.
#[inline]
pub fn decode_varint64(src: &[u8]) -> Option<(u64, usize)> {
    let mut result = 0u64;
    for (i, &b) in src.iter().enumerate().take(10) {
        let part = (b & 0x7f) as u64;
        if i == 9 && b > 1 {
            return None;
        }
        result |= part << (7 * i);
        if b & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Decodes a varint that must fit in a u32.
#[inline]
pub fn decode_varint32(src: &[u8]) -> Option<(u32, usize)> {
    let (v, n) = decode_varint64(src)?;
    Some((u32::try_from(v).ok()?, n))
}

/// Appends a varint length followed by the bytes.
#[inline]
pub fn put_length_prefixed(dst: &mut Vec<u8>, data: &[u8]) {
    put_varint64(dst, data.len() as u64);
    dst.extend_from_slice(data);
}

/// A cursor over a byte slice for decoders.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }
    /// Bytes not yet consumed.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }
    /// True when everything was consumed.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Reads a varint u64.
    pub fn varint64(&mut self) -> Option<u64> {
        let (v, n) = decode_varint64(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    /// Reads a varint u32.
    pub fn varint32(&mut self) -> Option<u32> {
        let (v, n) = decode_varint32(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    /// Reads a fixed u32.
    pub fn fixed32(&mut self) -> Option<u32> {
        let v = decode_fixed32(self.buf)?;
        self.buf = &self.buf[4..];
        Some(v)
    }
    /// Reads a fixed u64.
    pub fn fixed64(&mut self) -> Option<u64> {
        let v = decode_fixed64(self.buf)?;
        self.buf = &self.buf[8..];
        Some(v)
    }
    /// Reads `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Some(a)
    }
    /// Reads a varint length and that many bytes.
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint64()?).ok()?;
        self.bytes(n)
    }
    /// Reads one byte.
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_garbage() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(decode_varint64(&b), Some((v, b.len())));
            assert_eq!(decode_varint64(&b[..b.len() - 1]), None);
        }
        assert_eq!(decode_varint64(&[0xff; 11]), None);
        assert_eq!(decode_varint32(&[0xff, 0xff, 0xff, 0xff, 0x7f]), None);
        let mut b = Vec::new();
        put_length_prefixed(&mut b, b"abc");
        put_fixed32(&mut b, 7);
        let mut r = Reader::new(&b);
        assert_eq!(r.length_prefixed(), Some(&b"abc"[..]));
        assert_eq!(r.fixed32(), Some(7));
        assert!(r.is_empty());
        assert_eq!(r.u8(), None);
    }
}
