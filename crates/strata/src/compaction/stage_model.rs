//! The pipelined-compaction paper's stage-bandwidth model (its equations
//! 1–7) over the stages Strata times for every flush and compaction
//! ([`StageTimes`]): reading the inputs (the paper's step S1), verifying,
//! decompressing and merging them (S2–S4, the merging thread's own work),
//! compressing and checksumming the output blocks (S5–S6), and writing them
//! (S7). A mode's ideal bandwidth is the bytes compacted over the time of its
//! slowest stage:
//!
//! - `Sequential` (SCP, eq. 1): every stage in turn on one thread,
//!   `l / (t_read + t_merge + t_compute + t_write)`;
//! - `Pipelined` (PCP, eq. 2): each stage on its own thread (Strata splits the
//!   paper's S2–S6 stage in two: merging, and compressing),
//!   `l / max(t_read, t_merge, t_compute, t_write)`;
//! - `Parallel { k }` (C-PPCP, eq. 6): sub-tasks merged by `k` threads and
//!   blocks compressed by `k` threads,
//!   `l / max(t_read, t_merge / k, t_compute / k, t_write)`; where a pipeline's
//!   own timing shows the task thread's serial share of the merge (taking
//!   the sub-tasks' entries in order and cutting blocks), that share does not
//!   split: `max(t_serial, (t_merge - t_serial) / k)`. The `Parallel`
//!   that `Auto` runs compresses on `k` threads but does not split merges,
//!   so its merge stage stays `t_merge`;
//! - striping reads and writes over `d` devices (S-PPCP, eq. 4), which
//!   Strata does not do (its data paths place whole tables):
//!   `l / max(t_read / d, t_merge + t_compute, t_write / d)`.
//!
//! The paper's model has no core count; on a machine with fewer cores than
//! busy threads the stages share them, so every mode is also bounded by
//! `cpu / cores`, where `cpu` is the CPU time every thread of the task used
//! (`StageTimes::cpu`). That counts what the stage times alone do not: reads
//! and writes through the page cache are copies the CPU makes, and threads
//! hand blocks over. Where the platform cannot tell `cpu`, the bound is
//! `(t_merge + t_compute) / cores`. The speed-ups (eqs. 3, 5, 7) are ratios
//! of these bandwidths. `CompactionPipeline::Auto` chooses by them
//! ([`StageProfile::choice`]).
//!
//! The write stage is everything the writing thread does from a block's
//! arrival to the table's sync, meta blocks included; a pipeline's merge is
//! the merging thread's time less its waits for the other stages.

use std::time::Duration;

use crate::options::kinds::CompactionPipeline;
use crate::stats::StageTimes;

/// The modelled speed-up over `Sequential` a pipeline must promise before
/// `Auto` leaves it: threads and hand-offs cost (an uncompressed pipeline,
/// ideal 1.17×, measured no faster).
pub const MIN_PIPELINE_GAIN: f64 = 1.25;
/// The modelled speed-up each added compute thread must promise.
pub const MIN_THREAD_GAIN: f64 = 1.05;

/// Where one or more tasks spent their time, in seconds, by stage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageProfile {
    /// Bytes the tasks compacted (their input; the paper's `l` summed).
    pub bytes: u64,
    /// Reading inputs (S1).
    pub read: f64,
    /// Verifying, decompressing and merging (S2–S4).
    pub merge: f64,
    /// Of `merge`, what the task's own thread did when a pipeline ran it
    /// (taking merged entries from its sub-tasks and cutting blocks), which
    /// no number of merge threads shares; 0 for a sequential task, whose
    /// timing cannot tell it apart, so the model lets all of `merge` split.
    pub merge_serial: f64,
    /// Compressing and checksumming output blocks (S5–S6).
    pub compute: f64,
    /// Writing output blocks, the tables' meta blocks and syncs (S7).
    pub write: f64,
    /// CPU seconds of every thread of the tasks; 0 if unknown.
    pub cpu: f64,
}

