//! CPU time of the calling thread, for the stage-bandwidth model's cores
//! bound: on a machine with fewer cores than busy stages, a compaction is
//! bounded by the CPU seconds all its threads used, not by any one stage.

/// Nanoseconds of CPU the calling thread has used; 0 where the platform
/// cannot tell (the model then falls back to the stages it times).
pub(crate) fn thread_cpu_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec for the call.
        let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if r == 0 {
            return u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000
                + u64::try_from(ts.tv_nsec).unwrap_or(0);
        }
    }
    0
}

/// CPU nanoseconds the calling thread used since `before` (an earlier
/// [`thread_cpu_ns`] on the same thread).
pub(crate) fn thread_cpu_ns_since(before: u64) -> u64 {
    thread_cpu_ns().saturating_sub(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_s_cpu_time_grows_with_its_work_and_not_with_its_sleep() {
        let start = thread_cpu_ns();
        assert!(start > 0, "CLOCK_THREAD_CPUTIME_ID is available on every unix this builds for");
        // Work until this thread has used at least 5 ms of CPU by its own clock.
        let mut x = 0u64;
        while thread_cpu_ns_since(start) < 5_000_000 {
            for i in 0..10_000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            }
        }
        std::hint::black_box(x);
        let before_sleep = thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(50));
        // A sleeping thread uses (almost) no CPU: far less than the 50 ms it slept.
        assert!(thread_cpu_ns_since(before_sleep) < 25_000_000);
    }
}
