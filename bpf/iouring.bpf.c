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

__u64 inflight_full = 0; /* submits not timed: in-flight table full */

struct inflight {
    __u64 ts;
    __u32 tgid;
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 32768);
    __type(key, __u64); /* struct io_kiocb * */
    __type(value, struct inflight);
} inflight SEC(".maps");

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
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 8192);
    __type(key, __u32); /* thread id */
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

static __always_inline int on_submit(struct io_kiocb *req)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (filter_tgid && tgid != filter_tgid)
        return 0;
    __u64 ring = (__u64)BPF_CORE_READ(req, ctx);
    __u8 opcode = BPF_CORE_READ(req, opcode);
    struct iouring_stats *s = stats_for(tgid, ring);
    if (s)
        __sync_fetch_and_add(&s->submitted[op_class(opcode)], 1);
    __u64 key = (__u64)req;
    struct inflight v = {.ts = bpf_ktime_get_ns(), .tgid = tgid};
    if (bpf_map_update_elem(&inflight, &key, &v, BPF_ANY))
        __sync_fetch_and_add(&inflight_full, 1);
    return 0;
}

static __always_inline int on_punt(struct io_kiocb *req)
{
    __u64 key = (__u64)req;
    struct inflight *f = bpf_map_lookup_elem(&inflight, &key);
    __u32 tgid = f ? f->tgid : (__u32)(bpf_get_current_pid_tgid() >> 32);
    if (filter_tgid && tgid != filter_tgid)
        return 0;
    __u64 ring = (__u64)BPF_CORE_READ(req, ctx);
    __u8 opcode = BPF_CORE_READ(req, opcode);
    struct iouring_stats *s = stats_for(tgid, ring);
    if (s)
        __sync_fetch_and_add(&s->punted[op_class(opcode)], 1);
    return 0;
}

static __always_inline int on_complete(void *ctx_ptr, void *req)
{
    __u64 key = (__u64)req;
    struct inflight *f = bpf_map_lookup_elem(&inflight, &key);
    if (!f) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;
        if (filter_tgid && tgid != filter_tgid)
            return 0;
        struct iouring_stats *s = stats_for(tgid, (__u64)ctx_ptr);
        if (s)
            __sync_fetch_and_add(&s->untracked, 1);
        return 0;
    }
    __u64 delta = bpf_ktime_get_ns() - f->ts;
    __u32 tgid = f->tgid;
    bpf_map_delete_elem(&inflight, &key);
    struct iouring_key k = {.tgid = tgid, .ring = (__u64)ctx_ptr};
    struct iouring_stats *s = bpf_map_lookup_elem(&stats, &k);
    if (!s)
        return 0;
    __sync_fetch_and_add(&s->completed, 1);
    __sync_fetch_and_add(&s->lat_sum_ns, delta);
    __u32 slot = log2_slot(delta / 1000);
    if (slot < IOURING_HIST_SLOTS)
        __sync_fetch_and_add(&s->lat_hist[slot], 1);
    return 0;
}

static __always_inline int on_cqring_wait(void *ctx_ptr)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (filter_tgid && (id >> 32) != filter_tgid)
        return 0;
    __u32 tid = (__u32)id;
    struct cqwait_start v = {.ts = bpf_ktime_get_ns(), .ring = (__u64)ctx_ptr};
    bpf_map_update_elem(&cqwaiting, &tid, &v, BPF_ANY);
    return 0;
}

/* ---- tp_btf variants ---- */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(btf_submit_req, struct io_kiocb *req) { return on_submit(req); }

SEC("tp_btf/io_uring_queue_async_work")
int BPF_PROG(btf_queue_async_work, struct io_kiocb *req, int rw) { return on_punt(req); }

SEC("tp_btf/io_uring_complete")
int BPF_PROG(btf_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
    return on_complete(ring, req);
}

SEC("tp_btf/io_uring_cqring_wait")
int BPF_PROG(btf_cqring_wait, void *ring, int min_events) { return on_cqring_wait(ring); }

/* ---- raw_tp variants ---- */
SEC("raw_tp/io_uring_submit_req")
int BPF_PROG(raw_submit_req, struct io_kiocb *req) { return on_submit(req); }

SEC("raw_tp/io_uring_queue_async_work")
int BPF_PROG(raw_queue_async_work, struct io_kiocb *req, int rw) { return on_punt(req); }

SEC("raw_tp/io_uring_complete")
int BPF_PROG(raw_complete, void *ring, void *req, void *cqe) { return on_complete(ring, req); }

SEC("raw_tp/io_uring_cqring_wait")
int BPF_PROG(raw_cqring_wait, void *ring, int min_events) { return on_cqring_wait(ring); }

/* The wait ends when io_uring_enter returns (classic syscall tracepoint: the
 * syscall tracepoints have no BTF prototype of their own). */
SEC("tracepoint/syscalls/sys_exit_io_uring_enter")
int sys_exit_io_uring_enter(void *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id;
    struct cqwait_start *w = bpf_map_lookup_elem(&cqwaiting, &tid);
    if (!w)
        return 0;
    __u64 delta = bpf_ktime_get_ns() - w->ts;
    __u64 ring = w->ring;
    bpf_map_delete_elem(&cqwaiting, &tid);
    struct iouring_stats *s = stats_for(id >> 32, ring);
    if (!s)
        return 0;
    __sync_fetch_and_add(&s->cqwait_count, 1);
    __sync_fetch_and_add(&s->cqwait_sum_ns, delta);
    __u32 slot = log2_slot(delta / 1000);
    if (slot < IOURING_HIST_SLOTS)
        __sync_fetch_and_add(&s->cqwait_hist[slot], 1);
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