impl StageProfile {
    /// The profile of a task that ran under `mode` for `wall` with `stages`.
    /// Sequentially every stage ran on the task's thread, so the merge is
    /// what the wall time leaves; in a pipeline the merge is the merging
    /// threads' own work: the task's thread's (wall time less its waits,
    /// serial), plus sub-tasks merged on other threads; it may include reads
    /// the merging thread did itself. Its waits are for the output stages,
    /// for sub-tasks, for read threads and for tables finishing apart.
    pub fn measured(mode: CompactionPipeline, wall: Duration, stages: &StageTimes, bytes: u64) -> Self {
        let s = |d: Duration| d.as_secs_f64();
        let (read, compute, write) = (s(stages.read), s(stages.compute), s(stages.write));
        let (merge, merge_serial) = match mode {
            CompactionPipeline::Sequential => ((s(wall) - read - compute - write).max(0.0), 0.0),
            _ => {
                let waits = stages.merge_waiting
                    + stages.subtask_waiting
                    + stages.read_waiting
                    + stages.finish_waiting;
                let own = (s(wall) - s(waits)).max(0.0);
                (own + s(stages.subtask_merge), own)
            }
        };
        StageProfile { bytes, read, merge, merge_serial, compute, write, cpu: s(stages.cpu) }
    }

    /// The sum of two profiles (tasks run one after another).
    pub fn plus(self, o: StageProfile) -> StageProfile {
        StageProfile {
            bytes: self.bytes + o.bytes,
            read: self.read + o.read,
            merge: self.merge + o.merge,
            merge_serial: self.merge_serial + o.merge_serial,
            compute: self.compute + o.compute,
            write: self.write + o.write,
            cpu: self.cpu + o.cpu,
        }
    }

    /// The cores bound: CPU seconds over `cores`, from the measured CPU
    /// time when there is one, else from the CPU stages.
    fn cpu_bound(&self, cores: usize) -> f64 {
        let cpu = if self.cpu > 0.0 { self.cpu } else { self.merge + self.compute };
        cpu / cores.max(1) as f64
    }

    /// The mode `CompactionPipeline::Auto { max_compute_threads }` runs
    /// for this profile on `cores` cores: `Sequential` unless a pipeline
    /// promises [`MIN_PIPELINE_GAIN`], then `Parallel` with the fewest
    /// threads (at most `max_threads`) each of which promises
    /// [`MIN_THREAD_GAIN`] over one fewer, else `Pipelined`.
    pub fn choice(&self, max_threads: usize, cores: usize) -> CompactionPipeline {
        // Auto's `Parallel` does not split merges.
        let time = |mode| self.time(mode, cores, false);
        let mut best = CompactionPipeline::Pipelined;
        let mut t = time(best);
        if time(CompactionPipeline::Sequential) < MIN_PIPELINE_GAIN * t {
            return CompactionPipeline::Sequential;
        }
        for k in 2..=max_threads {
            let mode = CompactionPipeline::Parallel { compute_threads: k };
            if t >= MIN_THREAD_GAIN * time(mode) {
                (best, t) = (mode, time(mode));
            }
        }
        best
    }

    /// Seconds the slowest stage of `mode` takes on `cores` cores, as the
    /// engine runs it when configured so (`Parallel` splits merges; `Auto`:
    /// the mode it chooses, whose `Parallel` does not).
    pub fn bottleneck(&self, mode: CompactionPipeline, cores: usize) -> f64 {
        match mode {
            CompactionPipeline::Auto { max_compute_threads } => {
                self.time(self.choice(max_compute_threads, cores), cores, false)
            }
            _ => self.time(mode, cores, true),
        }
    }

    /// [`Self::bottleneck`] of a concrete mode, its merges split into
    /// sub-tasks under `Parallel` or not.
    fn time(&self, mode: CompactionPipeline, cores: usize, split_merges: bool) -> f64 {
        let cpu = self.cpu_bound(cores);
        let stage = match mode {
            CompactionPipeline::Sequential => return self.read + self.merge + self.compute + self.write,
            CompactionPipeline::Auto { .. } | CompactionPipeline::Pipelined => {
                self.read.max(self.merge).max(self.compute).max(self.write)
            }
            CompactionPipeline::Parallel { compute_threads: k } => {
                let k = k.max(1) as f64;
                // Split, the sub-tasks share k threads; the task's thread
                // still takes every entry from them in order.
                let split = self.merge_serial.max((self.merge - self.merge_serial) / k);
                let merge = if split_merges { split } else { self.merge };
                self.read.max(merge).max(self.compute / k).max(self.write)
            }
        };
        stage.max(cpu)
    }

