//! The info log (RocksDB's `LOG`): a text file in the database directory that
//! says what the database did — its options at open, every flush, compaction,
//! stall change and background error — so an operator can read a database's
//! history without the application's logger.
//!
//! It is written by hand, not through a logging crate, because it is part of
//! the database directory: one file per database (the `log` facade has one
//! global sink per process), written through the database's `Vfs`, rotated and
//! bounded by the database's options. Losing it loses nothing else: a failed
//! write turns it off with one warning and never fails a database call.

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::events::{
    BackgroundErrorInfo, CompactionInfo, EventListener, FlushInfo, PolicyChangeInfo, StallInfo,
};
use crate::vfs::{Vfs, WritableFile};

/// The live info log's file name.
pub(crate) const INFO_LOG: &str = "LOG";
/// The prefix of a rotated info log's name (`LOG.old.<microseconds>`).
pub(crate) const INFO_LOG_OLD_PREFIX: &str = "LOG.old.";

/// True for `LOG` and `LOG.old.*`, the files the info log owns.
pub(crate) fn is_info_log(name: &str) -> bool {
    name == INFO_LOG || name.starts_with(INFO_LOG_OLD_PREFIX)
}

/// How large the info log may grow and how many rotated ones are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InfoLogLimits {
    /// Rotate once `LOG` would pass this many bytes (at least one line is
    /// always written); 0: never by size.
    pub max_file_size: u64,
    /// Rotated files kept beside `LOG`; older ones are deleted.
    pub keep_old: usize,
}

/// One database's info log. Every method is safe to call from any thread.
pub(crate) struct InfoLog {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    limits: InfoLogLimits,
    // INVARIANT: `None` once a write, rotation or create failed: the log is
    // off for the rest of this open.
    file: Mutex<Option<Box<dyn WritableFile>>>,
}

impl InfoLog {
    /// Rotates an existing `LOG` away and starts a new one in `dir` (each
    /// open gets a file of its own, as in RocksDB); `names` is the
    /// directory's listing the open already made. `None`, with a warning, if
    /// the file cannot be made: the database works without it.
    pub(crate) fn open(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        limits: InfoLogLimits,
        names: &[String],
    ) -> Option<Arc<InfoLog>> {
        let log = InfoLog { vfs, dir: dir.to_path_buf(), limits, file: Mutex::new(None) };
        match log.start_file(Some(names)) {
            Ok(f) => {
                *log.file.lock() = Some(f);
                Some(Arc::new(log))
            }
            Err(e) => {
                log::warn!(target: "strata::info_log", "{}: no info log for this open: {e}", dir.display());
                None
            }
        }
    }

    /// Moves `LOG` to `LOG.old.<now>`, deletes rotated files past the limit,
    /// and creates a fresh `LOG`. `names`: the directory's listing, if the
    /// caller has one.
    fn start_file(&self, names: Option<&[String]>) -> crate::Result<Box<dyn WritableFile>> {
        let mut names = match names {
            Some(n) => n.to_vec(),
            None => self.vfs.list_dir(&self.dir)?,
        };
        let live = self.dir.join(INFO_LOG);
        if self.vfs.exists(&live) {
            let mut micros = now_micros();
            // Two rotations in one microsecond must not overwrite each other.
            while self.vfs.exists(&self.dir.join(format!("{INFO_LOG_OLD_PREFIX}{micros}"))) {
                micros += 1;
            }
            let old = format!("{INFO_LOG_OLD_PREFIX}{micros}");
            self.vfs.rename(&live, &self.dir.join(&old))?;
            names.push(old);
        }
        self.purge_old(names)?;
        self.vfs.create(&live)
    }

    /// Keeps the newest `keep_old` rotated files of those in `names`.
    fn purge_old(&self, names: Vec<String>) -> crate::Result<()> {
        let mut old: Vec<(u64, String)> = names
            .into_iter()
            .filter_map(|n| Some((n.strip_prefix(INFO_LOG_OLD_PREFIX)?.parse().ok()?, n)))
            .collect();
        old.sort();
        let excess = old.len().saturating_sub(self.limits.keep_old);
        for (_, name) in &old[..excess] {
            self.vfs.remove_file(&self.dir.join(name))?;
        }
        Ok(())
    }

    /// Appends one line: `2026/11/26-12:00:00.123456 [target] message`.
    pub(crate) fn line(&self, target: &str, msg: fmt::Arguments<'_>) {
        let mut text = String::with_capacity(128);
        let _ = writeln!(text, "{} [{target}] {msg}", Timestamp(now_micros()));
        self.append(&text);
    }

