"""The ground truth of one accuracy-matrix run, read from tests/lab/ground_truth.bt's
output (bpftrace on tracepoints, nothing of iodiag's collectors): the victims'
syscall time and how much of it each mechanism took.

Mechanisms, as shares of the victims' traced syscall time (a view: all of it,
or only the syscalls at or above a threshold, see view()):
  device  their own requests' device service time (D2C)
  queue   their own requests' time in the block layer before the device (Q2C - D2C)
  cpu     run-queue delay inside their syscalls
  lock    sleeping-lock waits (less the run-queue delay after the hand-over)
  dirty   balance_dirty_pages pauses
  held    direct I/O held above the block layer: syscall time neither in their
          requests' block time nor on the run queue (a blk-throttle limit)
  fsync   fsync/fdatasync time less its run-queue delay (the journal commit and
          the I/O it carries, as one chain)
With neighbors=True (the contention classes, issue 23) the waits for a shared
resource are split by whose use of it they waited behind:
  neighbor  the victims' wait for their requests (Q2C less the run-queue delay
            inside it, which is the CPU's) x the others' share of
            the device's service time while a victim request was in flight
            (@w_o_d2c / @w_all_d2c), plus their run-queue delay x the others'
            share of the time that ran on a CPU while a victim waited on it
            (@w_rq_ran other / all); neighbor_device and neighbor_cpu are the
            two parts
  neighbor_journal  their fsync chain beyond 100/slowdown % of their time (the
            part of a commit chain the neighbor's data made them wait for)
  device, queue, cpu  what is left of them: the victims' own load, which cannot
            take more of the faulted time than 1/slowdown (the victims' whole
            time per syscall unfaulted, against the same operations): where the
            split leaves them more, the excess is the neighbor's too. The split
            alone credits a victim with its share of a device the neighbor kept
            busy (neighbor_buffered 141002: the readers' "own" part 35 % of their
            faulted time, 5.7x their whole time unfaulted).
"""
import json
import os

# x86-64 syscall numbers in ground_truth.bt's @nr_ns
NR_PREAD64, NR_PWRITE64, NR_FSYNC, NR_FDATASYNC = "17", "18", "74", "75"


def parse_bpftrace_json(path):
    maps = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec.get("type") == "map":
                maps.update(rec["data"])
    return maps


def total(m):
    return float(sum(m.values())) if isinstance(m, dict) else float(m or 0)


def sys_ns(gt):
    return float(gt.get("@sys_ns", 0) or 0)


def share(part, gt):
    s = sys_ns(gt)
    return None if s <= 0 else max(0.0, min(100.0, 100.0 * part / s))


def rq_of(gt, *nrs):
    return sum(float(gt.get("@rq_nr", {}).get(n, 0)) for n in nrs)


# Who else used what the victims waited for (ground_truth.bt's contention
# maps): measured over the whole window, carried into every view.
NEIGHBOR_KEYS = ("@w_all_d2c", "@w_o_d2c", "@w_o_by_comm", "@w_rq_ran", "@w_rq_by_comm", "@w_o_cg")


def neighbors(gt):
    """The others' share (0..1) of the device time and of the CPU time the
    victims waited behind, and the command that held most of each: (device
    fraction, device command, CPU fraction, CPU command). Kernel threads that
    ran while a victim waited for a CPU are in the whole, nobody's; the
    writeback flusher's requests are the others' (a kworker)."""
    w_all, w_o = total(gt.get("@w_all_d2c", {})), total(gt.get("@w_o_d2c", {}))
    ran = gt.get("@w_rq_ran", {})
    ran_all = total(ran)
    top = lambda m: max(m, key=lambda c: float(m[c]), default="") if isinstance(m, dict) else ""
    return (w_o / w_all if w_all > 0 else 0.0, top(gt.get("@w_o_by_comm", {})),
            float(ran.get("other", 0)) / ran_all if ran_all > 0 else 0.0, top(gt.get("@w_rq_by_comm", {})))


