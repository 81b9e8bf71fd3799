// SPDX-License-Identifier: GPL-2.0
/* io_uring per ring and process: submit -> complete latency (log2 us), the share
 * of requests punted to io-wq workers (io_uring_queue_async_work), and how long
 * tasks waited for completions (io_uring_cqring_wait -> exit of io_uring_enter).
 *
 * A punt means the request could not be issued without blocking from the
 * submitting context (e.g. a buffered write on ext4), so an io-wq worker thread
 * performs it as an ordinary blocking call.
 *
 * Two program variants per io_uring tracepoint: tp_btf (typed args) and raw_tp
 * (same args untyped); user space enables one set, chosen by real probes.
 * Fields are read with CO-RE in both.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "iouring_events.h"

const volatile __u32 filter_tgid = 0; /* 0 = every process */

__u64 inflight_busy = 0; /* submits not timed: their slot held by a live request */

/* In-flight requests live in a direct-mapped table (an array indexed by a hash
 * of the request's address), not a hash map: a slot costs a few loads and
 * stores where a hash-map update and delete cost hundreds of ns per request.
 * A slot held by a live request is not taken over (the newcomer is counted in
 * inflight_busy, not timed); one idle past STALE_NS is (its completion was
 * never seen). */
#define INFLIGHT_BITS 15
#define INFLIGHT_SLOTS (1u << INFLIGHT_BITS)
#define CQWAIT_BITS 12
#define CQWAIT_SLOTS (1u << CQWAIT_BITS)
#define STALE_NS (10ULL * 1000000000ULL)

struct inflight {
    __u64 req;
    __u64 ts;
    __u32 tgid;
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, INFLIGHT_SLOTS);
    __type(key, __u32);
    __type(value, struct inflight);
} inflight SEC(".maps");

static __always_inline __u32 slot_of(__u64 v, __u32 bits)
{
    /* Fibonacci hashing of the address (low bits are alignment zeros). */
    return (__u32)((v * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, struct iouring_key);
    __type(value, struct iouring_stats);
} stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct iouring_stats);
} stats_template SEC(".maps");

struct cqwait_start {
    __u64 ts;
    __u64 ring;
    __u32 tid;
    __u32 pad;
};

/* Threads waiting for completions, direct-mapped by thread id (see above). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, CQWAIT_SLOTS);
    __type(key, __u32);
    __type(value, struct cqwait_start);
} cqwaiting SEC(".maps");

static __always_inline int op_class(__u8 opcode)
{
    switch (opcode) {
    case IORING_OP_READV:
    case IORING_OP_READ_FIXED:
    case IORING_OP_READ:
        return IOURING_OP_READ;
    case IORING_OP_WRITEV:
    case IORING_OP_WRITE_FIXED:
    case IORING_OP_WRITE:
        return IOURING_OP_WRITE;
    default:
        return IOURING_OP_OTHER;
    }
}

/* Bucket of the Log2Histogram layout: 0 for 0..1, i for [2^i, 2^(i+1)-1]. */
static __always_inline __u32 log2_slot(__u64 v)
{
    __u32 r = 0;
    if (v >= (1ULL << 32)) { v >>= 32; r += 32; }
    if (v >= (1ULL << 16)) { v >>= 16; r += 16; }
    if (v >= (1ULL << 8)) { v >>= 8; r += 8; }
    if (v >= (1ULL << 4)) { v >>= 4; r += 4; }
    if (v >= (1ULL << 2)) { v >>= 2; r += 2; }
    if (v >= (1ULL << 1)) { r += 1; }
    return r < IOURING_HIST_SLOTS ? r : IOURING_HIST_SLOTS - 1;
}

static __always_inline struct iouring_stats *stats_for(__u32 tgid, __u64 ring)
{
    struct iouring_key key = {.tgid = tgid, .ring = ring};
    struct iouring_stats *s = bpf_map_lookup_elem(&stats, &key);
    if (s)
        return s;
    /* The value is too big for the BPF stack: start from a zeroed per-CPU
     * template whose only written field is comm. */
    __u32 zero_key = 0;
    struct iouring_stats *tmpl = bpf_map_lookup_elem(&stats_template, &zero_key);
    if (!tmpl)
        return 0;
    bpf_get_current_comm(tmpl->comm, sizeof(tmpl->comm));
    bpf_map_update_elem(&stats, &key, tmpl, BPF_NOEXIST);
    return bpf_map_lookup_elem(&stats, &key);
}

/* An argument as a plain number. Under tp_btf the verifier types a struct
 * pointer argument as a trusted pointer and forbids hashing it; copying the
 * argument slot gives its value as a number. (void * arguments, and every raw_tp
 * argument, are numbers already.) */
static __always_inline __u64 arg_as_number(unsigned long long *ctx, int i)
{
    __u64 v = 0;
    bpf_probe_read_kernel(&v, sizeof(v), &ctx[i]);
    return v;
}

static __always_inline int on_submit(struct io_kiocb *req, __u64 req_addr)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (filter_tgid && tgid != filter_tgid)
        return 0;
    __u64 ring = (__u64)BPF_CORE_READ(req, ctx);
    __u8 opcode = BPF_CORE_READ(req, opcode);
    struct iouring_stats *s = stats_for(tgid, ring);
    if (s)
        __sync_fetch_and_add(&s->submitted[op_class(opcode)], 1);
    __u32 slot = slot_of(req_addr, INFLIGHT_BITS);
    struct inflight *f = bpf_map_lookup_elem(&inflight, &slot);
    if (!f)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    if (f->req && f->req != req_addr && now - f->ts < STALE_NS) {
        __sync_fetch_and_add(&inflight_busy, 1);
        return 0;
    }
    f->req = req_addr;
    f->ts = now;
    f->tgid = tgid;
    return 0;
}

