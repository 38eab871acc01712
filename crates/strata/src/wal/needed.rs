//! Which WALs must be on disk, from what the MANIFESTs record: the check an
//! open makes before replaying, and that `strata verify` makes too, so that a
//! removed WAL (and the acknowledged writes in it) is named, not skipped.

use crate::error::{Error, Result};

/// What a tree's MANIFEST says about the WALs: its name and log number (the
/// WAL of its oldest unflushed memtable).
#[derive(Debug, Clone, Copy)]
pub struct TreeLog<'a> {
    /// The keyspace's name (`"default"` for the root).
    pub keyspace: &'a str,
    /// Its MANIFEST's log number (0: none yet).
    pub log_number: u64,
}

/// `Corruption` naming the WAL if one that `trees` and the root MANIFEST's
/// WAL floor (`floor`, the oldest WAL any keyspace still needed) say must
/// exist is not among `present`. Without keyspaces the root log's WAL must
/// exist. With keyspaces a cold keyspace's own log WAL may have been deleted
/// legitimately, so what must exist is some WAL at or after the largest log
/// number, the floor, and every log WAL above the floor.
pub fn check_needed_wals(
    trees: &[TreeLog<'_>],
    ever_had_keyspaces: bool,
    floor: Option<u64>,
    present: &[u64],
) -> Result<()> {
    let has = |n: u64| present.contains(&n);
    let gone = |what: String| {
        Err(Error::corruption(format!("{what}: WALs were removed, and with them acknowledged writes")))
    };
    if !ever_had_keyspaces {
        return match trees.first() {
            Some(t) if t.log_number > 0 && !has(t.log_number) => gone(format!(
                "the MANIFEST names WAL {:06}.log as the oldest log to replay, which does not exist",
                t.log_number
            )),
            _ => Ok(()),
        };
    }
    let Some(t) = trees.iter().max_by_key(|t| t.log_number) else { return Ok(()) };
    let newest = present.iter().copied().max();
    if t.log_number != 0 && newest.is_none_or(|n| n < t.log_number) {
        return gone(format!(
            "the MANIFEST of keyspace {:?} names WAL {:06}.log as the oldest log to replay, which does not exist, and no newer WAL does ({})",
            t.keyspace,
            t.log_number,
            newest.map_or("no WAL on disk".to_string(), |n| format!("the newest is {n:06}.log"))
        ));
    }
    let Some(floor) = floor else { return Ok(()) };
    if !has(floor) {
        return gone(format!(
            "the root MANIFEST names WAL {floor:06}.log as the oldest WAL still needed, which does not exist"
        ));
    }
    match trees.iter().find(|t| t.log_number > floor && !has(t.log_number)) {
        Some(t) => gone(format!(
            "the MANIFEST of keyspace {:?} names WAL {:06}.log as the oldest log to replay, which does not exist",
            t.keyspace, t.log_number
        )),
        None => Ok(()),
    }
}

/// `Corruption` naming the WAL if one the root MANIFEST recorded as created
/// (`recorded`, at or above its floor) is not among `present`: a WAL deleted
/// from the middle of the chain, which the log numbers alone cannot show.
/// `beside_writer` (a read-only open or `strata verify` while the database
/// may be open): a WAL newer than every listed one may have been created
/// after the listing, so only those below the newest listed WAL are required.
pub fn check_recorded_wals(recorded: &[u64], present: &[u64], beside_writer: bool) -> Result<()> {
    let newest = present.iter().copied().max().unwrap_or(0);
    match recorded.iter().find(|&&n| !present.contains(&n) && (!beside_writer || n < newest)) {
        Some(n) => Err(Error::corruption(format!(
            "the root MANIFEST records WAL {n:06}.log as created and still needed, which does not exist: \
             WALs were removed, and with them acknowledged writes"
        ))),
        None => Ok(()),
    }
}
