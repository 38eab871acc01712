//! `CompactionPipeline::Auto`: the output pipeline of the next flush or
//! compaction, chosen by the pipelined-compaction paper's stage-bandwidth
//! model ([`super::stage_model`]) from the stage times of the recent ones.
//!
//! Every mode measures the same stages (read, the merging thread's own work,
//! compress + checksum, write), so the choice can move between modes as the
//! data or the device changes:
//! - `Sequential` for a task no one waits on (see [`Waited`]): a pipeline's
//!   extra threads then only take CPU from the writers and readers (on two
//!   cores, pipelined background work made a random load 15 % slower while
//!   compaction kept up; docs/BENCHMARKS.md, "PCP's report");
//! - `Sequential` unless the model gives a pipeline at least
//!   `MIN_PIPELINE_GAIN` its bandwidth (threads and hand-offs cost: an
//!   uncompressed pipeline, ideal 1.17×, measured no faster);
//! - then `Parallel { k }` with the fewest threads, up to the option's cap,
//!   each of which the model gives `MIN_THREAD_GAIN` over one fewer (on
//!   two cores, merge and compress share them and more threads stop helping);
//! - otherwise `Pipelined`.
//!
//! With no history yet the choice is `Pipelined`, which costs little and
//! measures every stage.

use std::time::Duration;

use super::stage_model::StageProfile;
use crate::options::kinds::CompactionPipeline;
use crate::stats::{CompactionRecord, Counters};

/// Recent tasks the choice looks at.
const WINDOW: usize = 8;
/// Tasks shorter than this say little about where time goes.
const MIN_TASK: Duration = Duration::from_millis(1);

/// Cores this process may run on.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Whether anyone waits for a flush or compaction to finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// A caller waits for this task: `compact_range`, `flush`, an ingestion.
    ByCaller,
    /// Writes are held back by the tree's backlog, or soon will be.
    ByWriters,
    /// Background work that keeps up: nothing waits on it.
    No,
}

/// The mode to use now; anything but `Auto` is returned as it is.
pub(crate) fn resolve(mode: CompactionPipeline, counters: &Counters, waited: Waited) -> CompactionPipeline {
    match mode {
        CompactionPipeline::Auto { .. } if waited == Waited::No => CompactionPipeline::Sequential,
        CompactionPipeline::Auto { max_compute_threads } => {
            choose(max_compute_threads, cores(), &counters.recent_output_tasks(WINDOW, MIN_TASK))
        }
        other => other,
    }
}

/// How close `l0` files are to holding writes back: RocksDB speeds its
/// compactions up (`NeedSpeedupCompaction`) a quarter of the way from the
/// compaction trigger to the slowdown trigger, and so does `Auto`.
pub(crate) fn l0_behind(l0: usize, compaction_trigger: usize, slowdown_trigger: usize) -> bool {
    let speedup = compaction_trigger + slowdown_trigger.saturating_sub(compaction_trigger) / 4;
    l0 >= speedup.max(1)
}

/// For writers with no history (recovery, repair): `Auto` writes pipelined.
pub(crate) fn resolve_without_history(mode: CompactionPipeline) -> CompactionPipeline {
    match mode {
        CompactionPipeline::Auto { max_compute_threads } => choose(max_compute_threads, cores(), &[]),
        other => other,
    }
}

