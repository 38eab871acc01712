#!/usr/bin/env python3
"""Summarizes scripts/lsbm-experiment.sh output: one Markdown table per workload
with read throughput, the per-second hit ratio (mean, 10th percentile and
minimum after a warm-up), database size and the ratios the LSbM issue targets.
Also reads scripts/lsbm-slow-device.sh output (one rangehot-PROFILE directory per device profile).
Usage: scripts/lsbm-summary.py OUT_DIR [WARMUP_SECS]"""
import csv
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
warm = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0


def rows(path):
    return list(csv.DictReader(open(path))) if path.exists() else []


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


known = ["rangehot", "zipfian", "range", "readonly"]
others = sorted(d.name for d in out.iterdir() if (d / "results.csv").exists() and d.name not in known)
for wl in known + others:
    samples = rows(out / wl / "samples.csv")
    results = rows(out / wl / "results.csv")
    if not results:
        continue
    print(f"\n### {wl}\n")
    print("| system | ops/s | vs leveled | writes/s | hit ratio mean | p10 | min | p99 µs | db size MiB "
          "| buffer MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    # A load directory holds two benchmarks (the fill and waitforcompaction): only the first
    # is a throughput, and ratios compare rows of the same benchmark.
    first = results[0]["benchmark"]
    results = [r for r in results if r["benchmark"] == first]
    base = None
    for r in results:
        if r["engine"] == "strata/leveled":
            base = float(r["ops_per_sec"])
    for r in results:
        e = r["engine"]
        s = [x for x in samples if x["engine"] == e and float(x["t_secs"]) > warm]
        hr = [float(x["hit_ratio"]) for x in s if x["hit_ratio"]]
        w = statistics.mean(float(x["write_ops_per_sec"]) for x in s) if s else float("nan")
        ops = float(r["ops_per_sec"])
        ratio = f"{ops / base:.2f}×" if base else "-"
        size = float(r["db_bytes"]) / 2**20 if r["db_bytes"] else float("nan")
        mean = statistics.mean(hr) if hr else float("nan")
        # The space the buffers add (their files no run lists); empty before the column existed.
        buf = r.get("buffer_bytes") or ""
        buf = f"{float(buf) / 2**20:,.0f}" if buf else "-"
        print(f"| {e} | {ops:,.0f} | {ratio} | {w:,.0f} | {mean:.3f} | {pct(hr, 0.1):.3f} | "
              f"{min(hr) if hr else float('nan'):.3f} | {float(r['p99_us']):.0f} | {size:,.0f} | {buf} |")
