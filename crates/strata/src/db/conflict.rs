//! Write-conflict checks for optimistic transactions: has a key changed since
//! a transaction read it? Answered from the memtables alone (the active one,
//! those waiting for flush, and flushed ones kept as history), as RocksDB's
//! optimistic transactions do: no table is read at commit.

use std::collections::VecDeque;

use super::{DbInner, DbState, Immutable};
use crate::error::{Error, Result};
use crate::key::SeqNum;

/// A key a transaction read or wrote, and the sequence its view started at:
/// a change of the key with a greater sequence is a conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TrackedKey {
    pub keyspace: u32,
    pub key: Vec<u8>,
    pub seq: SeqNum,
}

impl DbInner {
    /// Keeps a just-flushed memtable as history, then releases the oldest
    /// ones the newer history already covers (`max_write_buffer_size_to_maintain`).
    pub(crate) fn keep_in_history(&self, st: &mut DbState, flushed: Immutable) {
        let limit = self.opts.max_write_buffer_size_to_maintain as usize;
        if limit == 0 {
            st.history.clear();
            return;
        }
        st.history.push_back(flushed);
        trim_history(&mut st.history, limit);
    }

    /// Fails with [`Error::Busy`] if any of `keys` (all of this tree) changed
    /// after its sequence, and with [`Error::TryAgain`] if the memtables in
    /// memory do not reach back far enough to tell. The caller holds the WAL
    /// lock, so no write lands between this check and the commit after it.
    pub(crate) fn check_unchanged(&self, keys: &[&TrackedKey]) -> Result<()> {
        let st = self.state.lock();
        // Newest first, each with the sequence its writes start after.
        let mems = std::iter::once((&st.mem, st.mem_floor))
            .chain(st.imms.iter().rev().map(|i| (&i.mem, i.floor)))
            .chain(st.history.iter().rev().map(|i| (&i.mem, i.floor)));
        'key: for k in keys {
            for (mem, floor) in mems.clone() {
                if let Some(changed) = mem.latest_seq(&k.key) {
                    if changed > k.seq {
                        return Err(Error::Busy(format!(
                            "write conflict: key {:?} of keyspace {:?} changed (sequence {changed}) after the transaction read it (sequence {})",
                            String::from_utf8_lossy(&k.key),
                            self.name,
                            k.seq
                        )));
                    }
                    continue 'key;
                }
                if floor <= k.seq {
                    continue 'key;
                }
            }
            return Err(Error::TryAgain(format!(
                "cannot tell whether key {:?} of keyspace {:?} changed since sequence {}: the memtables in memory start later; retry the transaction, or keep more flushed memtables (Options::with_max_write_buffer_size_to_maintain)",
                String::from_utf8_lossy(&k.key),
                self.name,
                k.seq
            )));
        }
        Ok(())
    }
}

/// Drops the oldest history memtables while the newer ones alone hold `limit` bytes.
fn trim_history(history: &mut VecDeque<Immutable>, limit: usize) {
    let mut newer = 0usize;
    let mut keep = 0;
    for h in history.iter().rev() {
        keep += 1;
        newer += h.mem.approximate_memory_usage();
        if newer >= limit {
            break;
        }
    }
    let drop = history.len() - keep;
    history.drain(..drop);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::events::FlushReason;
    use crate::memtable::MemTable;

    fn mem_of(bytes: usize) -> Immutable {
        let mem = MemTable::new();
        mem.add(1, crate::key::ValueKind::Put, b"k", &vec![0; bytes]);
        Immutable { mem: Arc::new(mem), wal: 0, reason: FlushReason::Manual, floor: 0 }
    }

    #[test]
    fn history_keeps_the_newest_memtables_that_reach_the_limit() {
        let mut h: VecDeque<_> = [1000, 1000, 1000].map(mem_of).into();
        let one = h[0].mem.approximate_memory_usage();
        trim_history(&mut h, one + 1);
        assert_eq!(h.len(), 2, "one memtable is short of the limit, two reach it");
        trim_history(&mut h, 1);
        assert_eq!(h.len(), 1, "the newest is kept even when it alone passes the limit");
    }
}
