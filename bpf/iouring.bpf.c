// SPDX-License-Identifier: GPL-2.0
/* io_uring per ring and process: submit -> complete latency (log2 us), the share
 * of requests punted to io-wq workers (io_uring_queue_async_work), and how long
 * tasks waited for completions (io_uring_cqring_wait -> exit of io_uring_enter).
 *
 * A punt means the request could not be issued without blocking from the
 * submitting context (e.g. a buffered write on ext4), so an io-wq worker thread
 * performs it as an ordinary blocking call.
 *
 * Cost discipline (two program runs per request: submit, complete): no hash
 * map and no atomic on that path. In-flight requests live in a direct-mapped
 * table (an array indexed by a hash of the request's address); per-ring
 * aggregates in a per-CPU array slot found by a hash of (process, ring).
 *
 * Two program variants per io_uring tracepoint: tp_btf (typed args) and raw_tp
 * (same args untyped); user space enables one set, chosen by real probes.
 * The CQ wait ends at the exit of io_uring_enter: on its own per-syscall
 * tracepoint (syscalls:sys_exit_io_uring_enter, a perf event: user space
 * releases it off its exit path, its RCU synchronisation on close costs
 * ~20 ms here), or, where that is missing, on the raw raw_syscalls:sys_exit
 * tracepoint filtered by syscall number first (a program run for every
 * syscall of the machine). When the syscall collector runs, its exit
 * program tail-calls the one matching its own attach mode instead.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "iouring_events.h"
#include "log2_flat.h"

const volatile __u32 filter_tgid = 0; /* 0 = every process */
const volatile __u32 ring_slot_mask = 255; /* ring slots - 1, as user space sized the map */
const volatile long io_uring_enter_nr = 426; /* __NR_io_uring_enter, from user space */

/* Lost events by cause (enum iouring_lost); rare, so atomics are fine. */
__u64 lost[IOURING_LOST_COUNT] = {};
/* Set by user space when the window ends: the links and tp_sys_exit's perf
 * event are released after iodiag's exit, and until then every program
 * returns at once (the maps stop moving as after a detach). */
__u32 stopped = 0;

/* The in-flight table is two-way: a request lives in its hashed slot or, when
 * a live request held that one at submit, in the slot's neighbour (slot ^ 1),
 * so two live requests that hash alike are both timed (requests are io_kiocb
 * addresses from a per-ring cache: the same few keys come back all the time,
 * and two of them sharing a slot would lose one of them at every round). A
 * slot held by a live request is not taken over (a newcomer that finds both
 * held is counted, not timed); one idle past STALE_NS is (its completion was
 * never seen). */
#define INFLIGHT_BITS 15
#define INFLIGHT_SLOTS (1u << INFLIGHT_BITS)
_Static_assert(INFLIGHT_SLOTS == IOURING_INFLIGHT_SLOTS, "user space validates against iouring_events.h");
/* slots used - 1: all of them, unless a test shrinks the table */
const volatile __u32 inflight_slot_mask = INFLIGHT_SLOTS - 1;
#define CQWAIT_BITS 12
#define CQWAIT_SLOTS (1u << CQWAIT_BITS)
#define STALE_NS (10ULL * 1000000000ULL)

struct inflight {
    __u64 req;
    __u64 ts;
    __u64 punt_ts; /* when it was handed to io-wq; 0 = issued inline */
    __u32 tgid;
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, INFLIGHT_SLOTS);
    __type(key, __u32);
    __type(value, struct inflight);
} inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 256);
    __type(key, __u32);
    __type(value, struct iouring_stats);
} ring_stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, 4096);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct iouring_key);
    __type(value, struct iouring_stats);
} ring_overflow SEC(".maps");

