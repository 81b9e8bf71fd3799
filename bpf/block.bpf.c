// SPDX-License-Identifier: GPL-2.0
/* Per-request block-layer stage timing (btt's Q2G, G2I, I2D, D2C, Q2C) from
 * tracepoints only, aggregated in the kernel into per-CPU log2 histograms per
 * disk and op, with slow requests sent to user space through a ring buffer.
 *
 * Keying. block_bio_queue and block_getrq (6.x: getrq(struct bio *)) see only a
 * bio; insert/issue/complete see the request. A request's first bio stays its
 * head (rq->bio) through back merges, so the in-flight entry is keyed by the
 * head bio's address for its whole life: Q creates it, G/I/D update it through
 * rq->bio, C closes it. No per-event key moves. Exceptions:
 *   - a front merge makes the merged bio the new head: its own entry is marked
 *     front_merged and lookups walk bi_next (a few steps) to the original;
 *   - a request without bio (the flush request blk-flush makes) is keyed by the
 *     request's own address;
 *   - bio-based disks (dm, md) never form requests, so their bios are not
 *     tracked at all (their entries could never be closed).
 * The in-flight store is a direct-mapped table (an array indexed by a hash of
 * the key), not a hash map: a slot costs a few loads and stores where a hash
 * map update costs ~100 ns, and memory is fixed. An occupied slot is taken
 * over only when its entry has been idle past STALE_NS (a request that died in
 * an error path: counted as stale); otherwise the newcomer is not timed and
 * counted in tracking_failed, so nothing is lost silently.
 *
 * Two program variants per tracepoint: tp_btf (direct BTF reads, cheapest) and
 * raw_tp (CO-RE reads); user space enables one set, chosen by real probes.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "block_events.h"

#define INFLIGHT_BITS 15
#define INFLIGHT_SLOTS (1u << INFLIGHT_BITS)
#define ISSUED_SLOTS 256
/* Past every driver command timeout (SCSI/NVMe default 30 s): the request is gone. */
#define STALE_NS (60ULL * 1000000000ULL)
#define MAX_DISKS 128
#define FRONT_MERGE_WALK 4
#define REQ_OP_BITS_MASK 0xff /* REQ_OP_MASK: the op lives in the low 8 bits */

/* Filters, set before load. 0 = no filter. */
const volatile __u32 filter_dev = 0; /* disk dev_t, kernel encoding */
const volatile __u32 filter_pid = 0; /* thread group id of the submitter */

/* Runtime controls and counters, shared with user space through .bss. */
__u64 slow_threshold_ns = ~0ULL; /* exemplar when Q2C >= this */
__u32 active_buf = 0;            /* aggregate buffer being written (0/1) */
__u64 exemplars_dropped = 0;     /* ring buffer full */
__u64 tracking_failed = 0;       /* slot taken by a live request: not timed */
__u64 stale_dropped = 0;         /* idle entries taken over (no completion seen) */


struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, INFLIGHT_SLOTS);
    __type(key, __u32);
    __type(value, struct iodiag_inflight);
} inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, MAX_DISKS * 2);
    __type(key, struct iodiag_dev_key);
    __type(value, struct iodiag_dev_stats);
} stats SEC(".maps");

/* Source of zeroes for a new stats entry (too big for the BPF stack). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct iodiag_dev_stats);
} zero_stats SEC(".maps");

/* Requests issued and not yet completed, per disk: the queue depth at issue.
 * Direct-mapped by disk; a disk whose slot another disk holds gets no depth. */
struct issued_slot {
    __u32 dev;
    __u32 pad;
    __s64 n;
};
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, ISSUED_SLOTS);
    __type(key, __u32);
    __type(value, struct issued_slot);
} issued SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* Reads that are direct loads under tp_btf and CO-RE probe reads under raw_tp.
 * `btf` is a literal at every call site, so the other branch is compiled out. */
#define RD(btf, src, a) ((btf) ? (src)->a : BPF_CORE_READ(src, a))
#define RD2(btf, src, a, b) ((btf) ? (src)->a->b : BPF_CORE_READ(src, a, b))

