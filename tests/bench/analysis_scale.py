#!/usr/bin/env python3
"""How the analysis scales with the number of block devices, measured and
printed, never asserted.

A host with hundreds of block devices (multipath SAN LUNs, NVMe namespaces,
snap loop devices) gives every per-device rule hundreds of instances. This
takes a recorded bundle (`iodiag record`), copies one of its devices' entries
(metrics, facts, histograms; the series are left as recorded) under new
device names until the bundle holds N devices, and times `iodiag replay` of
each: wall and CPU (median, min-max of --runs runs), and per added device
against the bundle as recorded, in the same run.

usage: tests/bench/analysis_scale.py BUNDLE [--device NAME] [--devices 100,300,600] [--runs 5] [--iodiag PATH]
"""
import argparse
import collections
import copy
import json
import os
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_support import timed  # noqa: E402

ENTRY_KINDS = ("metrics", "facts", "histograms")


def entries_per_device(bundle):
    return collections.Counter(e["labels"]["device"] for k in ENTRY_KINDS for e in bundle.get(k, [])
                               if "device" in e.get("labels", {}))


def with_devices(bundle, device, total):
    """The bundle with copies of `device`'s entries as scale0, scale1, ...
    until it holds `total` devices."""
    out = copy.deepcopy(bundle)
    extra = total - len(entries_per_device(bundle))
    for kind in ENTRY_KINDS:
        own = [e for e in bundle.get(kind, []) if e.get("labels", {}).get("device") == device]
        for i in range(extra):
            for e in own:
                c = copy.deepcopy(e)
                c["labels"]["device"] = f"scale{i}"
                out[kind].append(c)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("--device", help="the device whose entries are copied (default: the one with the most)")
    ap.add_argument("--devices", default="100,300,600", help="device counts to time, comma-separated")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iodiag", default=os.path.join(os.path.dirname(__file__), "../../build/iodiag"))
    a = ap.parse_args()
    with open(a.bundle) as f:
        bundle = json.load(f)
    counts = entries_per_device(bundle)
    if not counts:
        sys.exit(f"{a.bundle}: no device in the bundle")
    present = sorted(counts)
    device = a.device or counts.most_common(1)[0][0]
    if device not in counts:
        sys.exit(f"{a.bundle}: no device {device} (devices: {', '.join(present)})")
    print(f"bundle {a.bundle}: {len(present)} devices; copies of {device}; {a.runs} runs each")
    print("| devices | replay wall ms (median, min-max) | CPU ms (median, min-max) | CPU ms per added device |")
    print("|---|---|---|---|")
    base_cpu = None
    with tempfile.TemporaryDirectory(prefix="iodiag-scale-") as tmp:
        for total in [len(present)] + [int(n) for n in a.devices.split(",") if int(n) > len(present)]:
            path = os.path.join(tmp, f"{total}.json")
            with open(path, "w") as f:
                json.dump(with_devices(bundle, device, total), f)
            (wall, wlo, whi), (cpu, clo, chi) = timed([a.iodiag, "replay", path], a.runs)
            base_cpu = cpu if base_cpu is None else base_cpu
            per = f"{(cpu - base_cpu) / (total - len(present)):.2f}" if total > len(present) else "(as recorded)"
            print(f"| {total} | {wall:.0f} ({wlo:.0f}-{whi:.0f}) | {cpu:.0f} ({clo:.0f}-{chi:.0f}) | {per} |")


if __name__ == "__main__":
    main()
