//! How many tables may be memory-mapped at once in a database
//! (`Options::with_max_mapped_files`; LevelDB maps at most 1000 files): each
//! map takes address space and a kernel mapping, and past the bound tables
//! are read with `pread` as without `mmap_reads`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The database's count of mapped tables and its bound.
#[derive(Debug)]
pub(crate) struct MapBudget {
    limit: usize,
    /// INVARIANT: the number of live [`MapSlot`]s of this budget, at most `limit`.
    used: AtomicUsize,
}

/// One mapped table's place in the budget, given back when dropped.
#[derive(Debug)]
pub(crate) struct MapSlot(Arc<MapBudget>);

impl MapBudget {
    /// Room for `limit` mapped tables.
    pub(crate) fn new(limit: usize) -> Arc<MapBudget> {
        Arc::new(MapBudget { limit, used: AtomicUsize::new(0) })
    }

    /// A slot, or `None` when `limit` tables are mapped already.
    pub(crate) fn take(self: &Arc<Self>) -> Option<MapSlot> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.limit).then_some(n + 1))
            .ok()
            .map(|_| MapSlot(Arc::clone(self)))
    }

    /// Tables mapped now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

impl Drop for MapSlot {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let b = MapBudget::new(2);
        let (x, y) = (b.take().unwrap(), b.take().unwrap());
        assert!(b.take().is_none());
        drop(x);
        assert_eq!(b.used(), 1);
        let z = b.take().unwrap();
        drop((y, z));
        assert_eq!(b.used(), 0);
    }
}
