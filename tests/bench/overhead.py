#!/usr/bin/env python3
"""Overhead of iodiag beside its peers and the floor of its hooks, measured in one
run, printed with each goal beside its figure (issue 25: ratios to the peer and
to the floor of exact timing at the same hooks, measured in the same run) and
written to docs/results/overhead-<UTC time>-<host>.md (results_file.py); never asserted.

Workload A (the per-I/O figures): fio 4 KiB random reads, io_uring, O_DIRECT,
queue depth 32, on a loop device over a file in /dev/shm (fast, so tracing
cost shows). Modes, in alternating rounds so drift on a shared machine hits
them alike:
  none          no tracing (each round's baseline)
  biolatency    libbpf-tools biolatency (the peer; built from the unmodified
                sources by ../shared/anchors/libbpf-tools-biolatency/build.sh)
  block         iodiag's block collector alone, no series (sample() never called)
  block+series  the same with its per-interval series read once a second
  all           the whole of iodiag (`iodiag --duration N`)
  bpftrace      seed 001's block breakdown script (tests/bench/seed001_block_breakdown.bt)
IOPS ratios come from rounds with BPF run-time statistics OFF (median and
min-max of the ratio to the same round's baseline); BPF ns per I/O from rounds
with them ON (kernel.bpf_stats_enabled=1 adds ~60 ns per program run to every
tool alike): each program's run_time_ns over the fio I/Os of the round.

Workload B (the syscall collector): fio 4 KiB random pread/pwrite (70/30),
psync, on a file that stays in the page cache (ext4 on a loop device in
/dev/shm). Modes none, syscall (the syscall collector alone), all. BPF ns per
traced syscall = all programs' run time over fio's operations.

Workload C (fsync-heavy): fio 4 KiB random writes, each followed by fsync
(psync), on ext4 over a loop device in /dev/shm: two syscalls, a journal
commit and its device writes per operation, the writer asleep in fsync.
Modes none, biolatency, block, syscall, all, bpftrace; BPF ns per write+fsync.

Then: `iodiag --duration 1` wall and CPU time (idle), and iodiag's resident
memory and lost events while workload A runs.

The machine lock is held for the whole run (bench_support.hold_machine_lock).

usage: sudo tests/bench/overhead.py [--rounds 8] [--stats-rounds 3] [--runtime 3] [--build DIR]
(about 15 minutes with the defaults on a 2-core VM; --skip a,b,c,startup leaves sections out;
the output also goes to docs/results/overhead-<UTC time>-<host>.md, --results DIR elsewhere)
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_support import Tracer, biolatency_binary, hold_bpf_stats, hold_machine_lock, one_run, sh  # noqa: E402
from results_file import results_option, tee_stdout  # noqa: E402


def exit_on_signal(signum, _frame):
    """SIGTERM/SIGHUP end the run through the finally blocks: tracers stopped,
    loop devices detached, the BPF stats sysctl restored."""
    raise SystemExit(128 + signum)

# Program names per collector (the SEC names in bpf/*.bpf.c).
BLOCK = {f"{p}_{n}" for p in ("btf", "raw") for n in (
    "bio_queue", "split", "getrq", "rq_insert", "rq_issue", "rq_complete", "bio_backmerge",
    "bio_frontmerge", "rq_merge", "rq_requeue")}
IOURING = {f"{p}_{n}" for p in ("btf", "raw") for n in (
    "submit_req", "queue_async_work", "complete", "cqring_wait", "sys_exit")}


def collector_of(prog_name):
    # the kernel keeps 15 characters of a program's name (BPF_OBJ_NAME_LEN)
    if prog_name in {n[:15] for n in BLOCK} or prog_name in BLOCK:
        return "block"
    if prog_name in {n[:15] for n in IOURING} or prog_name in IOURING:
        return "iouring"
    return "syscall"


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def delta_progs(before, after):
    out = []
    for pid, x in after.items():
        b = before.get(pid, {})
        runs = x.get("run_cnt", 0) - b.get("run_cnt", 0)
        ns = x.get("run_time_ns", 0) - b.get("run_time_ns", 0)
        if runs > 0:
            out.append((x.get("name", "?"), runs, ns))
    return out


def fio_json(args):
    out = sh("fio --output-format=json " + args)
    return json.loads(out[out.index("{"):])["jobs"][0]


# The workloads' fio jobs (ab_collector.py runs the same ones).
def fio_direct_randread(dev, runtime):
    return (f"--name=bench --filename={dev} --rw=randread --bs=4k --ioengine=io_uring --direct=1 "
            f"--iodepth=32 --runtime={runtime} --time_based")


def fio_cached_rw(mnt, runtime):
    return (f"--name=buffered --filename={mnt}/cached.dat --size=64M --rw=randrw --rwmixread=70 --bs=4k "
            f"--ioengine=psync --invalidate=0 --runtime={runtime} --time_based")


def fio_write_fsync(mnt, runtime):
    return (f"--name=fsync --filename={mnt}/fsync.dat --size=64M --rw=randwrite --bs=4k --ioengine=psync "
            f"--fsync=1 --runtime={runtime} --time_based")


def set_stats(on):
    sh(f"sysctl -qw kernel.bpf_stats_enabled={1 if on else 0}")


def median(v):
    return statistics.median(v) if v else float("nan")


def is_clock_probe(name):
    """The floor's clock-only program: a measurement beside the floor, not part of it."""
    return name.startswith("clock_read")


