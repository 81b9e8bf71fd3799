/* Shared between bpf/iouring.bpf.c and collectors/bpf/iouring_bpf.cpp. */
#ifndef IODIAG_IOURING_EVENTS_H
#define IODIAG_IOURING_EVENTS_H

#define IOURING_HIST_SLOTS 32
#define IOURING_OP_READ 0  /* READ, READV, READ_FIXED */
#define IOURING_OP_WRITE 1 /* WRITE, WRITEV, WRITE_FIXED */
#define IOURING_OP_OTHER 2
#define IOURING_OP_CLASSES 3

/* One ring of one process. */
struct iouring_key {
    __u32 tgid;
    __u32 pad;
    __u64 ring; /* struct io_ring_ctx address: identifies the ring */
};

/* One ring of one process on one CPU, cumulative since attach. Kept in a
 * per-CPU array slot found by a hash of the key (the slot is that ring's on
 * this CPU while `key` matches; a colliding ring goes to a per-CPU hash), so
 * the per-request path has no hash map and no atomics. */
struct iouring_stats {
    struct iouring_key key;                /* ring 0 = free slot */
    __u64 submitted[IOURING_OP_CLASSES];
    __u64 punted[IOURING_OP_CLASSES];     /* io_uring_queue_async_work: handed to io-wq */
    __u64 completed;                       /* completions of requests seen at submit */
    __u64 untracked;                       /* completions without a submit (started earlier, internal) */
    __u64 lat_sum_ns;
    __u64 iowq_ns;                         /* of lat_sum_ns: punt -> complete (in an io-wq worker) */
    __u64 lat_hist[IOURING_HIST_SLOTS];    /* submit -> complete, log2 microseconds */
    __u64 cqwait_count;                    /* io_uring_cqring_wait: the task waited for CQEs */
    __u64 cqwait_sum_ns;
    __u64 cqwait_hist[IOURING_HIST_SLOTS]; /* cqring_wait -> io_uring_enter returns, log2 us */
    char comm[16];                         /* submitter */
};

#define IOURING_INFLIGHT_SLOTS (1u << 15) /* the in-flight table's entries, a power of two */

/* Events the collector could not account (index into .bss lost[]). */
enum iouring_lost {
    IOURING_LOST_INFLIGHT_SLOT_BUSY, /* request not timed: live requests held both its slots */
    IOURING_LOST_RING_TABLE_FULL,    /* a ring's counts not kept: slot taken and overflow hash full */
    IOURING_LOST_COUNT
};

#endif
