//! A scan's upper bound, handed down to the run cursors so they stop before a
//! file that lies wholly past it instead of opening and reading it (Pebble's
//! level iterator does the same with its iterator bounds).
//!
//! Not per data block: RocksDB also stops before a block whose index key is
//! past the bound, which helps because its index keys are separators
//! shortened toward the next block's first key. Strata's index key is the
//! block's own last key, and a cursor only leaves a block after returning
//! every key in it, all within the bound, so that check could never fire.

use std::ops::Bound;
use std::sync::Arc;

/// An upper bound on user keys.
///
/// INVARIANT: a cursor given one only stops early; an entry past the bound in
/// a file it already reads may still be returned, so the caller filters
/// entries against the bound itself (the user iterator does).
#[derive(Clone, Debug)]
pub(crate) struct UpperBound {
    key: Arc<[u8]>,
    inclusive: bool,
}

impl UpperBound {
    /// The bound of `upper` (None when unbounded).
    pub(crate) fn new(upper: &Bound<Vec<u8>>) -> Option<Self> {
        match upper {
            Bound::Included(k) => Some(UpperBound { key: k.as_slice().into(), inclusive: true }),
            Bound::Excluded(k) => Some(UpperBound { key: k.as_slice().into(), inclusive: false }),
            Bound::Unbounded => None,
        }
    }

    /// True if no user key at or after `from` lies within the bound: a file
    /// whose keys all sort at or after `from` need not be read.
    #[inline]
    pub(crate) fn rules_out_from(&self, from: &[u8]) -> bool {
        if self.inclusive {
            from > &*self.key
        } else {
            from >= &*self.key
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusive_bound_rules_out_its_own_key_and_an_inclusive_one_does_not() {
        let ex = UpperBound::new(&Bound::Excluded(b"m".to_vec())).unwrap();
        let inc = UpperBound::new(&Bound::Included(b"m".to_vec())).unwrap();
        assert!(ex.rules_out_from(b"m") && ex.rules_out_from(b"ma") && !ex.rules_out_from(b"lz"));
        assert!(!inc.rules_out_from(b"m") && inc.rules_out_from(b"ma") && !inc.rules_out_from(b"l"));
        assert!(UpperBound::new(&Bound::Unbounded).is_none());
    }
}
