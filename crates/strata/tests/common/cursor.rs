//! A model of `DbRawIterator` over a `BTreeMap`: the same moves, bounds and
//! validity rules, so a test can replay random moves on both and compare.

use std::collections::BTreeMap;
use std::ops::Bound;

use rand::rngs::StdRng;
use rand::Rng;
use strata::DbRawIterator;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One move of a raw iterator.
#[derive(Debug, Clone)]
pub enum RawMove {
    Seek(Vec<u8>),
    SeekForPrev(Vec<u8>),
    First,
    Last,
    Next,
    Prev,
}

/// Where a raw iterator over `model` within `[lo, hi)` must be.
pub struct ModelCursor<'a> {
    model: &'a Model,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
    pos: Option<Vec<u8>>,
}

impl<'a> ModelCursor<'a> {
    pub fn new(model: &'a Model, lo: Option<Vec<u8>>, hi: Option<Vec<u8>>) -> Self {
        ModelCursor { model, lo, hi, pos: None }
    }

    pub fn valid(&self) -> bool {
        self.pos.is_some()
    }

    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        let k = self.pos.as_ref()?;
        Some((k, self.model.get(k)?))
    }

    fn in_bounds(&self, k: &[u8]) -> bool {
        self.lo.as_ref().is_none_or(|l| k >= l.as_slice())
            && self.hi.as_ref().is_none_or(|h| k < h.as_slice())
    }

    /// The first key at or after `from` (then inside the bounds, or none).
    fn first_from(&self, from: Bound<&[u8]>) -> Option<Vec<u8>> {
        let from = match (from, &self.lo) {
            (Bound::Included(k) | Bound::Excluded(k), Some(l)) if k < l.as_slice() => {
                Bound::Included(l.as_slice())
            }
            (Bound::Unbounded, Some(l)) => Bound::Included(l.as_slice()),
            (f, _) => f,
        };
        let k = self.model.range::<[u8], _>((from, Bound::Unbounded)).next()?.0;
        self.in_bounds(k).then(|| k.clone())
    }

    /// The last key at or before `to` (then inside the bounds, or none).
    fn last_to(&self, to: Bound<&[u8]>) -> Option<Vec<u8>> {
        let to = match (to, &self.hi) {
            (Bound::Included(k) | Bound::Excluded(k), Some(h)) if k >= h.as_slice() => {
                Bound::Excluded(h.as_slice())
            }
            (Bound::Unbounded, Some(h)) => Bound::Excluded(h.as_slice()),
            (t, _) => t,
        };
        let k = self.model.range::<[u8], _>((Bound::Unbounded, to)).next_back()?.0;
        self.in_bounds(k).then(|| k.clone())
    }

    /// Applies `mv`; `Next`/`Prev` require a valid cursor.
    pub fn apply(&mut self, mv: &RawMove) {
        self.pos = match mv {
            RawMove::Seek(k) => self.first_from(Bound::Included(k)),
            RawMove::SeekForPrev(k) => self.last_to(Bound::Included(k)),
            RawMove::First => self.first_from(Bound::Unbounded),
            RawMove::Last => self.last_to(Bound::Unbounded),
            RawMove::Next => {
                let cur = self.pos.take().expect("next on an invalid model cursor");
                self.first_from(Bound::Excluded(&cur))
            }
            RawMove::Prev => {
                let cur = self.pos.take().expect("prev on an invalid model cursor");
                self.last_to(Bound::Excluded(&cur))
            }
        };
    }
}

/// Makes move `mv` on the raw iterator.
pub fn apply_move(it: &mut DbRawIterator, mv: &RawMove) {
    match mv {
        RawMove::Seek(k) => it.seek(k),
        RawMove::SeekForPrev(k) => it.seek_for_prev(k),
        RawMove::First => it.seek_to_first(),
        RawMove::Last => it.seek_to_last(),
        RawMove::Next => it.next(),
        RawMove::Prev => it.prev(),
    }
}

/// Applies `mv` to the iterator (as a raw iterator move) and the model, and
/// compares where they are. `Next`/`Prev` on an invalid model are skipped.
pub fn check_move(it: &mut DbRawIterator, m: &mut ModelCursor<'_>, mv: &RawMove) -> Result<(), String> {
    if matches!(mv, RawMove::Next | RawMove::Prev) && !m.valid() {
        return Ok(());
    }
    m.apply(mv);
    apply_move(it, mv);
    it.status().map_err(|e| format!("{mv:?}: status {e}"))?;
    if it.item() != m.item() || it.valid() != m.valid() || it.key() != m.item().map(|kv| kv.0) {
        let show = |kv: Option<(&[u8], &[u8])>| kv.map(|(k, v)| (lossy(k), v.len()));
        return Err(format!("{mv:?}: at {:?}, want {:?}", show(it.item()), show(m.item())));
    }
    Ok(())
}

fn lossy(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

/// A positioning seek, then `steps` moves mixing next and prev (so the
/// direction changes), with now and then another seek.
pub fn gen_moves(
    rng: &mut StdRng,
    steps: usize,
    mut key: impl FnMut(&mut StdRng) -> Vec<u8>,
) -> Vec<RawMove> {
    let mut seek = |rng: &mut StdRng| match rng.gen_range(0..6) {
        0 | 1 => RawMove::Seek(key(rng)),
        2 | 3 => RawMove::SeekForPrev(key(rng)),
        4 => RawMove::First,
        _ => RawMove::Last,
    };
    let mut moves = vec![seek(rng)];
    // Runs of one direction, so both long walks and zig-zags occur.
    let mut forward = rng.gen_bool(0.5);
    for _ in 0..steps {
        if rng.gen_bool(0.08) {
            moves.push(seek(rng));
            continue;
        }
        if rng.gen_bool(0.35) {
            forward = !forward;
        }
        moves.push(if forward { RawMove::Next } else { RawMove::Prev });
    }
    moves
}