def view(gt, threshold_us):
    """The ground truth over the victims' syscalls at or above threshold_us (a
    power of two, rounded down as iodiag's slow set is), in the keys of the
    all-syscalls maps. None when the victims had no syscall that slow."""
    k = 0
    while threshold_us and (1 << (k + 1)) <= threshold_us and k < 22:
        k += 1
    key = str(k)
    total_ns = float(gt.get("@s_sys", {}).get(key, 0))
    if total_ns <= 0:
        return None
    per_nr = {kk.split(",")[1]: v for kk, v in gt.get("@s_nr", {}).items() if kk.split(",")[0] == key}
    rq_nr = {kk.split(",")[1]: v for kk, v in gt.get("@s_rq_nr", {}).items() if kk.split(",")[0] == key}
    one = lambda name: float(gt.get(name, {}).get(key, 0))
    return {"@sys_ns": total_ns, "@nr_ns": per_nr, "@rq_nr": rq_nr, "@dirty_ns": one("@s_dirty"),
            "@lock_ns": one("@s_lock"), "@rq_ns": one("@s_rq"), "@v_d2c_ns": {"victims": one("@s_d2c")},
            "@v_q2c_ns": {"victims": one("@s_q2c")}, "@v_i2d_ns": {"victims": one("@s_i2d")},
            "@sync_ns": float(per_nr.get(NR_FSYNC, 0)) + float(per_nr.get(NR_FDATASYNC, 0)),
            **{k: gt[k] for k in NEIGHBOR_KEYS if k in gt}}


def everything(gt):
    """All of the victims' syscalls (1 us and more), with the same per-syscall
    attribution as the thresholded views."""
    return view(gt, 1.0) or gt


def mechanisms(gt, split_neighbors=False, slowdown=None):
    """Each mechanism's share of the view's syscall time (None when unmeasured);
    with split_neighbors, the device, queue and CPU waits split into the
    others' part (neighbor) and the victims' own, the own part capped by the
    victims' slowdown against their unfaulted run where it is known (see the
    module's text)."""
    d2c, q2c = total(gt.get("@v_d2c_ns", {})), total(gt.get("@v_q2c_ns", {}))
    rq = float(gt.get("@rq_ns", 0) or 0)
    dirty, lock = float(gt.get("@dirty_ns", 0) or 0), float(gt.get("@lock_ns", 0) or 0)
    sync = float(gt.get("@sync_ns", 0) or 0)
    dev_f, _, cpu_f, _ = neighbors(gt) if split_neighbors else (0.0, "", 0.0, "")
    # Split, the wait for the device is what is left of Q2C besides the
    # run-queue delay inside it (a task woken when a tag frees waits for a CPU
    # before its bio gets a request): each part counted once.
    wait = min(q2c, max(0.0, sys_ns(gt) - rq)) if split_neighbors else q2c
    m = {
        "device": share(min(d2c, wait) * (1 - dev_f), gt),
        "queue": share(max(0.0, wait - d2c) * (1 - dev_f), gt),
        "cpu": share(rq * (1 - cpu_f), gt),
        "lock": share(lock, gt),
        "dirty": share(dirty, gt),
        "held": share(max(0.0, sys_ns(gt) - q2c - rq - dirty - lock), gt),
        "fsync": share(max(0.0, sync - rq_of(gt, NR_FSYNC, NR_FDATASYNC)), gt),
    }
    if split_neighbors:
        m["neighbor_device"], m["neighbor_cpu"] = share(wait * dev_f, gt), share(rq * cpu_f, gt)
        m["neighbor_journal"] = journal_excess(m["fsync"], slowdown)
        cap_own_part(m, slowdown)
        m["neighbor"] = (m["neighbor_device"] or 0) + (m["neighbor_cpu"] or 0) \
            if m["neighbor_device"] is not None else None
    return m


def journal_excess(fsync, slowdown):
    """The neighbor's part of the victims' fsync chain: what it took beyond
    100/slowdown % of their time. Unfaulted, their whole time per syscall was
    that; the only difference is the neighbor, whose data the commits carried
    (a journal commit is one chain, not split by whose blocks it writes, so
    the device split cannot say it). None where the slowdown is not known."""
    if fsync is None or not slowdown or slowdown <= 1:
        return None
    return max(0.0, fsync - 100.0 / slowdown)


def cap_own_part(m, slowdown):
    """Moves what the split left as the victims' own device, queue and CPU wait
    beyond 100/slowdown % of their time to the neighbor's part of the same
    resource, in proportion (see the module's text)."""
    own = {k: m.get(k) or 0.0 for k in ("device", "queue", "cpu")}
    total_own = sum(own.values())
    if not slowdown or slowdown <= 1 or m.get("neighbor_device") is None or total_own <= 100.0 / slowdown:
        return
    keep = (100.0 / slowdown) / total_own
    for k, v in own.items():
        m[k] = v * keep
        to = "neighbor_cpu" if k == "cpu" else "neighbor_device"
        m[to] = (m[to] or 0.0) + v * (1 - keep)


