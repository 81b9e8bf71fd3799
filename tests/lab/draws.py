"""The accuracy matrix's scenario classes, each a generator of draws.

A class is a fault mechanism reproduced for real by tests/lab/scenario.sh (or a
healthy control). Each draw picks the scenario's parameters at random (sizes,
rates, thread counts, filesystem, application, device stack) from ranges that
make sense for the mechanism, not from iodiag's thresholds, seeded so that a
draw can be reproduced (`accuracy_matrix.py --seed S --only CLASS`). What a
draw is expected to show is not decided here: its ground truth decides
(accuracy_matrix.py), among the mechanisms the class can inject (`candidates`,
see ground_truth.mechanisms()).
"""
import random


class Klass:
    def __init__(self, name, scenario, about, candidates, params, control=False, special=None):
        self.name = name
        self.scenario = scenario
        self.about = about
        self.candidates = candidates   # ground-truth mechanisms the draw's cause is chosen from
        self.params = params           # rng -> {PARAM: value} (IODIAG_LAB_<PARAM>; FS for the filesystem)
        self.control = control
        self.special = special         # a judge of its own (two causes in one run)

    def draw(self, seed):
        rng = random.Random(seed)
        p = self.params(rng)
        p.setdefault("FS", "ext4")
        return p


def pick(*values):
    return lambda rng: rng.choice(values)


def params(**choosers):
    return lambda rng: {k: (c(rng) if callable(c) else c) for k, c in choosers.items()}


FS = pick("ext4", "xfs")
# Generic waits measured exactly for every victim: always candidates.
GENERIC = ["cpu", "lock", "dirty"]

CLASSES = [
    # -- slow or stalling storage
    Klass("slow_device", "classless_slow", "slow storage behind a loop device (FUSE, DELAY_MS a request)",
          ["device", "queue"] + GENERIC,
          params(DELAY_MS=pick(2, 3, 4, 6, 8), JOBS=pick(1, 2, 3, 4), BS=pick("4k", "8k", "16k"))),
    Klass("stacked_slow", "stacked_slow", "loop over a filesystem over a loop over slow storage",
          ["device", "queue"] + GENERIC,
          params(DELAY_MS=pick(2, 3, 4, 6), JOBS=pick(1, 2, 3), BS=pick("4k", "8k"), FS=FS)),
    Klass("stall_tail", "stall_tail", "a fast device that stalls now and then (STALL_PCT % of requests start a stall)",
          ["device", "queue"] + GENERIC,
          params(STALL_PCT=pick(0.5, 1, 2, 3), STALL_MS=pick(40, 60, 100, 150, 200), JOBS=pick(1, 2, 3),
                 BS=pick("4k", "8k"), DIRECT=pick(1, 1, 0), FS=FS)),
    Klass("stacked_tail", "stacked_tail", "the stalls under a stack: loop over a filesystem over a stalling device",
          ["device", "queue"] + GENERIC,
          params(STALL_PCT=pick(0.5, 1, 2, 3), STALL_MS=pick(40, 60, 100, 150, 200), JOBS=pick(1, 2),
                 BS=pick("4k", "8k"), FS=FS)),
    Klass("hdd_seek", "hdd_seek", "random reads on a seek-bound single-head disk (class unknown to the kernel)",
          ["device", "queue"] + GENERIC, params(JOBS=pick(4, 6, 8, 12, 16))),
    # -- CPU, locks, throttles, limits
    Klass("cpu_contention", "cpu_starved", "CPU hogs beside direct readers (run-queue delay, not storage)",
          ["cpu", "device", "queue", "lock"],
          params(HOGS=pick(1, 2, 3, 4), NICE=pick(0, -5, -10), JOBS=pick(1, 2, 4))),
    Klass("lock_contention", "lock_contention", "writers sharing one file (inode rwsem)", ["lock", "device", "cpu", "dirty"],
          params(JOBS=pick(3, 4, 6, 8), BS=pick("64k", "128k", "256k", "1m"), FS=FS)),
    Klass("dirty_throttle", "dirty_throttle", "buffered writers under a tiny vm.dirty_bytes", GENERIC,
          params(DIRTY_MB=pick(1, 2, 4, 8), BS=pick("16k", "64k", "256k"), JOBS=pick(1, 2, 3), FS=FS)),
    Klass("blkio_throttle", "blkio_throttle", "a blkio read IOPS limit on the readers' group",
          ["held", "device", "queue"] + GENERIC,
          params(LIMIT_IOPS=pick(50, 100, 200, 400), JOBS=pick(1, 2, 4))),
    Klass("loop_cgroup_limit", "loop_cgroup_limit", "a blkio limit on the disk under the readers' loop device",
          ["device", "queue", "held"] + GENERIC,
          params(LIMIT_IOPS=pick(80, 150, 300), JOBS=pick(1, 2, 3))),
    # -- the fsync chain
    Klass("fsync_storm", "fsync_storm", "small fsynced writes beside a big buffered writer",
          ["fsync"] + GENERIC,
          params(JOBS=pick(1, 2, 4, 6), BS=pick("4k", "8k", "16k"), WRITER_BS=pick("256k", "1m", "4m"),
                 FS=pick("ext4", "xfs", "btrfs"))),
    Klass("db_commits", "db_commits", "a real database's durable commits beside a bulk writer",
          ["fsync"] + GENERIC,
          params(APP=pick("sqlite", "postgres", "redis"), CLIENTS=pick(1, 2, 4, 8), WRITERS=pick(1, 2),
                 WRITER_BS=pick("256k", "1m", "4m"), FS=FS)),
    # -- the I/O scheduler
    Klass("bfq_idling", "bfq_idling", "bfq on a fast device, two readers of unequal I/O priority",
          ["queue", "device"] + GENERIC, params()),
    # -- two causes at once: judged by their own rules (accuracy_matrix.py)
    Klass("two_causes", "two_causes", "dirty throttling (writer) + blkio limit (reader)", [], params(),
          special="two_causes"),
    Klass("two_apps", "two_apps", "dirty throttling (app ingest) + blkio limit (app fio)", [], params(),
          special="two_apps"),
    Klass("two_apps_device", "two_apps_device", "dirty throttling (app ingest) + slow storage (app fio)", [],
          params(), special="two_apps_device"),
    # -- controls: healthy, must stay quiet (nothing above info)
    Klass("idle", "idle", "nothing (idle)", [], params(), control=True),
    Klass("busy_healthy", "busy_healthy", "QD 32 reads on a fast device and a buffered writer", [], params(),
          control=True),
    Klass("qd1_fast", "qd1_fast", "synchronous reads at depth 1 on a fast device (the application's own pace)",
          [], params(), control=True),
    Klass("cached_reads", "cached_reads", "reads of a file the page cache holds", [], params(FS=FS), control=True),
    Klass("app_alone", "app_alone", "a real application alone on its filesystem", [],
          params(APP=pick("sqlite", "postgres", "redis", "fio"), CLIENTS=pick(1, 2, 4), FS=FS), control=True),
]

BY_NAME = {k.name: k for k in CLASSES}
