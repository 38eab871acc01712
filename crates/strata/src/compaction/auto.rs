//! `CompactionPipeline::Auto`: the output pipeline of the next flush or
//! compaction, chosen from the stage times of the recent ones.
//!
//! Every mode measures the same three things (compress + checksum time, write
//! time, and the task thread's own work), so the choice can move between
//! modes as the data or the device changes:
//! - compressing and writing under a quarter of the task thread's work:
//!   `Sequential` (there is too little to overlap to pay for the threads; an
//!   uncompressed pipeline measured no faster);
//! - compressing longer than the task thread's work: `Parallel` with enough
//!   compute threads to keep up (compress time / task time, rounded up, at
//!   least 2, at most the option's cap);
//! - otherwise `Pipelined`.
//!
//! With no history yet the choice is `Pipelined`, which costs little and
//! measures every stage.

use std::time::Duration;

use crate::options::kinds::CompactionPipeline;
use crate::stats::{CompactionRecord, Counters};

/// Recent tasks the choice looks at.
const WINDOW: usize = 8;
/// Tasks shorter than this say little about where time goes.
const MIN_TASK: Duration = Duration::from_millis(1);

/// The mode to use now; anything but `Auto` is returned as it is.
pub(crate) fn resolve(mode: CompactionPipeline, counters: &Counters) -> CompactionPipeline {
    match mode {
        CompactionPipeline::Auto { max_compute_threads } => {
            choose(max_compute_threads, &counters.recent_output_tasks(WINDOW, MIN_TASK))
        }
        other => other,
    }
}

/// For writers with no history (recovery, repair): `Auto` writes pipelined.
pub(crate) fn resolve_without_history(mode: CompactionPipeline) -> CompactionPipeline {
    match mode {
        CompactionPipeline::Auto { max_compute_threads } => choose(max_compute_threads, &[]),
        other => other,
    }
}

/// The choice itself, from finished flushes and merges (newest last).
pub(crate) fn choose(max_threads: usize, recent: &[CompactionRecord]) -> CompactionPipeline {
    if recent.is_empty() {
        return CompactionPipeline::Pipelined;
    }
    let (mut compute, mut write, mut task) = (0.0, 0.0, 0.0);
    for r in recent {
        let (c, w) = (r.stages.compute.as_secs_f64(), r.stages.write.as_secs_f64());
        let wall = r.duration.as_secs_f64();
        // The task thread's own work: on it, compute and write were part of
        // the wall time; with a pipeline, its waits on the stages were not
        // work, and sub-tasks merged on other threads were.
        let st = &r.stages;
        let own = match r.pipeline {
            CompactionPipeline::Sequential => wall - c - w,
            _ => {
                wall - st.merge_waiting.as_secs_f64() - st.subtask_waiting.as_secs_f64()
                    + st.subtask_merge.as_secs_f64()
            }
        };
        compute += c;
        write += w;
        task += own.max(0.0);
    }
    if compute + write < 0.25 * task {
        return CompactionPipeline::Sequential;
    }
    if compute > task && max_threads >= 2 {
        let need = (compute / task.max(1e-9)).ceil() as usize;
        return CompactionPipeline::Parallel { compute_threads: need.clamp(2, max_threads) };
    }
    CompactionPipeline::Pipelined
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
        // zstd: compress 3.33 s, write 0.16 s, merge 2.78 s: parallel was fastest.
        assert_eq!(
            choose(4, &[rec(seq, 6.27, 3.33, 0.16, 0.0)]),
            CompactionPipeline::Parallel { compute_threads: 2 }
        );
        // ... and with a cap of 1 thread, pipelined.
        assert_eq!(choose(1, &[rec(seq, 6.27, 3.33, 0.16, 0.0)]), CompactionPipeline::Pipelined);
        // lz4: compress 0.55, write 0.15, merge 1.62: pipelined gains, parallel adds little.
        assert_eq!(choose(4, &[rec(seq, 2.32, 0.55, 0.15, 0.0)]), CompactionPipeline::Pipelined);
        // none: checksums 0.04, write 0.22, merge 1.51: nothing to overlap.
        assert_eq!(choose(4, &[rec(seq, 1.77, 0.04, 0.22, 0.0)]), CompactionPipeline::Sequential);
    }

    #[test]
    fn reads_pipelined_records_by_the_task_threads_work() {
        // A c-ppcp(2) zstd run: 3.44 s wall, 0.61 s waiting: 2.83 s of merging
        // against 3.45 s of compression: stay parallel.
        let p = CompactionPipeline::Parallel { compute_threads: 2 };
        assert_eq!(choose(2, &[rec(p, 3.44, 3.45, 0.17, 0.61)]), p);
        // Heavier compression asks for more threads, up to the cap.
        assert_eq!(
            choose(8, &[rec(p, 3.0, 9.0, 0.1, 0.5)]),
            CompactionPipeline::Parallel { compute_threads: 4 }
        );
        assert_eq!(
            choose(3, &[rec(p, 3.0, 9.0, 0.1, 0.5)]),
            CompactionPipeline::Parallel { compute_threads: 3 }
        );
    }

    #[test]
    fn no_history_means_pipelined() {
        assert_eq!(choose(2, &[]), CompactionPipeline::Pipelined);
        assert_eq!(
            resolve_without_history(CompactionPipeline::Auto { max_compute_threads: 2 }),
            CompactionPipeline::Pipelined
        );
        assert_eq!(resolve_without_history(CompactionPipeline::Sequential), CompactionPipeline::Sequential);
    }
}