    /// Appends one line per item, with one time and one write for them all.
    pub(crate) fn lines<'a>(&self, target: &str, items: impl Iterator<Item = &'a str>) {
        let now = Timestamp(now_micros()).to_string();
        let mut text = String::new();
        for item in items {
            let _ = writeln!(text, "{now} [{target}] {item}");
        }
        self.append(&text);
    }

    fn append(&self, text: &str) {
        let mut file = self.file.lock();
        let Some(f) = file.as_mut() else { return };
        let max = self.limits.max_file_size;
        let result = if max > 0 && !f.is_empty() && f.len() + text.len() as u64 > max {
            f.flush().and_then(|()| self.start_file(None)).and_then(|mut next| {
                next.append(text.as_bytes())?;
                next.flush()?;
                *f = next;
                Ok(())
            })
        } else {
            f.append(text.as_bytes()).and_then(|()| f.flush())
        };
        if let Err(e) = result {
            *file = None;
            log::warn!(target: "strata::info_log", "{}: info log off after a failed write: {e}", self.dir.display());
        }
    }
}

/// Every event goes to the file as one line.
impl EventListener for InfoLog {
    fn on_flush_completed(&self, i: &FlushInfo) {
        self.line(
            "flush",
            format_args!(
                "[{}] {} entries, {} B in tables {:?} to L{}, {} ms ({})",
                i.keyspace,
                i.entries,
                i.bytes_written,
                i.file_numbers,
                i.output_level,
                i.duration.as_millis(),
                i.reason
            ),
        );
    }

    fn on_compaction_completed(&self, i: &CompactionInfo) {
        self.line(
            "compaction",
            format_args!(
                "[{}] {} {} ({}): L{:?} {:?} -> L{} {:?}, read {} B, wrote {} B, {} ms",
                i.keyspace,
                i.policy,
                i.kind,
                i.reason,
                i.input_levels,
                i.input_files,
                i.output_level,
                i.output_files,
                i.bytes_read,
                i.bytes_written,
                i.duration.as_millis()
            ),
        );
    }

    fn on_stall_conditions_changed(&self, i: &StallInfo) {
        let cause = i.cause.map_or(String::new(), |c| format!(": {c}"));
        self.line(
            "stall",
            format_args!(
                "[{}] writes {} (was {}){cause}; {} L0 files, {} immutable memtables",
                i.keyspace, i.current, i.previous, i.l0_files, i.immutable_memtables
            ),
        );
    }

    fn on_policy_changed(&self, i: &PolicyChangeInfo) {
        self.line(
            "policy",
            format_args!("[{}] compaction policy changed from {} to {}", i.keyspace, i.old, i.new),
        );
    }

    fn on_background_error(&self, i: &BackgroundErrorInfo) {
        self.line(
            "error",
            format_args!("[{}] {} failed, writes stopped until reopen: {}", i.keyspace, i.reason, i.error),
        );
    }
}

fn now_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// Microseconds since the epoch, shown as UTC `YYYY/MM/DD-HH:MM:SS.micros`
/// (RocksDB's LOG format).
struct Timestamp(u64);

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0 / 1_000_000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (y, m, d) = civil_from_days(days as i64);
        write!(
            f,
            "{y:04}/{m:02}/{d:02}-{:02}:{:02}:{:02}.{:06}",
            rem / 3600,
            rem / 60 % 60,
            rem % 60,
            self.0 % 1_000_000
        )
    }
}

/// Year, month, day of the `days`th day after 1970-01-01 (proleptic
/// Gregorian; Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemVfs;

    fn read(vfs: &MemVfs, p: &Path) -> String {
        let mut f = vfs.open_sequential(p).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(Timestamp(0).to_string(), "1970/01/01-00:00:00.000000");
        // 2024-02-29 23:59:59.5 UTC, a leap day.
        assert_eq!(Timestamp(1_709_251_199_500_000).to_string(), "2024/02/29-23:59:59.500000");
        assert_eq!(Timestamp(4_102_444_800_000_001).to_string(), "2100/01/01-00:00:00.000001");
    }

    #[test]
    fn each_open_starts_a_file_and_old_ones_are_bounded() {
        let mem = Arc::new(MemVfs::new());
        let vfs: Arc<dyn Vfs> = mem.clone();
        let dir = Path::new("/db");
        vfs.create_dir_all(dir).unwrap();
        let limits = InfoLogLimits { max_file_size: 200, keep_old: 2 };
        for open in 0..4 {
            let log = InfoLog::open(vfs.clone(), dir, limits, &vfs.list_dir(dir).unwrap()).unwrap();
            log.line("test", format_args!("open {open}"));
        }
        let names = vfs.list_dir(dir).unwrap();
        assert_eq!(names.iter().filter(|n| n.starts_with(INFO_LOG_OLD_PREFIX)).count(), 2, "{names:?}");
        assert!(read(&mem, &dir.join(INFO_LOG)).ends_with("[test] open 3\n"));

        // Past max_file_size the file rotates; every file stays bounded.
        let log = InfoLog::open(vfs.clone(), dir, limits, &vfs.list_dir(dir).unwrap()).unwrap();
        for i in 0..20 {
            log.line("test", format_args!("line {i:03} with some words in it"));
        }
        for n in vfs.list_dir(dir).unwrap().into_iter().filter(|n| is_info_log(n)) {
            assert!(vfs.file_size(&dir.join(&n)).unwrap() <= 200, "{n}");
        }
        assert!(read(&mem, &dir.join(INFO_LOG)).contains("line 019"));
    }
}
