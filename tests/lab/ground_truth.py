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
"""
import json

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
            "@sync_ns": float(per_nr.get(NR_FSYNC, 0)) + float(per_nr.get(NR_FDATASYNC, 0))}


def everything(gt):
    """All of the victims' syscalls (1 us and more), with the same per-syscall
    attribution as the thresholded views."""
    return view(gt, 1.0) or gt


def mechanisms(gt):
    """Each mechanism's share of the view's syscall time (None when unmeasured)."""
    d2c, q2c = total(gt.get("@v_d2c_ns", {})), total(gt.get("@v_q2c_ns", {}))
    rq = float(gt.get("@rq_ns", 0) or 0)
    dirty, lock = float(gt.get("@dirty_ns", 0) or 0), float(gt.get("@lock_ns", 0) or 0)
    sync = float(gt.get("@sync_ns", 0) or 0)
    return {
        "device": share(d2c, gt),
        "queue": share(max(0.0, q2c - d2c), gt),
        "cpu": share(rq, gt),
        "lock": share(lock, gt),
        "dirty": share(dirty, gt),
        "held": share(max(0.0, sys_ns(gt) - q2c - rq - dirty - lock), gt),
        "fsync": share(max(0.0, sync - rq_of(gt, NR_FSYNC, NR_FDATASYNC)), gt),
    }


def mean_latency_us(gt):
    """The victims' mean traced syscall duration, or None."""
    ops = float(gt.get("@sys_ops", 0) or 0)
    return None if ops <= 0 else sys_ns(gt) / ops / 1000.0
