//! Reads that target recently written keys (the LSbM paper's "Latest-*"
//! distributions): a ring of the last written key indices and a chooser
//! that draws a recency position from an inner distribution.

use super::KeyChooser;
use rand::rngs::SmallRng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Shared ring of the last `capacity` written key indices. Writers serialize
/// on a tiny lock (one writer in the experiments, so it is uncontended);
/// readers never lock: they read the published count, then a slot. A slot
/// being overwritten by a wrap-around yields either its old or its new
/// value — both recorded indices.
#[derive(Debug)]
pub struct RecentWrites {
    slots: Box<[AtomicU64]>,
    written: AtomicU64,
    writer: Mutex<()>,
}

impl RecentWrites {
    /// An empty ring keeping the last `capacity` (at least 1) indices.
    pub fn new(capacity: usize) -> Self {
        let slots = (0..capacity.max(1)).map(|_| AtomicU64::new(0)).collect();
        RecentWrites { slots, written: AtomicU64::new(0), writer: Mutex::new(()) }
    }

    /// Records that key `index` was just written.
    pub fn record(&self, index: u64) {
        let _guard = self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let w = self.written.load(Ordering::Relaxed);
        self.slots[(w % self.slots.len() as u64) as usize].store(index, Ordering::Relaxed);
        // Release publishes the slot before the count that makes it visible.
        self.written.store(w + 1, Ordering::Release);
    }

    /// The number of indices held (at most the capacity).
    pub fn len(&self) -> u64 {
        self.written.load(Ordering::Acquire).min(self.slots.len() as u64)
    }

    /// True until the first `record`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total `record` calls so far.
    pub fn total_written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// The `p`-th newest recorded index (0 = newest), if held.
    pub fn nth_newest(&self, p: u64) -> Option<u64> {
        let w = self.written.load(Ordering::Acquire);
        if p >= w.min(self.slots.len() as u64) {
            return None;
        }
        let pos = (w - 1 - p) % self.slots.len() as u64;
        Some(self.slots[pos as usize].load(Ordering::Relaxed))
    }
}

/// LSbM's Latest-Uniform / Latest-Zipfian / Latest-RangeHot: draws a
/// position `p` from `inner` over the ring's current length and returns the
/// `p`-th newest written index; while the ring is empty, draws from `inner`
/// over `[0, n)` directly.
pub struct LatestOf<K: KeyChooser> {
    inner: K,
    n: u64,
    current: u64,
    recent: Arc<RecentWrites>,
}

impl<K: KeyChooser> LatestOf<K> {
    /// Wraps `inner` (built over `n` items; it is resized to follow the ring).
    pub fn new(inner: K, n: u64, recent: Arc<RecentWrites>) -> Self {
        LatestOf { inner, n, current: n, recent }
    }

    fn resize(&mut self, len: u64) {
        if len != self.current {
            self.inner.set_item_count(len);
            self.current = len;
        }
    }
}

impl<K: KeyChooser> KeyChooser for LatestOf<K> {
    fn next_index(&mut self, rng: &mut SmallRng) -> u64 {
        let len = self.recent.len();
        if len == 0 {
            self.resize(self.n);
            return self.inner.next_index(rng);
        }
        self.resize(len);
        let p = self.inner.next_index(rng).min(len - 1);
        // `p < len` and the ring never shrinks, so the slot is always there.
        self.recent.nth_newest(p).unwrap_or(p)
    }

    fn set_item_count(&mut self, n: u64) {
        self.n = n;
    }
}
