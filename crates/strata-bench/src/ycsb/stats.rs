//! Per-operation-type latency histograms, kept per thread and merged at the
//! end (no shared counters on the hot path).

use super::workload::{Op, OP_NAMES};
use crate::engine::BenchResult;
use crate::results::OpSummary;
use hdrhistogram::Histogram;

/// Histograms in nanoseconds (1 ns .. 1 h, 3 significant digits).
fn new_hist() -> BenchResult<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).map_err(|e| format!("latency histogram: {e}"))
}

/// One thread's (or the merged) latencies and found counts per operation type.
pub(crate) struct OpStats {
    hists: Vec<Histogram<u64>>,
    found: [u64; 5],
}

impl OpStats {
    pub(crate) fn new() -> BenchResult<Self> {
        Ok(OpStats {
            hists: (0..OP_NAMES.len()).map(|_| new_hist()).collect::<BenchResult<_>>()?,
            found: [0; 5],
        })
    }

    /// Records one operation of `ns` nanoseconds.
    pub(crate) fn record(&mut self, op: Op, ns: u64) {
        self.hists[op as usize].saturating_record(ns.max(1));
    }

    /// Adds to the found count of `op` (see [`OpSummary::found`]).
    pub(crate) fn add_found(&mut self, op: Op, n: u64) {
        self.found[op as usize] += n;
    }

    pub(crate) fn merge(&mut self, other: &OpStats) -> BenchResult<()> {
        for (a, b) in self.hists.iter_mut().zip(&other.hists) {
            a.add(b).map_err(|e| format!("merging latency histograms: {e}"))?;
        }
        for (a, b) in self.found.iter_mut().zip(other.found) {
            *a += b;
        }
        Ok(())
    }

    /// Each operation type that ran, with its latencies.
    pub(crate) fn histograms(&self) -> Vec<(&'static str, Histogram<u64>)> {
        OP_NAMES
            .iter()
            .zip(&self.hists)
            .filter(|(_, h)| !h.is_empty())
            .map(|(&op, h)| (op, h.clone()))
            .collect()
    }

    /// All operations' latencies in one histogram.
    pub(crate) fn total(&self) -> BenchResult<Histogram<u64>> {
        let mut all = new_hist()?;
        for h in &self.hists {
            all.add(h).map_err(|e| format!("merging latency histograms: {e}"))?;
        }
        Ok(all)
    }

    /// Operations completed.
    pub(crate) fn ops(&self) -> u64 {
        self.hists.iter().map(|h| h.len()).sum()
    }

    /// Reads (plain and read-modify-write) that found their key.
    pub(crate) fn reads_found(&self) -> u64 {
        self.found[Op::Read as usize] + self.found[Op::ReadModifyWrite as usize]
    }

    /// One summary per operation type that ran.
    pub(crate) fn summaries(&self) -> Vec<OpSummary> {
        OP_NAMES
            .iter()
            .zip(&self.hists)
            .zip(self.found)
            .filter(|((_, h), _)| !h.is_empty())
            .map(|((&op, h), found)| OpSummary {
                op: op.to_string(),
                count: h.len(),
                found,
                p50_us: us(h, 0.5),
                p99_us: us(h, 0.99),
                p999_us: us(h, 0.999),
            })
            .collect()
    }
}

/// The `q` quantile of a nanosecond histogram, in microseconds.
pub(crate) fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}