def clock_read_ns(per_prog):
    """One bpf_ktime_get_ns(): the clock-only program minus the empty one on the same events."""
    with_clock = per_prog.get("clock_read_block_rq_issue")
    empty = per_prog.get("floor_block_rq_issue")
    if not with_clock or not empty:
        return float("nan")
    return median([x for x, _ in with_clock]) - median([x for x, _ in empty])


def tracers(build, biolatency):
    """Each traced mode's start by name (the workloads pick theirs); the number
    is how many programs a tracer holds once attached."""
    collectors, floor = f"{build}/iodiag_bench_collectors", f"{build}/iodiag_bench_hook_floor"
    return {
        "biolatency": lambda: Tracer([biolatency], 2),
        "floor block": lambda: Tracer([floor, "--group", "block"], 6),
        "floor syscall": lambda: Tracer([floor, "--group", "syscall-events", "--group", "sched"], 4),
        "floor all": lambda: Tracer([floor], 14),
        "block": lambda: Tracer([collectors, "--collector", "block_bpf", "--interval", "0"], 5),
        "block+series": lambda: Tracer([collectors, "--collector", "block_bpf", "--interval", "1"], 5),
        "syscall": lambda: Tracer([collectors, "--collector", "syscall_bpf", "--interval", "1"], 10),
        "all": lambda: Tracer([f"{build}/iodiag", "--duration", "600", "--format", "json"], 30),
        "bpftrace": lambda: Tracer(["bpftrace", os.path.join(HERE, "seed001_block_breakdown.bt")], 3, 30),
    }


def pick_modes(a, biolatency, names):
    """The untraced baseline ("none") first, then `names` in that order."""
    start = tracers(a.build, biolatency)
    return {"none": None, **{n: start[n] for n in names}}


def workload_a(a, dev, biolatency):
    modes = pick_modes(a, biolatency, ["biolatency", "floor block", "block", "block+series", "all", "floor all",
                                       "bpftrace"])
    fio = fio_direct_randread(dev, a.runtime)
    ratios = {m: [] for m in modes}
    base_iops = []
    ns_io = {m: [] for m in modes}
    per_prog = {m: {} for m in modes}
    per_coll = {m: {} for m in modes}
    rss, lost = [], []
    total = a.rounds + a.stats_rounds
    for r in range(total):
        stats_on = r >= a.rounds
        set_stats(stats_on)
        stats_fd = hold_bpf_stats() if stats_on else -1
        base = None
        try:
            for mode, start in modes.items():
                t = start() if start else None
                try:
                    before = t.stats() if t else {}
                    job = fio_json(fio)
                    after = t.stats() if t else {}
                    if t and mode == "all":
                        rss.append(t.rss_kib())
                finally:
                    # SIGINT ends iodiag's window early and it prints its verdict (lost events)
                    out = (t.stop(signal.SIGINT) if mode == "all" else t.stop()) if t else ""
                if mode == "all" and out:
                    try:
                        lost.append(json.loads(out).get("lost_events", []))
                    except ValueError:
                        pass
                iops, ios = job["read"]["iops"], job["read"]["total_ios"]
                if mode == "none":
                    base = iops
                    if not stats_on:
                        base_iops.append(iops)
                if not stats_on:
                    ratios[mode].append(iops / base)
                elif t and ios:
                    progs = delta_progs(before, after)
                    ns_io[mode].append(sum(ns for name, _, ns in progs if not is_clock_probe(name)) / ios)
                    coll = {}
                    for name, runs, ns in progs:
                        per_prog[mode].setdefault(name, []).append((ns / runs, runs / ios))
                        coll[collector_of(name)] = coll.get(collector_of(name), 0) + ns / ios
                    for c, v in coll.items():
                        per_coll[mode].setdefault(c, []).append(v)
                print(f"  round {r + 1}/{total} stats {'on ' if stats_on else 'off'} {mode:12s} "
                      f"IOPS {iops:9.0f}" + (f"  ratio {iops / base:5.3f}" if base else ""), flush=True)
        finally:
            if stats_fd >= 0:
                os.close(stats_fd)
    return ratios, base_iops, ns_io, per_prog, per_coll, rss, lost


