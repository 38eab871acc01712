//! How keys and values are given on the command line and printed: hex
//! (`--hex`), or escaped text (printable ASCII as is, every other byte and the
//! backslash itself as `\xNN`, so the output reads back unambiguously).

use strata::merge_operators::MergeOperands;

/// Parses a command-line key or value: hex digits with `hex`, else text in
/// which `\xNN` stands for the byte `NN`.
pub fn parse(s: &str, hex: bool) -> Result<Vec<u8>, String> {
    if hex {
        decode_hex(s)
    } else {
        unescape(s)
    }
}

/// Prints bytes as hex with `hex`, else escaped.
pub fn show(b: &[u8], hex: bool) -> String {
    if hex {
        encode_hex(b)
    } else {
        escape(b)
    }
}

/// A value as [`show`] prints it; with `unavailable` (the name of the
/// keyspace's merge operator this tool does not have), a key's unmerged
/// versions, labelled: `[unmerged: merge operator "NAME" not available]`,
/// then `base value: V;` when a put lies below the operands, then
/// `merge operands: A | B`, oldest first.
pub fn show_value(v: &[u8], unavailable: Option<&str>, hex: bool) -> String {
    let Some((name, m)) = unavailable.zip(MergeOperands::decode(v)) else { return show(v, hex) };
    let operands: Vec<String> = m.operands.iter().map(|o| show(o, hex)).collect();
    let base = m.base.map(|b| format!("base value: {}; ", show(&b, hex))).unwrap_or_default();
    format!(
        "[unmerged: merge operator {name:?} not available] {base}merge operands: {}",
        operands.join(" | ")
    )
}

/// Lowercase hex of `b`.
pub fn encode_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Decodes hex digits (either case, even length); the error names the input.
pub fn decode_hex(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err(format!("bad hex string {s:?}: odd number of digits"));
    }
    b.chunks(2)
        .map(|p| match (hex_val(p[0]), hex_val(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err(format!("bad hex string {s:?}: not a hex digit")),
        })
        .collect()
}

/// Printable ASCII except `\` as is; other bytes as `\xNN`.
pub fn escape(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &c in b {
        if (0x20..0x7f).contains(&c) && c != b'\\' {
            out.push(c as char);
        } else {
            out.push_str(&format!("\\x{c:02x}"));
        }
    }
    out
}

/// The inverse of [`escape`]: `\xNN` is a byte, everything else is taken as
/// is; a backslash not followed by `x` and two hex digits is an error.
pub fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let byte = (b.get(i + 1) == Some(&b'x'))
                .then(|| Some(hex_val(*b.get(i + 2)?)? << 4 | hex_val(*b.get(i + 3)?)?))
                .flatten()
                .ok_or_else(|| format!("bad escape in {s:?}: a backslash must start \\xNN"))?;
            out.push(byte);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(unescape(&escape(&all)).unwrap(), all);
        assert_eq!(escape(b"a\\b\x00\n~"), "a\\x5cb\\x00\\x0a~");
    }

    #[test]
    fn hex_round_trips_and_bad_hex_is_an_error() {
        assert_eq!(decode_hex(&encode_hex(b"\x00\xffab")).unwrap(), b"\x00\xffab");
        assert_eq!(decode_hex("0A").unwrap(), vec![10]);
        assert!(decode_hex("abc").is_err());
        assert!(decode_hex("zz").is_err());
        assert!(unescape("\\q").is_err());
        assert!(unescape("\\x4").is_err());
    }
}