def mean_latency_us(gt):
    """The victims' mean traced syscall duration, or None."""
    ops = float(gt.get("@sys_ops", 0) or 0)
    return None if ops <= 0 else sys_ns(gt) / ops / 1000.0


def weigh_by_service(gt, cap_mbps, per_request_ms=0.1):
    """On the lab's capped volume (slowfs cap:MBPS) a request's service time
    is known: per_request_ms plus its size at the cap. Its D2C is not: the
    volume serves one request at a time in arrival order, so a victim's D2C
    is mostly its wait for the requests ahead of it, and the D2C split put
    that wait on the victim (a fio reader 23x slower behind a writer's 256
    KiB requests: neighbor 49 %). Rewrites the device split's totals
    (@w_all_d2c, @w_o_d2c) as the service of the requests completed while a
    victim's was in flight, all and the others'; other keys are unchanged.
    Returns gt (a copy) unchanged where the sizes were not recorded."""
    if "@w_all_sectors" not in gt:
        return gt
    service = lambda n, sectors: 1e6 * per_request_ms * float(n) + 1e9 * float(sectors) * 512 / (cap_mbps * 1e6)
    out = dict(gt)
    for dev_key, n_key, s_key in (("@w_all_d2c", "@w_all_n", "@w_all_sectors"), ("@w_o_d2c", "@w_o_n", "@w_o_sectors")):
        out[dev_key] = {d: service(gt.get(n_key, {}).get(d, 0), sec) for d, sec in gt.get(s_key, {}).items()}
    return out


# ---- per process (issue 33): which victims the fault slowed, and who loaded the resource ----

# Kernel-queued requests (the flusher, jbd2) in ground_truth.bt's per-pid maps.
KERNEL_PID = "-1"
# A victim process must hold this part of the victims' traced time: a
# PostgreSQL checkpointer's one slow fsync does not make it who suffered.
VICTIM_MIN_PART = 0.05


def read_procs(path):
    """tests/lab/procs.py's sample of a run: {pid: {comm, cmdline, cgroup}}."""
    procs = {}
    if not os.path.exists(path):
        return procs
    with open(path) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue   # the sampler was killed mid-line
            procs.setdefault(rec["pid"], rec)
    return procs


def unfinished(gt):
    """The victims' syscalls in progress when the window ended, per process:
    {pid: (ns so far, of which in fsync/fdatasync, count)}. A commit blocked
    behind a bulk writer for the whole window never exits; without these its
    process would look fast (the few calls it finished)."""
    end = float(gt.get("@end_ns", 0) or 0)
    out = {}
    for tid, start in gt.get("@in", {}).items():
        pid = str(gt.get("@in_pid", {}).get(tid, ""))
        if not pid or not end:
            continue
        d = max(0.0, end - float(start))
        sync = d if str(gt.get("@nr", {}).get(tid)) in (NR_FSYNC, NR_FDATASYNC) else 0.0
        ns, s_ns, n = out.get(pid, (0.0, 0.0, 0))
        out[pid] = (ns + d, s_ns + sync, n + 1)
    return out


def process_totals(gt):
    """{pid: (syscall ns, ops)} of the victims' processes, with their unfinished syscalls."""
    tot = {pid: (float(gt.get("@p_ns", {}).get(pid, 0)), float(n)) for pid, n in gt.get("@p_ops", {}).items()}
    for pid, (ns, _, n) in unfinished(gt).items():
        t_ns, t_ops = tot.get(pid, (0.0, 0.0))
        tot[pid] = (t_ns + ns, t_ops + n)
    return tot


def process_view(gt, pid):
    """One victim process's syscalls in the keys of view() (the neighbor maps
    are the devices' and CPUs', shared by every victim), with its unfinished
    ones (their time unattributed but an fsync's, which is the fsync chain's)."""
    one = lambda name: float(gt.get(name, {}).get(pid, 0))
    late, late_sync, late_n = unfinished(gt).get(pid, (0.0, 0.0, 0))
    sync = one("@p_sync") + late_sync
    return {"@sys_ns": one("@p_ns") + late, "@sys_ops": one("@p_ops") + late_n, "@nr_ns": {NR_FSYNC: sync},
            "@rq_nr": {NR_FSYNC: one("@p_sync_rq")}, "@rq_ns": one("@p_rq"), "@dirty_ns": one("@p_dirty"),
            "@lock_ns": one("@p_lock"), "@v_d2c_ns": {"victims": one("@p_d2c")},
            "@v_q2c_ns": {"victims": one("@p_q2c")}, "@sync_ns": sync,
            **{k: gt[k] for k in NEIGHBOR_KEYS if k in gt}}