static __always_inline int on_punt(struct io_kiocb *req, __u64 req_addr)
{
    __u32 slot = slot_of(req_addr, INFLIGHT_BITS);
    struct inflight *f = bpf_map_lookup_elem(&inflight, &slot);
    __u32 tgid = (f && f->req == req_addr) ? f->tgid : (__u32)(bpf_get_current_pid_tgid() >> 32);
    if (filter_tgid && tgid != filter_tgid)
        return 0;
    __u64 ring = (__u64)BPF_CORE_READ(req, ctx);
    __u8 opcode = BPF_CORE_READ(req, opcode);
    struct iouring_stats *s = stats_for(tgid, ring);
    if (s)
        __sync_fetch_and_add(&s->punted[op_class(opcode)], 1);
    return 0;
}

static __always_inline int on_complete(__u64 ring, __u64 req_addr)
{
    __u32 slot = slot_of(req_addr, INFLIGHT_BITS);
    struct inflight *f = bpf_map_lookup_elem(&inflight, &slot);
    if (!f || f->req != req_addr) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;
        if (filter_tgid && tgid != filter_tgid)
            return 0;
        struct iouring_stats *s = stats_for(tgid, ring);
        if (s)
            __sync_fetch_and_add(&s->untracked, 1);
        return 0;
    }
    __u64 delta = bpf_ktime_get_ns() - f->ts;
    __u32 tgid = f->tgid;
    f->req = 0; /* free the slot */
    struct iouring_key k = {.tgid = tgid, .ring = ring};
    struct iouring_stats *s = bpf_map_lookup_elem(&stats, &k);
    if (!s)
        return 0;
    __sync_fetch_and_add(&s->completed, 1);
    __sync_fetch_and_add(&s->lat_sum_ns, delta);
    __u32 bucket = log2_slot(delta / 1000);
    if (bucket < IOURING_HIST_SLOTS)
        __sync_fetch_and_add(&s->lat_hist[bucket], 1);
    return 0;
}

static __always_inline int on_cqring_wait(__u64 ring)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (filter_tgid && (id >> 32) != filter_tgid)
        return 0;
    __u32 tid = (__u32)id;
    __u32 slot = slot_of(tid, CQWAIT_BITS);
    struct cqwait_start *w = bpf_map_lookup_elem(&cqwaiting, &slot);
    if (!w)
        return 0;
    w->ts = bpf_ktime_get_ns();
    w->ring = ring;
    w->tid = tid;
    return 0;
}

/* ---- tp_btf variants ---- */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(btf_submit_req, struct io_kiocb *req) { return on_submit(req, arg_as_number(ctx, 0)); }

SEC("tp_btf/io_uring_queue_async_work")
int BPF_PROG(btf_queue_async_work, struct io_kiocb *req, int rw) { return on_punt(req, arg_as_number(ctx, 0)); }

SEC("tp_btf/io_uring_complete")
int BPF_PROG(btf_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
    return on_complete(arg_as_number(ctx, 0), (__u64)req);
}

SEC("tp_btf/io_uring_cqring_wait")
int BPF_PROG(btf_cqring_wait, void *ring, int min_events) { return on_cqring_wait((__u64)ring); }

/* ---- raw_tp variants: every argument is a number ---- */
SEC("raw_tp/io_uring_submit_req")
int BPF_PROG(raw_submit_req, struct io_kiocb *req) { return on_submit(req, (__u64)req); }

SEC("raw_tp/io_uring_queue_async_work")
int BPF_PROG(raw_queue_async_work, struct io_kiocb *req, int rw) { return on_punt(req, (__u64)req); }

SEC("raw_tp/io_uring_complete")
int BPF_PROG(raw_complete, void *ring, void *req, void *cqe) { return on_complete((__u64)ring, (__u64)req); }

SEC("raw_tp/io_uring_cqring_wait")
int BPF_PROG(raw_cqring_wait, void *ring, int min_events) { return on_cqring_wait((__u64)ring); }

/* The wait ends when io_uring_enter returns (classic syscall tracepoint: the
 * syscall tracepoints have no BTF prototype of their own). */
SEC("tracepoint/syscalls/sys_exit_io_uring_enter")
int sys_exit_io_uring_enter(void *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id;
    __u32 slot = slot_of(tid, CQWAIT_BITS);
    struct cqwait_start *w = bpf_map_lookup_elem(&cqwaiting, &slot);
    if (!w || w->tid != tid || !w->ts)
        return 0;
    __u64 delta = bpf_ktime_get_ns() - w->ts;
    __u64 ring = w->ring;
    w->ts = 0; /* free the slot */
    struct iouring_stats *s = stats_for(id >> 32, ring);
    if (!s)
        return 0;
    __sync_fetch_and_add(&s->cqwait_count, 1);
    __sync_fetch_and_add(&s->cqwait_sum_ns, delta);
    __u32 bucket = log2_slot(delta / 1000);
    if (bucket < IOURING_HIST_SLOTS)
        __sync_fetch_and_add(&s->cqwait_hist[bucket], 1);
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
