//! What else the machine was doing when an experiment started, for the line
//! atop each report: the CPU other processes used in a short sample before it
//! (`/proc/stat` less this process's own ticks), and the 1-minute load
//! average. The load average alone misleads: it counts threads blocked on I/O,
//! so after an experiment whose readers waited on a throttled device (the
//! `hdd` profile) it stays high for a minute while no other work runs.

use std::time::Duration;

/// The machine's load before an experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// `/proc/loadavg`'s 1-minute figure, `?` where there is none.
    pub average: String,
    /// Cores' worth of CPU that processes other than this one used during the
    /// sample; `None` where the platform does not tell.
    pub other_cores: Option<f64>,
}

impl Load {
    /// Whether other work shared the machine enough to make ratios noisier:
    /// half a core of other processes' CPU, or, where that is unknown, a load
    /// average above the core count.
    pub fn shared(&self, cores: usize) -> bool {
        match self.other_cores {
            Some(c) => c >= 0.5,
            None => self.average.parse::<f64>().is_ok_and(|l| l > cores as f64),
        }
    }
}

/// CPU clock ticks: every core's busy and total ticks, and this process's own.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ticks {
    busy: u64,
    total: u64,
    own: u64,
}

/// Samples the machine for `window` (sleeping through it).
pub fn sample(window: Duration) -> Load {
    let before = ticks();
    std::thread::sleep(window);
    let after = ticks();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Load {
        average: load_average(),
        other_cores: before.zip(after).and_then(|(b, a)| other_cores(b, a, cores)),
    }
}

/// `/proc/loadavg`'s 1-minute load average, `?` where there is none.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn ticks() -> Option<Ticks> {
    let (busy, total) = machine_ticks(&std::fs::read_to_string("/proc/stat").ok()?)?;
    let own = own_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    Some(Ticks { busy, total, own })
}

/// Busy and total ticks of all cores from `/proc/stat`'s first line
/// (`cpu user nice system idle iowait irq softirq steal ...`; guest time is
/// already in user). Idle and iowait are not busy.
fn machine_ticks(proc_stat: &str) -> Option<(u64, u64)> {
    let line = proc_stat.lines().next()?;
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = fields.take(8).map(str::parse).collect::<Result<_, _>>().ok()?;
    if v.len() < 8 {
        return None;
    }
    let total: u64 = v.iter().sum();
    Some((total - v[3] - v[4], total))
}

/// This process's user and system ticks (every thread's) from
/// `/proc/self/stat`: fields 14 and 15, counted after the command name,
/// which is in parentheses and may hold spaces.
fn own_ticks(self_stat: &str) -> Option<u64> {
    let rest = &self_stat[self_stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (the state).
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Cores' worth of other processes' CPU between two samples on `cores` cores.
fn other_cores(before: Ticks, after: Ticks, cores: usize) -> Option<f64> {
    let total = after.total.checked_sub(before.total)?;
    if total == 0 {
        return None;
    }
    let busy = after.busy.saturating_sub(before.busy);
    let own = after.own.saturating_sub(before.own);
    // `total` counts every core's ticks, so total / cores is the window.
    Some(busy.saturating_sub(own) as f64 * cores as f64 / total as f64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_s_first_line_gives_busy_and_total_ticks() {
        let s = "cpu  100 5 50 800 40 3 2 0 7 0\ncpu0 50 2 25 400 20 1 1 0 0 0\n";
        // busy = user + nice + system + irq + softirq + steal; guest is in user.
        assert_eq!(machine_ticks(s), Some((160, 1000)));
        assert_eq!(machine_ticks("intr 1 2 3\n"), None);
        assert_eq!(machine_ticks("cpu 1 2 3\n"), None);
    }

    #[test]
    fn own_ticks_are_read_after_a_command_name_with_spaces_and_parentheses() {
        let s = "4242 (strata (bench) x) R 1 4242 4242 0 -1 4194304 900 0 0 0 123 45 0 0 20 0 9 0\n";
        assert_eq!(own_ticks(s), Some(168));
        assert_eq!(own_ticks("4242 (short"), None);
    }

    #[test]
    fn other_processes_cpu_leaves_this_process_s_own_out() {
        let b = Ticks { busy: 1_000, total: 10_000, own: 300 };
        // A second on 2 cores (200 ticks): 150 busy, 120 of them this process's.
        let a = Ticks { busy: 1_150, total: 10_200, own: 420 };
        let c = other_cores(b, a, 2).unwrap();
        assert!((c - 0.3).abs() < 1e-9, "{c}");
        // This process alone: nothing else ran.
        let alone = Ticks { busy: 1_150, total: 10_200, own: 450 };
        assert_eq!(other_cores(b, alone, 2), Some(0.0));
        assert_eq!(other_cores(b, b, 2), None);
    }

    #[test]
    fn a_high_load_average_with_idle_cores_is_not_shared_work() {
        // Readers blocked on a throttled device raise the load average only.
        let blocked = Load { average: "8.23".into(), other_cores: Some(0.02) };
        assert!(!blocked.shared(2));
        assert!(Load { average: "0.5".into(), other_cores: Some(1.6) }.shared(2));
        // Where the CPU sample is missing, the load average decides.
        assert!(Load { average: "8.23".into(), other_cores: None }.shared(2));
        assert!(!Load { average: "?".into(), other_cores: None }.shared(2));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_tells_both() {
        let l = sample(Duration::from_millis(200));
        assert!(l.average.parse::<f64>().is_ok(), "{l:?}");
        assert!(l.other_cores.is_some_and(|c| c >= 0.0), "{l:?}");
    }
}
