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
 * Stale entries (a request that died in an error path) are bounded by the map
 * size and swept by user space by age.
 *
 * Two program variants per tracepoint: tp_btf (direct BTF reads, cheapest) and
 * raw_tp (CO-RE reads); user space enables one set, chosen by real probes.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "block_events.h"

#define MAX_INFLIGHT 16384
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
__u64 tracking_failed = 0;       /* in-flight map full: request not timed */


struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, MAX_INFLIGHT);
    __type(key, __u64);
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

/* Requests issued and not yet completed, per disk: the queue depth at issue. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, MAX_DISKS);
    __type(key, __u32);
    __type(value, __s64);
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

/* The in-flight entry of a request: its head bio's, walking past bios that
 * were front-merged onto it; a bio-less request's own. */
static __always_inline struct iodiag_inflight *rq_entry(struct request *rq, bool btf, __u64 *keyp)
{
    struct bio *bio = RD(btf, rq, bio);
    __u64 key;
    if (!bio) {
        key = (__u64)rq;
        *keyp = key;
        return bpf_map_lookup_elem(&inflight, &key);
    }
#pragma unroll
    for (int n = 0; n < FRONT_MERGE_WALK; n++) {
        key = (__u64)bio;
        struct iodiag_inflight *e = bpf_map_lookup_elem(&inflight, &key);
        if (e && !e->front_merged) {
            *keyp = key;
            return e;
        }
        if (!e)
            break;
        bpf_map_delete_elem(&inflight, &key); /* merged bio: part of this request now */
        bio = RD(btf, bio, bi_next);
        if (!bio)
            break;
    }
    return 0;
}

static __always_inline void fill_submitter(struct iodiag_inflight *e)
{
    e->pid = bpf_get_current_pid_tgid() >> 32;
    e->cgroup_id = bpf_get_current_cgroup_id();
    bpf_get_current_comm(e->comm, sizeof(e->comm));
}

/* Entry for a request seen first at I or D (no Q: a flush request, or one
 * queued before we attached). Not created under a pid filter, whose requests
 * are exactly those with a Q from that process. */
static __always_inline struct iodiag_inflight *rq_entry_or_new(struct request *rq, bool btf)
{
    __u64 key;
    struct iodiag_inflight *e = rq_entry(rq, btf, &key);
    if (e || filter_pid)
        return e;
    struct iodiag_inflight fresh = {};
    fill_submitter(&fresh);
    struct bio *bio = RD(btf, rq, bio);
    key = bio ? (__u64)bio : (__u64)rq;
    if (bpf_map_update_elem(&inflight, &key, &fresh, BPF_ANY)) {
        __sync_fetch_and_add(&tracking_failed, 1);
        return 0;
    }
    return bpf_map_lookup_elem(&inflight, &key);
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
    struct iodiag_inflight e = {};
    e.q = bpf_ktime_get_ns();
    fill_submitter(&e);
    __u64 key = (__u64)bio;
    if (bpf_map_update_elem(&inflight, &key, &e, BPF_ANY))
        __sync_fetch_and_add(&tracking_failed, 1);
    return 0;
}

static __always_inline int on_getrq(struct bio *bio)
{
    __u64 key = (__u64)bio;
    struct iodiag_inflight *e = bpf_map_lookup_elem(&inflight, &key);
    if (e)
        e->g = bpf_ktime_get_ns();
    return 0;
}

static __always_inline int on_rq_insert(struct request *rq, bool btf)
{
    if (!dev_wanted(rq_dev(rq, btf)))
        return 0;
    struct iodiag_inflight *e = rq_entry_or_new(rq, btf);
    if (e)
        e->i = bpf_ktime_get_ns();
    return 0;
}

