#!/usr/bin/env python3
"""What the per-interval series drain adds per I/O to the block collector,
measured side by side, printed, never asserted (budget: < 50 ns per I/O).

The block collector keeps cumulative per-CPU aggregates in the kernel whether
or not series are recorded; the series come from user space reading them once
per interval (sample()) and taking differences at the end (finish()). So the
same collector runs in alternating modes, on the same fio load, in each round:
  no-series   --interval 0: no sample() at all (the window figures only, as
              the collector worked before the series)
  series-1s   --interval 1 (iodiag's default)
  series-0.1s --interval 0.1: ten times the drains, so their cost stands out
              of the noise of a shared machine (it scales with drains, not I/Os)
The load: fio 4 KiB random reads, io_uring, O_DIRECT, queue depth 32, on a
loop device over a file in /dev/shm (fast, so any per-I/O cost shows).

Per mode it prints, per I/O (fio's I/O count of that round):
  bpf      the collector's BPF programs' run time (kernel.bpf_stats_enabled)
  drain    CPU time of the driver's sample() and finish() calls, timed in
           the driver (tests/bench/collector_driver.cpp, thread CPU clock)
  (and the CPU time of one sample() call, which does not depend on the I/O rate:
  at a lower rate the same drain is a larger cost per I/O)
  process  the driver process's whole user+system CPU time (/proc/PID/stat),
           polling thread included
and what each series mode adds over no-series: the drain directly, and
bpf+process as a cross-check (noisier: it includes the ring buffer polling).

usage: sudo tests/bench/series_drain_overhead.py [--driver PATH] [--rounds 3] [--runtime 10]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import hold_machine_lock, sh, hold_bpf_stats, prog_stats, stop_process  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = (("no-series", 0), ("series-1s", 1), ("series-0.1s", 0.1))
BUDGET_NS = 50


def fio(dev, runtime):
    out = sh(
        f"fio --name=bench --filename={dev} --rw=randread --bs=4k --ioengine=io_uring "
        f"--direct=1 --iodepth=32 --runtime={runtime} --time_based --group_reporting "
        f"--output-format=json"
    )
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return job["iops"], job["total_ios"]


def process_cpu_ns(pid):
    """utime + stime of a process, all its threads, in ns."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf("SC_CLK_TCK")


def run_mode(driver, dev_name, interval, runtime, dev):
    log = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([driver, "--collector", "block_bpf", "--device", dev_name, "--interval", str(interval)],
                         stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            log.seek(0)
            text = log.read()
            if "ready" in text:
                break
            if p.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"the collector driver did not start: {text}")
            time.sleep(0.1)
        if "block_bpf: available" not in text:
            sys.exit(f"block_bpf is not available here: {text}")
        cpu0 = process_cpu_ns(p.pid)
        base = {x["id"]: x for x in prog_stats(p.pid)}
        iops, ios = fio(dev, runtime)
        progs = prog_stats(p.pid)
        cpu1 = process_cpu_ns(p.pid)
    finally:
        stop_process(p)
    log.seek(0)
    text = log.read()
    m = re.search(r"samples (\d+) sample_cpu_ns (\d+) finish_cpu_ns (\d+)", text)
    if not m:
        sys.exit(f"the collector driver printed no drain timing: {text}")
    bpf_ns = sum(x.get("run_time_ns", 0) - base.get(x["id"], {}).get("run_time_ns", 0) for x in progs)
    return {"iops": iops, "ios": ios, "bpf": bpf_ns / ios, "process": (cpu1 - cpu0) / ios,
            "drain": (int(m.group(2)) + int(m.group(3))) / ios, "samples": int(m.group(1)),
            "per_sample_us": int(m.group(2)) / int(m.group(1)) / 1e3 if int(m.group(1)) else 0.0}


def mean(v):
    return sum(v) / len(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--driver", default=os.path.join(HERE, "../../build/iodiag_bench_collectors"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (BPF, losetup)")
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)

    img = tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iodiag-bench-", delete=False)
    img.truncate(512 << 20)
    img.close()
    dev = None
    old_stats = None
    stats_fd = -1
    rows = []
    try:
        dev = sh(f"losetup -f --show {img.name}").strip()
        old_stats = sh("sysctl -n kernel.bpf_stats_enabled").strip()
        sh("sysctl -qw kernel.bpf_stats_enabled=1")
        stats_fd = hold_bpf_stats()
        for r in range(a.rounds):
            for name, interval in MODES:
                x = run_mode(a.driver, os.path.basename(dev), interval, a.runtime, dev)
                rows.append((name, x))
                print(f"round {r + 1} {name:11s} IOPS {x['iops']:9.0f}  per I/O: bpf {x['bpf']:6.0f} ns  "
                      f"drain {x['drain']:6.2f} ns ({x['samples']} samples, {x['per_sample_us']:.0f} us each)  process {x['process']:6.0f} ns",
                      flush=True)
    finally:
        if old_stats is not None:
            sh(f"sysctl -qw kernel.bpf_stats_enabled={old_stats}")
        if stats_fd >= 0:
            os.close(stats_fd)
        if dev:
            sh(f"losetup -d {dev}")
        os.unlink(img.name)

    print("\nmeans over the rounds, per I/O:")
    means = {}
    for name, _ in MODES:
        xs = [x for n, x in rows if n == name]
        means[name] = {k: mean([x[k] for x in xs]) for k in ("iops", "bpf", "drain", "process", "per_sample_us")}
        m = means[name]
        print(f"  {name:11s} IOPS {m['iops']:9.0f}  bpf {m['bpf']:6.0f} ns  drain {m['drain']:6.2f} ns  "
              f"process {m['process']:6.0f} ns" + (f"  (one sample() {m['per_sample_us']:.0f} us of CPU)" if m["per_sample_us"] else ""))
    base = means["no-series"]
    print(f"\nadded over no-series (budget {BUDGET_NS} ns per I/O):")
    for name, _ in MODES[1:]:
        m = means[name]
        drain = m["drain"] - base["drain"]
        total = (m["bpf"] + m["process"]) - (base["bpf"] + base["process"])
        print(f"  {name:11s} drain {drain:6.2f} ns per I/O ({'within' if drain < BUDGET_NS else 'OVER'} budget); "
              f"bpf+process {total:+7.1f} ns (cross-check, includes round-to-round noise)")


if __name__ == "__main__":
    main()
