#!/usr/bin/env python3
"""Soak: iodiag observing the highest I/O rate this machine produces, for a
long window, watched from outside.

Load (fio, until the window ends): 4 KiB random O_DIRECT reads through
io_uring at queue depth 32 on a loop device over a file in /dev/shm (RAM: the
fastest device here, so the BPF programs see the most events), and 8 threads
of 512-byte buffered preads on a cached file (many small syscalls).

iodiag runs `record --duration D --interval EVERY` beside it. Every EVERY
seconds this prints iodiag's resident memory and the events its BPF programs
counted as lost so far (the `lost` counters of each program's .bss, read with
bpftool) with the runs of them the kernel skipped (recursion_misses), and at
the end the lost events the bundle reports. Checks, exit 1 if
any fails:
  - memory is flat after the warm-up: the last sample is at most 10 % (and at
    least 8 MiB) above the first one after WARMUP seconds;
  - iodiag exits 0 and writes its bundle;
  - the BPF programs and links on the machine after iodiag exits are exactly
    those before it started (nothing left attached).
Takes the machine lock; everything it sets up (loop device, files, fio) is
removed on every exit path. Killed with SIGKILL, what it started still goes:
fio and iodiag die with it (PR_SET_PDEATHSIG), the loop device is detached by
the kernel (autoclear: it lives while this process holds it open) and its
backing file in /dev/shm is already unlinked.

  sudo tests/soak/soak.py                            # 30 minutes, a line a minute
  sudo tests/soak/soak.py --duration 60 --every 10   # the test command's version
Exit 77 (skipped) without root, fio or bpftool.
"""
import argparse
import ctypes
import errno
import fcntl
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
from bench_support import hold_machine_lock  # noqa: E402

SKIP = 77
# How long iodiag's release process may take to let its programs go after
# iodiag exits: one RCU grace period per detached link, about 40 of them;
# measured 2-3 s on this project's 2-vCPU VM with a build beside it.
kReleaseWait = 15

LOOP_CTL_GET_FREE, LOOP_CONFIGURE, LO_FLAGS_AUTOCLEAR = 0x4C82, 0x4C0A, 4
PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when this process dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def remove_left_by_killed_runs(directory):
    """Work directories (iodiag-soak-PID-*) of runs killed before their cleanup;
    called under the machine lock, so no other soak uses them."""
    for name in os.listdir(directory):
        parts = name.split("-")
        if name.startswith("iodiag-soak-") and len(parts) >= 4 and parts[2].isdigit():
            try:
                os.kill(int(parts[2]), 0)
            except ProcessLookupError:
                shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
            except PermissionError:
                pass


def attach_autoclear_loop(backing):
    """A free loop device over `backing` with LO_FLAGS_AUTOCLEAR: (open fd, /dev/loopN).
    The kernel detaches it when the last opener closes it, so holding the fd
    ties the device's life to this process (also when it is killed)."""
    ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    bf = os.open(backing, os.O_RDWR | os.O_CLOEXEC)
    try:
        for _ in range(16):
            n = fcntl.ioctl(ctl, LOOP_CTL_GET_FREE)
            dev = os.open(f"/dev/loop{n}", os.O_RDWR | os.O_CLOEXEC)
            # struct loop_config { u32 fd, block_size; struct loop_info64 info; u64 reserved[8]; }
            info = struct.pack("=5Q4I64s64s32s2Q", 0, 0, 0, 0, 0, 0, 0, 0, LO_FLAGS_AUTOCLEAR,
                               backing.encode()[:63], b"", b"", 0, 0)
            try:
                fcntl.ioctl(dev, LOOP_CONFIGURE, struct.pack("=II", bf, 0) + info + bytes(64))
                return dev, f"/dev/loop{n}"
            except OSError as e:
                os.close(dev)
                if e.errno != errno.EBUSY:   # EBUSY: another process took it meanwhile
                    raise
        raise OSError(errno.EBUSY, "no free loop device after 16 tries")
    finally:
        os.close(bf)
        os.close(ctl)


def bpftool_json(*args):
    out = subprocess.run(["bpftool", *args, "-j"], capture_output=True, text=True).stdout
    try:
        return json.loads(out or "[]")
    except json.JSONDecodeError:
        return []


def programs_and_links():
    progs = {(p["id"], p.get("name", "?")) for p in bpftool_json("prog", "list")}
    links = {(l["id"], l.get("type", "?"), l.get("prog_id")) for l in bpftool_json("link", "list")}
    return progs, links


