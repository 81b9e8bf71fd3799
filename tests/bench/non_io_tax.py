#!/usr/bin/env python3
"""What iodiag costs work that does no storage I/O, beside the peer and the floor.

A server spends most of its syscalls and context switches on futexes, epoll and
sockets. Three workloads measure what tracing costs them:
  syscall   `perf bench syscall basic`: a getppid() loop, time per call;
  switch    `perf bench sched pipe`: two tasks ping-pong through a pipe, time
            per round trip (context switches and wake-ups; its read/write
            syscalls are of a kind iodiag times, on a pipe, which it skips),
            both ends on one CPU (taskset): two switches per round trip;
  redis     redis-server on 127.0.0.1 under redis-benchmark (SET and GET, 20
            clients), requests per second (the best of a few runs).
Modes, in alternating rounds (the order reversed every other round) so drift on
a shared machine hits them alike, each round against its own untraced baseline:
  none        nothing traced
  biolatency  libbpf-tools biolatency (the peer; block tracepoints only)
  floor       empty programs on the hooks iodiag's syscall collector attaches
              (each timed syscall's own enter/exit event, sched_switch,
              sched_wakeup): what any tool pays there, before doing anything
  floor-sched empty programs on sched_switch and sched_wakeup alone: what
              every context switch and wake-up pays (perf bench sched pipe's
              reads and writes are timed syscalls and pay their events too)
  iodiag      the whole of `iodiag --duration N` (every collector)
  floor-raw   empty programs on raw_syscalls sys_enter/sys_exit + sched: the
              fallback attach, where per-syscall events are missing
  iodiag-raw  iodiag with that fallback forced (IODIAG_TEST_BPF_FAULTS makes
              syscalls:sys_enter_fsync look absent)
Each figure is the median over the rounds of mode / baseline, printed beside
its goal, in up to three forms: wall (what perf bench and redis-benchmark
report: time per operation, requests per second), cpu (the user + system time
of the benchmark's processes per operation; for redis the server's CPU time
per request, as the throughput it allows) and best (time per operation in the
fastest of many short batches, tests/bench/noniotax_probe.c): on a machine
shared with other work the last two measure the tax, the first one moves with
the others' load. Between modes the
tracer's whole process group is waited for: iodiag's per-syscall perf events
are closed by a child after iodiag exits, and until then every syscall of the
machine still takes the kernel's syscall-tracing path (that tail is printed).

The output also goes to docs/results/non-io-tax-<UTC time>-<host>.md (tests/bench/results_file.py;
--results DIR elsewhere, '' for none).

usage: sudo tests/bench/non_io_tax.py [--rounds 6] [--build DIR] [--modes none,biolatency,...]
(about 1 minute a round with every mode; takes the machine lock; needs
linux-perf, redis-server and redis-tools)
"""
import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_support import Tracer, biolatency_binary, hold_machine_lock, sh, stop_process  # noqa: E402
from results_file import results_option, tee_stdout  # noqa: E402

# Goals (issue 25): time per operation at most this many times the untraced
# one; the server's throughput at least this share of the untraced one.
GOALS = {"syscall": ("<=", 1.05), "switch": ("<=", 1.05), "redis": (">=", 0.95)}
WORKLOADS = {
    "syscall": "perf bench syscall basic: time per getppid()",
    "switch": "perf bench sched pipe: time per round trip (2 context switches)",
    "redis": "redis-server under redis-benchmark (SET, GET): requests per second",
}
ALL_MODES = ["none", "biolatency", "floor", "floor-sched", "iodiag", "floor-raw", "iodiag-raw"]


def exit_on_signal(signum, _frame):
    raise SystemExit(128 + signum)


# The pipe ping-pongs run with both ends on one CPU (the last): every round
# trip is then two context switches and wake-ups on that CPU. Left to the
# scheduler, the two ends sit on one CPU or on two (a cross-CPU wake-up), and
# which it picks moved with whatever else ran, tracers included, by more
# than the tax being measured (a tracer's own threads made the pair faster).
PIN = ["taskset", "-c", str(os.cpu_count() - 1)]


