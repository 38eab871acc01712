//! Block decoder: `Block::new` on the input's bytes after the first (or, when
//! the first byte is 0, a valid block built with `BlockBuilder` from
//! fuzz-chosen entries), then
//! full iteration in both directions and seeks. A small reference decoder of
//! the entry chain is the oracle: forward iteration must match it on any
//! bytes; when the block is well formed (every restart point starts an entry
//! with `shared = 0`) backward iteration must match it too, and when the keys
//! are sorted, seeks must land where a linear search says.
//!
//! Restart points that fall inside an entry pass `Block::new` (as in LevelDB);
//! backward iteration then parses from there and may see other entries. Data
//! blocks are checksummed, so such a block reaches the iterator only with
//! `verify_checksums = false`; the target checks only "no panic" for those.

use std::cmp::Ordering;
use std::sync::Arc;

use strata::iter::InternalIterator;
use strata::key::compare_internal;
use strata::table::block::BlockBuilder;
use strata::table::Block;
use strata::util::coding::{decode_fixed32, decode_varint32};

use super::input::Input;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// The fuzz body.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let built = if mode == 0 { build(rest) } else { (Vec::new(), rest.to_vec()) };
    let bytes = &built.1[..];
    let Ok(block) = Block::new(bytes.to_vec()) else {
        assert!(mode != 0, "a built block was rejected");
        return;
    };
    let block = Arc::new(block);
    // An entry takes at least 3 bytes, so more steps than bytes means a loop.
    let max_steps = bytes.len() + 1;
    let reference = reference_decode(bytes);
    let fwd = scan(&block, max_steps, false);
    assert_eq!(fwd, reference.as_ref().map(|r| r.0.clone()), "forward iteration vs reference decoder");
    if mode == 0 {
        assert_eq!(fwd.as_ref(), Some(&built.0), "a built block read back differently");
    }
    let bwd = scan(&block, max_steps, true);
    let Some((entries, true)) = reference else { return };
    let mut bwd = bwd.expect("backward iteration of a well-formed block");
    bwd.reverse();
    assert_eq!(entries, bwd, "forward and backward iteration disagree");
    check_seeks(&block, &entries);
}

/// A block built from the input's sorted entries, with its entries.
fn build(data: &[u8]) -> (Entries, Vec<u8>) {
    let mut input = Input::new(data);
    let mut b = BlockBuilder::new(1 + input.below(16));
    let mut entries: Entries = Vec::new();
    while !input.is_empty() {
        let key = input.bytes(16);
        let value = input.bytes(16);
        entries.push((key, value));
    }
    entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
    entries.dedup_by(|a, b| compare_internal(&a.0, &b.0) == Ordering::Equal);
    for (k, v) in &entries {
        b.add(k, v);
    }
    (entries.clone(), b.finish().to_vec())
}

/// Decodes the entry chain from offset 0 as FORMAT.md describes. `None` if an
/// entry is malformed; else the entries and whether the block is well formed.
fn reference_decode(data: &[u8]) -> Option<(Entries, bool)> {
    let n = decode_fixed32(&data[data.len() - 4..])? as usize;
    let end = data.len() - 4 * (n + 1);
    let restarts: Vec<usize> =
        (0..n).filter_map(|i| decode_fixed32(&data[end + 4 * i..]).map(|r| r as usize)).collect();
    let (mut off, mut key, mut out) = (0usize, Vec::new(), Vec::new());
    let mut well_formed = true;
    while off < end {
        let region = &data[off..end];
        let (shared, a) = decode_varint32(region)?;
        let (non_shared, b) = decode_varint32(region.get(a..)?)?;
        let (value_len, c) = decode_varint32(region.get(a + b..)?)?;
        let (shared, key_len, value_len) = (shared as usize, non_shared as usize, value_len as usize);
        let key_start = a + b + c;
        let value_start = key_start.checked_add(key_len)?;
        let value_end = value_start.checked_add(value_len).filter(|&e| e <= region.len())?;
        if shared > key.len() {
            return None;
        }
        if restarts.contains(&off) && shared != 0 {
            well_formed = false;
        }
        key.truncate(shared);
        key.extend_from_slice(&region[key_start..value_start]);
        out.push((key.clone(), region[value_start..value_end].to_vec()));
        if restarts.iter().any(|&r| r > off && r < off + value_end) {
            well_formed = false; // A restart point inside this entry.
        }
        off += value_end;
    }
    Some((out, well_formed))
}

/// Iterates the whole block; `None` if it reported corruption.
fn scan(block: &Arc<Block>, max_steps: usize, backward: bool) -> Option<Entries> {
    let mut it = block.iter();
    let mut out = Vec::new();
    let mut res = if backward { it.seek_to_last() } else { it.seek_to_first() };
    while res.is_ok() && it.valid() {
        assert!(out.len() <= max_steps, "block iterator does not terminate");
        out.push((it.key().to_vec(), it.value().to_vec()));
        res = if backward { it.prev() } else { it.next() };
    }
    res.ok().map(|()| out)
}

fn check_seeks(block: &Arc<Block>, entries: &Entries) {
    let sorted = entries.windows(2).all(|w| compare_internal(&w[0].0, &w[1].0) == Ordering::Less);
    let mut it = block.iter();
    let mut targets: Vec<Vec<u8>> = entries.iter().map(|(k, _)| k.clone()).collect();
    for (k, _) in entries.iter().take(8) {
        let mut shorter = k.clone();
        shorter.pop();
        targets.push(shorter);
        let mut longer = k.clone();
        longer.push(0);
        targets.push(longer);
    }
    targets.extend([vec![], vec![0xff; 9], vec![0; 8]]);
    for t in &targets {
        let seek = it.seek(t).map(|()| it.valid().then(|| it.key().to_vec()));
        let for_prev = it.seek_for_prev(t).map(|()| it.valid().then(|| it.key().to_vec()));
        if !sorted {
            continue; // Any result but a panic is fine for out-of-order keys.
        }
        let ge = entries.iter().find(|(k, _)| compare_internal(k, t) != Ordering::Less);
        let le = entries.iter().rev().find(|(k, _)| compare_internal(k, t) != Ordering::Greater);
        assert_eq!(seek.ok(), Some(ge.map(|e| e.0.clone())), "seek({t:?})");
        assert_eq!(for_prev.ok(), Some(le.map(|e| e.0.clone())), "seek_for_prev({t:?})");
    }
    // Steps after a seek cross restart points both ways.
    if sorted && entries.len() > 1 {
        let mid = entries.len() / 2;
        it.seek(&entries[mid].0).expect("seek to a present key");
        it.prev().expect("prev");
        assert_eq!(it.key(), &entries[mid - 1].0[..]);
        it.next().expect("next");
        it.next().expect("next");
        assert_eq!(it.valid().then(|| it.key().to_vec()), entries.get(mid + 1).map(|e| e.0.clone()));
    }
}
