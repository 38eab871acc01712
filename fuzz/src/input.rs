//! A cursor that turns fuzz bytes into choices; past the end it yields zeros,
//! so every input decodes to something.

/// Reads small values from the front of a byte slice.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Wraps the fuzz input.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    /// True when every byte was consumed.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// A little-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | (u16::from(self.u8()) << 8)
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | (u32::from(self.u16()) << 16)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.u8()) % n
    }

    /// True with probability about `num / 256`.
    pub fn chance(&mut self, num: u8) -> bool {
        self.u8() < num
    }

    /// Up to `max` bytes: a length byte, then that many bytes (fewer at the end).
    pub fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        self.take(len).to_vec()
    }

    /// The next `len` bytes, or all that is left.
    pub fn take(&mut self, len: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(len.min(self.data.len()));
        self.data = rest;
        head
    }

    /// Everything not consumed yet.
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.data.len())
    }

    /// Flips up to three bytes and, with chance `truncate_chance`/256, cuts the
    /// tail, as the input asks (the cut length read as a u32 if `wide_cut`,
    /// else a u16); true if anything changed.
    pub fn damage(&mut self, bytes: &mut Vec<u8>, truncate_chance: u8, wide_cut: bool) -> bool {
        let mut damaged = false;
        for _ in 0..self.below(4) {
            let (pos, xor) = (self.u32() as usize, self.u8());
            if !bytes.is_empty() && xor != 0 {
                let i = pos % bytes.len();
                bytes[i] ^= xor;
                damaged = true;
            }
        }
        if self.chance(truncate_chance) && !bytes.is_empty() {
            let n = if wide_cut { self.u32() as usize } else { self.u16() as usize };
            let cut = 1 + n % bytes.len();
            bytes.truncate(bytes.len() - cut);
            damaged = true;
        }
        damaged
    }
}
