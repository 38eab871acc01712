#!/usr/bin/env python3
"""Summarizes a dynamic-workload run (strata-bench readwhilewriting with
--writes_stop_after and --idle_compaction; the dLSM paper's Fig. 13): per row,
mean reads/s and block-cache hit ratio while writing, while the engine
compacts after the writes stopped (until the database size stops changing),
and after that, plus the database size before and after.

Usage: scripts/idle-summary.py RUN_DIR WRITES_STOP_AFTER [SKIP]
  RUN_DIR holds samples.csv; SKIP (default 10) seconds of the write phase are
  left out (the cache settling after the unmeasured warm-up).
"""
import csv
import sys
from collections import defaultdict


def main():
    run, stop = sys.argv[1], float(sys.argv[2])
    skip = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
    rows = defaultdict(list)
    with open(f"{run}/samples.csv") as f:
        for r in csv.DictReader(f):
            rows[r["engine"]].append(
                (float(r["t_secs"]), float(r["read_ops_per_sec"]), float(r["hit_ratio"]), int(r["db_bytes"]))
            )
    print("| row | writing: reads/s, hit | compacting (s) | compacting: reads/s, hit, min hit | after: reads/s, hit | size MiB before → after |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, s in rows.items():
        final = s[-1][3]
        # Settled: the first sample after the stop from which the size no longer changes.
        settled = next(
            (t for i, (t, _, _, _) in enumerate(s) if t > stop and all(x[3] == final for x in s[i:])), s[-1][0]
        )
        def mean(xs, k):
            return sum(x[k] for x in xs) / len(xs) if xs else float("nan")
        w = [x for x in s if skip < x[0] <= stop]
        c = [x for x in s if stop < x[0] <= settled]
        a = [x for x in s if x[0] > settled]
        before = max((x[3] for x in w), default=0)
        print(
            f"| {name} | {mean(w, 1):,.0f}, {mean(w, 2):.3f} | {settled - stop:.0f} | "
            f"{mean(c, 1):,.0f}, {mean(c, 2):.3f}, {min((x[2] for x in c), default=float('nan')):.3f} | "
            f"{mean(a, 1):,.0f}, {mean(a, 2):.3f} | {before / 2**20:.0f} → {final / 2**20:.0f} |"
        )


if __name__ == "__main__":
    main()