def perf_per_op(args, loops, pin=()):
    """(wall, CPU) seconds per loop of `perf bench -f simple ARGS -l LOOPS`: its
    own total time, and the user + system time of perf and the children it
    waited for (sched pipe's other end)."""
    p = subprocess.Popen([*pin, "perf", "bench", "-f", "simple", *args.split(), "-l", str(loops)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"perf bench {args} exited {os.waitstatus_to_exitcode(status)}")
    return float(out.split()[-1]) / loops, (ru.ru_utime + ru.ru_stime) / loops


def cpu_seconds(pid):
    """Seconds on a CPU of process `pid`'s main thread so far (schedstat: the
    scheduler's own nanoseconds, not 10 ms ticks); redis-server serves its
    clients on that thread."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) * 1e-9


class Redis:
    """redis-server on 127.0.0.1, no persistence (nothing on disk), stopped by pid."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.p = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--daemonize", "no", "--logfile", "", "--dir", "/tmp"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                if sh(f"redis-cli -h 127.0.0.1 -p {self.port} ping").strip() == "PONG":
                    return
            except subprocess.CalledProcessError:
                pass
            if self.p.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.p.returncode}")
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("redis-server did not answer PING within 15 s")

    def run(self, requests, repeats):
        """(requests per second, the server's CPU seconds per request) of SET
        and GET, the best of `repeats` runs: how many requests a 20-client
        load gets through, and what each costs the server, vary with how its
        event loop batches them, which moves with whatever else runs; the
        best run is the least disturbed one."""
        best_rps, best_cpu = 0.0, float("inf")
        for _ in range(repeats):
            cpu0 = cpu_seconds(self.p.pid)
            out = sh(f"redis-benchmark -h 127.0.0.1 -p {self.port} -n {requests} -c 20 -t set,get --csv")
            cpu = cpu_seconds(self.p.pid) - cpu0
            rps = [float(line.split(",")[1].strip('"')) for line in out.splitlines()[1:] if line.count(",") >= 1]
            best_rps, best_cpu = max(best_rps, statistics.mean(rps)), min(best_cpu, cpu / (2 * requests))
        return best_rps, best_cpu

    def stop(self):
        stop_process(self.p)


def tracers(build, biolatency):
    floor = f"{build}/iodiag_bench_hook_floor"
    iodiag = [f"{build}/iodiag", "--duration", "600", "--format", "json"]
    raw_env = dict(os.environ, IODIAG_TEST_BPF_FAULTS="tracepoint:sys_enter_fsync")
    return {
        "biolatency": lambda: Tracer([biolatency], 2),
        "floor": lambda: Tracer([floor, "--group", "syscall-events", "--group", "sched"], 4),
        "floor-sched": lambda: Tracer([floor, "--group", "sched"], 2),
        "iodiag": lambda: Tracer(iodiag, 30),
        "floor-raw": lambda: Tracer([floor, "--group", "syscall-raw", "--group", "sched"], 4),
        "iodiag-raw": lambda: Tracer(iodiag, 30, env=raw_env),
    }


def best_batch(build, what, pin=()):
    """Seconds per operation in the fastest batch (tests/bench/noniotax_probe.c)."""
    return float(sh(" ".join([*pin, f"{build}/iodiag_bench_noniotax_probe", what])).split()[0]) * 1e-9


def measure(a, redis):
    """Each workload's figures. wall: what perf bench / redis-benchmark report
    (seconds per operation; requests per second); cpu: user + system time of
    the benchmark's processes per operation (redis: the server's per request);
    best: seconds per operation in the fastest of many short batches (the
    operation's own cost where the machine is shared)."""
    wall, cpu = perf_per_op("syscall basic", a.syscall_loops)
    syscall = {"wall": wall, "cpu": cpu, "best": best_batch(a.build, "getppid")}
    wall, cpu = perf_per_op("sched pipe", a.pipe_loops, PIN)
    switch = {"wall": wall, "cpu": cpu, "best": best_batch(a.build, "pipe", PIN)}
    rps, cpu = redis.run(a.redis_requests, a.redis_repeats)
    return {"syscall": syscall, "switch": switch, "redis": {"wall": rps, "cpu": cpu}}


def ratio(w, fig, mode_v, none_v):
    """Mode over baseline as the goal reads it: time per operation for the
    loops; for redis the throughput, and the server's capacity (the inverse of
    its CPU time per request)."""
    if w == "redis" and fig == "cpu":
        return none_v / mode_v
    return mode_v / none_v


def run(a, modes, redis):
    start = tracers(a.build, biolatency_binary(a.peer_dir or os.path.join(a.build, "anchors")))
    ratios = {m: {w: {} for w in WORKLOADS} for m in modes}   # [mode][workload][figure] -> per round
    base = {w: {} for w in WORKLOADS}
    released = {m: [] for m in modes}
    for r in range(a.rounds):
        order = modes if r % 2 == 0 else modes[::-1]
        got = {}
        for mode in order:
            t = start[mode]() if mode != "none" else None
            try:
                if t:
                    time.sleep(1)   # past the tracer's start (iodiag: its window is open)
                got[mode] = measure(a, redis)
            finally:
                if t:
                    t.stop(signal.SIGINT)
                    released[mode].append(t.released_s)
            g = got[mode]
            print(f"  round {r + 1}/{a.rounds} {mode:10s} getppid {g['syscall']['wall'] * 1e9:.0f} ns "
                  f"(CPU {g['syscall']['cpu'] * 1e9:.0f}, best {g['syscall']['best'] * 1e9:.0f})  pipe "
                  f"{g['switch']['wall'] * 1e6:.2f} us (CPU {g['switch']['cpu'] * 1e6:.2f}, best "
                  f"{g['switch']['best'] * 1e6:.2f})  redis {g['redis']['wall']:.0f}/s (server CPU "
                  f"{g['redis']['cpu'] * 1e6:.1f} us/request)", flush=True)
        for w in WORKLOADS:
            for fig, v in got["none"][w].items():
                base[w].setdefault(fig, []).append(v)
                for m in modes:
                    ratios[m][w].setdefault(fig, []).append(ratio(w, fig, got[m][w][fig], v))
    return ratios, base, released