static __always_inline __u32 disk_dev(struct gendisk *disk, bool btf)
{
    if (!disk)
        return 0;
    __u32 major = RD(btf, disk, major);
    __u32 minor = RD(btf, disk, first_minor);
    return major << 20 | minor;
}

static __always_inline __u32 rq_dev(struct request *rq, bool btf)
{
    struct gendisk *disk = RD2(btf, rq, q, disk);
    return disk_dev(disk, btf);
}

static __always_inline bool dev_wanted(__u32 dev)
{
    return dev && (!filter_dev || dev == filter_dev);
}

static __always_inline __u32 log2_bucket(__u64 v)
{
    __u32 r = 0, shift;
    if (v < 2)
        return 0;
    shift = (v > 0xFFFFFFFF) << 5; v >>= shift; r = shift;
    shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
    shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
    shift = (v > 0xF) << 2; v >>= shift; r |= shift;
    shift = (v > 0x3) << 1; v >>= shift; r |= shift;
    r |= (v >> 1);
    return r < IODIAG_NR_BUCKETS ? r : IODIAG_NR_BUCKETS - 1;
}

/* ns / 1000 without a 64-bit division (five per completion add up):
 * ns/1000 = (ns/8)/125, and (x * ceil(2^35/125)) >> 35 == x/125 exactly for
 * x < 2^32 (the rounding error 7*x/2^35 stays below 1/125). */
static __always_inline __u64 ns_to_us(__u64 ns)
{
    __u64 x = ns >> 3;
    return x < (1ULL << 32) ? (x * 274877907ULL) >> 35 : ns / 1000;
}

static __always_inline struct iodiag_dev_stats *dev_stats(__u32 dev)
{
    struct iodiag_dev_key key = {.dev = dev, .buf = active_buf & 1};
    struct iodiag_dev_stats *s = bpf_map_lookup_elem(&stats, &key);
    if (s)
        return s;
    __u32 zero = 0;
    struct iodiag_dev_stats *z = bpf_map_lookup_elem(&zero_stats, &zero);
    if (!z)
        return 0;
    bpf_map_update_elem(&stats, &key, z, BPF_NOEXIST);
    return bpf_map_lookup_elem(&stats, &key);
}

/* An address as a plain number for the table. Under tp_btf the verifier types
 * it as a pointer and forbids hashing it; the difference of two pointers is a
 * number (allowed for root), and subtracting the same anchor every time keeps
 * keys unique. raw_tp arguments are numbers already. */
#define KEY(btf, ptr) ((btf) ? (__u64)(ptr) - (__u64)&active_buf : (__u64)(ptr))

static __always_inline __u32 slot_of(__u64 key)
{
    /* Fibonacci hashing of the address; low bits are alignment, drop them */
    return ((__u32)(key >> 4) * 2654435761u) >> (32 - INFLIGHT_BITS);
}

static __always_inline struct iodiag_inflight *tbl_find(__u64 key)
{
    __u32 idx = slot_of(key);
    struct iodiag_inflight *e = bpf_map_lookup_elem(&inflight, &idx);
    return e && e->key == key ? e : 0;
}

static __always_inline void tbl_drop(struct iodiag_inflight *e)
{
    e->key = 0;
}

static __always_inline __u64 last_touch(struct iodiag_inflight *e)
{
    __u64 t = e->q;
    if (e->g > t) t = e->g;
    if (e->i > t) t = e->i;
    if (e->d > t) t = e->d;
    return t;
}

/* A cleared slot for `key` (timestamps zero), or 0 if a live entry holds it. */
static __always_inline struct iodiag_inflight *tbl_claim(__u64 key, __u64 now)
{
    __u32 idx = slot_of(key);
    struct iodiag_inflight *e = bpf_map_lookup_elem(&inflight, &idx);
    if (!e)
        return 0;
    if (e->key && e->key != key) {
        if (now - last_touch(e) < STALE_NS) {
            __sync_fetch_and_add(&tracking_failed, 1);
            return 0;
        }
        __sync_fetch_and_add(&stale_dropped, 1);
    }
    e->key = key;
    e->q = e->g = e->i = e->d = 0;
    e->depth = 0;
    e->front_merged = 0;
    return e;
}

/* The in-flight entry of a request: its head bio's, walking past bios that
 * were front-merged onto it; a bio-less request's own. */