    /// The ideal bandwidth of `mode` on `cores` cores, bytes per second
    /// (eqs. 1, 2 and 6); 0 for an empty profile.
    pub fn bandwidth(&self, mode: CompactionPipeline, cores: usize) -> f64 {
        let t = self.bottleneck(mode, cores);
        if t > 0.0 {
            self.bytes as f64 / t
        } else {
            0.0
        }
    }

    /// The ideal bandwidth of a pipeline whose reads and writes are striped
    /// over `devices` devices (S-PPCP, eq. 4), bytes per second.
    pub fn striped_bandwidth(&self, devices: usize, cores: usize) -> f64 {
        let d = devices.max(1) as f64;
        let cpu = self.cpu_bound(cores);
        let t = (self.read / d).max(self.merge + self.compute).max(self.write / d).max(cpu);
        if t > 0.0 {
            self.bytes as f64 / t
        } else {
            0.0
        }
    }

    /// The ideal speed-up of `mode` over `Sequential` (eqs. 3 and, over
    /// `Pipelined`, 7).
    pub fn speedup(&self, mode: CompactionPipeline, over: CompactionPipeline, cores: usize) -> f64 {
        let t = self.bottleneck(mode, cores);
        if t > 0.0 {
            self.bottleneck(over, cores) / t
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(wall: f64, read: f64, compute: f64, write: f64) -> StageProfile {
        let d = Duration::from_secs_f64;
        let st = StageTimes { read: d(read), compute: d(compute), write: d(write), ..StageTimes::default() };
        StageProfile::measured(CompactionPipeline::Sequential, d(wall), &st, 600_000_000)
    }

    #[test]
    fn the_paper_s_equations_on_a_sequential_profile() {
        // 6 s: read 1, merge 2, compute 2.5, write 0.5; many cores.
        let p = seq(6.0, 1.0, 2.5, 0.5);
        assert!((p.merge - 2.0).abs() < 1e-9);
        let many = 64;
        assert!(
            (p.bandwidth(CompactionPipeline::Sequential, many) - 100e6).abs() < 1.0,
            "eq. 1: 600 MB / 6 s"
        );
        // eq. 2: the slowest stage is compress (2.5 s).
        assert!(
            (p.speedup(CompactionPipeline::Pipelined, CompactionPipeline::Sequential, many) - 2.4).abs()
                < 1e-9
        );
        // eq. 6 with k = 2: merge 1, compress 1.25, read 1: compress still bounds.
        let c2 = CompactionPipeline::Parallel { compute_threads: 2 };
        assert!((p.speedup(c2, CompactionPipeline::Pipelined, many) - 2.0).abs() < 1e-9, "eq. 7");
        // ... and with k = 4 the read stage (1 s) does.
        let c4 = CompactionPipeline::Parallel { compute_threads: 4 };
        assert!((p.bottleneck(c4, many) - 1.0).abs() < 1e-9);
        // eq. 4: striping over 2 devices leaves the CPU stages (4.5 s) as the bound.
        assert!((p.striped_bandwidth(2, many) - 600e6 / 4.5).abs() < 1.0);
    }

    #[test]
    fn the_cores_bound_every_mode() {
        // On 2 cores merge + compute (4.5 s) take at least 2.25 s whatever the threads.
        let p = seq(6.0, 1.0, 2.5, 0.5);
        let c4 = CompactionPipeline::Parallel { compute_threads: 4 };
        assert!((p.bottleneck(c4, 2) - 2.25).abs() < 1e-9);
        assert!((p.bottleneck(CompactionPipeline::Pipelined, 2) - 2.5).abs() < 1e-9);
        assert_eq!(StageProfile::default().bandwidth(CompactionPipeline::Pipelined, 2), 0.0);
    }

    /// On two cores the model bounded a pipeline by merge + compress only, so
    /// copies through the page cache and hand-offs went unseen: from its own
    /// stage times it put uncompressed `c-ppcp(2)` at 1.6–1.7× the measured
    /// bandwidth. The CPU of every thread bounds instead.
    #[test]
    fn the_cores_bound_counts_the_cpu_every_thread_used() {
        let d = Duration::from_secs_f64;
        let c2 = CompactionPipeline::Parallel { compute_threads: 2 };
        // Read 0.4, own merge 0.5 (wall 1.0 less 0.5 waiting), sub-tasks 1.0,
        // compress 0.2, write 0.4: stage bound 0.5; but 2.4 CPU seconds.
        let st = StageTimes {
            compute: d(0.2),
            write: d(0.4),
            read: d(0.4),
            subtask_merge: d(1.0),
            subtask_waiting: d(0.3),
            finish_waiting: d(0.2),
            subtasks: 4,
            cpu: d(2.4),
            ..StageTimes::default()
        };
        let p = StageProfile::measured(c2, d(1.0), &st, 1);
        // The wait for tables finishing apart is the write stage's, not the merge's.
        assert!((p.merge_serial - 0.5).abs() < 1e-9, "{p:?}");
        assert!((p.bottleneck(c2, 64) - 0.5).abs() < 1e-9);
        assert!((p.bottleneck(c2, 2) - 1.2).abs() < 1e-9, "2.4 CPU s on 2 cores");
        // Without a CPU clock the bound is the CPU stages': (1.5 + 0.2) / 2.
        let q = StageProfile { cpu: 0.0, ..p };
        assert!((q.bottleneck(c2, 2) - 0.85).abs() < 1e-9);
        assert!((p.striped_bandwidth(2, 2) - 1.0 / 1.7).abs() < 1e-9, "merge + compute bound striping");
        assert!((p.plus(p).cpu - 4.8).abs() < 1e-9);
    }

    #[test]
    fn auto_models_its_own_parallel_which_does_not_split_merges() {
        // The merge (2 s) bounds Auto's pipelines; a user's Parallel splits it.
        let p = seq(4.5, 0.0, 2.0, 0.5);
        let c2 = CompactionPipeline::Parallel { compute_threads: 2 };
        assert!((p.bottleneck(c2, 64) - 1.0).abs() < 1e-9);
        assert_eq!(p.choice(4, 64), CompactionPipeline::Pipelined);
        let auto = CompactionPipeline::Auto { max_compute_threads: 4 };
        assert!((p.bottleneck(auto, 64) - 2.0).abs() < 1e-9);
        // Too little to overlap: sequential (ideal 1.2x < 1.25x).
        let q = seq(6.0, 0.0, 0.5, 0.5);
        assert_eq!(q.choice(4, 64), CompactionPipeline::Sequential);
        assert!((q.bottleneck(auto, 64) - 6.0).abs() < 1e-9);
    }

    /// The model split the task thread's serial work over the merge threads
    /// too, one reason it put c-ppcp 21–42 % above its measured bandwidth.
    #[test]
    fn a_split_merge_keeps_the_task_thread_s_share_serial() {
        let d = Duration::from_secs_f64;
        let c2 = CompactionPipeline::Parallel { compute_threads: 2 };
        // 4 s wall: the task thread waited 1.5 s for sub-tasks, which two
        // threads merged in 3 s; compress 2 s, read and write 0.5 s each.
        let st = StageTimes {
            compute: d(2.0),
            write: d(0.5),
            read: d(0.5),
            subtask_merge: d(3.0),
            subtask_waiting: d(1.5),
            subtasks: 8,
            ..StageTimes::default()
        };
        let p = StageProfile::measured(c2, d(4.0), &st, 1);
        assert!((p.merge_serial - 2.5).abs() < 1e-9 && (p.merge - 5.5).abs() < 1e-9, "{p:?}");
        // The task thread's 2.5 s bounds, not (5.5 s / 2) nor the sub-tasks' 1.5 s.
        assert!((p.bottleneck(c2, 64) - 2.5).abs() < 1e-9);
        // A sequential profile of the same work cannot tell the share: all of it splits.
        let q = StageProfile { merge_serial: 0.0, ..p };
        assert!((q.bottleneck(c2, 64) - 2.75).abs() < 1e-9);
    }

    #[test]
    fn a_pipelined_task_s_merge_is_its_own_work() {
        let d = Duration::from_secs_f64;
        let st = StageTimes {
            compute: d(3.45),
            write: d(0.17),
            merge_waiting: d(0.61),
            read: d(0.3),
            read_waiting: d(0.1),
            ..StageTimes::default()
        };
        let p = StageProfile::measured(CompactionPipeline::Parallel { compute_threads: 2 }, d(3.44), &st, 1);
        assert!((p.merge - 2.73).abs() < 1e-9, "{p:?}");
        let twice = p.plus(p);
        assert_eq!(twice.bytes, 2);
        assert!((twice.compute - 6.9).abs() < 1e-9);
    }
}
