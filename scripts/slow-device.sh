#!/usr/bin/env bash
# Runs a command on a "slow device": read IOPS and read bandwidth limits on the
# disk that holds DIR, and a memory limit that bounds the page cache, applied
# with Linux cgroups (v1 blkio + memory, or v2 io.max + memory.max) to the
# command and everything it starts. Any engine runs under the same limits:
# nothing is simulated inside an engine. The files under DIR are written back
# and dropped from the page cache first, so earlier reads cannot hide there.
#
# Usage: scripts/slow-device.sh PROFILE [--dir DIR] [--memory BYTES] -- COMMAND [ARGS...]
#   PROFILE  cloud  3000 read IOPS, 125 MB/s (a cloud volume's common default)
#            hdd     150 read IOPS, 150 MB/s (a 7200 rpm disk)
#            none    no limits (runs COMMAND as it is)
#   --dir    where the database lives (default: $TMPDIR or /tmp)
#   --memory memory limit of the command in bytes, page cache included (default 1 GiB)
# The command sees STRATA_DEVICE_PROFILE (what is in force); strata-bench prints
# it in its header and stores it in results.json. Needs root and cgroups: where
# they cannot be written the script says why and exits 3. The cgroup is
# removed on exit. Writes are not limited (cgroup v1 cannot attribute
# buffered write-back to a process).
set -euo pipefail

die() { echo "slow-device: $*" >&2; exit "${code:-2}"; }
usage="usage: $0 cloud|hdd|none [--dir DIR] [--memory BYTES] -- COMMAND [ARGS...]"

[[ $# -ge 1 ]] || die "$usage"
profile=$1
shift
dir=${TMPDIR:-/tmp}
memory=$((1 << 30))
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --dir | --memory)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      if [[ $1 == --dir ]]; then dir=$2; else memory=$2; fi
      shift 2 ;;
    *) die "unknown option $1; $usage" ;;
  esac
done
[[ ${1:-} == -- ]] || die "$usage"
shift
[[ $# -ge 1 ]] || die "no command given; $usage"
[[ $memory =~ ^[0-9]+$ && $memory -gt 0 ]] || die "--memory must be a positive number of bytes"

case $profile in
  cloud) iops=3000 bps=125000000 ;;
  hdd) iops=150 bps=150000000 ;;
  none) exec "$@" ;;
  *) die "unknown profile '$profile' (known: cloud, hdd, none)" ;;
esac

code=3
[[ -d $dir ]] || die "no directory $dir"
dev=$(stat -c '%Hd:%Ld' "$dir")
[[ ${dev%%:*} != 0 && -e /sys/dev/block/$dev ]] || die "$dir is on device $dev, not a block device (tmpfs or overlay?): nothing to throttle"
# The throttle acts on the whole disk's queue: a partition resolves to its disk.
if [[ -e /sys/dev/block/$dev/partition ]]; then dev=$(cat "/sys/dev/block/$dev/../dev"); fi

name="strata-slow-$$"
made=()
back=()
mount_of() { awk -v c="$1" '$3 == "cgroup" && ("," $4 ",") ~ ("," c ",") { print $2; exit }' /proc/self/mounts; }
own_of() { awk -F: -v c="$1" '("," $2 ",") ~ ("," c ",") { print $3; exit }' /proc/self/cgroup; }
put() { echo "$2" >"$1" 2>/dev/null || die "cannot write '$2' to $1 (run as root on a machine with cgroups)"; }

cleanup() {
  local p d
  for p in "${back[@]}"; do echo $$ >"$p" 2>/dev/null || true; done
  for d in "${made[@]}"; do
    for _ in $(seq 50); do rmdir "$d" 2>/dev/null && break; [[ -d $d ]] || break; sleep 0.02; done
  done
}
child=
on_signal() { [[ -n $child ]] && kill -TERM "$child" 2>/dev/null && wait "$child"; exit 130; }
trap cleanup EXIT
trap on_signal INT TERM

blkio=$(mount_of blkio)
memroot=$(mount_of memory)
if [[ -n $blkio && -n $memroot ]]; then
  version="cgroup v1"
  mkdir "$blkio/$name" 2>/dev/null || die "cannot make cgroup $blkio/$name"
  made+=("$blkio/$name")
  put "$blkio/$name/blkio.throttle.read_iops_device" "$dev $iops"
  put "$blkio/$name/blkio.throttle.read_bps_device" "$dev $bps"
  mkdir "$memroot/$name" 2>/dev/null || die "cannot make cgroup $memroot/$name"
  made+=("$memroot/$name")
  put "$memroot/$name/memory.limit_in_bytes" "$memory"
  back+=("$blkio$(own_of blkio)/cgroup.procs" "$memroot$(own_of memory)/cgroup.procs")
  put "$blkio/$name/cgroup.procs" $$
  put "$memroot/$name/cgroup.procs" $$
else
  root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
  [[ -n $root ]] || die "no cgroup v1 blkio+memory controllers and no cgroup v2 mount: cannot throttle"
  version="cgroup v2"
  put "$root/cgroup.subtree_control" "+io +memory"
  mkdir "$root/$name" 2>/dev/null || die "cannot make cgroup $root/$name"
  made+=("$root/$name")
  put "$root/$name/io.max" "$dev riops=$iops rbps=$bps"
  put "$root/$name/memory.max" "$memory"
  back+=("$root$(awk -F: '$2 == "" { print $3; exit }' /proc/self/cgroup)/cgroup.procs")
  put "$root/$name/cgroup.procs" $$
fi

# Write back and drop DIR's files from the page cache (POSIX_FADV_DONTNEED).
python3 - "$dir" <<'EOF' || die "cannot evict $dir from the page cache"
import os, sys
for base, _, files in os.walk(sys.argv[1]):
    for f in files:
        try:
            fd = os.open(os.path.join(base, f), os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
EOF

export STRATA_DEVICE_PROFILE="$profile (read $iops IOPS, $((bps / 1000000)) MB/s), memory $((memory >> 20)) MiB, device $dev, $version"
echo "slow-device: $STRATA_DEVICE_PROFILE" >&2
code=0
set +e
"$@" &
child=$!
wait "$child"
rc=$?
child=
exit "$rc"