static __always_inline struct iodiag_inflight *rq_entry(struct request *rq, bool btf)
{
    struct bio *bio = RD(btf, rq, bio);
    if (!bio)
        return tbl_find(KEY(btf, rq));
#pragma unroll
    for (int n = 0; n < FRONT_MERGE_WALK; n++) {
        struct iodiag_inflight *e = tbl_find(KEY(btf, bio));
        if (!e)
            break;
        if (!e->front_merged)
            return e;
        tbl_drop(e); /* merged bio: part of this request now */
        bio = RD(btf, bio, bi_next);
        if (!bio)
            break;
    }
    return 0;
}

static __always_inline void fill_submitter(struct iodiag_inflight *e)
{
    e->pid_tgid = bpf_get_current_pid_tgid();
    e->task = bpf_get_current_task();
}

/* comm and cgroup of the submitter, read at completion for slow requests only.
 * If the task is gone (its thread id no longer matches), both stay empty. */
static __always_inline void read_submitter(struct iodiag_inflight *e, struct iodiag_block_event *ev)
{
    struct task_struct *t = (struct task_struct *)e->task;
    ev->comm[0] = 0;
    ev->cgroup_id = 0;
    if (!t || BPF_CORE_READ(t, pid) != (__s32)(__u32)e->pid_tgid)
        return;
    BPF_CORE_READ_STR_INTO(&ev->comm, t, comm);
    ev->cgroup_id = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/* Entry for a request seen first at I or D (no Q: a flush request, or one
 * queued before we attached). Not created under a pid filter, whose requests
 * are exactly those with a Q from that process. */
static __always_inline struct iodiag_inflight *rq_entry_or_new(struct request *rq, bool btf, __u64 now)
{
    struct iodiag_inflight *e = rq_entry(rq, btf);
    if (e || filter_pid)
        return e;
    struct bio *bio = RD(btf, rq, bio);
    e = tbl_claim(bio ? KEY(btf, bio) : KEY(btf, rq), now);
    if (e)
        fill_submitter(e);
    return e;
}

static __always_inline int on_bio_queue(struct bio *bio, bool btf)
{
    struct gendisk *disk = RD2(btf, bio, bi_bdev, bd_disk);
    if (!disk)
        return 0;
    /* bio-based disk: no request will ever close this entry */
    if (!RD2(btf, disk, queue, mq_ops))
        return 0;
    if (!dev_wanted(disk_dev(disk, btf)))
        return 0;
    if (filter_pid && (bpf_get_current_pid_tgid() >> 32) != filter_pid)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct iodiag_inflight *e = tbl_claim(KEY(btf, bio), now);
    if (!e)
        return 0;
    e->q = now;
    fill_submitter(e);
    return 0;
}

static __always_inline int on_getrq(struct bio *bio, bool btf)
{
    struct iodiag_inflight *e = tbl_find(KEY(btf, bio));
    if (e)
        e->g = bpf_ktime_get_ns();
    return 0;
}

static __always_inline int on_rq_insert(struct request *rq, bool btf)
{
    if (!dev_wanted(rq_dev(rq, btf)))
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct iodiag_inflight *e = rq_entry_or_new(rq, btf, now);
    if (e)
        e->i = now;
    return 0;
}

static __always_inline struct issued_slot *issued_of(__u32 dev)
{
    __u32 idx = ((dev >> 20) * 31 + (dev & 0xfffff)) & (ISSUED_SLOTS - 1);
    struct issued_slot *n = bpf_map_lookup_elem(&issued, &idx);
    if (!n)
        return 0;
    if (n->dev != dev) {
        if (n->dev)
            return 0;
        n->dev = dev;
    }
    return n;
}

static __always_inline int on_rq_issue(struct request *rq, bool btf)
{
    __u32 dev = rq_dev(rq, btf);
    if (!dev_wanted(dev))
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct iodiag_inflight *e = rq_entry_or_new(rq, btf, now);
    if (!e)
        return 0;
    e->d = now;
    struct issued_slot *n = issued_of(dev);
    if (!n)
        return 0;
    __sync_fetch_and_add(&n->n, 1);
    /* read after the add: concurrent issues on other CPUs may be counted too,
     * which is what "in flight at that moment" means anyway */
    __s64 depth = n->n;
    e->depth = depth > 0 ? depth : 1;
    return 0;
}

static __always_inline void issued_done(__u32 dev)
{
    struct issued_slot *n = issued_of(dev);
    if (n)
        __sync_fetch_and_add(&n->n, -1);
}

static __always_inline __u32 op_index(__u32 cmd_flags)
{
    switch (cmd_flags & REQ_OP_BITS_MASK) {
    case REQ_OP_READ: return IODIAG_OP_READ;
    case REQ_OP_WRITE: return IODIAG_OP_WRITE;
    case REQ_OP_FLUSH: return IODIAG_OP_FLUSH;
    case REQ_OP_DISCARD: return IODIAG_OP_DISCARD;
    default: return IODIAG_OP_OTHER;
    }
}

struct stage_times { __u64 ns[IODIAG_NR_STAGES]; };

/* Adds one completed request to its device's histograms and sums. A global
 * function: the verifier checks it once, on its own, instead of once per path
 * through on_rq_complete (that made the completion program ~415k verified
 * instructions, most of the collector's start time). depth < 0: the
 * request was not seen at issue (no depth). */
__noinline int account_completion(__u32 dev, struct stage_times *t, __u32 op_in, int depth)
{
    struct iodiag_dev_stats *s = dev_stats(dev);
    if (!s || !t)
        return 0;
    /* the bound checked on the register that indexes (the verifier must see it) */
    __u64 op = op_in;
    barrier_var(op);
    if (op >= IODIAG_NR_OPS)
        return 0;
    barrier_var(op);
#pragma unroll
    for (int k = 0; k < IODIAG_NR_STAGES; k++) {
        s->hist[op][k][log2_bucket(ns_to_us(t->ns[k]))]++;
        s->sum_ns[op][k] += t->ns[k];
    }
    s->count[op]++;
    if (depth >= 0)
        s->depth_hist[log2_bucket((__u32)depth)]++;
    return 0;
}

static __always_inline int on_rq_complete(struct request *rq, unsigned int nr_bytes, bool btf)
{
    __u32 dev = rq_dev(rq, btf);
    if (!dev_wanted(dev))
        return 0;
    struct iodiag_inflight *e = rq_entry(rq, btf);
    if (!e)
        return 0;
    __u64 c = bpf_ktime_get_ns();
    /* A stage not passed takes the next seen stage's time (zero length), and
     * each stage is at least the previous one, so the four stages telescope to
     * exactly C - Q. */
    __u64 d = e->d ? e->d : c;
    __u64 i = e->i ? e->i : d;
    __u64 g = e->g ? e->g : i;
    __u64 q = e->q ? e->q : g;
    if (g < q) g = q;
    if (i < g) i = g;
    if (d < i) d = i;
    if (c < d) c = d;
    struct stage_times st = {{g - q, i - g, d - i, c - d, c - q}};
    __u32 op = op_index(RD(btf, rq, cmd_flags));
    __u32 depth = e->depth;
    if (e->d)
        issued_done(dev);
    account_completion(dev, &st, op, e->d ? (int)depth : -1);

    if (st.ns[IODIAG_Q2C] >= slow_threshold_ns) {
        struct iodiag_block_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
        if (!ev) {
            __sync_fetch_and_add(&exemplars_dropped, 1);
        } else {
            ev->q_ns = q;
            ev->g_ns = g;
            ev->i_ns = i;
            ev->d_ns = d;
            ev->c_ns = c;
            ev->sector = RD(btf, rq, __sector);
            ev->bytes = nr_bytes;
            ev->dev = dev;
            ev->pid = e->pid_tgid >> 32;
            ev->depth = depth;
            ev->op = op;
            ev->seen = (e->q ? IODIAG_SEEN_Q : 0) | (e->g ? IODIAG_SEEN_G : 0) |
                       (e->i ? IODIAG_SEEN_I : 0) | (e->d ? IODIAG_SEEN_D : 0);
            read_submitter(e, ev);
            bpf_ringbuf_submit(ev, 0);
        }
    }
    tbl_drop(e);
    return 0;
}

static __always_inline void count_merge(__u32 dev)
{
    struct iodiag_dev_stats *s = dev_stats(dev);
    if (s)
        s->merges++;
}

/* A bio joined an existing request: it never gets a G of its own. */
static __always_inline int on_bio_merge(struct bio *bio, bool front, bool btf)
{
    struct iodiag_inflight *e = tbl_find(KEY(btf, bio));
    if (!e)
        return 0; /* not tracked (filtered out) */
    if (front)
        e->front_merged = 1; /* the request's head now; lookups walk past it */
    else
        tbl_drop(e);
    count_merge(disk_dev(RD2(btf, bio, bi_bdev, bd_disk), btf));
    return 0;
}

/* A request merged into another one (its bios move over; it never completes). */
static __always_inline int on_rq_merge(struct request *rq, bool btf)
{
    struct iodiag_inflight *e = rq_entry(rq, btf);
    if (!e)
        return 0;
    tbl_drop(e);
    count_merge(rq_dev(rq, btf));
    return 0;
}

/* Put back for another dispatch: the next D counts, the wait goes to I2D. */
static __always_inline int on_rq_requeue(struct request *rq, bool btf)
{
    struct iodiag_inflight *e = rq_entry(rq, btf);
    if (!e)
        return 0;
    __u32 dev = rq_dev(rq, btf);
    if (e->d)
        issued_done(dev);
    e->d = 0;
    struct iodiag_dev_stats *s = dev_stats(dev);
    if (s)
        s->requeues++;
    return 0;
}

/* ---- tp_btf variants ---- */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(btf_bio_queue, struct bio *bio) { return on_bio_queue(bio, true); }
SEC("tp_btf/block_getrq")
int BPF_PROG(btf_getrq, struct bio *bio) { return on_getrq(bio, true); }
SEC("tp_btf/block_rq_insert")
int BPF_PROG(btf_rq_insert, struct request *rq) { return on_rq_insert(rq, true); }
SEC("tp_btf/block_rq_issue")
int BPF_PROG(btf_rq_issue, struct request *rq) { return on_rq_issue(rq, true); }
SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{ return on_rq_complete(rq, nr_bytes, true); }
SEC("tp_btf/block_bio_backmerge")
int BPF_PROG(btf_bio_backmerge, struct bio *bio) { return on_bio_merge(bio, false, true); }
SEC("tp_btf/block_bio_frontmerge")
int BPF_PROG(btf_bio_frontmerge, struct bio *bio) { return on_bio_merge(bio, true, true); }
SEC("tp_btf/block_rq_merge")
int BPF_PROG(btf_rq_merge, struct request *rq) { return on_rq_merge(rq, true); }
SEC("tp_btf/block_rq_requeue")
int BPF_PROG(btf_rq_requeue, struct request *rq) { return on_rq_requeue(rq, true); }

/* ---- raw_tp variants (CO-RE reads) ---- */
SEC("raw_tp/block_bio_queue")
int BPF_PROG(raw_bio_queue, struct bio *bio) { return on_bio_queue(bio, false); }
SEC("raw_tp/block_getrq")
int BPF_PROG(raw_getrq, struct bio *bio) { return on_getrq(bio, false); }
SEC("raw_tp/block_rq_insert")
int BPF_PROG(raw_rq_insert, struct request *rq) { return on_rq_insert(rq, false); }
SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_rq_issue, struct request *rq) { return on_rq_issue(rq, false); }
SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{ return on_rq_complete(rq, nr_bytes, false); }
SEC("raw_tp/block_bio_backmerge")
int BPF_PROG(raw_bio_backmerge, struct bio *bio) { return on_bio_merge(bio, false, false); }
SEC("raw_tp/block_bio_frontmerge")
int BPF_PROG(raw_bio_frontmerge, struct bio *bio) { return on_bio_merge(bio, true, false); }
SEC("raw_tp/block_rq_merge")
int BPF_PROG(raw_rq_merge, struct request *rq) { return on_rq_merge(rq, false); }
SEC("raw_tp/block_rq_requeue")
int BPF_PROG(raw_rq_requeue, struct request *rq) { return on_rq_requeue(rq, false); }

char LICENSE[] SEC("license") = "GPL";
