#!/usr/bin/env python3
"""Idle cost of `iodiag watch`: share of one CPU and resident memory while
nothing triggers a capture.

  tests/bench/watch_idle.py [--seconds 600] [--iodiag build/iodiag] [--max-cpu-pct P]

Starts `iodiag watch` with its default triggers and sampling (captures into a
temporary directory), lets it settle for a few seconds (loading the rules and
the device references is start-up, not idle cost), then reads its CPU time
(utime + stime in /proc/PID/stat) and resident set (VmRSS, VmHWM in
/proc/PID/status) over the run. Prints one JSON object. Holds the machine
lock, so no live test or lab fault runs meanwhile; a capture during the run
means the machine was not idle: reported, and the run fails.
--max-cpu-pct makes it a test (ctest runs a 20 s version with 1 % and
--no-captures); without it, it only measures. docs/operations.md states the figure of a 10-minute run.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import hold_machine_lock, stop_process  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS   # utime, stime (fields 14, 15)


def memory_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--settle", type=float, default=3)
    ap.add_argument("--iodiag", default=os.path.join(here, "..", "..", "build", "iodiag"))
    ap.add_argument("--max-cpu-pct", type=float)
    ap.add_argument("--no-captures", action="store_true",
                    help="set the triggers where they cannot hold (sampling and evaluation cost the same at any "
                         "threshold): for a short run on a machine that others load")
    args = ap.parse_args()
    if not os.path.exists("/proc/pressure/io"):
        print("SKIP: needs PSI (/proc/pressure/io) for watch's trigger")
        return 77
    try:
        lock = hold_machine_lock()
    except OSError as e:
        lock = None
        print(f"note: machine lock not taken ({e}); other runs may disturb the figures", file=sys.stderr)
    work = tempfile.mkdtemp(prefix="iodiag-watch-idle-")
    proc = None
    try:
        log = open(os.path.join(work, "watch.log"), "w")
        argv = [os.path.abspath(args.iodiag), "watch", "--dir", os.path.join(work, "captures")]
        if args.no_captures:
            argv += ["--psi-some", "100", "--psi-for", "3600", "--await-factor", "1000000"]
        proc = subprocess.Popen(argv, stdout=log, stderr=log)
        time.sleep(args.settle)
        if proc.poll() is not None:
            print(open(log.name).read(), file=sys.stderr)
            return 1
        startup_cpu = cpu_seconds(proc.pid)
        t0, c0 = time.monotonic(), startup_cpu
        rss = []
        step = min(10.0, max(1.0, args.seconds / 20))
        while time.monotonic() - t0 < args.seconds:
            time.sleep(min(step, args.seconds - (time.monotonic() - t0)))
            rss.append(memory_kib(proc.pid)["VmRSS"])
        wall = time.monotonic() - t0
        cpu = cpu_seconds(proc.pid) - c0
        mem = memory_kib(proc.pid)
        captures = len(glob.glob(os.path.join(work, "captures", "watch-*.bundle.json")))
        result = {
            "seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 3),
            "cpu_pct_of_one_cpu": round(100 * cpu / wall, 4),
            "startup_cpu_seconds": round(startup_cpu, 3),
            "rss_kib_end": mem["VmRSS"],
            "rss_kib_max": max(rss) if rss else mem["VmRSS"],
            "rss_kib_peak_incl_startup": mem["VmHWM"],
            "captures": captures,
            "clock_ticks_per_s": TICKS,
        }
        print(json.dumps(result, indent=1))
        if captures:
            print(f"not idle: {captures} capture(s) during the run (a trigger held); figures include them",
                  file=sys.stderr)
            return 1
        if args.max_cpu_pct is not None and result["cpu_pct_of_one_cpu"] >= args.max_cpu_pct:
            print(f"idle cost {result['cpu_pct_of_one_cpu']} % of a CPU >= {args.max_cpu_pct} %", file=sys.stderr)
            return 1
        return 0
    finally:
        if proc:
            stop_process(proc)
        shutil.rmtree(work, ignore_errors=True)
        if lock:
            lock.close()


if __name__ == "__main__":
    sys.exit(main())
