#!/usr/bin/env python3
"""Overhead of iodiag on a buffered workload, measured, printed, never asserted.

fio small (4 KiB) random pread/pwrite, psync, invalidate=0, on a file that stays in the page
cache (ext4 on a loop device over /dev/shm, file much smaller than memory), so
every syscall is cheap and tracing cost shows. Rounds alternate two modes so
drift on a shared machine hits both alike:
  none     no tracing
  iodiag   `iodiag diagnose` with every collector on (window longer than fio's run)
Prints ops/s per round and the ratio to the same round's baseline (budget: loss
<= 3 %), and with kernel.bpf_stats_enabled=1 each of iodiag's BPF programs'
run_time_ns / run_cnt and the summed BPF time per fio operation (DESIGN §6:
whole iodiag on a buffered workload <= 1,000 ns per I/O). The per-operation
figure counts every event the programs saw, including other processes' on
this machine, so it is an upper bound for fio's own I/O.

usage: sudo tests/bench/syscall_buffered_overhead.py [--iodiag PATH] [--rounds 3] [--runtime 10]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import hold_machine_lock, sh, prog_stats  # noqa: E402


def fio(path, runtime):
    out = sh(
        f"fio --name=buffered --filename={path} --size=64M --rw=randrw --rwmixread=70 --bs=4k "
        f"--ioengine=psync --invalidate=0 --runtime={runtime} --time_based --group_reporting --output-format=json"
    )
    job = json.loads(out[out.index("{"):])["jobs"][0]
    ops = job["read"]["total_ios"] + job["write"]["total_ios"]
    return ops / runtime, ops


def main():
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--iodiag", default=os.path.join(here, "../../build/iodiag"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (BPF, losetup, mount)")

    img = tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iodiag-bench-", delete=False)
    img.truncate(256 << 20)
    img.close()
    dev = sh(f"losetup -f --show {img.name}").strip()
    mnt = tempfile.mkdtemp(prefix="iodiag-bench-mnt-")
    old_stats = sh("sysctl -n kernel.bpf_stats_enabled").strip()
    rows = []
    try:
        sh(f"mkfs.ext4 -qF {dev} && mount {dev} {mnt}")
        path = os.path.join(mnt, "cached.dat")
        fio(path, 2)   # lay the file out and warm the cache
        sh("sysctl -qw kernel.bpf_stats_enabled=1")
        for r in range(a.rounds):
            base = None
            for mode in ("none", "iodiag"):
                p = None
                if mode == "iodiag":
                    p = subprocess.Popen([a.iodiag, "--duration", str(a.runtime + 30), "--format", "json"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(3)   # collectors attach
                    if p.poll() is not None:
                        sys.exit(f"iodiag exited early with {p.returncode}")
                before = {x["id"]: x for x in prog_stats(p.pid)} if p else {}
                ops_s, ops = fio(path, a.runtime)
                progs = []
                if p:
                    for x in prog_stats(p.pid):
                        b = before.get(x["id"], {})
                        x["run_time_ns"] = x.get("run_time_ns", 0) - b.get("run_time_ns", 0)
                        x["run_cnt"] = x.get("run_cnt", 0) - b.get("run_cnt", 0)
                        progs.append(x)
                    p.terminate()
                    p.wait()
                if mode == "none":
                    base = ops_s
                rows.append((r + 1, mode, ops_s, ops_s / base, ops, progs))
                print(f"round {r + 1} {mode:7s} ops/s {ops_s:10.0f}  ratio {ops_s / base:6.3f}", flush=True)
    finally:
        sh(f"sysctl -qw kernel.bpf_stats_enabled={old_stats}")
        subprocess.run(f"umount {mnt}", shell=True)
        os.rmdir(mnt)
        sh(f"losetup -d {dev}")
        os.unlink(img.name)

    ratios = [x[3] for x in rows if x[1] == "iodiag"]
    mean = sum(ratios) / len(ratios)
    print(f"\nops/s ratio iodiag vs none (mean of rounds): {mean:.3f} (loss {100 * (1 - mean):.1f} %, budget 3 %)"
          f"  rounds: {' '.join(f'{v:.3f}' for v in ratios)}")
    print("\nBPF cost (kernel.bpf_stats_enabled=1) during fio, per program and per fio operation:")
    per_op = []
    for (_, m, _, _, ops, progs) in rows:
        if m == "iodiag" and progs and ops:
            per_op.append(sum(p["run_time_ns"] for p in progs) / ops)
    last = [x for x in rows if x[1] == "iodiag"][-1]
    for p in sorted(last[5], key=lambda p: -p["run_time_ns"]):
        if p["run_cnt"]:
            print(f"  {p.get('name', '?'):18s} {p['run_time_ns'] / p['run_cnt']:8.0f} ns/run  runs {p['run_cnt']:9d}"
                  f"  {p['run_time_ns'] / last[4]:7.1f} ns per fio op")
    if per_op:
        print(f"  all programs: {sum(per_op) / len(per_op):.0f} ns per fio op (budget 1,000)"
              f"  rounds: {' '.join(f'{v:.0f}' for v in per_op)}")


if __name__ == "__main__":
    main()