/// The choice itself, on `cores` cores, from finished flushes and merges.
pub(crate) fn choose(max_threads: usize, cores: usize, recent: &[CompactionRecord]) -> CompactionPipeline {
    if recent.is_empty() {
        return CompactionPipeline::Pipelined;
    }
    let p = recent
        .iter()
        .map(|r| StageProfile::measured(r.pipeline, r.duration, &r.stages, r.bytes_read.max(r.bytes_written)))
        .fold(StageProfile::default(), StageProfile::plus);
    p.choice(max_threads, cores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::StageTimes;

    fn rec(mode: CompactionPipeline, wall: f64, compute: f64, write: f64, wait: f64) -> CompactionRecord {
        let d = Duration::from_secs_f64;
        CompactionRecord {
            kind: "merge",
            reason: "test",
            output_level: 1,
            input_files: 1,
            output_files: 1,
            bytes_read: 0,
            bytes_written: 0,
            bytes_moved_down: 0,
            warmup_blocks_inserted: 0,
            filter_removed: 0,
            filter_changed: 0,
            duration: d(wall),
            stages: StageTimes {
                compute: d(compute),
                write: d(write),
                merge_waiting: d(wait),
                ..StageTimes::default()
            },
            pipeline: mode,
            range_dels_written: 0,
            range_dels_dropped: 0,
        }
    }

    // The stage times below are the sequential compactions measured in
    // docs/BENCHMARKS.md (512 MB, page cache).
    #[test]
    fn picks_what_each_measured_compression_ran_fastest_with() {
        let seq = CompactionPipeline::Sequential;
        // On this machine's two cores.
        // zstd: compress 3.33 s, write 0.16 s, merge 2.78 s: parallel was fastest
        // (model: 2.05x sequential against pipelined's 1.88x; more threads, no more).
        assert_eq!(
            choose(4, 2, &[rec(seq, 6.27, 3.33, 0.16, 0.0)]),
            CompactionPipeline::Parallel { compute_threads: 2 }
        );
        // ... and with a cap of 1 thread, pipelined.
        assert_eq!(choose(1, 2, &[rec(seq, 6.27, 3.33, 0.16, 0.0)]), CompactionPipeline::Pipelined);
        // lz4: compress 0.55, write 0.15, merge 1.62: pipelining gains (1.43x), and
        // the merge, which Auto's compress threads do not split, bounds it.
        assert_eq!(choose(4, 2, &[rec(seq, 2.32, 0.55, 0.15, 0.0)]), CompactionPipeline::Pipelined);
        // none: checksums 0.04, write 0.22, merge 1.51: nothing to overlap (ideal 1.17x).
        assert_eq!(choose(4, 2, &[rec(seq, 1.77, 0.04, 0.22, 0.0)]), CompactionPipeline::Sequential);
    }

    #[test]
    fn reads_pipelined_records_by_the_task_threads_work() {
        // A c-ppcp(2) zstd run: 3.44 s wall, 0.61 s waiting: 2.83 s of merging
        // against 3.45 s of compression: stay parallel.
        let p = CompactionPipeline::Parallel { compute_threads: 2 };
        assert_eq!(choose(2, 2, &[rec(p, 3.44, 3.45, 0.17, 0.61)]), p);
        // Heavier compression (merge 2.5 s, compress 9 s) asks for more threads
        // where there are cores for them, up to the cap: 4 on 8 cores (then the
        // merge bounds it), 3 with a cap of 3, 2 on 2 cores.
        let heavy = [rec(p, 3.0, 9.0, 0.1, 0.5)];
        assert_eq!(choose(8, 8, &heavy), CompactionPipeline::Parallel { compute_threads: 4 });
        assert_eq!(choose(3, 8, &heavy), CompactionPipeline::Parallel { compute_threads: 3 });
        assert_eq!(choose(8, 2, &heavy), CompactionPipeline::Parallel { compute_threads: 2 });
    }

    #[test]
    fn a_task_no_one_waits_on_runs_sequentially() {
        let auto = CompactionPipeline::Auto { max_compute_threads: 2 };
        let counters = Counters::default();
        assert_eq!(resolve(auto, &counters, Waited::No), CompactionPipeline::Sequential);
        // Waited on, the model decides (with no history: pipelined).
        assert_eq!(resolve(auto, &counters, Waited::ByCaller), CompactionPipeline::Pipelined);
        assert_eq!(resolve(auto, &counters, Waited::ByWriters), CompactionPipeline::Pipelined);
        // A mode set by the user is kept whoever waits.
        let pcp = CompactionPipeline::Pipelined;
        assert_eq!(resolve(pcp, &counters, Waited::No), pcp);
        // L0 is behind a quarter of the way from the trigger (4) to the slowdown (20).
        assert!(!l0_behind(7, 4, 20) && l0_behind(8, 4, 20));
        // With the triggers equal (or a slowdown below the trigger), at the trigger.
        assert!(!l0_behind(3, 4, 4) && l0_behind(4, 4, 4) && l0_behind(4, 4, 2));
    }

    #[test]
    fn no_history_means_pipelined() {
        assert_eq!(choose(2, 2, &[]), CompactionPipeline::Pipelined);
        assert_eq!(
            resolve_without_history(CompactionPipeline::Auto { max_compute_threads: 2 }),
            CompactionPipeline::Pipelined
        );
        assert_eq!(resolve_without_history(CompactionPipeline::Sequential), CompactionPipeline::Sequential);
    }
}
