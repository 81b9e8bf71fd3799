#!/usr/bin/env python3
"""Overhead of iodiag's block tracing, measured, printed, never asserted.

fio 4 KiB random reads, io_uring, O_DIRECT, queue depth 32, on a loop device
over a file in /dev/shm (fast, so tracing cost shows). Rounds alternate three
modes so drift on a shared machine hits them alike:
  none      no tracing
  iodiag    `iodiag slow` (the block_bpf programs, exemplar threshold = p99 of
            the previous second, output to /dev/null)
  bpftrace  seed 001's block breakdown script (tests/bench/seed001_block_breakdown.bt)
Prints IOPS per round, the ratio to the same round's baseline, and with
kernel.bpf_stats_enabled=1 each BPF program's run_time_ns / run_cnt and the
sum per I/O (total program time / run count of the busiest program, one run per
I/O). The per-event figure is the stable one on a noisy 2-core machine.

usage: sudo tests/bench/block_overhead.py [--iodiag PATH] [--rounds 3] [--runtime 10]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import hold_machine_lock, sh, hold_bpf_stats, prog_stats  # noqa: E402


HERE = os.path.dirname(os.path.abspath(__file__))


def fio(dev, runtime):
    out = sh(
        f"fio --name=bench --filename={dev} --rw=randread --bs=4k --ioengine=io_uring "
        f"--direct=1 --iodepth=32 --runtime={runtime} --time_based --group_reporting "
        f"--output-format=json"
    )
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return job["iops"], job["total_ios"]


def start_tracer(mode, iodiag):
    if mode == "iodiag":
        p = subprocess.Popen([iodiag, "slow", "--format", "json"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(2)
    else:
        p = subprocess.Popen(["bpftrace", os.path.join(HERE, "seed001_block_breakdown.bt")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(4)   # bpftrace compiles with LLVM first
    if p.poll() is not None:
        sys.exit(f"{mode} exited early with {p.returncode}")
    return p


def main():
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)
    ap = argparse.ArgumentParser()
    ap.add_argument("--iodiag", default=os.path.join(HERE, "../../build/iodiag"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (BPF, losetup)")

    img = tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iodiag-bench-", delete=False)
    img.truncate(512 << 20)
    img.close()
    dev = sh(f"losetup -f --show {img.name}").strip()
    old_stats = sh("sysctl -n kernel.bpf_stats_enabled").strip()
    sh("sysctl -qw kernel.bpf_stats_enabled=1")
    stats_fd = hold_bpf_stats()
    if stats_fd < 0:
        print("note: BPF_ENABLE_STATS failed; relying on the sysctl alone")
    rows = []
    try:
        for r in range(a.rounds):
            base = None
            for mode in ("none", "iodiag", "bpftrace"):
                p = None if mode == "none" else start_tracer(mode, a.iodiag)
                iops, ios = fio(dev, a.runtime)
                progs = prog_stats(p.pid) if p else []
                if p:
                    p.terminate()
                    p.wait()
                if mode == "none":
                    base = iops
                rows.append((r + 1, mode, iops, iops / base, ios, progs))
                print(f"round {r + 1} {mode:9s} IOPS {iops:10.0f}  ratio {iops / base:6.3f}", flush=True)
    finally:
        sh(f"sysctl -qw kernel.bpf_stats_enabled={old_stats}")
        if stats_fd >= 0:
            os.close(stats_fd)
        sh(f"losetup -d {dev}")
        os.unlink(img.name)

    print("\nIOPS ratio vs the same round's no-tracing baseline (mean of rounds):")
    for mode in ("iodiag", "bpftrace"):
        ratios = [x[3] for x in rows if x[1] == mode]
        print(f"  {mode:9s} {sum(ratios) / len(ratios):6.3f}  (loss {100 * (1 - sum(ratios) / len(ratios)):5.1f} %)"
              f"  rounds: {' '.join(f'{v:.3f}' for v in ratios)}")
    print("\nBPF cost (kernel.bpf_stats_enabled=1), per program and per I/O:")
    for mode in ("iodiag", "bpftrace"):
        per_io = []
        for (_, m, _, _, _, progs) in rows:
            if m != mode or not progs:
                continue
            busiest = max(p.get("run_cnt", 0) for p in progs)
            total = sum(p.get("run_time_ns", 0) for p in progs)
            if busiest:
                per_io.append(total / busiest)
        last = [x for x in rows if x[1] == mode][-1][5]
        print(f"  {mode}:")
        for p in sorted(last, key=lambda p: p.get("name", "")):
            cnt = p.get("run_cnt", 0)
            if cnt:
                print(f"    {p.get('name', '?'):18s} {p['run_time_ns'] / cnt:8.0f} ns/run  runs {cnt}")
        if per_io:
            print(f"    per I/O: {sum(per_io) / len(per_io):.0f} ns  (rounds: {' '.join(f'{v:.0f}' for v in per_io)})")


if __name__ == "__main__":
    main()
