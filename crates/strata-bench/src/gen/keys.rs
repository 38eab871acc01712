//! Key formats: db_bench's fixed-width keys and YCSB's FNV hash.

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-end-first bytes of `v`,
/// then `Math.abs` of the signed result (so YCSB key names are reproduced
/// exactly). Used to scramble zipfian ranks and for hashed insert order.
pub fn fnv_hash64(mut v: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut h = OFFSET_BASIS;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(PRIME);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// Appends the decimal digits of `v` to `buf`, zero-padded on the left to at
/// least `width` digits.
pub fn write_decimal(v: u64, width: usize, buf: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut x = v;
    loop {
        i -= 1;
        digits[i] = b'0' + (x % 10) as u8;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    buf.extend(std::iter::repeat_n(b'0', width.saturating_sub(len)));
    buf.extend_from_slice(&digits[i..]);
}

/// db_bench key format: `index` as a zero-padded decimal string of exactly
/// `key_size` bytes (db_bench's default 16), so keys sort like their indices.
/// An index with more digits than `key_size` keeps all its digits (the key is
/// longer, still unique); callers check `key_size` against `--num`.
pub fn format_key(index: u64, key_size: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(key_size.max(20));
    format_key_into(index, key_size, &mut buf);
    buf
}

/// [`format_key`] into a reused buffer (cleared first), to avoid an
/// allocation per operation.
pub fn format_key_into(index: u64, key_size: usize, buf: &mut Vec<u8>) {
    buf.clear();
    write_decimal(index, key_size, buf);
}

/// How a key index becomes a key: [`format_key`], or with prefixes db_bench's
/// `--keys_per_prefix` shape, index `i` as the decimal prefix `i % prefixes`
/// (`prefix_size` digits) followed by `i` itself (the remaining digits), so
/// the keys of one prefix are adjacent in key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyFormat {
    /// Key bytes (`--key_size`).
    pub key_size: usize,
    /// Bytes that are the key's prefix (`--prefix_size`; 0 = none).
    pub prefix_size: usize,
    /// Distinct prefixes (`--num / --keys_per_prefix`); 0 = keys are plain indices.
    pub prefixes: u64,
}

impl KeyFormat {
    /// The key of `index` into a reused buffer (cleared first).
    pub fn key_into(&self, index: u64, buf: &mut Vec<u8>) {
        buf.clear();
        if self.prefixes > 0 {
            write_decimal(index % self.prefixes, self.prefix_size, buf);
            write_decimal(index, self.key_size.saturating_sub(self.prefix_size), buf);
        } else {
            write_decimal(index, self.key_size, buf);
        }
    }

    /// The key of `index`.
    pub fn key(&self, index: u64) -> Vec<u8> {
        let mut buf = Vec::with_capacity(self.key_size.max(20));
        self.key_into(index, &mut buf);
        buf
    }
}
