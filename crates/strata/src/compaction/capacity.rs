//! Level capacities: `base * multiplier^(level - 1)` bytes for level `>= 1`,
//! the geometric shape leveling and bLSM/LSbM share. One place for the
//! arithmetic, so a policy whose capacities depend on the tree can sit beside it.

/// Capacity of `level` in bytes, unrounded (scores divide by it). Levels 0
/// and 1 both give `base`; a level too deep for the exponent saturates it.
pub(crate) fn target_f64(base: u64, multiplier: f64, level: usize) -> f64 {
    let exp = i32::try_from(level.saturating_sub(1)).unwrap_or(i32::MAX);
    base as f64 * multiplier.powi(exp)
}

/// [`target_f64`] in whole bytes: rounded down, `u64::MAX` once it overflows.
pub(crate) fn target_bytes(base: u64, multiplier: f64, level: usize) -> u64 {
    // `as` saturates (infinity becomes u64::MAX), which is the intent here.
    target_f64(base, multiplier, level) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_then_multiplied_per_level() {
        assert_eq!(target_bytes(1000, 10.0, 0), 1000, "L0 gives the base");
        assert_eq!(target_bytes(1000, 10.0, 1), 1000);
        assert_eq!(target_bytes(1000, 10.0, 2), 10_000);
        assert_eq!(target_bytes(1000, 10.0, 4), 1_000_000);
        assert_eq!(target_bytes(256 << 20, 10.0, 3), 25_600 << 20);
        assert_eq!(target_bytes(7, 1.0, 50), 7, "ratio 1 keeps every level at the base");
        assert_eq!(target_f64(3, 1.5, 2), 4.5);
        assert_eq!(target_bytes(3, 1.5, 2), 4, "whole bytes round down");
    }

    #[test]
    fn deep_levels_saturate() {
        assert_eq!(target_bytes(1 << 20, 10.0, 20), u64::MAX);
        assert_eq!(target_f64(1, 10.0, 400), f64::INFINITY);
        assert_eq!(target_bytes(1, 10.0, 400), u64::MAX);
        assert_eq!(target_bytes(u64::MAX, 10.0, 2), u64::MAX);
        // The exponent itself saturates instead of wrapping.
        assert_eq!(target_bytes(1, 2.0, usize::MAX), u64::MAX);
        assert_eq!(target_bytes(5, 1.0, usize::MAX), 5);
    }

    /// The two formulas this module replaced, kept verbatim as references.
    fn leveled_before(base: u64, m: f64, level: usize) -> (f64, u64) {
        let exp = i32::try_from(level.saturating_sub(1)).unwrap_or(i32::MAX);
        let f = base as f64 * m.powi(exp);
        (f, f as u64)
    }

    fn blsm_before(base: u64, m: f64, level: usize) -> u64 {
        let exp = i32::try_from(level.saturating_sub(1)).unwrap_or(i32::MAX);
        let bytes = base as f64 * m.powi(exp);
        if bytes >= u64::MAX as f64 {
            u64::MAX
        } else {
            bytes as u64
        }
    }

    #[test]
    fn same_as_the_formulas_it_replaced() {
        for base in [1, 100, 1000, 256 << 20, u64::MAX / 3, u64::MAX] {
            for m in [1.0, 1.5, 2.0, 4.0, 10.0, 12.7, 1e6] {
                for level in (0..70).chain([1000, usize::MAX]) {
                    let (f, b) = leveled_before(base, m, level);
                    assert_eq!(target_f64(base, m, level).to_bits(), f.to_bits());
                    assert_eq!(target_bytes(base, m, level), b);
                    assert_eq!(target_bytes(base, m, level), blsm_before(base, m, level));
                }
            }
        }
    }
}
