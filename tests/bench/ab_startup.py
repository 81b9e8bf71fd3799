#!/usr/bin/env python3
"""`iodiag --duration 1` in two builds, alternating runs: wall and CPU time.

The start-up cost (BPF loads, attaches, the finishes' detaches, analysis)
moves by tens of ms between two changes, less than this shared machine's
drift between two benchmark runs; alternating runs (A B, B A, ...) put the
drift on both builds alike. Prints per build the median wall and CPU seconds
of a whole run (the 1 s window included) and their min-max. Idle machine
(no workload); the machine lock is held so that no test or benchmark runs
beside it.

With --start-phase it times only the start instead: from exec to the
"window starts" line of `-v` (the collectors' starts, run in parallel on
this machine's two cores), which a whole run's wall time measures with
~±15 ms of noise around a change of a few ms. Both builds log alike.

usage: sudo tests/bench/ab_startup.py BUILD_A BUILD_B [--runs 7] [--start-phase]
(BUILD_x: a build folder with iodiag; ~3 s per run)
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_support import hold_machine_lock, one_run, require_root_and_builds  # noqa: E402


def start_phase_ms(build):
    """ms from exec to the "window starts" debug line (its own timestamp)."""
    t0 = time.time()
    p = subprocess.run([f"{build}/iodiag", "--duration", "1", "-v"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=False)
    for line in p.stderr.splitlines():
        m = re.match(r"\[(\d+-\d+-\d+ \d+:\d+:\d+\.\d+)\].*window starts", line)
        if m:
            at = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            return (at - t0) * 1000
    sys.exit(f"{build}/iodiag -v printed no 'window starts' line (exit {p.returncode})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs=2, help="two build folders")
    ap.add_argument("--runs", type=int, default=7, help="runs per build")
    ap.add_argument("--start-phase", action="store_true",
                    help="time exec -> window start (from -v) instead of whole runs")
    a = ap.parse_args()
    require_root_and_builds(a.builds, "iodiag", "BPF")
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)
    res = {b: [] for b in a.builds}
    with open("/proc/loadavg") as f:
        load0 = " ".join(f.read().split()[:3])
    for r in range(a.runs):
        for b in (a.builds if r % 2 == 0 else a.builds[::-1]):
            res[b].append(start_phase_ms(b) if a.start_phase else one_run(b))
    with open("/proc/loadavg") as f:
        load1 = " ".join(f.read().split()[:3])
    print(f"load average {load0} at the start, {load1} at the end; {a.runs} runs per build, alternating")
    if a.start_phase:
        for b in a.builds:
            v = res[b]
            print(f"{b}: exec -> window start median {statistics.median(v):.1f} ms ({min(v):.1f}-{max(v):.1f})")
        return
    for b in a.builds:
        walls = [w for w, _ in res[b]]
        cpus = [c for _, c in res[b]]
        print(f"{b}: wall median {statistics.median(walls):.3f} s ({min(walls):.3f}-{max(walls):.3f}), "
              f"CPU median {statistics.median(cpus):.3f} s ({min(cpus):.3f}-{max(cpus):.3f})")


if __name__ == "__main__":
    main()
