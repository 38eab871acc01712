//! Slow-device profiles: read IOPS and read bandwidth limits on the block
//! device that holds the database, plus a memory limit that bounds the page
//! cache, applied to this process with Linux cgroups (v1 `blkio` + `memory`,
//! or v2 `io.max` + `memory.max`). The kernel enforces them below every
//! engine, so Strata, RocksDB and LevelDB run on the same "device" with no
//! engine-specific simulation.
//!
//! A [`Throttle`] moves the whole process (every thread, present and future)
//! into a fresh cgroup and moves it back and removes the cgroup when dropped.
//! Writes are not limited: the profiles model read-bound devices, and cgroup v1
//! cannot attribute buffered write-back to a process anyway.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A named device: the read limits a throttle applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Name used by `--device_profile` and `scripts/slow-device.sh`.
    pub name: &'static str,
    /// Read operations per second.
    pub read_iops: u64,
    /// Read bytes per second.
    pub read_bps: u64,
    /// What it stands for.
    pub about: &'static str,
}

/// The built-in profiles.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "cloud",
        read_iops: 3_000,
        read_bps: 125_000_000,
        about: "a cloud block volume at its common default provisioning",
    },
    Profile { name: "hdd", read_iops: 150, read_bps: 150_000_000, about: "a 7200 rpm hard disk" },
];

/// The profile called `name`; `none` (or empty) means no throttle.
pub fn lookup(name: &str) -> Result<Option<Profile>, String> {
    if name.is_empty() || name == "none" {
        return Ok(None);
    }
    PROFILES.iter().find(|p| p.name == name).copied().map(Some).ok_or_else(|| {
        let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        format!("unknown device profile {name:?} (known: none, {})", names.join(", "))
    })
}

impl Profile {
    /// `cloud (read 3000 IOPS, 125 MB/s)`.
    pub fn describe(&self) -> String {
        format!("{} (read {} IOPS, {} MB/s)", self.name, self.read_iops, self.read_bps / 1_000_000)
    }
}

/// `major:minor` of the whole disk holding `dir` (a partition resolves to its
/// disk: the throttle works on the disk's request queue).
pub fn block_device(dir: &Path) -> Result<(u32, u32), String> {
    let dev = fs::metadata(dir).map_err(|e| format!("cannot stat {}: {e}", dir.display()))?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if major == 0 || !sys.exists() {
        return Err(format!(
            "{} is on device {major}:{minor}, which is not a block device (tmpfs or overlay?): \
             nothing to throttle",
            dir.display()
        ));
    }
    if sys.join("partition").exists() {
        let parent = fs::read_to_string(sys.join("../dev"))
            .map_err(|e| format!("cannot find the disk of partition {major}:{minor}: {e}"))?;
        return parse_dev(parent.trim()).ok_or_else(|| format!("bad device number {parent:?}"));
    }
    Ok((major, minor))
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Which cgroup hierarchy the machine has, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Hierarchy {
    /// v1: the `blkio` and `memory` controllers' mount points.
    V1 { blkio: PathBuf, memory: PathBuf },
    /// v2: the unified mount point.
    V2 { root: PathBuf },
}

fn hierarchy() -> Result<Hierarchy, String> {
    let mounts = fs::read_to_string("/proc/self/mounts").map_err(|e| format!("cannot read mounts: {e}"))?;
    let (mut blkio, mut memory, mut unified) = (None, None, None);
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(point), Some(kind), Some(opts)) = (f.get(1), f.get(2), f.get(3)) else { continue };
        let opts: Vec<&str> = opts.split(',').collect();
        match *kind {
            "cgroup" if opts.contains(&"blkio") => blkio = Some(PathBuf::from(point)),
            "cgroup" if opts.contains(&"memory") => memory = Some(PathBuf::from(point)),
            "cgroup2" => unified = Some(PathBuf::from(point)),
            _ => {}
        }
    }
    match (blkio, memory, unified) {
        (Some(blkio), Some(memory), _) => Ok(Hierarchy::V1 { blkio, memory }),
        (_, _, Some(root)) => Ok(Hierarchy::V2 { root }),
        _ => Err("no cgroup v1 blkio+memory controllers and no cgroup v2 mount: cannot throttle".into()),
    }
}

