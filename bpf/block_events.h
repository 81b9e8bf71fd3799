/* Shared between bpf/block.bpf.c and collectors/bpf/block_bpf.cpp: the layout of the
 * in-kernel aggregates and of the slow-I/O exemplar events.
 *
 * Stages as btt names them, all from tracepoints of the block layer:
 *   Q block_bio_queue  G block_getrq  I block_rq_insert  D block_rq_issue
 *   C block_rq_complete
 * A stage that a request did not pass through (no I when blk-mq issues directly
 * without a scheduler, no Q/G for a flush request the block layer made itself)
 * takes the timestamp of the next stage that was seen: it is zero-length, and
 * Q2G + G2I + I2D + D2C == Q2C holds exactly, in nanoseconds, for every request.
 */
#ifndef IODIAG_BLOCK_EVENTS_H
#define IODIAG_BLOCK_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define IODIAG_NR_OPS 5     /* read, write, flush, discard, other */
#define IODIAG_NR_STAGES 5  /* q2g, g2i, i2d, d2c, q2c */
#define IODIAG_NR_BUCKETS 27 /* log2 buckets of microseconds: up to 2^27 us (134 s) */
/* Classes of the depth at issue (this request included), log2: 1, 2-3, 4-7,
 * 8-15, 16-31, 32-63, 64 and more. */
#define IODIAG_NR_DEPTH_CLASSES 7

enum iodiag_op { IODIAG_OP_READ, IODIAG_OP_WRITE, IODIAG_OP_FLUSH, IODIAG_OP_DISCARD, IODIAG_OP_OTHER };
enum iodiag_stage { IODIAG_Q2G, IODIAG_G2I, IODIAG_I2D, IODIAG_D2C, IODIAG_Q2C };

/* Which stages were really observed for a request (the others were filled in). */
#define IODIAG_SEEN_Q (1u << 0)
#define IODIAG_SEEN_G (1u << 1)
#define IODIAG_SEEN_I (1u << 2)
#define IODIAG_SEEN_D (1u << 3)

/* Per op: what every completion writes, in one cache line. */
struct iodiag_op_sums {
    __u64 count;                       /* completed requests */
    __u64 sum_ns[IODIAG_NR_STAGES];    /* exact stage sums */
    __u64 with_depth;                  /* of them, seen at issue (have a depth) */
    __u64 pad;
};

/* Aggregates of completed requests on one disk, on one CPU, cumulative since
 * the programs were attached: nothing is ever reset, so user space takes an
 * interval's figures as the difference of two reads and loses nothing between
 * them. One entry per disk slot (the request queue's id) in a per-CPU array.
 *
 * Histogram bucket 0 (0..1 us) is not written: most stages of a fast device
 * fall there and skipping them saves a cache line per stage per request. User
 * space derives it as count - (buckets 1..) (with_depth for the depth). */
struct iodiag_dev_stats {
    struct iodiag_op_sums ops[IODIAG_NR_OPS];
    __u64 hist[IODIAG_NR_OPS][IODIAG_NR_STAGES][IODIAG_NR_BUCKETS]; /* us, log2; [0] unused */
    __u64 depth_hist[IODIAG_NR_BUCKETS]; /* requests in flight at issue, this one included; [0] unused */
    /* Reads and writes only (a flush is not an access: issued alone after
     * the writes it follows, it would stand for the idle device's service
     * time): D2C (us, log2) by the class of the depth at issue, their count
     * and the depths' sum per class. How a device's service time grows with
     * the requests it holds: one that serves a request at a time holds each
     * request for the ones ahead of it (D2C grows with the depth), one that
     * serves many at once does not; the D2C of requests issued onto an idle
     * device is its unloaded service time. [c][0] unused (from the count). */
    __u64 d2c_by_depth[IODIAG_NR_DEPTH_CLASSES][IODIAG_NR_BUCKETS];
    __u64 depth_count[IODIAG_NR_DEPTH_CLASSES];
    __u64 depth_sum[IODIAG_NR_DEPTH_CLASSES];
    /* the busy time given to each request (iodiag_disk_busy), us, log2; [0]
     * unused: a stall is told by it, not by D2C, which holds the wait behind
     * the other requests inside a device that queues */
    __u64 service_hist[IODIAG_NR_OPS][IODIAG_NR_BUCKETS];
    __u64 merges;   /* bios merged into a request (back/front) + requests merged into another */
    __u64 requeues; /* requests put back for another dispatch */
    __u64 splits;   /* bios split to the queue's limits (block_split): each a front part made a bio of its own */
    __u64 split_bytes; /* the front parts' bytes: split at max_sectors_kb, they are that size */
    __u32 dev;      /* disk dev_t in kernel encoding: major << 20 | minor */
    __u32 pad;
};

