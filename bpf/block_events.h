/* Shared between bpf/block.bpf.c and collectors/block_bpf.cpp: the layout of the
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

enum iodiag_op { IODIAG_OP_READ, IODIAG_OP_WRITE, IODIAG_OP_FLUSH, IODIAG_OP_DISCARD, IODIAG_OP_OTHER };
enum iodiag_stage { IODIAG_Q2G, IODIAG_G2I, IODIAG_I2D, IODIAG_D2C, IODIAG_Q2C };

/* Which stages were really observed for a request (the others were filled in). */
#define IODIAG_SEEN_Q (1u << 0)
#define IODIAG_SEEN_G (1u << 1)
#define IODIAG_SEEN_I (1u << 2)
#define IODIAG_SEEN_D (1u << 3)

/* Key of the per-CPU aggregate map: one entry per (disk, buffer). The BPF side
 * writes buffer `active_buf`; user space flips it and drains the other one, so
 * an interval's numbers are never read half-written. */
struct iodiag_dev_key {
    __u32 dev;  /* disk dev_t in kernel encoding: major << 20 | minor */
    __u32 buf;  /* 0 or 1 */
};

/* Aggregates of completed requests on one disk, on one CPU. */
struct iodiag_dev_stats {
    __u64 hist[IODIAG_NR_OPS][IODIAG_NR_STAGES][IODIAG_NR_BUCKETS]; /* us, log2 */
    __u64 sum_ns[IODIAG_NR_OPS][IODIAG_NR_STAGES];                  /* exact sums */
    __u64 count[IODIAG_NR_OPS];                                     /* completed requests */
    __u64 depth_hist[IODIAG_NR_BUCKETS]; /* requests in flight at issue, this one included */
    __u64 merges;   /* bios merged into a request (back/front) + requests merged into another */
    __u64 requeues; /* requests put back for another dispatch */
};

/* In-flight state of one bio/request, keyed by its head bio's address (or the
 * request's, when it has no bio), in a direct-mapped table. Zero timestamps:
 * stage not (yet) seen. */
struct iodiag_inflight {
    __u64 key; /* 0 = free slot */
    __u64 q, g, i, d;
    __u64 task;     /* submitter's task_struct address; comm and cgroup are read
                     * from it only for slow requests (cheaper than at every Q) */
    __u64 pid_tgid; /* submitter, to check the task is still the same one */
    __u32 depth;
    __u32 front_merged;
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