def run_file_workload(a, modes, fio, ops_of):
    """Alternating rounds of `modes` on one fio job over a file: the ops/s
    ratio to the round's baseline (stats off) and BPF ns per operation
    (`ops_of(job)`, stats on), per mode and per program."""
    ratios = {m: [] for m in modes}
    ns_op = {m: [] for m in modes}
    per_prog = {m: {} for m in modes}
    total = a.rounds + a.stats_rounds
    for r in range(total):
        stats_on = r >= a.rounds
        set_stats(stats_on)
        stats_fd = hold_bpf_stats() if stats_on else -1
        base = None
        try:
            for mode, start in modes.items():
                t = start() if start else None
                try:
                    before = t.stats() if t else {}
                    job = fio_json(fio)
                    after = t.stats() if t else {}
                finally:
                    if t:
                        t.stop()
                ops = ops_of(job)
                rate = ops / a.runtime
                if mode == "none":
                    base = rate
                if not stats_on:
                    ratios[mode].append(rate / base)
                elif t and ops:
                    progs = delta_progs(before, after)
                    ns_op[mode].append(sum(ns for _, _, ns in progs) / ops)
                    for name, runs, ns in progs:
                        per_prog[mode].setdefault(name, []).append((ns / runs, runs / ops))
                print(f"  round {r + 1}/{total} stats {'on ' if stats_on else 'off'} {mode:10s} "
                      f"ops/s {rate:9.0f}" + (f"  ratio {rate / base:5.3f}" if base else ""), flush=True)
        finally:
            if stats_fd >= 0:
                os.close(stats_fd)
    return ratios, ns_op, per_prog


def workload_b(a, mnt):
    modes = pick_modes(a, None, ["syscall", "floor syscall", "all"])
    fio_json(fio_cached_rw(mnt, 2))   # lay out and warm the cache
    fio = fio_cached_rw(mnt, a.runtime)
    return run_file_workload(a, modes, fio, lambda job: job["read"]["total_ios"] + job["write"]["total_ios"])


def workload_c(a, mnt, biolatency):
    """fsync-heavy: every 4 KiB write is followed by fsync, so each operation
    is two syscalls, a journal commit (jbd2) and its device writes, and the
    writer sleeps in fsync: the off-CPU classification's cost shows here."""
    modes = pick_modes(a, biolatency, ["biolatency", "block", "syscall", "all", "bpftrace"])
    fio_json(fio_write_fsync(mnt, 2))   # lay the file out
    fio = fio_write_fsync(mnt, a.runtime)
    return run_file_workload(a, modes, fio, lambda job: job["write"]["total_ios"])


def startup(a, runs=5):
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = one_run(a.build)
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus


def fmt_progs(per_prog):
    parts = []
    for name, v in sorted(per_prog.items(), key=lambda kv: -median([a * b for a, b in kv[1]])):
        per_io = median([a * b for a, b in v])
        if per_io >= 1:
            parts.append(f"{name} {median([a for a, _ in v]):.0f}x{median([b for _, b in v]):.2f}")
    return ", ".join(parts)


def print_mode_table(ratios, ns, per_prog, rate, unit, op="operation"):
    """One row per traced mode: the rate ratio, BPF ns per operation, per program."""
    print(f"| mode | {rate} ratio (median) | min-max | {unit} | per program (ns per run x runs per {op}) |")
    print("|---|---|---|---|---|")
    for m in ratios:
        if m == "none":
            continue
        r = ratios[m]
        print(f"| {m} | {median(r):.3f} | {min(r):.3f}-{max(r):.3f} | {median(ns[m]):.0f} | {fmt_progs(per_prog[m])} |")


def floor_with_clocks(ns_empty, per_prog_floor, clock_ns):
    """The floor of exact timing at a set of hooks, per I/O: their empty
    programs, plus one clock read per run of each hook that timestamps (every
    one but sched_switch/sched_wakeup, which read the clock only for a thread
    inside a timed syscall: counted as none, so this floor is a lower bound)."""
    stamps = sum(median([b for _, b in v]) for name, v in per_prog_floor.items()
                 if not is_clock_probe(name) and "sched_" not in name)
    return ns_empty + stamps * clock_ns, stamps


