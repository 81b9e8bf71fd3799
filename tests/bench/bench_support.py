"""Shared by the benchmarks: shell helper, timed runs, machine lock, BPF run-time statistics."""
import ctypes
import fcntl
import json
import os
import statistics
import subprocess
import sys
import time


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
