//! `scripts/slow-device.sh`: refuses bad use with a clear message, and where
//! cgroups can be written (root on a cgroup machine) really limits a command's
//! reads, tells it what is in force and removes its cgroup afterwards. Where
//! they cannot be written, the script exits 3 and this test prints why.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slow-device.sh")
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("bash").arg(script()).args(args).output().expect("run bash");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn bad_use_is_refused() {
    let (rc, _, err) = run(&["floppy", "--", "true"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("unknown profile 'floppy'") && err.contains("cloud, hdd"), "{err}");
    let (rc, _, err) = run(&["hdd", "--dir"]);
    assert_eq!(rc, 2, "{err}");
    let (rc, _, err) = run(&["hdd", "--"]);
    assert!(rc == 2 && err.contains("no command"), "{rc} {err}");
    let (rc, _, err) = run(&["hdd", "--memory", "lots", "--", "true"]);
    assert!(rc == 2 && err.contains("--memory"), "{rc} {err}");
    // `none` runs the command as it is, exit status included.
    let (rc, out, _) = run(&["none", "--", "sh", "-c", "echo hi; exit 5"]);
    assert_eq!((rc, out.as_str()), (5, "hi\n"));
}

#[test]
fn hdd_limits_reads_and_cleans_up() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).expect("tempdir");
    let file = dir.path().join("data");
    std::fs::write(&file, vec![1u8; 4 << 20]).expect("write");
    let d = dir.path().to_str().expect("utf-8 path");
    let dd = format!("if={}", file.display());
    let start = Instant::now();
    let (rc, out, err) = run(&[
        "hdd",
        "--dir",
        d,
        "--",
        "sh",
        "-c",
        &format!(
            "echo \"$STRATA_DEVICE_PROFILE\"; cut -d: -f3 /proc/self/cgroup; \
             dd {dd} of=/dev/null bs=4k count=150 iflag=direct 2>/dev/null"
        ),
    ]);
    let elapsed = start.elapsed();
    if rc == 3 {
        eprintln!("skipped: the script cannot throttle here: {err}");
        assert!(err.contains("slow-device:"), "{err}");
        return;
    }
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("hdd (read 150 IOPS, 150 MB/s)"), "{out}");
    // 150 direct reads at 150 IOPS: about a second (the kernel passes a first slice at once).
    assert!(elapsed >= Duration::from_millis(600), "150 reads took {elapsed:?}");
    // The command ran in the script's cgroup, which is gone now.
    let cgroup =
        out.lines().find(|l| l.contains("strata-slow-")).expect("the command ran in a strata-slow cgroup");
    let name = cgroup.trim_start_matches('/');
    for root in ["/sys/fs/cgroup/blkio", "/sys/fs/cgroup/memory", "/sys/fs/cgroup"] {
        let left = PathBuf::from(root).join(name);
        assert!(!left.exists(), "{} was not removed", left.display());
    }
}