/* Zeroes for a new overflow entry (too big for the BPF stack). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct iouring_stats);
} stats_zero SEC(".maps");

struct cqwait_start {
    __u64 ts;
    __u64 ring;
    __u32 tid;
    __u32 pad;
};

/* Threads waiting for completions, direct-mapped by thread id. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, CQWAIT_SLOTS);
    __type(key, __u32);
    __type(value, struct cqwait_start);
} cqwaiting SEC(".maps");

static __always_inline __u32 slot_of(__u64 v, __u32 bits)
{
    /* Fibonacci hashing of the address (low bits are alignment zeros). */
    return (__u32)((v * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

/* The entry timing `req_key`, or 0: its slot first, the neighbour only when
 * the first slot holds another request. */
static __always_inline struct inflight *inflight_find(__u64 req_key)
{
    __u32 slot = slot_of(req_key, INFLIGHT_BITS) & inflight_slot_mask;
    struct inflight *f = bpf_map_lookup_elem(&inflight, &slot);
    if (f && f->req == req_key)
        return f;
    slot ^= 1;
    f = bpf_map_lookup_elem(&inflight, &slot);
    return f && f->req == req_key ? f : 0;
}

static __always_inline bool inflight_takes(struct inflight *f, __u64 req_key, __u64 now)
{
    /* now > f->ts: another CPU may have stamped the entry after `now` was
     * read; the unsigned difference must not wrap into "stale". */
    return !f->req || f->req == req_key || (now > f->ts && now - f->ts >= STALE_NS);
}

/* An entry `req_key` may take, or 0 (counted) when live requests hold both
 * of its slots. */
static __always_inline struct inflight *inflight_claim(__u64 req_key, __u64 now)
{
    __u32 slot = slot_of(req_key, INFLIGHT_BITS) & inflight_slot_mask;
    struct inflight *f = bpf_map_lookup_elem(&inflight, &slot);
    if (!f)
        return 0;
    if (inflight_takes(f, req_key, now))
        return f;
    slot ^= 1;
    f = bpf_map_lookup_elem(&inflight, &slot);
    if (!f)
        return 0;
    if (inflight_takes(f, req_key, now))
        return f;
    __sync_fetch_and_add(&lost[IOURING_LOST_INFLIGHT_SLOT_BUSY], 1);
    return 0;
}

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
    return iodiag_log2_flat(v, IOURING_HIST_SLOTS);
}

/* A ring first seen on this CPU: its slot if free (with the submitter's comm),
 * else its overflow entry. Out of line: off the common path. */
static __noinline struct iouring_stats *claim_ring(__u32 tgid, __u64 ring, struct iouring_stats *slot)
{
    if (slot && !slot->key.ring) {
        slot->key.tgid = tgid;
        slot->key.ring = ring;
        bpf_get_current_comm(slot->comm, sizeof(slot->comm));
        return slot;
    }
    struct iouring_key key = {.tgid = tgid, .ring = ring};
    struct iouring_stats *s = bpf_map_lookup_elem(&ring_overflow, &key);
    if (s)
        return s;
    __u32 zero = 0;
    struct iouring_stats *z = bpf_map_lookup_elem(&stats_zero, &zero);
    if (!z)
        return 0;
    bpf_map_update_elem(&ring_overflow, &key, z, BPF_NOEXIST);
    s = bpf_map_lookup_elem(&ring_overflow, &key);
    if (s) {
        s->key = key;
        bpf_get_current_comm(s->comm, sizeof(s->comm));
    } else {
        __sync_fetch_and_add(&lost[IOURING_LOST_RING_TABLE_FULL], 1);
    }
    return s;
}

static __always_inline struct iouring_stats *stats_for(__u32 tgid, __u64 ring)
{
    __u32 idx = slot_of(ring ^ tgid, 32) & ring_slot_mask;
    struct iouring_stats *s = bpf_map_lookup_elem(&ring_stats, &idx);
    if (s && s->key.ring == ring && s->key.tgid == tgid)
        return s;
    return claim_ring(tgid, ring, s);
}

/* A number (a void * argument) as a BTF pointer. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define KCAST(ptr, type) ((type *)bpf_rdonly_cast((ptr), bpf_core_type_id_kernel(type)))

/* An address as a plain number for the tables. Under tp_btf the verifier
 * types pointers and forbids hashing them; the difference to a fixed anchor
 * is a number (allowed for root), the same one for the same address. A
 * void * argument (a number there) is made a pointer first, so that every
 * key of a run is made the same way. raw_tp arguments are numbers already. */
#define NUM(btf, ptr) ((btf) ? (__u64)(ptr) - (__u64)&lost : (__u64)(ptr))

static __always_inline int on_submit(struct io_kiocb *req, __u64 req_key, bool btf)
{
    if (stopped)
        return 0;
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (filter_tgid && tgid != filter_tgid)
        return 0;
    __u64 ring = btf ? NUM(true, req->ctx) : (__u64)BPF_CORE_READ(req, ctx);
    __u8 opcode = btf ? req->opcode : BPF_CORE_READ(req, opcode);
    struct iouring_stats *s = stats_for(tgid, ring);
    if (s) {
        int op = op_class(opcode);
        if (op >= 0 && op < IOURING_OP_CLASSES)
            s->submitted[op]++;
    }
    __u64 now = bpf_ktime_get_ns();
    struct inflight *f = inflight_claim(req_key, now);
    if (!f)
        return 0;
    f->req = req_key;
    f->ts = now;
    f->punt_ts = 0;
    f->tgid = tgid;
    return 0;
}

static __always_inline int on_punt(struct io_kiocb *req, __u64 req_key, bool btf)
{
    if (stopped)
        return 0;
    struct inflight *f = inflight_find(req_key);
    bool timed = f != 0;
    __u32 tgid = timed ? f->tgid : (__u32)(bpf_get_current_pid_tgid() >> 32);
    if (filter_tgid && tgid != filter_tgid)
        return 0;
    /* from here to its completion the request is an io-wq worker's */
    if (timed)
        f->punt_ts = bpf_ktime_get_ns();
    __u64 ring = btf ? NUM(true, req->ctx) : (__u64)BPF_CORE_READ(req, ctx);
    __u8 opcode = btf ? req->opcode : BPF_CORE_READ(req, opcode);
    struct iouring_stats *s = stats_for(tgid, ring);
    if (s) {
        int op = op_class(opcode);
        if (op >= 0 && op < IOURING_OP_CLASSES)
            s->punted[op]++;
    }
    return 0;
}

static __always_inline int on_complete(__u64 ring, __u64 req_key)
{
    if (stopped)
        return 0;
    struct inflight *f = inflight_find(req_key);
    if (!f) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;
        if (filter_tgid && tgid != filter_tgid)
            return 0;
        struct iouring_stats *s = stats_for(tgid, ring);
        if (s)
            s->untracked++;
        return 0;
    }
    __u64 now = bpf_ktime_get_ns();
    __u64 delta = now - f->ts;
    __u64 punt_ts = f->punt_ts;
    __u32 tgid = f->tgid;
    f->req = 0; /* free the slot */
    struct iouring_stats *s = stats_for(tgid, ring);
    if (!s)
        return 0;
    s->completed++;
    s->lat_sum_ns += delta;
    if (punt_ts && now > punt_ts)
        s->iowq_ns += now - punt_ts;
    __u32 bucket = log2_slot(delta / 1000);
    if (bucket < IOURING_HIST_SLOTS)
        s->lat_hist[bucket]++;
    return 0;
}