/* In-flight state of one bio/request, keyed by its head bio's address (or the
 * request's, when it has no bio), in a two-way table (bpf/block.bpf.c). Zero timestamps:
 * stage not (yet) seen. 72 bytes: a cache line and the vtime at issue. */
struct iodiag_inflight {
    __u64 key; /* 0 = free slot */
    __u64 q, g, i, d;
    __u64 task;     /* submitter's task_struct address; comm and cgroup are read
                     * from it only for slow requests (cheaper than at every Q) */
    __u32 tgid;     /* submitter */
    __u32 tid;      /* to check at completion that the task is still the same one */
    __u16 depth;    /* in flight at issue (0: not seen at issue) */
    __u16 weight;   /* its weight in the disk's busy time (iodiag_disk_busy), set at issue */
    __s16 slot;     /* disk slot found at issue, -1 = overflow disk, -2 = not yet known */
    __u8 front_merged;
    __u8 pad;
    __u64 vtime;    /* the disk's vtime at its issue */
};

/* Events the collector could not account, by cause (index into the `lost`
 * array of the BPF program's .bss). Each is reported as collector.lost_events
 * {collector: block_bpf, what: <name>}. */
enum iodiag_block_lost {
    IODIAG_LOST_EXEMPLAR_RINGBUF_FULL, /* slow request counted, its exemplar not sent */
    IODIAG_LOST_INFLIGHT_SLOT_BUSY,    /* request not timed: both its slots held live requests */
    IODIAG_LOST_INFLIGHT_STALE,        /* entry idle past STALE_NS reclaimed (no completion seen) */
    IODIAG_LOST_DISK_TABLE_FULL,       /* completion of a disk with no aggregate slot left */
    IODIAG_LOST_SUBMITTER_TABLE_FULL,  /* completion not in its submitter's sums (table full) */
    IODIAG_LOST_COMPLETION_UNSEEN,     /* an issued request's bio queued again: its completion never ran the program */
    IODIAG_LOST_COUNT
};

/* Per (disk, submitter, cgroup): the submitter's own requests' Q2C and D2C
 * sums, so that an application's wait for its I/O is split over the devices
 * by its own requests, not by everyone's (a disk busy with other programs' I/O
 * holds none of it), and so that who else used a device, and how much of its
 * service time (D2C) and queue occupancy (Q2C: sum / window = mean requests in
 * flight, Little's law), is exact. The submitter is the thread group that
 * queued the bio (a loop or dm device's lower requests: its worker; writeback:
 * the flusher). The cgroup is the one the kernel charged the request to: its
 * head bio's blkcg (bio->bi_blkg; requests merge only within one blkcg),
 * where blk-cgroup exists; else the submitter's. Cumulative, per CPU. */
struct iodiag_submitter_key {
    __u32 dev;  /* disk dev_t, kernel encoding */
    __u32 tgid;
    /* Which cgroup, cheaply: the address of the request's blkcg_gq (its
     * blkcg on this disk; as a number: under tp_btf KEY()'s offset of it)
     * where blk-cgroup exists, else the submitter's cgroup id; 0 = none (a
     * request without bio). The cgroup's id is in the sums. (A cgroup removed
     * inside the window whose blkcg_gq's memory went to a new cgroup's would
     * share its sums: the key lives as long as the map.) */
    __u64 cgroup;
};
/* Per disk: requests issued and not yet completed (the depth at issue) and
 * the busy time they share. A request's service time is its part of the
 * disk's busy time while it was in flight: each stretch between completions
 * is shared by the requests in flight in proportion to the pages each moves
 * (plus one for its access: block.bpf.c request_weight). The requests' service
 * times partition the disk's busy time. An earlier partition gave each
 * stretch whole to the request that completed at its end: right for a device
 * that serves one request at a time, but on one that serves many at once (a
 * loop device over a virtual disk) a small request completing between large
 * ones was given their time (issue 33, seed 95000: a reader behind a backup
 * counted as served 58 % of its requests' time).
 *
 * `issued` packs the count (low IODIAG_BUSY_COUNT_BITS bits) and the sum of
 * the weights in flight (above), so one atomic add keeps both. `vtime` sums,
 * over the stretches, the stretch over the weight in flight (x
 * IODIAG_VTIME_SCALE): a request's service is its weight times the growth of
 * vtime from its issue to its completion. */
