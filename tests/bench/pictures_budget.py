#!/usr/bin/env python3
"""Budgets of the per-interval series and the HTML report, measured, printed,
never asserted (issue 9):

  - the bundle of a 60 s recording at 1 s intervals: <= 2 MiB
  - `iodiag report` on that bundle: < 200 ms (median of --runs runs; its CPU
    time too, the figure that holds on a machine shared with other work)

While iodiag records, fio keeps two kinds of I/O going on loop devices (a
random direct reader on one device over /tmp, a buffered sequential writer on
ext4 on another) so that the series have syscalls and several busy devices to
hold, like a real incident would. Also printed: how much of the bundle the
series take, by series name, and `iodiag replay` of the same bundle for scale.

usage: sudo tests/bench/pictures_budget.py [--iodiag PATH] [--duration 60] [--runs 7] [--keep DIR]
       tests/bench/pictures_budget.py --bundle B.json   (time the report of a recorded bundle only)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import hold_machine_lock, sh, timed  # noqa: E402

BUNDLE_BUDGET = 2 << 20
REPORT_BUDGET_MS = 200


def series_sizes(path):
    with open(path) as f:
        b = json.load(f)
    sizes = {}
    for kind in ("histograms", "values"):
        for s in b.get("series", {}).get(kind, []):
            sizes[s["name"]] = sizes.get(s["name"], 0) + len(json.dumps(s, separators=(",", ":")))
    return b.get("series", {}).get("count", 0), sizes


def main():
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--iodiag", default=os.path.join(here, "../../build/iodiag"))
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--keep", help="keep the bundle and the report in this directory")
    ap.add_argument("--bundle", help="no recording: measure this bundle")
    a = ap.parse_args()
    if a.bundle:
        return measure(a, a.bundle, os.path.join(tempfile.mkdtemp(prefix="iodiag-pictures-bench-"), "report.html"))
    if os.geteuid() != 0:
        sys.exit("needs root (BPF, losetup, mount)")
    work = a.keep or tempfile.mkdtemp(prefix="iodiag-pictures-bench-")
    os.makedirs(work, exist_ok=True)
    undo = []
    try:
        imgs = []
        for i in range(2):
            img = os.path.join(work, f"disk{i}.img")
            with open(img, "wb") as f:
                f.truncate(512 << 20)
            imgs.append(img)
            undo.append(lambda p=img: os.path.exists(p) and os.remove(p))
        reader_dev = sh(f"losetup -f --show {imgs[0]}").strip()
        undo.append(lambda: sh(f"losetup -d {reader_dev}"))
        writer_dev = sh(f"losetup -f --show {imgs[1]}").strip()
        undo.append(lambda: sh(f"losetup -d {writer_dev}"))
        mnt = os.path.join(work, "mnt")
        os.makedirs(mnt, exist_ok=True)
        sh(f"mkfs.ext4 -qF {writer_dev} && mount {writer_dev} {mnt}")
        undo.append(lambda: sh(f"umount {mnt} || umount -l {mnt}"))
        sh(f"dd if=/dev/zero of={reader_dev} bs=1M count=256 oflag=direct status=none")
        runtime = a.duration + 60
        procs = [
            subprocess.Popen(["fio", "--name=r", f"--filename={reader_dev}", "--rw=randread", "--bs=4k", "--direct=1",
                              "--ioengine=libaio", "--iodepth=8", "--time_based", f"--runtime={runtime}",
                              "--output=/dev/null"], start_new_session=True),
            subprocess.Popen(["fio", "--name=w", f"--directory={mnt}", "--rw=write", "--bs=64k", "--size=256m",
                              "--ioengine=psync", "--time_based", f"--runtime={runtime}", "--output=/dev/null"],
                             start_new_session=True),
        ]
        for p in procs:
            undo.append(lambda p=p: (os.killpg(p.pid, 15), p.wait()))
        time.sleep(2)
        bundle = os.path.join(work, "bundle.json")
        report = os.path.join(work, "report.html")
        t0 = time.monotonic()
        subprocess.run([a.iodiag, "record", "--duration", str(a.duration), "-o", bundle], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"recorded {a.duration} s in {time.monotonic() - t0:.1f} s")
    finally:
        for u in reversed(undo):
            try:
                u()
            except Exception as e:   # keep undoing the rest
                print(f"cleanup: {e}", file=sys.stderr)
    measure(a, bundle, report)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


def measure(a, bundle, report):
    size = os.path.getsize(bundle)
    count, sizes = series_sizes(bundle)
    print(f"bundle: {size / 1024:.0f} KiB for {count} intervals (budget {BUNDLE_BUDGET >> 10} KiB: "
          f"{'met' if size <= BUNDLE_BUDGET else 'NOT met'})")
    for name, n in sorted(sizes.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  series {name}: {n / 1024:.0f} KiB")
    (med, lo, hi), (cpu, cpu_lo, cpu_hi) = timed([a.iodiag, "report", bundle, "-o", report], a.runs)
    print(f"iodiag report: median {med:.0f} ms (min {lo:.0f}, max {hi:.0f}, {a.runs} runs; budget "
          f"{REPORT_BUDGET_MS} ms: {'met' if med < REPORT_BUDGET_MS else 'NOT met'}); CPU time median "
          f"{cpu:.0f} ms (min {cpu_lo:.0f}, max {cpu_hi:.0f}; {'met' if cpu < REPORT_BUDGET_MS else 'NOT met'} "
          f"on an idle core); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; page "
          f"{os.path.getsize(report) / 1024:.0f} KiB")
    (med, lo, hi), (cpu, _, _) = timed([a.iodiag, "replay", bundle], a.runs)
    print(f"iodiag replay (for scale): median {med:.0f} ms (min {lo:.0f}, max {hi:.0f}); CPU time median {cpu:.0f} ms")


if __name__ == "__main__":
    main()
