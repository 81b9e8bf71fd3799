"""Shared by the benchmarks: shell helper, timed runs, machine lock, BPF run-time
statistics, the peer (libbpf-tools biolatency) and tracers started per round."""
import ctypes
import fcntl
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, text=True, capture_output=True, **kw).stdout


def timed(cmd, runs):
    """(wall, cpu) of `runs` runs, each (median, min, max) in ms. CPU time
    (user + system, from the child's rusage) is the figure that does not
    depend on how many others share the machine's cores."""
    walls, cpus = [], []
    for _ in range(runs):
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        walls.append((time.monotonic() - t0) * 1000)
        cpus.append((ru.ru_utime + ru.ru_stime) * 1000)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(cmd)} exited {os.waitstatus_to_exitcode(status)}")
    return ((statistics.median(walls), min(walls), max(walls)),
            (statistics.median(cpus), min(cpus), max(cpus)))


def require_root_and_builds(builds, binary, why_root, hint=""):
    """Exits with the reason unless this runs as root and every build folder
    of an A/B comparison holds `binary`."""
    if os.geteuid() != 0:
        sys.exit(f"needs root ({why_root})")
    for b in builds:
        if not os.access(os.path.join(b, binary), os.X_OK):
            sys.exit(f"{b}/{binary} not found{hint}")


def hold_machine_lock():
    """The machine-wide lock the live tests and the lab take: a benchmark must
    not run beside a test that changes sysctls or loads the disk. Held until
    the process exits (the returned file must stay referenced)."""
    if os.environ.get("IODIAG_LIVE_LOCK_HELD") == "1":
        return None
    f = open("/run/lock/iodiag-live.lock", "w")
    fcntl.flock(f, fcntl.LOCK_EX)
    os.environ["IODIAG_LIVE_LOCK_HELD"] = "1"
    return f


def stop_process(proc, timeout=30):
    """Stops a process we started, by its PID: SIGTERM, then SIGKILL after
    `timeout` seconds. Its exit status is left in proc.returncode."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def hold_bpf_stats():
    """BPF_ENABLE_STATS: run-time stats stay on while this fd is open, whatever
    others do with the kernel.bpf_stats_enabled sysctl meanwhile."""
    libc = ctypes.CDLL(None, use_errno=True)
    nr_bpf = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
    attr = ctypes.create_string_buffer(16)   # enable_stats.type = BPF_STATS_RUN_TIME (0)
    fd = libc.syscall(nr_bpf, 32, attr, 16) if nr_bpf else -1   # 32 = BPF_ENABLE_STATS
    return fd


def prog_stats(pid):
    """bpftool's view (run_time_ns, run_cnt) of the BPF programs held open by process `pid`."""
    progs = json.loads(sh("bpftool prog show --json") or "[]")
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return [p for p in progs if p["id"] in ids]


# The peers live outside the repository, next to it (../shared/anchors from a
# checkout's root) or where IODIAG_ANCHORS says.
ANCHORS = [os.environ.get("IODIAG_ANCHORS", ""), os.path.join(HERE, "../../../shared/anchors"),
           "/work/shared/anchors"]


def biolatency_build_script():
    for d in ANCHORS:
        script = os.path.join(d, "libbpf-tools-biolatency/build.sh") if d else ""
        if script and os.access(script, os.X_OK):
            return script
    sys.exit("libbpf-tools-biolatency/build.sh not found in " + ", ".join(d for d in ANCHORS if d) +
             " (set IODIAG_ANCHORS to the anchors folder)")


def biolatency_binary(peer_dir):
    """libbpf-tools biolatency in peer_dir, built there from the unmodified sources first if missing."""
    biolatency = os.path.join(peer_dir, "biolatency")
    if not os.access(biolatency, os.X_OK):
        sh(f"{biolatency_build_script()} {peer_dir}")
    return biolatency


def group_alive(pgid):
    """Whether any live process of process group `pgid` is still there (a
    zombie's descriptors are closed already: it does not count)."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may hold spaces: the fields after it (state, ppid, pgrp) start after the last ')'
        state, _, pgrp = stat[stat.rindex(")") + 2:].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            return True
    return False


class Tracer:
    """A tracing process started for one round in a session of its own, stopped
    by pid on every path. stop() also waits for what it left behind in its
    process group: iodiag hands its per-syscall perf events to a child that
    closes them after iodiag's exit (collectors/bpf/deferred_release.hpp), and
    until they are closed every syscall still takes the kernel's tracing path,
    which the next mode must not pay. `released_s`: how long that took."""

    def __init__(self, argv, ready_progs=1, wait_s=15, env=None):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  start_new_session=True, env=env)
        self.released_s = 0.0
        deadline = time.time() + wait_s
        last = -1
        while time.time() < deadline:   # attached when its programs stop appearing
            if self.p.poll() is not None:
                raise RuntimeError(f"{argv[0]} exited early with {self.p.returncode}")
            n = len(prog_stats(self.p.pid))
            if n >= ready_progs and n == last:
                break
            last = n
            time.sleep(0.5)

    def stats(self):
        return {x["id"]: x for x in prog_stats(self.p.pid)}

    def rss_kib(self):
        try:
            with open(f"/proc/{self.p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            os.killpg(self.p.pid, sig)
        try:
            out, _ = self.p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            out, _ = self.p.communicate()
        t0 = time.time()
        while group_alive(self.p.pid) and time.time() - t0 < 30:
            time.sleep(0.05)
        self.released_s = time.time() - t0
        return out


def one_run(build):
    """Wall and CPU seconds of one run, from exec to iodiag's exit. What it left
    in its process group (the child that closes its per-syscall perf events
    after its exit, collectors/bpf/deferred_release.hpp) is waited for before
    the next run, outside the timing: until it is gone, every syscall still
    takes the kernel's tracing path and the next start would share the
    kernel's event mutex with its closes."""
    t0 = time.time()
    r0 = os.times()
    p = subprocess.Popen([f"{build}/iodiag", "--duration", "1"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    p.wait()
    wall = time.time() - t0
    r1 = os.times()
    while group_alive(p.pid) and time.time() - t0 < 60:
        time.sleep(0.05)
    return wall, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