def cell(w, values):
    """median (min-max) and whether it meets the goal."""
    op, goal = GOALS[w]
    med = statistics.median(values)
    met = med <= goal if op == "<=" else med >= goal
    return f"{med:.3f} ({min(values):.3f}-{max(values):.3f}) {'met' if met else '**not met**'}"


FIGURES = [("syscall", "wall"), ("syscall", "cpu"), ("syscall", "best"), ("switch", "wall"), ("switch", "cpu"),
           ("switch", "best"), ("redis", "wall"), ("redis", "cpu")]


def report(a, modes, ratios, base, released, load0, load1):
    lines = [f"`tests/bench/non_io_tax.py --rounds {a.rounds}`: load average {load0} at the start, {load1} at "
             f"the end. Each figure: the median over {a.rounds} alternating rounds of the mode's figure over "
             f"the same round's untraced one (min-max in brackets), beside its goal ({', '.join(f'{w} {o} {g:.2f}' for w, (o, g) in GOALS.items())}). "
             f"wall: what perf bench and redis-benchmark report; cpu: user + system time of the benchmark's "
             f"processes (redis: the server's CPU time per request, as the throughput it allows); best: the "
             f"fastest of many short batches (tests/bench/noniotax_probe.c). On a machine shared with other "
             f"work, cpu and best measure the tax; wall moves with the others' load.", ""]
    lines.append("| mode | " + " | ".join(f"{w} {fig}" for w, fig in FIGURES) + " | perf events closed after exit (s) |")
    lines.append("|---|" + "---|" * len(FIGURES) + "---|")
    for m in modes:
        if m == "none":
            continue
        rel = f"{statistics.median(released[m]):.2f}" if released[m] else "-"
        lines.append(f"| {m} | " + " | ".join(cell(w, ratios[m][w][fig]) for w, fig in FIGURES) + f" | {rel} |")
    med = {(w, fig): statistics.median(v) for w in WORKLOADS for fig, v in base[w].items()}
    lines.append("")
    lines.append(f"Untraced (medians): getppid() {med['syscall', 'wall'] * 1e9:.0f} ns wall, "
                 f"{med['syscall', 'cpu'] * 1e9:.0f} ns CPU, {med['syscall', 'best'] * 1e9:.0f} ns best; pipe round "
                 f"trip {med['switch', 'wall'] * 1e6:.2f} us wall, {med['switch', 'cpu'] * 1e6:.2f} us CPU, "
                 f"{med['switch', 'best'] * 1e6:.2f} us best; redis {med['redis', 'wall']:.0f} requests/s, server "
                 f"{med['redis', 'cpu'] * 1e6:.1f} us CPU per request.")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.normpath(os.path.join(HERE, "../../build")))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--modes", default=",".join(ALL_MODES), help="comma list, 'none' always included")
    ap.add_argument("--syscall-loops", type=int, default=500000)
    ap.add_argument("--pipe-loops", type=int, default=50000)
    ap.add_argument("--redis-requests", type=int, default=20000, help="per redis-benchmark run (SET and GET each)")
    ap.add_argument("--redis-repeats", type=int, default=3, help="redis-benchmark runs per mode and round (the best counts)")
    ap.add_argument("--peer-dir", default=None, help="where to build biolatency (default BUILD/anchors)")
    results_option(ap, "non-io-tax")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (BPF)")
    for tool in ("perf", "redis-server", "redis-benchmark", "redis-cli"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
            sys.exit(f"{tool} not found (Debian: linux-perf, redis-server, redis-tools; the test command, .ci/test, installs them)")
    modes = ["none"] + [m for m in a.modes.split(",") if m in ALL_MODES and m != "none"]
    os.environ.setdefault("IODIAG_DATA_DIR", os.path.normpath(os.path.join(HERE, "../..")))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    _lock = hold_machine_lock()  # noqa: F841 (held until exit)
    tee_stdout("non-io-tax", a.results)
    with open("/proc/loadavg") as f:
        load0 = " ".join(f.read().split()[:3])
    redis = Redis()
    try:
        ratios, base, released = run(a, modes, redis)
    finally:
        redis.stop()
    with open("/proc/loadavg") as f:
        load1 = " ".join(f.read().split()[:3])
    text = report(a, modes, ratios, base, released, load0, load1)
    print("\n" + text)


if __name__ == "__main__":
    main()