static __always_inline int on_rq_issue(struct request *rq, bool btf)
{
    __u32 dev = rq_dev(rq, btf);
    if (!dev_wanted(dev))
        return 0;
    struct iodiag_inflight *e = rq_entry_or_new(rq, btf);
    if (!e)
        return 0;
    e->d = bpf_ktime_get_ns();
    __s64 *n = bpf_map_lookup_elem(&issued, &dev);
    if (!n) {
        __s64 zero = 0;
        bpf_map_update_elem(&issued, &dev, &zero, BPF_NOEXIST);
        n = bpf_map_lookup_elem(&issued, &dev);
        if (!n)
            return 0;
    }
    __sync_fetch_and_add(n, 1);
    /* read after the add: concurrent issues on other CPUs may be counted too,
     * which is what "in flight at that moment" means anyway */
    __s64 depth = *n;
    e->depth = depth > 0 ? depth : 1;
    return 0;
}

static __always_inline void issued_done(__u32 dev)
{
    __s64 *n = bpf_map_lookup_elem(&issued, &dev);
    if (n)
        __sync_fetch_and_add(n, -1);
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

static __always_inline int on_rq_complete(struct request *rq, unsigned int nr_bytes, bool btf)
{
    __u32 dev = rq_dev(rq, btf);
    if (!dev_wanted(dev))
        return 0;
    __u64 key;
    struct iodiag_inflight *e = rq_entry(rq, btf, &key);
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
    __u64 st[IODIAG_NR_STAGES] = {g - q, i - g, d - i, c - d, c - q};
    __u32 op = op_index(RD(btf, rq, cmd_flags));
    __u32 depth = e->depth;
    if (e->d)
        issued_done(dev);

    struct iodiag_dev_stats *s = dev_stats(dev);
    if (s && op < IODIAG_NR_OPS) {
#pragma unroll
        for (int k = 0; k < IODIAG_NR_STAGES; k++) {
            s->hist[op][k][log2_bucket(st[k] / 1000)]++;
            s->sum_ns[op][k] += st[k];
        }
        s->count[op]++;
        if (e->d)
            s->depth_hist[log2_bucket(depth)]++;
    }

    if (st[IODIAG_Q2C] >= slow_threshold_ns) {
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
            ev->cgroup_id = e->cgroup_id;
            ev->bytes = nr_bytes;
            ev->dev = dev;
            ev->pid = e->pid;
            ev->depth = depth;
            ev->op = op;
            ev->seen = (e->q ? IODIAG_SEEN_Q : 0) | (e->g ? IODIAG_SEEN_G : 0) |
                       (e->i ? IODIAG_SEEN_I : 0) | (e->d ? IODIAG_SEEN_D : 0);
            __builtin_memcpy(ev->comm, e->comm, sizeof(ev->comm));
            bpf_ringbuf_submit(ev, 0);
        }
    }
    bpf_map_delete_elem(&inflight, &key);
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
    __u64 key = (__u64)bio;
    struct iodiag_inflight *e = bpf_map_lookup_elem(&inflight, &key);
    if (!e)
        return 0; /* not tracked (filtered out) */
    if (front)
        e->front_merged = 1; /* the request's head now; lookups walk past it */
    else
        bpf_map_delete_elem(&inflight, &key);
    count_merge(disk_dev(RD2(btf, bio, bi_bdev, bd_disk), btf));
    return 0;
}

/* A request merged into another one (its bios move over; it never completes). */
static __always_inline int on_rq_merge(struct request *rq, bool btf)
{
    __u64 key;
    struct iodiag_inflight *e = rq_entry(rq, btf, &key);
    if (!e)
        return 0;
    bpf_map_delete_elem(&inflight, &key);
    count_merge(rq_dev(rq, btf));
    return 0;
}

/* Put back for another dispatch: the next D counts, the wait goes to I2D. */
static __always_inline int on_rq_requeue(struct request *rq, bool btf)
{
    __u64 key;
    struct iodiag_inflight *e = rq_entry(rq, btf, &key);
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
int BPF_PROG(btf_getrq, struct bio *bio) { return on_getrq(bio); }
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
int BPF_PROG(raw_getrq, struct bio *bio) { return on_getrq(bio); }
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
