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
    def __init__(self, name, scenario, about, candidates, params, control=False, special=None, culprit=None,
                 setting=None):
        self.name = name
        self.scenario = scenario
        self.about = about
        self.candidates = candidates   # ground-truth mechanisms the draw's cause is chosen from
        self.params = params           # rng -> {PARAM: value} (IODIAG_LAB_<PARAM>; FS for the filesystem)
        self.control = control
        self.special = special         # a judge of its own (two causes in one run)
        # The resource a neighbor loads ("device" or "cpu"): the matrix scores the
        # culprit the verdict names against the process that loaded it most.
        self.culprit = culprit
        # A setting as the cause (issue 34): the draw's cause is decided against
        # the same workload with the default setting (the baseline run), and
        # the first finding must name the setting and its value.
        self.setting = setting

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
# issue 33: the shared volume's throughput cap (MB/s: a cloud disk's), where the neighbor's runs
CAP = pick(50, 100, 200, 400)
UNIT = pick("unit", "unit", "none")   # the neighbor in a systemd-like unit of its own, or not
# The latency-sensitive application's threads or clients there: few, so that what its requests
# wait behind in the volume's queue is mostly the bulk job's (seed 33, four PostgreSQL clients
# beside 8 bulk requests: half their wait was behind each other's requests, the ground truth's
# neighbor part 49.8 % while they ran 9.8x slower)
LIGHT = pick(1, 1, 2)
# Generic waits measured exactly for every victim: always candidates (below).
GENERIC = ["cpu", "lock", "dirty"]
NEIGHBOR = ["neighbor", "device", "queue"] + GENERIC

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
    # -- contention (issue 23): a neighbor in a cgroup of its own on a resource that is fine.
    # The cause is "neighbor" only where the ground truth finds the others holding what the
    # victims waited for (ground_truth.mechanisms(split_neighbors=True)), else their own load.
    Klass("neighbor_direct", "neighbor_direct", "a direct-I/O neighbor (\"backup\") on the victim's healthy device",
          ["neighbor", "device", "queue"] + GENERIC,
          params(NEIGHBOR_BS=pick("64k", "128k", "256k", "1m"), NEIGHBOR_DEPTH=pick(8, 16, 32, 64),
                 NEIGHBOR_JOBS=pick(1, 2), JOBS=pick(1, 2, 4), BS=pick("4k", "8k", "16k"), BLKIO=pick(0, 1)),
          culprit="device"),
    Klass("neighbor_buffered", "neighbor_buffered",
          "buffered neighbor writers: the flusher writes their data on the victim's device",
          ["neighbor", "device", "queue"] + GENERIC,
          params(NEIGHBOR_BS=pick("256k", "1m", "4m"), NEIGHBOR_JOBS=pick(1, 2, 3), JOBS=pick(1, 2),
                 BS=pick("4k", "8k"), BLKIO=pick(0, 1), FS=FS),
          culprit="device"),
    Klass("neighbor_cpu", "neighbor_cpu", "CPU hogs in another cgroup on the victim's CPU",
          ["neighbor", "cpu", "device", "queue", "lock"],
          params(HOGS=pick(2, 3, 4), NICE=pick(0, -5, -10), JOBS=pick(2, 4), BS=pick("4k", "16k")),
          culprit="cpu"),
    # -- issue 33: a latency-sensitive application (fio, SQLite, PostgreSQL, Redis) beside a
    # bulk job on a volume with a throughput cap (scenario.sh: the bulk job's large requests
    # saturate it, the application's small ones wait behind them). Victims and culprit are
    # the ground truth's processes (accuracy_matrix.py: judge_who).
    Klass("bulk_reader_neighbor", "bulk_reader_neighbor",
          "a bulk sequential reader (fio as \"backup\", maybe rate-limited, or a dd loop; direct or buffered) beside a reader",
          NEIGHBOR, params(CAP_MBPS=CAP, VICTIM=pick("fio_read", "fio_read", "sqlite_read", "postgres_read"),
                           JOBS=LIGHT, THREADS=pick(0, 1), BS=pick("4k", "8k", "16k"), CLIENTS=LIGHT,
                           BULK=pick("fio", "dd"), BULK_DIRECT=pick(1, 0), BULK_BS=pick("256k", "1m", "4m"),
                           BULK_DEPTH=pick(4, 16, 32), BULK_JOBS=pick(1, 2), BULK_RATE_PCT=pick(0, 0, 30, 60),
                           NEIGHBOR_CG=UNIT, FS=FS),
          culprit="device"),
    Klass("same_name_neighbor", "same_name_neighbor",
          "victim and bulk neighbor run one command (python3 scripts, or fio) with other arguments",
          NEIGHBOR + ["fsync"], params(CAP_MBPS=CAP, SAME=pick("python", "fio"), VICTIM_IO=pick("read", "commit"),
                           BULK_RW=pick("read", "write"), BULK_MODE=pick("direct", "buffered", "fsync"),
                           BULK_BS=pick("256k", "1m", "4m"), JOBS=LIGHT, CLIENTS=LIGHT, NEIGHBOR_CG=UNIT, FS=FS),
          culprit="device"),
    Klass("shell_writer_neighbor", "shell_writer_neighbor",
          "bulk writes from a shell loop or script (dd, cp) beside a reader or a committing application",
          NEIGHBOR + ["fsync"],
          params(CAP_MBPS=CAP, VICTIM=pick("fio_read", "sqlite_read", "fio_fsync", "sqlite_commit", "redis", "postgres"),
                 WRITER=pick("sh_dd:buffered", "sh_dd:fsync", "sh_dd:direct", "script_dd:buffered", "script_dd:direct",
                             "script_cp:buffered", "script_cp:fsync"),
                 WRITER_BS=pick("256k", "1m", "4m"), WBT=pick(1, 0), DIRTY_BG_MB=pick(16, 64, 256),
                 JOBS=LIGHT, CLIENTS=LIGHT, NEIGHBOR_CG=UNIT, FS=FS),
          culprit="device"),
    # -- issue 34: settings as causes (the baseline is the same workload with the default)
    Klass("readahead_off", "readahead_off",
          "a sequential reader (BS-byte reads, the cache dropped each pass) with read_ahead_kb RA_KB",
          ["setting"], params(RA_KB=pick(0, 0, 4, 8, 16, 32), BS=pick(4096, 4096, 8192, 16384, 65536),
                              FILE_MB=pick(256, 384), FS=FS),
          setting="readahead"),
    Klass("sync_mount", "sync_mount",
          "a writer (WRITER, BS-KiB writes) on a filesystem mounted sync",
          ["setting"], params(WRITER=pick("bulk", "bulk", "bulk_fsync", "fio", "sqlite"), BS=pick(4, 4, 16, 64),
                              MB=pick(16, 64), ROWS=pick(20, 100), FS=FS),
          setting="sync_mount"),
    Klass("dirsync_mount", "dirsync_mount",
          "a spool writer (WRITER: new BS-KiB files at RATE/s at most) on a filesystem mounted dirsync",
          ["setting"], params(WRITER=pick("spool", "spool_fsync"), BS=pick(0, 4, 16, 64), RATE=pick(200, 500, 1000),
                              FS=FS),
          setting="dirsync"),
    # (buffered writers only: an fsync per write pays a commit in either mode, and the share
    # of the data=journal commits' extra cost in it is not measured: docs/settings.md)
    Klass("data_journal", "data_journal",
          "a buffered writer (WRITER, BS-KiB writes) on ext4 mounted data=journal",
          ["setting"], params(WRITER=pick("bulk", "bulk", "fio"), BS=pick(4, 64, 256, 1024), MB=pick(64, 256),
                              FS="ext4"),
          setting="data_journal"),
    Klass("discard_slow", "discard_slow",
          "a writer that frees blocks as it commits (WRITER) on FS mounted discard over a device "
          "whose discards take DISCARD_MS",
          ["setting"], params(WRITER=pick("rotate", "rotate", "sqlite"), BS=pick(4, 16, 64),
                              RATE=pick(50, 200, 1000), CLIENTS=pick(1, 2), DISCARD_MS=pick(2, 5, 10, 20),
                              FS=pick("ext4", "ext4", "xfs", "btrfs")),
          setting="discard"),
    # (synchronous readers only: the ground truth times syscalls, and an asynchronous reader's
    # io_submit/io_getevents are not among them; NR from 4, the least the kernel takes, BLKDEV_MIN_RQ)
    Klass("nr_requests_low", "nr_requests_low",
          "JOBS synchronous random direct readers of a loop device with nr_requests NR under SCHED",
          ["setting"], params(BACKING=pick("/tmp", "/dev/shm"), SCHED=pick("none", "mq-deadline"),
                              NR=pick(4, 4, 8), JOBS=pick(16, 32), BS=pick("4k", "16k")),
          setting="nr_requests"),
    Klass("max_sectors_low", "max_sectors_low",
          "JOBS synchronous direct sequential RW of BS on a loop device with max_sectors_kb MAX_KB",
          ["setting"], params(BACKING=pick("/tmp", "/dev/shm"), RW=pick("read", "read", "write"),
                              BS=pick("256k", "1m"), JOBS=pick(1, 1, 2), MAX_KB=pick(4, 8, 16, 32)),
          setting="max_sectors"),
    Klass("ioprio_idle", "ioprio_idle",
          "a reader (JOBS threads, BS reads) in the idle I/O class beside a bulk reader, under SCHED",
          ["setting"], params(BACKING=pick("/tmp", "/dev/shm"), SCHED="mq-deadline", JOBS=pick(1, 1, 2),
                              BS=pick("4k", "16k"), NEIGHBOR_BS=pick("64k", "128k", "1m"),
                              NEIGHBOR_DEPTH=pick(4, 16, 32)),
          setting="ioprio_idle"),
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
    Klass("neighbor_control", "neighbor_control", "the application alone keeps a fast device busy (no neighbor)",
          [], params(DEPTH=pick(8, 16, 32, 64), JOBS=pick(1, 2), BS=pick("4k", "16k", "64k")), control=True),
    Klass("app_alone", "app_alone", "a real application alone on its filesystem", [],
          params(APP=pick("sqlite", "postgres", "redis", "fio"), CLIENTS=pick(1, 2, 4), FS=FS), control=True),
    # issue 33's controls, on the same capped volume: the application alone; the bulk job
    # alone (its slowness is its own size: nobody's victim); both, the bulk job far below the cap
    # issue 34's: readahead off under a random reader, which it does not slow
    Klass("readahead_random", "readahead_random", "a random reader with read_ahead_kb RA_KB", [],
          params(RA_KB=pick(0, 4, 8), BS=pick(4096, 8192, 16384), FILE_MB=pick(256, 384), FS=FS), control=True),
    # nr_requests lowered, but at four times what the readers keep in flight at least (and
    # few of them, over the disk: more synchronous readers than this VM's 2 CPUs, or a loop
    # device over memory, whose worker takes a CPU per request, wait for a CPU: seed 83)
    Klass("nr_requests_enough", "nr_requests_enough", "a few synchronous readers under nr_requests NR", [],
          params(BACKING="/tmp", SCHED=pick("none", "mq-deadline"), NR=pick(8, 16), JOBS=pick(1, 2),
                 BS=pick("4k", "16k")), control=True),
    # data=journal under a reader, or a writer far below what the journal takes
    Klass("data_journal_light", "data_journal_light", "WRITER on ext4 mounted data=journal, hardly writing", [],
          params(WRITER=pick("reader", "fio_rate"), BS=pick(4, 16), RATE=pick(256, 1024), FS="ext4"), control=True),
    # mounted discard over a device that trims fast (a loop device over memory)
    Klass("discard_light", "discard_light", "a writer that frees blocks, mounted discard, fast discards", [],
          params(WRITER=pick("rotate", "sqlite"), BS=pick(4, 16, 64), RATE=pick(50, 200, 1000), CLIENTS=pick(1, 2),
                 FS=pick("ext4", "xfs", "btrfs")), control=True),
    # the dirty limit lowered under a writer paced far below what writeback cleans: its dirty
    # pages never reach the lowered freerun ceiling
    Klass("dirty_limit_paced", "dirty_throttle", "a writer of RATE_KB KiB/s under vm.dirty_bytes DIRTY_MB", [],
          params(DIRTY_MB=pick(2, 4, 8), RATE_KB=pick(128, 512, 1024), BS=pick("4k", "64k"), FS=FS), control=True),
    # max_sectors_kb lowered under random readers whose requests it never cuts
    Klass("max_sectors_random", "max_sectors_random", "random readers of BS under max_sectors_kb MAX_KB", [],
          params(BACKING=pick("/tmp", "/dev/shm"), BS=pick("4k", "4k", "8k"), JOBS=pick(1, 2, 4),
                 MAX_KB=pick(8, 16, 32)), control=True),
    # the idle I/O class on a reader alone: nobody to wait for
    Klass("ioprio_idle_alone", "ioprio_idle_alone", "a reader in the idle I/O class alone on its device", [],
          params(BACKING=pick("/tmp", "/dev/shm"), SCHED="mq-deadline", JOBS=pick(1, 2), BS=pick("4k", "16k")),
          control=True),
    # a sync mount under applications that ask for durability themselves, or only read
    Klass("sync_mount_own", "sync_mount_own", "WRITER on a filesystem mounted sync, asking for durability itself", [],
          params(WRITER=pick("dsync", "fio_fsync", "reader"), BS=pick(4, 16), FS=FS), control=True),
    Klass("dirsync_own", "dirsync_own", "WRITER on a filesystem mounted dirsync, creating no files as it runs", [],
          params(WRITER=pick("bulk", "fio_fsync", "reader"), BS=pick(4, 16), MB=pick(16, 64), FS=FS), control=True),
    Klass("shared_app_alone", "shared_app_alone", "a latency-sensitive application alone on the capped volume", [],
          params(CAP_MBPS=CAP, VICTIM=pick("fio_read", "sqlite_read", "postgres_read", "fio_fsync", "sqlite_commit",
                                           "redis", "postgres"),
                 JOBS=pick(1, 2, 4), CLIENTS=pick(1, 2, 4), FS=FS), control=True),
    Klass("shared_bulk_alone", "shared_bulk_alone", "a bulk reader or writer alone, saturating the capped volume", [],
          params(CAP_MBPS=CAP, BULK_KIND=pick("reader", "writer"), BULK=pick("fio", "dd"), BULK_DIRECT=pick(1, 0),
                 BULK_BS=pick("256k", "1m", "4m"), BULK_DEPTH=pick(1, 4, 16), FS=FS), control=True),
    Klass("shared_light", "shared_light", "an application beside a bulk reader at a few % of the cap", [],
          params(CAP_MBPS=CAP, VICTIM=pick("fio_read", "sqlite_read", "fio_fsync", "sqlite_commit"), LIGHT_PCT=pick(2, 5),
                 JOBS=pick(1, 2), CLIENTS=pick(1, 2), FS=FS), control=True),
]

BY_NAME = {k.name: k for k in CLASSES}