static __always_inline int on_cqring_wait(__u64 ring)
{
    if (stopped)
        return 0;
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

static __always_inline int on_enter_exit(void)
{
    if (stopped)
        return 0;
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
    s->cqwait_count++;
    s->cqwait_sum_ns += delta;
    __u32 bucket = log2_slot(delta / 1000);
    if (bucket < IOURING_HIST_SLOTS)
        s->cqwait_hist[bucket]++;
    return 0;
}

/* ---- tp_btf variants ----
 * The request is read through an untrusted copy of the pointer (bpf_rdonly_cast,
 * inlined to nothing): a pointer field loaded from a trusted pointer makes
 * the verifier search all of vmlinux BTF by name for a "__safe_trusted"
 * marker, a noticeable part of the load time on Linux 6.18. */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(btf_submit_req, struct io_kiocb *req)
{
    return on_submit(KCAST(req, struct io_kiocb), NUM(true, req), true);
}

SEC("tp_btf/io_uring_queue_async_work")
int BPF_PROG(btf_queue_async_work, struct io_kiocb *req, int rw)
{
    return on_punt(KCAST(req, struct io_kiocb), NUM(true, req), true);
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(btf_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
    return on_complete(NUM(true, ring), NUM(true, KCAST(req, struct io_kiocb)));
}

SEC("tp_btf/io_uring_cqring_wait")
int BPF_PROG(btf_cqring_wait, void *ring, int min_events) { return on_cqring_wait(NUM(true, KCAST(ring, struct io_ring_ctx))); }

/* The CQ wait ends when io_uring_enter returns. x86-64: the syscall number
 * is in orig_ax, and 32-bit compat syscalls (another numbering) are skipped. */
SEC("tp_btf/sys_exit")
int BPF_PROG(btf_sys_exit, struct pt_regs *regs, long ret)
{
    if (regs->orig_ax != io_uring_enter_nr || regs->cs == 0x23)
        return 0;
    return on_enter_exit();
}

/* The exit of io_uring_enter on its own tracepoint: no other syscall runs it. */
SEC("tracepoint/syscalls/sys_exit_io_uring_enter")
int tp_sys_exit(void *ctx)
{
    return on_enter_exit();
}

/* ---- raw_tp variants: every argument is a number ---- */
SEC("raw_tp/io_uring_submit_req")
int BPF_PROG(raw_submit_req, struct io_kiocb *req) { return on_submit(req, (__u64)req, false); }

SEC("raw_tp/io_uring_queue_async_work")
int BPF_PROG(raw_queue_async_work, struct io_kiocb *req, int rw) { return on_punt(req, (__u64)req, false); }

SEC("raw_tp/io_uring_complete")
int BPF_PROG(raw_complete, void *ring, void *req, void *cqe) { return on_complete((__u64)ring, (__u64)req); }

SEC("raw_tp/io_uring_cqring_wait")
int BPF_PROG(raw_cqring_wait, void *ring, int min_events) { return on_cqring_wait((__u64)ring); }

SEC("raw_tp/sys_exit")
int BPF_PROG(raw_sys_exit, struct pt_regs *regs, long ret)
{
    if (BPF_CORE_READ(regs, orig_ax) != io_uring_enter_nr || BPF_CORE_READ(regs, cs) == 0x23)
        return 0;
    return on_enter_exit();
}

char LICENSE[] SEC("license") = "GPL";