/// This process's cgroup path (relative) in the v1 controller `name`, or in v2 (`name` empty).
fn own_cgroup(name: &str) -> Result<String, String> {
    let text = fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("cannot read cgroup: {e}"))?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let hit =
            if name.is_empty() { controllers.is_empty() } else { controllers.split(',').any(|c| c == name) };
        if hit {
            return Ok(path.trim_start_matches('/').to_string());
        }
    }
    Err(format!("this process is in no {} cgroup", if name.is_empty() { "v2" } else { name }))
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    fs::write(path, value).map_err(|e| {
        let hint = if e.kind() == io::ErrorKind::PermissionDenied { " (run as root)" } else { "" };
        format!("cannot write {value:?} to {}: {e}{hint}", path.display())
    })
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// The process inside a throttled cgroup; dropping it moves the process back
/// and removes the cgroup.
#[derive(Debug)]
pub struct Throttle {
    /// Cgroup directories made for this throttle.
    made: Vec<PathBuf>,
    /// `cgroup.procs` files of the cgroups the process came from.
    back: Vec<PathBuf>,
    description: String,
}

impl Throttle {
    /// Makes a cgroup limiting reads from the disk holding `dir` to the
    /// profile and memory to `memory` bytes (new charges only: on v1, memory
    /// already charged stays where it was), evicts `dir`'s files from the page
    /// cache so earlier reads cannot be served from it, and moves this process
    /// in. With `enter_process` false the cgroup is only made (a probe).
    pub fn enter(
        profile: &Profile,
        dir: &Path,
        memory: u64,
        enter_process: bool,
    ) -> Result<Throttle, String> {
        let (major, minor) = block_device(dir)?;
        let name = format!("strata-slow-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let mut t = Throttle { made: Vec::new(), back: Vec::new(), description: String::new() };
        let pid = std::process::id().to_string();
        let version = match hierarchy()? {
            Hierarchy::V1 { blkio, memory: mem_root } => {
                let b = blkio.join(&name);
                fs::create_dir(&b).map_err(|e| format!("cannot make cgroup {}: {e}", b.display()))?;
                t.made.push(b.clone());
                write(
                    &b.join("blkio.throttle.read_iops_device"),
                    &format!("{major}:{minor} {}", profile.read_iops),
                )?;
                write(
                    &b.join("blkio.throttle.read_bps_device"),
                    &format!("{major}:{minor} {}", profile.read_bps),
                )?;
                let m = mem_root.join(&name);
                fs::create_dir(&m).map_err(|e| format!("cannot make cgroup {}: {e}", m.display()))?;
                t.made.push(m.clone());
                write(&m.join("memory.limit_in_bytes"), &memory.to_string())?;
                if enter_process {
                    t.back.push(blkio.join(own_cgroup("blkio")?).join("cgroup.procs"));
                    t.back.push(mem_root.join(own_cgroup("memory")?).join("cgroup.procs"));
                    write(&b.join("cgroup.procs"), &pid)?;
                    write(&m.join("cgroup.procs"), &pid)?;
                }
                "cgroup v1"
            }
            Hierarchy::V2 { root } => {
                // Controllers must be enabled in the parent; the root cgroup is
                // exempt from the no-internal-processes rule, so the new cgroup
                // goes directly under it.
                write(&root.join("cgroup.subtree_control"), "+io +memory")?;
                let c = root.join(&name);
                fs::create_dir(&c).map_err(|e| format!("cannot make cgroup {}: {e}", c.display()))?;
                t.made.push(c.clone());
                let max = format!("{major}:{minor} riops={} rbps={}", profile.read_iops, profile.read_bps);
                write(&c.join("io.max"), &max)?;
                write(&c.join("memory.max"), &memory.to_string())?;
                if enter_process {
                    t.back.push(root.join(own_cgroup("")?).join("cgroup.procs"));
                    write(&c.join("cgroup.procs"), &pid)?;
                }
                "cgroup v2"
            }
        };
        if enter_process {
            evict_page_cache(dir)
                .map_err(|e| format!("cannot evict {} from the page cache: {e}", dir.display()))?;
        }
        t.description =
            format!("{}, memory {} MiB, device {major}:{minor}, {version}", profile.describe(), memory >> 20);
        Ok(t)
    }

    /// What is in force, for headers and results.
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let pid = std::process::id().to_string();
        for procs in &self.back {
            let _ = fs::write(procs, &pid);
        }
        for dir in self.made.iter().rev() {
            // The kernel may take a moment to notice the cgroup is empty.
            for _ in 0..50 {
                if fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// Whether a throttle can be made for `dir` here: `Err` says why not.
pub fn probe(dir: &Path) -> Result<(), String> {
    Throttle::enter(&PROFILES[0], dir, 1 << 30, false).map(drop)
}

/// Writes back and drops every file under `dir` from the page cache
/// (`POSIX_FADV_DONTNEED`). Returns the number of files.
pub fn evict_page_cache(dir: &Path) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    // A running engine creates and deletes files meanwhile: what is gone is skipped.
    let gone = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
    while let Some(d) = stack.pop() {
        let entries = match fs::read_dir(&d) {
            Err(e) if gone(&e) => continue,
            other => other?,
        };
        for entry in entries {
            let path = entry?.path();
            let meta = match fs::symlink_metadata(&path) {
                Err(e) if gone(&e) => continue,
                other => other?,
            };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let Ok(f) = fs::File::open(&path) else { continue }; // removed meanwhile
                f.sync_data()?;
                // SAFETY: a valid open descriptor; the call only gives advice.
                let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
                if rc != 0 {
                    return Err(io::Error::from_raw_os_error(rc));
                }
                n += 1;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn profiles_by_name() {
        assert_eq!(lookup("none").unwrap(), None);
        assert_eq!(lookup("").unwrap(), None);
        let cloud = lookup("cloud").unwrap().unwrap();
        assert_eq!((cloud.read_iops, cloud.read_bps), (3_000, 125_000_000));
        assert_eq!(lookup("hdd").unwrap().unwrap().read_iops, 150);
        let e = lookup("floppy").unwrap_err();
        assert!(e.contains("floppy") && e.contains("cloud") && e.contains("hdd"), "{e}");
        assert_eq!(parse_dev("8:16"), Some((8, 16)));
        assert_eq!(parse_dev("8"), None);
    }

    #[test]
    fn a_directory_not_on_a_block_device_is_refused() {
        // /proc is never on a block device.
        let e = block_device(Path::new("/proc")).unwrap_err();
        assert!(e.contains("not a block device"), "{e}");
    }

    /// Regression (a throttled step failed with "No such file or directory"
    /// when a compaction deleted a table while the page cache was evicted).
    #[test]
    fn eviction_tolerates_files_removed_meanwhile() {
        let d = tempfile::tempdir().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let (dir, stop) = (d.path().to_path_buf(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let p = dir.join(format!("f{}", i % 64));
                    let _ = fs::write(&p, b"x");
                    let _ = fs::remove_file(dir.join(format!("f{}", (i + 32) % 64)));
                    i += 1;
                }
            })
        };
        for _ in 0..200 {
            evict_page_cache(d.path()).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        churn.join().unwrap();
    }

    #[test]
    fn eviction_walks_the_tree() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        fs::write(d.path().join("a"), b"x").unwrap();
        fs::write(d.path().join("sub/b"), b"y").unwrap();
        assert_eq!(evict_page_cache(d.path()).unwrap(), 2);
    }

    /// Where cgroups can be written (root on a cgroup machine), a throttle
    /// really limits reads: 150 direct 4 KiB reads at 150 IOPS take about a second
    /// (the kernel lets a first slice through at once, so the bound is looser).
    /// Elsewhere it says why it cannot and the test checks the message.
    #[test]
    fn a_throttle_limits_reads_or_says_why_not() {
        let d = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        if let Err(why) = probe(d.path()) {
            eprintln!("skipped: cannot throttle here: {why}");
            assert!(!why.is_empty());
            return;
        }
        let path = d.path().join("f");
        fs::write(&path, vec![7u8; 4 << 20]).unwrap();
        let hdd = lookup("hdd").unwrap().unwrap();
        let t = Throttle::enter(&hdd, d.path(), 1 << 30, true).unwrap();
        assert!(t.description().contains("150 IOPS"), "{}", t.description());
        let elapsed = timed_direct_reads(&path, 150);
        drop(t);
        assert!(elapsed >= std::time::Duration::from_millis(600), "150 reads at 150 IOPS took {elapsed:?}");
        let free = timed_direct_reads(&path, 150);
        assert!(free < elapsed, "unthrottled {free:?} vs throttled {elapsed:?}");
    }

    fn timed_direct_reads(path: &Path, n: u64) -> std::time::Duration {
        use std::os::unix::fs::{FileExt, OpenOptionsExt};
        let f = fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path).unwrap();
        let layout = std::alloc::Layout::from_size_align(4096, 4096).unwrap();
        // SAFETY: the layout has a non-zero size; freed below.
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null());
        // SAFETY: ptr is a live 4096-byte allocation.
        let buf = unsafe { std::slice::from_raw_parts_mut(ptr, 4096) };
        let start = std::time::Instant::now();
        for i in 0..n {
            f.read_exact_at(buf, (i * 7 % 1024) * 4096).unwrap();
        }
        let elapsed = start.elapsed();
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(ptr, layout) };
        elapsed
    }
}