def app_means(gt, procs):
    """Mean traced syscall latency (us) per command of the victims' processes:
    the unfaulted run's processes are others (new pids), the same program."""
    ns, ops = {}, {}
    for pid, (p_ns, n) in process_totals(gt).items():
        comm = procs.get(pid, {}).get("comm", "")
        ns[comm] = ns.get(comm, 0.0) + p_ns
        ops[comm] = ops.get(comm, 0.0) + n
    return {c: ns[c] / ops[c] / 1000.0 for c in ns if ops[c] > 0}


def victims(gt, procs, base, base_procs):
    """The victim processes of a faulted run: each of the victims' cgroup's
    processes with a material part of their time, its slowdown (its mean
    syscall latency against its program's in the unfaulted run; the whole
    group's where the program was not seen there). A list of {pid, comm,
    cmdline, slowdown, part}; the fault slowed those with slowdown >= 1.5."""
    totals = process_totals(gt)
    total_ns = sum(ns for ns, _ in totals.values())
    if total_ns <= 0:
        return []
    base_by_comm, base_all = app_means(base, base_procs), mean_latency_us(base)
    out = []
    for pid, (p_ns, n) in totals.items():
        if p_ns < VICTIM_MIN_PART * total_ns or n <= 0:
            continue
        info = procs.get(pid, {})
        ref = base_by_comm.get(info.get("comm", "")) or base_all
        mean = p_ns / n / 1000.0
        out.append({"pid": pid, "comm": info.get("comm", ""), "cmdline": info.get("cmdline", ""),
                    "slowdown": mean / ref if ref else None, "part": p_ns / total_ns})
    return sorted(out, key=lambda v: -v["part"])


def bdi_of(dev):
    """A block tracepoint's dev_t (MAJOR << 20 | MINOR) as a bdi's name."""
    d = int(dev)
    return f"{d >> 20}:{d & 0xfffff}"


def culprit(gt, procs, cpu=False):
    """The process that loaded what the victims waited for: on the CPUs (cpu),
    the one that ran most while a victim waited for one; else on the
    victims' devices, the one whose requests held the most device time while
    a victim's request was in flight (over the whole window if none was),
    the kernel threads' part (the flusher's, the journal's) counted for the
    processes whose data they wrote, in proportion to the folios each dirtied
    on those devices; the processes of one command line together. {pid,
    comm, cmdline, part} or None: its heaviest process, and the command
    line's share of the others' load."""
    if cpu:
        load = {p: float(v) for p, v in gt.get("@w_rq_by_pid", {}).items()}
    else:
        load = {p: float(v) for p, v in (gt.get("@w_o_by_pid") or gt.get("@o_d2c_by_pid") or {}).items()}
        kernel = load.pop(KERNEL_PID, 0.0)
    # A victim is no culprit: its bios queued outside a traced syscall (one in
    # flight when the probes attached) are "others'" to ground_truth.bt.
    for pid in process_totals(gt):
        load.pop(pid, None)
    if not cpu:
        bdis = {bdi_of(d) for d in gt.get("@v_rqs", {})}
        dirtied = {}
        for key, n in gt.get("@o_dirtied", {}).items():
            pid, _, bdi = key.partition(",")
            if bdi in bdis:
                dirtied[pid] = dirtied.get(pid, 0.0) + float(n)
        all_dirtied = sum(dirtied.values())
        for pid, n in dirtied.items():
            load[pid] = load.get(pid, 0.0) + kernel * n / all_dirtied
    whole = sum(load.values())
    if whole <= 0:
        return None
    # One command line is one culprit: a shell loop's dd is a new process each
    # pass, fio's jobs are processes; its heaviest process stands for it.
    groups = {}
    for pid, v in load.items():
        key = procs.get(pid, {}).get("cmdline") or "pid " + pid
        groups[key] = groups.get(key, 0.0) + v
    top = max(groups, key=groups.get)
    pid = max((p for p in load if (procs.get(p, {}).get("cmdline") or "pid " + p) == top), key=load.get)
    info = procs.get(pid, {})
    return {"pid": pid, "comm": info.get("comm", ""), "cmdline": info.get("cmdline", ""), "part": groups[top] / whole}