#define IODIAG_BUSY_COUNT_BITS 20
#define IODIAG_BUSY_COUNT_MASK ((1LL << IODIAG_BUSY_COUNT_BITS) - 1)
#define IODIAG_VTIME_SCALE (1ULL << 16)
struct iodiag_disk_busy {
    __s64 issued;
    __u64 last_done_ns;  /* the disk's last completion, or the issue that ended an idle stretch */
    __u64 vtime;
};

struct iodiag_submitter_sums {
    __u64 count;
    __u64 bytes;        /* completed (block_rq_complete's nr_bytes) */
    __u64 write_bytes;  /* of them, of write requests */
    __u64 q2c_ns;
    __u64 d2c_ns;
    __u64 service_ns;   /* the disk's busy time given to its requests (block.bpf.c service_ns) */
    __u64 i2d_ns;       /* its requests' wait in the I/O scheduler (insert to issue) */
    __u64 idle_class;   /* of its requests, those of the idle I/O priority class (rq->ioprio) */
    __u64 cgroup_id;    /* kernfs id of the cgroup's directory, read once when the entry is made */
    /* The submitter as the kernel knew it, read through its task once when the
     * entry is made (its first completion there on that CPU), not from /proc
     * later: a process gone by then keeps its name. Empty when the thread was
     * gone at that completion. A process that exec's after its entry was made
     * keeps the name it had then in that entry. A kernel worker's comm lacks
     * the work's description (/proc/PID/comm adds it): user space reads that. */
    char comm[16];
    __u32 kthread;      /* PF_KTHREAD: a kernel thread's (valid with comm) */
    __u32 pad;
};
/* The same sums in a direct-mapped per-CPU slot (index: a hash of the key;
 * key.dev 0 = free): an inlined array lookup per completion instead of a
 * per-CPU hash lookup. A key whose slot another key holds on that CPU goes to
 * the hash (submitter_sums), so every completion is counted exactly once. */
#define IODIAG_SUBMITTER_SLOTS 512   /* a power of two */
#define IODIAG_INFLIGHT_SLOTS (1u << 15) /* the in-flight table's entries, a power of two */
struct iodiag_submitter_slot {
    struct iodiag_submitter_key key;
    struct iodiag_submitter_sums sums;
};
static inline __u32 iodiag_submitter_slot_of(__u32 dev, __u32 tgid, __u64 cgroup)
{
    __u32 h = tgid ^ (dev * 2246822519u) ^ ((__u32)cgroup * 3266489917u) ^ (__u32)(cgroup >> 32);
    return (h * 2654435761u) >> 23;   /* top 9 bits: 512 slots */
}

/* Per-request accounting of the reference path (rodata reference_accounting):
 * the stage sums per disk kept from a plain hash map keyed by the same
 * addresses, with the same timestamps, so a test can compare the direct-mapped
 * fast path with it on one workload. */
struct iodiag_ref_sums {
    __u64 count;
    __u64 sum_ns[IODIAG_NR_STAGES];
};

/* One slow request (Q2C >= slow_threshold_ns), through the ring buffer. The
 * timestamps are bpf_ktime_get_ns() values with missing stages already filled
 * in, so user space derives every stage from the same five numbers. */
struct iodiag_block_event {
    __u64 q_ns, g_ns, i_ns, d_ns, c_ns;
    __u64 sector;
    __u64 cgroup_id;
    __u32 bytes;
    __u32 dev;
    __u32 pid;   /* thread group id of the submitter (at Q; at D if no Q) */
    __u32 depth; /* in flight at issue */
    __u8 op;     /* enum iodiag_op */
    __u8 seen;   /* IODIAG_SEEN_* */
    __u8 pad[6];
    char comm[16];
};

#endif /* IODIAG_BLOCK_EVENTS_H */