def floor_of_hooks(per_prog_floor, hooks, clock_ns):
    """The floor of exact timing at some of the floor tracer's hooks (each
    timestamping once per run), per I/O: for a peer that uses only those."""
    total = 0.0
    for hook in hooks:
        runs = per_prog_floor.get("floor_" + hook)
        if not runs:
            return float("nan")
        per_io = median([b for _, b in runs])
        total += median([x for x, _ in runs]) * per_io + per_io * clock_ns
    return total


def goal_row(what, value, op, goal, unit=" x"):
    met = value <= goal if op == "<=" else value >= goal
    print(f"| {what} {op} {goal:g}{unit.strip() and ' ' + unit.strip()} | {value:.2f}{unit} | {'met' if met else '**not met**'} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.normpath(os.path.join(HERE, "../../build")))
    ap.add_argument("--rounds", type=int, default=8, help="rounds with BPF stats off (IOPS ratios)")
    ap.add_argument("--stats-rounds", type=int, default=3, help="rounds with BPF stats on (ns per I/O)")
    ap.add_argument("--runtime", type=int, default=3, help="seconds of fio per mode and round")
    ap.add_argument("--peer-dir", default=None, help="where to build biolatency (default BUILD/anchors)")
    ap.add_argument("--skip", default="", help="comma list of sections to skip: a,b,c,startup")
    results_option(ap, "overhead")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (BPF, losetup, mount, sysctl)")
    # rules and playbooks from this checkout, whatever is installed elsewhere
    os.environ.setdefault("IODIAG_DATA_DIR", os.path.normpath(os.path.join(HERE, "../..")))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)
    biolatency = biolatency_binary(a.peer_dir or os.path.join(a.build, "anchors"))
    skip = set(a.skip.split(","))
    tee_stdout("overhead", a.results)

    print(f"`tests/bench/overhead.py --rounds {a.rounds} --stats-rounds {a.stats_rounds} --runtime {a.runtime}"
          f"{' --skip ' + a.skip if a.skip else ''}`; load average at the start {loadavg()}.")
    old_stats = sh("sysctl -n kernel.bpf_stats_enabled").strip()
    imgs, devs, mnts = [], [], []
    try:
        def loop(size_mb):
            img = tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iodiag-bench-", delete=False)
            img.truncate(size_mb << 20)
            img.close()
            imgs.append(img.name)
            dev = sh(f"losetup -f --show {img.name}").strip()
            devs.append(dev)
            return dev
        if "a" not in skip:
            print("\nworkload A: fio 4 KiB randread, io_uring, direct, QD 32, loop device over /dev/shm")
            res_a = workload_a(a, loop(512), biolatency)
        def ext4_on_loop(size_mb):
            dev = loop(size_mb)
            mnt = tempfile.mkdtemp(prefix="iodiag-bench-mnt-")
            sh(f"mkfs.ext4 -qF {dev} && mount {dev} {mnt}")
            mnts.append(mnt)
            return mnt
        if "b" not in skip:
            print("\nworkload B: fio 4 KiB pread/pwrite 70/30, psync, cached file on ext4 (loop over /dev/shm)")
            res_b = workload_b(a, ext4_on_loop(256))
        if "c" not in skip:
            print("\nworkload C: fio 4 KiB random writes, each followed by fsync, psync, ext4 (loop over /dev/shm)")
            res_c = workload_c(a, ext4_on_loop(256), biolatency)
        if "startup" not in skip:
            set_stats(False)
            walls, cpus = startup(a)
    finally:
        sh(f"sysctl -qw kernel.bpf_stats_enabled={old_stats}")
        for m in mnts:
            subprocess.run(["umount", m], check=False)
            os.rmdir(m)
        for d in devs:
            subprocess.run(["losetup", "-d", d], check=False)
        for i in imgs:
            os.unlink(i)

    print(f"Load average at the end {loadavg()}.")
    goals = []   # rows of the goals table, filled by the sections below
    if "a" not in skip:
        ratios, base_iops, ns_io, per_prog, per_coll, rss, lost = res_a
        print(f"\nWorkload A (randread io_uring QD32): baseline {median(base_iops):.0f} IOPS "
             f"(rounds {min(base_iops):.0f}-{max(base_iops):.0f}); IOPS ratio: median of {a.rounds} rounds, stats off; "
             f"BPF ns per I/O: median of {a.stats_rounds} rounds, stats on\n")
        print_mode_table(ratios, ns_io, per_prog, "IOPS", "BPF ns per I/O", "I/O")
        bio = median(ns_io["biolatency"])
        clock = clock_read_ns(per_prog["floor block"])
        floor_block, stamps_block = floor_with_clocks(median(ns_io["floor block"]), per_prog["floor block"], clock)
        floor_all, stamps_all = floor_with_clocks(median(ns_io["floor all"]), per_prog["floor all"], clock)
        print(f"\nFloors of exact timing (empty programs on the same hooks, statistics included, plus one clock "
             f"read of {clock:.0f} ns per timestamp): the block collector's hooks {median(ns_io['floor block']):.0f} + "
             f"{stamps_block:.2f} x {clock:.0f} = {floor_block:.0f} ns per I/O; all collectors' hooks "
             f"{median(ns_io['floor all']):.0f} + {stamps_all:.2f} x {clock:.0f} = {floor_all:.0f} ns per I/O.")
        peer_floor = floor_of_hooks(per_prog["floor block"], ("block_rq_issue", "block_rq_complete"), clock)
        print(f"For scale, the peer over the floor of its own two hooks (block_rq_issue and block_rq_complete, "
             f"one timestamp each: {peer_floor:.0f} ns per I/O): biolatency {bio / peer_floor:.2f} x; keeping a "
             f"request's state from one hook to the next costs a map's lookups and stores that no empty program has.")
        print(f"Series drain: block+series - block = {median(ns_io['block+series']) - median(ns_io['block']):+.0f} "
             f"ns per I/O (budget < 50).")
        for c in ("block", "iouring", "syscall"):
            if c in per_coll["all"]:
                print(f"All collectors, the {c} collector's programs: {median(per_coll['all'][c]):.0f} ns per I/O.")
        block, whole = median(ns_io["block"]), median(ns_io["all"])
        goals += [("block collector / biolatency", block / bio, "<=", 1.0),
                  ("block collector / its hooks' floor", block / floor_block, "<=", 1.25),
                  ("all collectors / biolatency", whole / bio, "<=", 1.5),
                  ("all collectors / the floor of all their hooks", whole / floor_all, "<=", 1.3)]
        rss = [x for x in rss if x]
        if rss:
            print(f"iodiag's resident memory during workload A: {median(rss) / 1024:.1f} MiB "
                 f"(min-max {min(rss) / 1024:.1f}-{max(rss) / 1024:.1f}).")
            goals.append(("resident memory under load, MiB", median(rss) / 1024, "<=", 32))
        nonzero = [(e["collector"], e["what"], e["count"]) for run in lost for e in run if e.get("count")]
        print(f"Lost events in the 'all' rounds (iodiag's verdict, lost_events): "
             f"{nonzero if nonzero else 'none counted'} in {len(lost)} verdicts.")
    if "b" not in skip:
        print(f"\nWorkload B (cached 4 KiB pread/pwrite): ops/s ratio median of {a.rounds} rounds (stats off); "
             f"BPF ns per fio operation (every operation is a traced syscall) median of {a.stats_rounds} (stats on)\n")
        print_mode_table(*res_b, "ops/s", "BPF ns per traced syscall")
        print("\nfloor syscall: empty programs on the syscall collector's hooks (its syscalls' own enter/exit "
             "events, sched_switch, sched_wakeup); a traced syscall also reads the clock at both ends.")
    if "c" not in skip:
        print(f"\nWorkload C (4 KiB write + fsync): ops/s ratio median of {a.rounds} rounds (stats off); "
             f"BPF ns per fio write (with its fsync, journal commit and device writes) median of "
             f"{a.stats_rounds} (stats on)\n")
        print_mode_table(*res_c, "ops/s", "BPF ns per write+fsync")
        ns_op = res_c[1]
        print(f"\nBlock collector / biolatency on workload C: {median(ns_op['block']) / median(ns_op['biolatency']):.2f} x.")
    if "startup" not in skip:
        print(f"\n`iodiag --duration 1`, idle (no fio), 5 runs: wall median {median(walls):.2f} s "
             f"(min {min(walls):.2f}, max {max(walls):.2f}), CPU (user+sys) median {median(cpus):.2f} s.")
        goals.append(("`iodiag --duration 1` wall, s", median(walls), "<=", 1.15))
    if goals:
        print("\n| goal | measured | |\n|---|---|---|")
        for what, value, op, goal in goals:
            goal_row(what, value, op, goal, " x" if "/" in what else "")


if __name__ == "__main__":
    main()
