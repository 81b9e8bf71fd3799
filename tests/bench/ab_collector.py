#!/usr/bin/env python3
"""One collector's BPF cost in two builds, side by side, in alternating rounds.

A change to a collector's programs moves its cost by tens of ns per run, less
than this shared machine's drift between two benchmark runs; in alternating
rounds (A B, B A, ...) on the same workload the drift hits both builds alike.
BPF run-time statistics are on for the whole run (they add ~60 ns to every
program run, to both builds alike). Prints, per build, the median ns per I/O
(all of the collector's programs over fio's operations) and each program's
median ns per run x runs per I/O.

Workloads (overhead.py's): block_bpf and iouring_bpf on workload A (fio 4 KiB
randread, io_uring, O_DIRECT, QD 32 on a loop device over /dev/shm),
syscall_bpf on workload B (4 KiB cached pread/pwrite 70/30 on ext4); --collector
all runs every collector (the driver without --collector) on workload A unless
--workload b says otherwise. --workload c is overhead.py's fsync-heavy one
(4 KiB random writes, each followed by fsync, on ext4): ns per write+fsync.

usage: sudo tests/bench/ab_collector.py BUILD_A BUILD_B --collector block_bpf [--rounds 6] [--runtime 3] [--workload a|b|c]
(BUILD_x: a build folder with iodiag_bench_collectors; e.g. a copy of main's
build and this checkout's build; ~1 minute per round)
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_support import hold_bpf_stats, hold_machine_lock, require_root_and_builds, sh  # noqa: E402
from overhead import (Tracer, delta_progs, exit_on_signal, fio_cached_rw, fio_direct_randread,  # noqa: E402
                      fio_json, fio_write_fsync)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs=2, help="two build folders")
    ap.add_argument("--collector", required=True, choices=["block_bpf", "iouring_bpf", "syscall_bpf", "all"])
    ap.add_argument("--workload", choices=["a", "b", "c"], help="default: b for syscall_bpf, else a")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runtime", type=int, default=3, help="seconds of fio per build and round")
    a = ap.parse_args()
    require_root_and_builds(a.builds, "iodiag_bench_collectors", "BPF, losetup, mount, sysctl",
                            " (build the target iodiag_bench_collectors)")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)
    old_stats = sh("sysctl -n kernel.bpf_stats_enabled").strip()
    img, dev, mnt, stats_fd = None, None, None, -1
    per_io = {b: [] for b in a.builds}
    per_prog = {b: {} for b in a.builds}
    try:
        f = tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iodiag-ab-", delete=False)
        f.truncate(512 << 20)
        f.close()
        img = f.name
        dev = sh(f"losetup -f --show {img}").strip()
        workload = a.workload or ("b" if a.collector == "syscall_bpf" else "a")
        if workload in ("b", "c"):
            mnt = tempfile.mkdtemp(prefix="iodiag-ab-mnt-")
            sh(f"mkfs.ext4 -qF {dev} && mount {dev} {mnt}")
            job = fio_cached_rw if workload == "b" else fio_write_fsync
            fio_json(job(mnt, 2))   # lay out (and warm the cache)
            fio = job(mnt, a.runtime)
        else:
            fio = fio_direct_randread(dev, a.runtime)
        sh("sysctl -qw kernel.bpf_stats_enabled=1")
        stats_fd = hold_bpf_stats()
        for r in range(a.rounds):
            for b in (a.builds if r % 2 == 0 else a.builds[::-1]):
                which = [] if a.collector == "all" else ["--collector", a.collector]
                t = Tracer([f"{b}/iodiag_bench_collectors", *which, "--interval", "1"], 3)
                try:
                    before = t.stats()
                    job = fio_json(fio)
                    after = t.stats()
                finally:
                    t.stop()
                ios = job["read"]["total_ios"] + job["write"]["total_ios"]
                progs = delta_progs(before, after)
                per_io[b].append(sum(ns for _, _, ns in progs) / ios)
                for name, runs, ns in progs:
                    per_prog[b].setdefault(name, []).append((ns / runs, runs / ios))
                print(f"  round {r + 1}/{a.rounds} {b}: {per_io[b][-1]:.0f} ns per I/O", flush=True)
    finally:
        if stats_fd >= 0:
            os.close(stats_fd)
        sh(f"sysctl -qw kernel.bpf_stats_enabled={old_stats}")
        if mnt:
            subprocess.run(["umount", mnt], check=False)
            os.rmdir(mnt)
        if dev:
            subprocess.run(["losetup", "-d", dev], check=False)
        if img:
            os.unlink(img)
    for b in a.builds:
        progs = sorted(per_prog[b].items(), key=lambda kv: -statistics.median([x * y for x, y in kv[1]]))
        print(f"{b}: {a.collector} median {statistics.median(per_io[b]):.0f} ns per I/O "
              f"(min {min(per_io[b]):.0f}, max {max(per_io[b]):.0f}); " +
              ", ".join(f"{n} {statistics.median([x for x, _ in v]):.0f}x{statistics.median([y for _, y in v]):.2f}"
                        for n, v in progs if statistics.median([x * y for x, y in v]) >= 1))


if __name__ == "__main__":
    main()