def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def object_ids(pid, kind):
    """Ids of the BPF objects of `kind` ("map" or "prog") the process holds fds of."""
    ids = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    for line in f:
                        if line.startswith(f"{kind}_id:"):
                            ids.add(int(line.split()[1]))
            except OSError:
                pass
    except OSError:
        pass
    return ids


def find_lost(value):
    """The `lost` counters (an integer or a list of them) anywhere in a BTF-formatted map value."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "lost":
                return sum(v) if isinstance(v, list) else int(v)
            found = find_lost(v)
            if found is not None:
                return found
    elif isinstance(value, list):
        for v in value:
            found = find_lost(v)
            if found is not None:
                return found
    return None


def lost_so_far(pid):
    """{map name: lost events} over the .bss maps of iodiag's BPF programs."""
    out = {}
    for mid in object_ids(pid, "map"):
        info = bpftool_json("map", "show", "id", str(mid))
        name = info.get("name", "") if isinstance(info, dict) else ""
        if not name.endswith(".bss"):
            continue
        for entry in bpftool_json("map", "dump", "id", str(mid)):
            lost = find_lost(entry.get("formatted", entry))
            if lost is not None:
                out[name] = out.get(name, 0) + lost
    return out


def skipped_so_far(pid):
    """Runs of iodiag's BPF programs the kernel skipped (recursion_misses: the
    program was already running on that CPU), summed over its programs."""
    total = 0
    for prog_id in object_ids(pid, "prog"):
        info = bpftool_json("prog", "show", "id", str(prog_id))
        if isinstance(info, dict):
            total += int(info.get("recursion_misses", 0))
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iodiag", default=os.path.join(HERE, "..", "..", "build", "iodiag"))
    ap.add_argument("--duration", type=float, default=1800, help="iodiag's window, seconds (default 1800)")
    ap.add_argument("--every", type=float, default=60, help="seconds between samples and series intervals")
    ap.add_argument("--warmup", type=float, default=None, help="seconds before memory must stay flat "
                    "(default: a tenth of the window, at least 2 samples)")
    args = ap.parse_args()
    warmup = args.warmup if args.warmup is not None else max(args.duration / 10, 2 * args.every)
    if os.geteuid() != 0:
        print("soak: skipped: needs root (loop device, BPF)")
        return SKIP
    for tool in ("fio", "bpftool"):
        if not shutil.which(tool):
            print(f"soak: skipped: needs {tool}")
            return SKIP
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)

    cleanup = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        remove_left_by_killed_runs("/dev/shm")
        work = tempfile.mkdtemp(prefix=f"iodiag-soak-{os.getpid()}-", dir="/dev/shm")
        cleanup.append(lambda: shutil.rmtree(work, ignore_errors=True))
        backing = os.path.join(work, "disk.img")
        with open(backing, "wb") as f:
            f.truncate(512 << 20)
        loop_fd, loop = attach_autoclear_loop(backing)
        cleanup.append(lambda: os.close(loop_fd))   # the last close detaches it
        os.unlink(backing)   # the loop device holds the file; nothing to remove if killed
        cached = os.path.join(work, "cached.dat")
        with open(cached, "wb") as f:
            f.write(os.urandom(1 << 20))

        before = programs_and_links()
        runtime = int(args.duration + 30)
        fio = subprocess.Popen(
            # --thread before the first job: all jobs threads of one process (a
            # job process would sit in a session of its own, out of the group kill's
            # and PR_SET_PDEATHSIG's reach).
            ["fio", "--output=/dev/null", "--thread", "--time_based", f"--runtime={runtime}",
             "--name=direct", f"--filename={loop}", "--rw=randread", "--bs=4k", "--ioengine=io_uring",
             "--direct=1", "--iodepth=32",
             "--name=small", f"--filename={cached}", "--rw=randread", "--bs=512", "--ioengine=psync",
             "--numjobs=8"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=die_with_parent)
        cleanup.append(lambda: (os.killpg(fio.pid, signal.SIGKILL), fio.wait()) if fio.poll() is None else None)
        time.sleep(2)
        if fio.poll() is not None:
            print("soak: fio did not start")
            return 1

        bundle = os.path.join(work, "soak-bundle.json")
        # Output to files, not pipes: a verdict larger than a pipe would block
        # iodiag while this loop waits for it to exit.
        verdict_out = open(os.path.join(work, "verdict.json"), "w+")
        stderr_out = open(os.path.join(work, "stderr.txt"), "w+")
        iodiag = subprocess.Popen(
            [args.iodiag, "record", "--duration", str(args.duration), "--interval", str(args.every),
             "-o", bundle, "--format", "json"],
            stdout=verdict_out, stderr=stderr_out, preexec_fn=die_with_parent)
        cleanup.append(lambda: iodiag.kill() if iodiag.poll() is None else None)
        print(f"soak: iodiag pid {iodiag.pid}, window {args.duration:g} s, load on {loop} and {cached}; "
              f"BPF programs before: {len(before[0])}, links: {len(before[1])}")
        t0 = time.monotonic()
        samples = []   # (t, rss MiB)
        prev_lost = {}
        during = None
        next_at = args.every
        while iodiag.poll() is None:
            time.sleep(min(1.0, max(0.0, t0 + next_at - time.monotonic())))
            now = time.monotonic() - t0
            if now < next_at or iodiag.poll() is not None:
                continue
            next_at += args.every
            rss = rss_mib(iodiag.pid)
            lost = lost_so_far(iodiag.pid)
            if during is None:
                during = programs_and_links()
            if rss is not None:
                samples.append((now, rss))
            parts = [f"{k.split('.')[0]} {v:,} (+{v - prev_lost.get(k, 0):,})" for k, v in sorted(lost.items())]
            print(f"  t={now:6.0f} s  rss {rss if rss is not None else float('nan'):7.1f} MiB  lost so far: "
                  + (", ".join(parts) if parts else "no lost-event counters in these programs")
                  + f"; runs skipped by the kernel {skipped_so_far(iodiag.pid):,}", flush=True)
            prev_lost = lost
        iodiag.wait()
        stderr_out.seek(0)
        err = stderr_out.read()
        took = time.monotonic() - t0
        ok = True
        if iodiag.returncode != 0:
            print(f"soak: FAIL: iodiag exited {iodiag.returncode}: {err.strip()[-2000:]}")
            ok = False

        # Lost events as the bundle reports them (collector.lost_events {collector, what}).
        if os.path.exists(bundle):
            metrics = json.load(open(bundle))["metrics"]
            lost = [m for m in metrics if m["name"] == "collector.lost_events"]
            if lost:
                for m in lost:
                    print(f"  bundle: lost {m['labels'].get('collector')}/{m['labels'].get('what')}: {m['value']:,.0f}")
            else:
                print("  bundle: no collector.lost_events metrics (this build does not count lost events)")
        else:
            print("soak: FAIL: no bundle written")
            ok = False

        # Memory: flat after the warm-up.
        settled = [s for s in samples if s[0] >= warmup]
        if len(settled) >= 2:
            first, last = settled[0][1], settled[-1][1]
            allowed = first + max(8.0, first * 0.10)
            verdict = "flat" if last <= allowed else "GROWING"
            print(f"  rss after warm-up ({warmup:g} s): {first:.1f} -> {last:.1f} MiB (allowed {allowed:.1f}): {verdict}")
            ok = ok and last <= allowed
        else:
            print(f"soak: FAIL: fewer than 2 memory samples after the {warmup:g} s warm-up")
            ok = False

        # Nothing left attached. iodiag hands its links to a process of its
        # own that lets them go when iodiag exits (collectors/bpf/
        # deferred_release.hpp), and each detach waits for an RCU grace
        # period: the release takes a few seconds after the exit, not
        # forever. Waited for up to kReleaseWait, and how long it took said.
        released_at = time.monotonic()
        after = programs_and_links()
        while (after[0] - before[0] or after[1] - before[1]) and time.monotonic() - released_at < kReleaseWait:
            time.sleep(0.25)
            after = programs_and_links()
        print(f"  released {time.monotonic() - released_at:.1f} s after iodiag exited")
        if during:
            print(f"  during: {len(during[0]) - len(before[0])} BPF programs and "
                  f"{len(during[1]) - len(before[1])} links of iodiag's")
        left_progs, left_links = after[0] - before[0], after[1] - before[1]
        if left_progs or left_links:
            print(f"soak: FAIL: left behind: programs {sorted(left_progs)}, links {sorted(left_links)}")
            ok = False
        else:
            print(f"  after: BPF programs and links are those before ({len(after[0])}, {len(after[1])}): nothing left")
        print(f"soak: {'PASS' if ok else 'FAIL'} after {took:.0f} s")
        return 0 if ok else 1
    finally:
        for undo in reversed(cleanup):
            try:
                undo()
            except Exception as e:   # keep undoing the rest
                print(f"soak: cleanup: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
