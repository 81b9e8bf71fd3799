// SPDX-License-Identifier: GPL-2.0
/* Per-request block-layer stage timing (btt's Q2G, G2I, I2D, D2C, Q2C) from
 * tracepoints only, aggregated in the kernel into per-CPU log2 histograms per
 * disk and op, with slow requests sent to user space through a ring buffer.
 *
 * Why five hooks and no kernel timestamps: since Linux 6.9 (commit 08420cf70cfb,
 * "block: add plug based timestamp caching") rq->start_time_ns and
 * rq->io_start_time_ns come from blk_time_get_ns(), which returns one cached
 * time for a whole plug: the 32 requests an io_uring_enter submits share it. A
 * stage read from them would be off by up to the batch's length (and Q2G could
 * go negative), so every stage boundary is a bpf_ktime_get_ns() taken in that
 * stage's own tracepoint. What is kept cheap is the rest: a two-way
 * in-flight table in an array (no hash map), aggregates in a per-CPU array indexed by the
 * request queue's id (no hash map, no atomics), merges and requeues only in
 * their own programs (they are rare), and comm/cgroup read only for slow
 * requests.
 *
 * Keying. block_bio_queue and block_getrq (6.x: getrq(struct bio *)) see only a
 * bio; insert/issue/complete see the request. A request's first bio stays its
 * head (rq->bio) through back merges, so the in-flight entry is keyed by the
 * head bio's address for its whole life: Q creates it, G/I/D update it through
 * rq->bio, C closes it. Exceptions:
 *   - a front merge makes the merged bio the new head: its own entry is marked
 *     front_merged and lookups walk bi_next (a few steps) to the original;
 *   - a split (block_split) makes a new bio for the front part after Q: it
 *     gets its own entry with the original bio's Q and submitter;
 *   - a request without bio (the flush request blk-flush makes) is keyed by the
 *     request's own address;
 *   - bio-based disks (dm, md) never form requests, so their bios are not
 *     tracked at all (their entries could never be closed).
 * A key takes its hashed slot or, when a live entry holds that one, the
 * slot's neighbour. An occupied slot is taken over only when its entry has
 * been idle past STALE_NS (a request that died in an error path: counted);
 * when both are held the newcomer is not timed and counted, so nothing is
 * lost silently.
 *
 * Reference path (rodata reference_accounting, tests only): every hook also
 * keeps the same per-request state in a plain hash map, with the same
 * timestamps, and sums the stages per disk in a hash map, the way this
 * collector worked before the direct-mapped table; a live test checks that
 * both give the same per-stage sums on one workload.
 *
 * Two program variants per tracepoint: tp_btf (direct BTF reads, cheapest) and
 * raw_tp (CO-RE reads); user space enables one set, chosen by real probes.
 * Built with -mcpu=v3: the queue depth at issue is an atomic fetch-and-add's
 * own result, exact under concurrent issues.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "block_events.h"
#include "log2_flat.h"
#include "ns_to_us.h"

/* A number (an address read from a void * field) as a BTF pointer. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define KCAST(ptr, type) ((type *)bpf_rdonly_cast((ptr), bpf_core_type_id_kernel(type)))

#define INFLIGHT_BITS 15
#define INFLIGHT_SLOTS (1u << INFLIGHT_BITS)
_Static_assert(INFLIGHT_SLOTS == IODIAG_INFLIGHT_SLOTS, "user space validates against block_events.h");
/* Past every driver command timeout (SCSI/NVMe default 30 s): the request is gone. */
#define STALE_NS (60ULL * 1000000000ULL)
#define MAX_DISK_SLOTS 64       /* upper bound; user space sizes the maps to fit memory */
#define OVERFLOW_DISKS 256      /* disks whose queue id has no slot */
#define FRONT_MERGE_WALK 4
#define REQ_OP_BITS_MASK 0xff /* REQ_OP_MASK: the op lives in the low 8 bits */

/* Filters, set before load. 0 = no filter. */
const volatile __u32 filter_dev = 0; /* disk dev_t, kernel encoding */
const volatile __u32 filter_pid = 0; /* thread group id of the submitter */
/* Number of disk slots - 1 (a power of two minus one), as the maps were sized. */
const volatile __u32 disk_slot_mask = MAX_DISK_SLOTS - 1;
/* Submitter slots in use - 1 (a power of two minus one, at most
 * IODIAG_SUBMITTER_SLOTS - 1): a test makes the table tiny so that submitters
 * collide on their slot and the per-CPU hash fallback is exercised. */
const volatile __u32 submitter_slot_mask = IODIAG_SUBMITTER_SLOTS - 1;
/* In-flight slots used (a power of two minus one): a test shrinks the table
 * to one pair so that live requests share their slots. */
const volatile __u32 inflight_slot_mask = INFLIGHT_SLOTS - 1;
const volatile bool reference_accounting = false;

/* Runtime control, shared with user space through .bss. */
__u64 slow_threshold_ns = ~0ULL; /* exemplar when Q2C >= this */
/* Lost events by cause (enum iodiag_block_lost); rare, so atomics are fine. */
__u64 lost[IODIAG_LOST_COUNT] = {};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, INFLIGHT_SLOTS);
    __type(key, __u32);
    __type(value, struct iodiag_inflight);
} inflight SEC(".maps");

/* Aggregates per disk slot (slot = request_queue id & disk_slot_mask). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, MAX_DISK_SLOTS);
    __type(key, __u32);
    __type(value, struct iodiag_dev_stats);
} stats SEC(".maps");

/* Which disk a slot belongs to (0 = unused): user space reads only used slots. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_DISK_SLOTS);
    __type(key, __u32);
    __type(value, __u32);
} slot_dev SEC(".maps");

/* Requests issued and not yet completed, per disk slot (the depth at issue),
 * and the disk's last completion (block_events.h iodiag_disk_busy). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_DISK_SLOTS);
    __type(key, __u32);
    __type(value, struct iodiag_disk_busy);
} issued SEC(".maps");

/* Disks whose slot another disk holds (more queues than slots, or a slot
 * whose disk went away): aggregates and depth by dev, allocated on demand. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, OVERFLOW_DISKS);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u32);
    __type(value, struct iodiag_dev_stats);
} overflow_stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, OVERFLOW_DISKS);
    __type(key, __u32);
    __type(value, struct iodiag_disk_busy);
} overflow_issued SEC(".maps");

/* Source of zeroes for a new overflow entry (too big for the BPF stack). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct iodiag_dev_stats);
} zero_stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* Per (disk, submitter tgid) sums (block_events.h): a direct-mapped per-CPU
 * slot, and this hash for keys whose slot another key holds (allocated on
 * first use). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, IODIAG_SUBMITTER_SLOTS);
    __type(key, __u32);
    __type(value, struct iodiag_submitter_slot);
} submitter_slots SEC(".maps");

#define SUBMITTER_ENTRIES 2048
/* Allocated on first use, as the overflow maps: preallocated, its 2,048
 * per-CPU entries (one per-CPU allocation each) took ~1.5-5 ms to create on
 * the start path, for a table that holds only what collides in the slots. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, SUBMITTER_ENTRIES);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct iodiag_submitter_key);
    __type(value, struct iodiag_submitter_sums);
} submitter_sums SEC(".maps");

/* Reference path (reference_accounting only; user space shrinks them to one
 * entry otherwise). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, INFLIGHT_SLOTS);
    __type(key, __u64);
    __type(value, struct iodiag_inflight);
} ref_inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, OVERFLOW_DISKS);
    __type(key, __u32);
    __type(value, struct iodiag_ref_sums);
} ref_sums SEC(".maps");

/* Reads that are direct loads under tp_btf and CO-RE probe reads under raw_tp.
 * `btf` is a literal at every call site, so the other branch is compiled out. */
#define RD(btf, src, a) ((btf) ? (src)->a : BPF_CORE_READ(src, a))
#define RD2(btf, src, a, b) ((btf) ? (src)->a->b : BPF_CORE_READ(src, a, b))

static __always_inline void count_lost(int what)
{
    __sync_fetch_and_add(&lost[what], 1);
}

static __always_inline __u32 disk_dev(struct gendisk *disk, bool btf)
{
    if (!disk)
        return 0;
    __u32 major = RD(btf, disk, major);
    __u32 minor = RD(btf, disk, first_minor);
    return major << 20 | minor;
}

static __always_inline bool dev_wanted(__u32 dev)
{
    return dev && (!filter_dev || dev == filter_dev);
}

static __always_inline __u32 log2_bucket(__u64 v)
{
    return iodiag_log2_flat(v, IODIAG_NR_BUCKETS);
}


/* The disk slot of a request queue: its id's slot, claimed by the first disk
 * seen there (compare-and-swap, so every CPU agrees); -1 when another disk
 * holds it (more queues than slots, or a slot whose disk went away): that
 * disk's aggregates and depth counter then live in the overflow hashes. */
static __always_inline int disk_slot(int qid, __u32 dev)
{
    __u32 slot = (__u32)qid & disk_slot_mask;
    __u32 *owner = bpf_map_lookup_elem(&slot_dev, &slot);
    if (!owner)
        return -1;
    __u32 o = *owner;
    if (o == dev)
        return (int)slot;
    if (o == 0) {
        o = __sync_val_compare_and_swap(owner, 0, dev);
        if (o == 0 || o == dev)
            return (int)slot;
    }
    return -1;
}

/* The aggregate entry of a disk on this CPU. */
static __always_inline struct iodiag_dev_stats *disk_stats(int slot, __u32 dev)
{
    if (slot >= 0) {
        __u32 k = (__u32)slot;
        return bpf_map_lookup_elem(&stats, &k);
    }
    struct iodiag_dev_stats *s = bpf_map_lookup_elem(&overflow_stats, &dev);
    if (s)
        return s;
    __u32 zero = 0;
    struct iodiag_dev_stats *z = bpf_map_lookup_elem(&zero_stats, &zero);
    if (!z)
        return 0;
    bpf_map_update_elem(&overflow_stats, &dev, z, BPF_NOEXIST);
    s = bpf_map_lookup_elem(&overflow_stats, &dev);
    if (s)
        s->dev = dev;
    else
        count_lost(IODIAG_LOST_DISK_TABLE_FULL);
    return s;
}

/* The in-flight counter of a disk: its slot's, or its overflow entry. */
static __always_inline struct iodiag_disk_busy *disk_busy(int slot, __u32 dev)
{
    if (slot >= 0) {
        __u32 k = (__u32)slot;
        return bpf_map_lookup_elem(&issued, &k);
    }
    struct iodiag_disk_busy *b = bpf_map_lookup_elem(&overflow_issued, &dev);
    if (b)
        return b;
    struct iodiag_disk_busy zero = {};
    bpf_map_update_elem(&overflow_issued, &dev, &zero, BPF_NOEXIST);
    return bpf_map_lookup_elem(&overflow_issued, &dev);
}

/* A request's weight in the disk's busy time (block_events.h
 * iodiag_disk_busy): the 4 KiB pages it moves, plus one for reaching them.
 * Where the busy time is contested, a device is bound by its throughput (a
 * capped volume moves a 128 KiB request in 32 times a 4 KiB one's time), so a
 * request's part of a shared stretch follows its bytes; the page added for
 * its access keeps a small request from counting for nothing. */
static __always_inline __u16 request_weight(__u32 bytes)
{
    __u32 w = 1 + (bytes + 4095) / 4096;
    return w > 0xffff ? 0xffff : (__u16)w;
}

/* A request leaves the disk's in-flight count and weight (completed,
 * requeued, or its completion never seen). */
static __always_inline void release_disk_share(struct iodiag_disk_busy *b, struct iodiag_inflight *e)
{
    if (b)
        __sync_fetch_and_add(&b->issued, -(__s64)(((__u64)e->weight << IODIAG_BUSY_COUNT_BITS) | 1));
}

/* The disk's busy time given to a completing request: the stretch since the
 * disk's previous completion is shared by the requests in flight in
 * proportion to their weights (vtime grows by it over their sum), and the
 * request gets its weight times vtime's growth since its issue. The exchange
 * is atomic, so each stretch is shared exactly once. A request issued inside
 * a stretch shares all of it (vtime is not advanced at issue, which would
 * cost two more atomic operations per I/O): its service is capped at its D2C. */
static __always_inline __u64 service_ns(struct iodiag_disk_busy *b, struct iodiag_inflight *e, __u64 d, __u64 c)
{
    if (!b)
        return c - d;
    __u64 prev = __sync_lock_test_and_set(&b->last_done_ns, c);
    __u64 w = e->weight ? e->weight : 1;
    __u64 in_flight = (__u64)b->issued >> IODIAG_BUSY_COUNT_BITS;
    if (in_flight < w)
        in_flight = w;
    __u64 grow = 0;
    if (c > prev) {
        __u64 stretch = c - prev;
        grow = (stretch > STALE_NS ? STALE_NS : stretch) * IODIAG_VTIME_SCALE / in_flight;
    }
    __u64 v = __sync_fetch_and_add(&b->vtime, grow) + grow;
    release_disk_share(b, e);
    __u64 s = (v - e->vtime) * w / IODIAG_VTIME_SCALE;
    return s < c - d ? s : c - d;
}

/* An address as a plain number for the table. Under tp_btf the verifier types
 * it as a pointer and forbids hashing it; the difference of two pointers is a
 * number (allowed for root), and subtracting the same anchor every time keeps
 * keys unique. raw_tp arguments are numbers already. */
#define KEY(btf, ptr) ((btf) ? (__u64)(ptr) - (__u64)&slow_threshold_ns : (__u64)(ptr))

static __always_inline __u32 slot_of(__u64 key)
{
    /* Fibonacci hashing of the address; low bits are alignment, drop them */
    return (((__u32)(key >> 4) * 2654435761u) >> (32 - INFLIGHT_BITS)) & inflight_slot_mask;
}

/* The entry stores: `ref` selects the reference hash map instead of the
 * array. A literal at every call site. The array is two-way: a key lives in
 * its hashed slot or, when a live entry held that one at claim time, in the
 * slot's neighbour (slot ^ 1), so two live keys that hash alike are both
 * timed; the neighbour is looked at only when the first slot holds another
 * key. */
static __always_inline struct iodiag_inflight *tbl_find(__u64 key, bool ref)
{
    if (ref)
        return bpf_map_lookup_elem(&ref_inflight, &key);
    __u32 idx = slot_of(key);
    struct iodiag_inflight *e = bpf_map_lookup_elem(&inflight, &idx);
    if (e && e->key == key)
        return e;
    idx ^= 1;
    e = bpf_map_lookup_elem(&inflight, &idx);
    return e && e->key == key ? e : 0;
}

static __always_inline void tbl_drop(struct iodiag_inflight *e, bool ref)
{
    if (ref) {
        __u64 key = e->key;
        bpf_map_delete_elem(&ref_inflight, &key);
        return;
    }
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

/* The anchor of KEY() as a number (stored once, read back from memory the
 * verifier does not track), to turn a tp_btf key back into an address. */
__u64 key_anchor = 0;

/* Whether the bio at `addr` has ended (bi_status set): read only when a
 * newcomer finds its slot held. A global function, verified once. */
__noinline int bio_ended(__u64 addr)
{
    __u8 status = 0;
    if (bpf_probe_read_kernel(&status, sizeof(status), &((struct bio *)addr)->bi_status))
        return 0;
    return status != 0;
}

/* An entry that only ever saw Q, of a bio that has ended: a bio refused
 * before it got a request (REQ_NOWAIT without a free tag, which io_uring then
 * re-issues from an io-wq worker as a new bio) ends without a request, so no
 * completion closes its entry. A refused bio's status stays set until its
 * memory is reused for another bio (bio_init clears it), which then has a
 * key of its own. Checked only on a collision: nothing on the common path. */
static __always_inline bool held_by_refused_bio(struct iodiag_inflight *e, bool btf)
{
    if (!e->q || e->g || e->i || e->d || e->front_merged)
        return false;
    __u64 addr = e->key;
    if (btf) {
        if (!key_anchor)
            key_anchor = (__u64)&slow_threshold_ns;
        addr += *(volatile __u64 *)&key_anchor;
    }
    return bio_ended(addr);
}

/* Whether `key` may take entry `e`: it is free or already `key`'s, or its
 * entry is past STALE_NS (counted) or a refused bio's. */
static __always_inline bool tbl_takes(struct iodiag_inflight *e, __u64 key, __u64 now, bool btf)
{
    if (!e->key || e->key == key)
        return true;
    /* `now` was read before this program looked at the entry: another CPU may
     * have touched it since, and the unsigned difference must not wrap into
     * "stale" and take over a live request. */
    __u64 touched = last_touch(e);
    if (now > touched && now - touched >= STALE_NS) {
        count_lost(IODIAG_LOST_INFLIGHT_STALE);
        return true;
    }
    return held_by_refused_bio(e, btf);
}

/* The entry of an issued request whose bio is being queued again: the bio
 * was freed and reused, so that request completed, and block_rq_complete did
 * not run this collector's program for it (Linux 6.18 here: about 1 in 3,000
 * requests of two fio jobs on a loop device, no recursion miss counted; a
 * bpftrace program on the same tracepoint missed the same ones, and
 * block_io_done with them: the kernel did not fire the tracepoint). Until
 * found here it stays in the disk's in-flight counter, read at the window's
 * end as block.in_flight_at_end. Counted, and its
 * increment of the disk's in-flight counter taken back, so the depth at issue
 * of later requests is right again (overflow disks, slot -1, keep theirs). */
static __always_inline void forget_unseen_completion(struct iodiag_inflight *e)
{
    count_lost(IODIAG_LOST_COMPLETION_UNSEEN);
    if (e->slot < 0)
        return;
    release_disk_share(disk_busy(e->slot, 0), e); /* a slot's counter: the dev is only for overflow disks */
}

/* A cleared entry for `key` (timestamps zero), or 0 if live entries hold both its slots. */
static __always_inline struct iodiag_inflight *tbl_claim(__u64 key, __u64 now, bool ref, bool btf)
{
    struct iodiag_inflight *e;
    if (ref) {
        struct iodiag_inflight zero = {};
        bpf_map_update_elem(&ref_inflight, &key, &zero, BPF_ANY);
        e = bpf_map_lookup_elem(&ref_inflight, &key);
        if (e)
            e->key = key;
        return e;
    }
    __u32 idx = slot_of(key);
    e = bpf_map_lookup_elem(&inflight, &idx);
    if (!e)
        return 0;
    if (!tbl_takes(e, key, now, btf)) {
        idx ^= 1;
        e = bpf_map_lookup_elem(&inflight, &idx);
        if (!e)
            return 0;
        if (!tbl_takes(e, key, now, btf)) {
            count_lost(IODIAG_LOST_INFLIGHT_SLOT_BUSY);
            return 0;
        }
    }
    if (e->key == key && e->d)
        forget_unseen_completion(e);
    else if (e->key && e->d && e->slot >= 0)
        release_disk_share(disk_busy(e->slot, 0), e); /* a stale request's (counted in tbl_takes) */
    e->key = key;
    e->q = e->g = e->i = e->d = 0;
    e->depth = e->weight = 0;
    e->vtime = 0;
    e->slot = -2;
    e->front_merged = 0;
    return e;
}

/* The in-flight entry of a request: its head bio's, walking past bios that
 * were front-merged onto it; a bio-less request's own. */
static __always_inline struct iodiag_inflight *rq_entry(struct request *rq, bool btf, bool ref)
{
    struct bio *bio = RD(btf, rq, bio);
    if (!bio)
        return tbl_find(KEY(btf, rq), ref);
#pragma unroll
    for (int n = 0; n < FRONT_MERGE_WALK; n++) {
        struct iodiag_inflight *e = tbl_find(KEY(btf, bio), ref);
        if (!e)
            break;
        if (!e->front_merged)
            return e;
        tbl_drop(e, ref); /* merged bio: part of this request now */
        bio = RD(btf, bio, bi_next);
        if (!bio)
            break;
    }
    return 0;
}

static __always_inline void fill_submitter(struct iodiag_inflight *e, bool btf)
{
    if (btf) {
        /* one helper and two loads from current instead of two helpers */
        struct task_struct *t = bpf_get_current_task_btf();
        e->tgid = t->tgid;
        e->tid = t->pid;
        e->task = (__u64)t;
        return;
    }
    __u64 id = bpf_get_current_pid_tgid();
    e->tgid = id >> 32;
    e->tid = (__u32)id;
    e->task = bpf_get_current_task();
}

/* The entry's submitting task while it is still that thread (its thread id
 * matches), else NULL: gone, its memory maybe another task's. */
static __always_inline struct task_struct *submitter_task(struct iodiag_inflight *e)
{
    struct task_struct *t = (struct task_struct *)e->task;
    if (!t || BPF_CORE_READ(t, pid) != (__s32)e->tid)
        return 0;
    return t;
}

/* comm and cgroup of the submitter, read at completion for slow requests only.
 * If the task is gone (its thread id no longer matches), both stay empty. */
static __always_inline void read_submitter(struct iodiag_inflight *e, struct iodiag_block_event *ev)
{
    struct task_struct *t = submitter_task(e);
    ev->comm[0] = 0;
    ev->cgroup_id = 0;
    if (!t)
        return;
    BPF_CORE_READ_STR_INTO(&ev->comm, t, comm);
    ev->cgroup_id = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/* Entry for a request seen first at I or D (no Q: a flush request, or one
 * queued before we attached). Not created under a pid filter, whose requests
 * are exactly those with a Q from that process. */
static __always_inline struct iodiag_inflight *rq_entry_or_new(struct request *rq, bool btf, __u64 now, bool ref)
{
    struct iodiag_inflight *e = rq_entry(rq, btf, ref);
    if (e || filter_pid)
        return e;
    struct bio *bio = RD(btf, rq, bio);
    e = tbl_claim(bio ? KEY(btf, bio) : KEY(btf, rq), now, ref, btf);
    if (e)
        fill_submitter(e, btf);
    return e;
}

/* ---- Q: a bio enters the block layer ---- */

static __always_inline void bio_queue(struct bio *bio, bool btf, __u64 now, bool ref)
{
    struct iodiag_inflight *e = tbl_claim(KEY(btf, bio), now, ref, btf);
    if (!e)
        return;
    e->q = now;
    fill_submitter(e, btf);
}

static __always_inline int on_bio_queue(struct bio *bio, bool btf)
{
    struct gendisk *disk = RD2(btf, bio, bi_bdev, bd_disk);
    if (!disk)
        return 0;
    /* bio-based disk: no request will ever close this entry */
    if (!RD2(btf, disk, queue, mq_ops))
        return 0;
    if (filter_dev && disk_dev(disk, btf) != filter_dev)
        return 0;
    if (filter_pid && (bpf_get_current_pid_tgid() >> 32) != filter_pid)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    bio_queue(bio, btf, now, false);
    if (reference_accounting)
        bio_queue(bio, btf, now, true);
    return 0;
}

/* ---- split: the front part of a bio becomes a bio of its own after Q ---- */

static __always_inline bool bio_split(struct bio *split, struct bio *parent, bool btf, bool ref)
{
    struct iodiag_inflight *p = tbl_find(KEY(btf, parent), ref);
    if (!p)
        return false; /* not tracked (filtered out) */
    __u64 q = p->q, task = p->task;
    __u32 tgid = p->tgid, tid = p->tid;
    struct iodiag_inflight *e = tbl_claim(KEY(btf, split), q, ref, btf);
    if (!e)
        return true;
    e->q = q;
    e->task = task;
    e->tgid = tgid;
    e->tid = tid;
    return true;
}

/* block_split(split, sector): bio_submit_split() chains the new front part
 * to the original (split->bi_private = the original, which is resubmitted
 * with its remaining sectors and keeps its own entry). */
static __always_inline int on_bio_split(struct bio *split, bool btf)
{
    struct bio *parent;
    if (btf)
        parent = KCAST(split->bi_private, struct bio);
    else
        parent = (struct bio *)BPF_CORE_READ(split, bi_private);
    if (!parent)
        return 0;
    if (reference_accounting)
        bio_split(split, parent, btf, true);
    if (!bio_split(split, parent, btf, false))
        return 0;
    /* Counted per disk with the front part's size: split at the queue's
     * max_sectors_kb, the application's larger I/O became requests of that
     * size (docs/settings.md "max_sectors_kb"). */
    struct gendisk *disk = RD2(btf, split, bi_bdev, bd_disk);
    struct request_queue *q = disk ? (struct request_queue *)RD(btf, disk, queue) : 0;
    __u32 dev = disk_dev(disk, btf);
    struct iodiag_dev_stats *s = disk_stats(disk_slot(q ? RD(btf, q, id) : 0, dev), dev);
    if (s) {
        s->splits++;
        s->split_bytes += RD(btf, split, bi_iter.bi_size);
    }
    return 0;
}

/* ---- G: the bio got a request (and its tag) ---- */

static __always_inline int on_getrq(struct bio *bio, bool btf)
{
    struct iodiag_inflight *e = tbl_find(KEY(btf, bio), false);
    if (!e && !reference_accounting)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    if (e)
        e->g = now;
    if (reference_accounting) {
        e = tbl_find(KEY(btf, bio), true);
        if (e)
            e->g = now;
    }
    return 0;
}

/* ---- I: inserted into the scheduler ---- */

static __always_inline int on_rq_insert(struct request *rq, bool btf)
{
    if (!dev_wanted(disk_dev(RD2(btf, rq, q, disk), btf)))
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct iodiag_inflight *e = rq_entry_or_new(rq, btf, now, false);
    if (e)
        e->i = now;
    if (reference_accounting) {
        e = rq_entry_or_new(rq, btf, now, true);
        if (e)
            e->i = now;
    }
    return 0;
}

/* ---- D: issued to the driver ---- */

static __always_inline int on_rq_issue(struct request *rq, bool btf)
{
    struct request_queue *q = RD(btf, rq, q);
    __u32 dev = disk_dev(RD(btf, q, disk), btf);
    if (!dev_wanted(dev))
        return 0;
    __u64 now = bpf_ktime_get_ns();
    if (reference_accounting) {
        struct iodiag_inflight *r = rq_entry_or_new(rq, btf, now, true);
        if (r)
            r->d = now;
    }
    struct iodiag_inflight *e = rq_entry_or_new(rq, btf, now, false);
    if (!e)
        return 0;
    e->d = now;
    int slot = disk_slot(RD(btf, q, id), dev);
    e->slot = (__s16)slot;
    struct iodiag_disk_busy *b = disk_busy(slot, dev);
    if (b) {
        e->weight = request_weight(RD(btf, rq, __data_len));
        /* the value before this request's own increment: exact, whatever
         * other CPUs issue at the same moment */
        __s64 before = __sync_fetch_and_add(&b->issued, ((__s64)e->weight << IODIAG_BUSY_COUNT_BITS) | 1);
        __s64 n = before & IODIAG_BUSY_COUNT_MASK;
        e->depth = (__u16)(n + 1 < 0xffff ? n + 1 : 0xffff);
        /* An idle disk's busy time starts here, not at its last completion. */
        if (n == 0)
            b->last_done_ns = now;
        e->vtime = b->vtime;
    }
    return 0;
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

/* Adds one completed request to its disk's histograms and sums. A global
 * function: the verifier checks it once, on its own, instead of once per path
 * through on_rq_complete. depth 0: the request was not seen at issue.
 * Bucket 0 is left to user space (block_events.h). */
__noinline int account_completion(struct iodiag_dev_stats *s, struct stage_times *t, __u32 op_in, __u32 depth,
                                   __u64 service)
{
    if (!s || !t)
        return 0;
    /* the bound checked on the register that indexes (the verifier must see it) */
    __u64 op = op_in;
    barrier_var(op);
    if (op >= IODIAG_NR_OPS)
        return 0;
    barrier_var(op);
    struct iodiag_op_sums *o = &s->ops[op];
    o->count++;
#pragma unroll
    for (int k = 0; k < IODIAG_NR_STAGES; k++) {
        o->sum_ns[k] += t->ns[k];
        __u32 b = log2_bucket(iodiag_ns_to_us(t->ns[k]));
        if (b)
            s->hist[op][k][b]++;
    }
    if (depth) {
        o->with_depth++;
        __u32 b = log2_bucket(depth);
        if (b)
            s->depth_hist[b]++;
        if (op <= IODIAG_OP_WRITE) {
            __u32 c = iodiag_log2_flat(depth, IODIAG_NR_DEPTH_CLASSES);
            s->depth_count[c]++;
            s->depth_sum[c] += depth;
            __u32 db = log2_bucket(iodiag_ns_to_us(t->ns[IODIAG_D2C]));
            if (db)
                s->d2c_by_depth[c][db]++;
        }
    }
    __u32 sb = log2_bucket(iodiag_ns_to_us(service));
    if (sb)
        s->service_hist[op][sb]++;
    return 0;
}

/* The request added to its submitter's sums on this disk (block_events.h):
 * its direct-mapped per-CPU slot (an inlined array lookup), claimed on first
 * use; the per-CPU hash only when another key holds that slot on this CPU. */
static __always_inline void add_submitter_sums(struct iodiag_submitter_sums *s, __u64 bytes, __u32 op,
                                               struct stage_times *t, __u64 service, __u32 idle)
{
    s->count++;
    s->service_ns += service;
    s->i2d_ns += t->ns[IODIAG_I2D];
    s->idle_class += idle;
    s->bytes += bytes;
    if (op == IODIAG_OP_WRITE)
        s->write_bytes += bytes;
    s->q2c_ns += t->ns[IODIAG_Q2C];
    s->d2c_ns += t->ns[IODIAG_D2C];
}

/* The cgroup a request was charged to, as its head bio's blkcg_gq (the pair
 * (blkcg, queue): blk-cgroup sets bio->bi_blkg when the bio is set up, from
 * the submitting task, or on cgroup v2 from the dirtier's memcg for a
 * writeback bio; requests merge only within one blkcg). NULL without a bio (a
 * flush the block layer made) or without blk-cgroup in the kernel. One load
 * past the bio: its address keys the sums; the cgroup's id is read only when
 * a sums entry is made (blkg_cgroup_id). */
static __always_inline struct blkcg_gq *request_blkg(struct bio *head, bool btf)
{
    if (!bpf_core_field_exists(((struct bio *)0)->bi_blkg) || !head)
        return 0;
    return RD(btf, head, bi_blkg);
}

static __always_inline __u64 blkg_cgroup_id(struct blkcg_gq *blkg, bool btf)
{
    if (btf)
        return blkg->blkcg->css.cgroup->kn->id;
    return BPF_CORE_READ(blkg, blkcg, css.cgroup, kn, id);
}

/* A kernel without blk-cgroup: the submitter's (v2) cgroup id, read through
 * its task while it is the same thread; 0 when it is gone. */
static __always_inline __u64 submitter_cgroup_id(struct iodiag_inflight *e)
{
    struct task_struct *t = submitter_task(e);
    return t ? BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id) : 0;
}

#define PF_KTHREAD 0x00200000   /* include/linux/sched.h */

/* Who the submitter is (block_events.h iodiag_submitter_sums.comm), read
 * through its task while it is the same thread: only when a sums entry is
 * made (once per disk, submitter, cgroup and CPU), never per request. */
static __always_inline void submitter_identity(struct iodiag_inflight *e, struct iodiag_submitter_sums *s)
{
    struct task_struct *t = submitter_task(e);
    s->comm[0] = 0;
    s->kthread = 0;
    if (!t)
        return;
    BPF_CORE_READ_STR_INTO(&s->comm, t, comm);
    s->kthread = (BPF_CORE_READ(t, flags) & PF_KTHREAD) != 0;
}

/* The idle I/O priority class (uapi linux/ioprio.h: IOPRIO_CLASS_IDLE, the
 * class in the bits above IOPRIO_CLASS_SHIFT): a request of that class is
 * dispatched by mq-deadline and bfq only when no other class has one waiting
 * (ionice -c3, systemd IOSchedulingClass=idle). */
#define IODIAG_IOPRIO_CLASS_SHIFT 13
#define IODIAG_IOPRIO_CLASS_IDLE 3

/* Whether a request is of the idle class: its head bio's priority, which is
 * the request's (req_get_ioprio() reads it there; struct request has no
 * ioprio field of its own on 6.18). A request without a bio (a flush the
 * block layer made) is not. */
static __always_inline __u32 request_idle_class(struct bio *head, bool btf)
{
    if (!head)
        return 0;
    return ((__u16)RD(btf, head, bi_ioprio) >> IODIAG_IOPRIO_CLASS_SHIFT) == IODIAG_IOPRIO_CLASS_IDLE;
}

static __always_inline void account_submitter(__u32 dev, struct iodiag_inflight *e, struct request *rq, __u64 bytes,
                                              __u32 op, struct stage_times *t, __u64 service, bool btf)
{
    __u32 tgid = e->tgid;
    struct bio *head = RD(btf, rq, bio);   /* its priority and its cgroup */
    __u32 idle = request_idle_class(head, btf);
    struct blkcg_gq *cg = request_blkg(head, btf);
    __u64 cgroup = cg ? KEY(btf, cg) : 0;
    if (!bpf_core_field_exists(((struct bio *)0)->bi_blkg))
        cgroup = submitter_cgroup_id(e);
    __u32 idx = iodiag_submitter_slot_of(dev, tgid, cgroup) & submitter_slot_mask;
    struct iodiag_submitter_slot *slot = bpf_map_lookup_elem(&submitter_slots, &idx);
    if (slot) {
        if (!slot->key.dev) {
            slot->key.dev = dev;
            slot->key.tgid = tgid;
            slot->key.cgroup = cgroup;
            slot->sums.cgroup_id = cg ? blkg_cgroup_id(cg, btf) : cgroup;
            submitter_identity(e, &slot->sums);
        }
        if (slot->key.dev == dev && slot->key.tgid == tgid && slot->key.cgroup == cgroup) {
            add_submitter_sums(&slot->sums, bytes, op, t, service, idle);
            return;
        }
    }
    struct iodiag_submitter_key k = {.dev = dev, .tgid = tgid, .cgroup = cgroup};
    struct iodiag_submitter_sums *v = bpf_map_lookup_elem(&submitter_sums, &k);
    if (!v) {
        struct iodiag_submitter_sums zero = {};
        zero.cgroup_id = cg ? blkg_cgroup_id(cg, btf) : cgroup;
        submitter_identity(e, &zero);
        bpf_map_update_elem(&submitter_sums, &k, &zero, BPF_NOEXIST); /* another CPU may have won: fine */
        v = bpf_map_lookup_elem(&submitter_sums, &k);
        if (!v) {
            count_lost(IODIAG_LOST_SUBMITTER_TABLE_FULL);
            return;
        }
    }
    add_submitter_sums(v, bytes, op, t, service, idle);
}

/* Stage lengths of a completed entry: a stage not passed takes the next seen
 * stage's time (zero length), and each stage is at least the previous one, so
 * the four stages telescope to exactly C - Q. */
static __always_inline void stages_of(struct iodiag_inflight *e, __u64 c, struct stage_times *st, __u64 *ts)
{
    __u64 d = e->d ? e->d : c;
    __u64 i = e->i ? e->i : d;
    __u64 g = e->g ? e->g : i;
    __u64 q = e->q ? e->q : g;
    if (g < q) g = q;
    if (i < g) i = g;
    if (d < i) d = i;
    if (c < d) c = d;
    st->ns[IODIAG_Q2G] = g - q;
    st->ns[IODIAG_G2I] = i - g;
    st->ns[IODIAG_I2D] = d - i;
    st->ns[IODIAG_D2C] = c - d;
    st->ns[IODIAG_Q2C] = c - q;
    if (ts) {
        ts[0] = q; ts[1] = g; ts[2] = i; ts[3] = d; ts[4] = c;
    }
}

static __always_inline void ref_complete(struct request *rq, __u32 dev, __u64 c, bool btf)
{
    struct iodiag_inflight *e = rq_entry(rq, btf, true);
    if (!e)
        return;
    struct stage_times st;
    stages_of(e, c, &st, 0);
    tbl_drop(e, true);
    struct iodiag_ref_sums *r = bpf_map_lookup_elem(&ref_sums, &dev);
    if (!r) {
        struct iodiag_ref_sums zero = {};
        bpf_map_update_elem(&ref_sums, &dev, &zero, BPF_NOEXIST);
        r = bpf_map_lookup_elem(&ref_sums, &dev);
        if (!r)
            return;
    }
    r->count++;
#pragma unroll
    for (int k = 0; k < IODIAG_NR_STAGES; k++)
        r->sum_ns[k] += st.ns[k];
}

static __always_inline int on_rq_complete(struct request *rq, unsigned int nr_bytes, bool btf)
{
    struct request_queue *q = RD(btf, rq, q);
    __u32 dev = disk_dev(RD(btf, q, disk), btf);
    if (!dev_wanted(dev))
        return 0;
    struct iodiag_inflight *e = rq_entry(rq, btf, false);
    if (!e && !reference_accounting)
        return 0;
    __u64 c = bpf_ktime_get_ns();
    if (reference_accounting)
        ref_complete(rq, dev, c, btf);
    if (!e)
        return 0;
    struct stage_times st;
    __u64 ts[5];
    stages_of(e, c, &st, ts);
    __u32 op = op_index(RD(btf, rq, cmd_flags));
    int slot = e->slot >= -1 ? e->slot : disk_slot(RD(btf, q, id), dev);
    struct iodiag_dev_stats *s = disk_stats(slot, dev);
    /* Its share of the disk's busy time; none measured for a request not
     * seen issued (as its D2C: 0). */
    __u64 service = 0;
    if (e->d)
        service = service_ns(disk_busy(slot, dev), e, ts[3], ts[4]);
    account_completion(s, &st, op, e->d ? e->depth : 0, service);
    account_submitter(dev, e, rq, nr_bytes, op, &st, service, btf);

    if (st.ns[IODIAG_Q2C] >= slow_threshold_ns) {
        struct iodiag_block_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
        if (!ev) {
            count_lost(IODIAG_LOST_EXEMPLAR_RINGBUF_FULL);
        } else {
            ev->q_ns = ts[0];
            ev->g_ns = ts[1];
            ev->i_ns = ts[2];
            ev->d_ns = ts[3];
            ev->c_ns = ts[4];
            ev->sector = RD(btf, rq, __sector);
            ev->bytes = nr_bytes;
            ev->dev = dev;
            ev->pid = e->tgid;
            ev->depth = e->d ? e->depth : 0;
            ev->op = op;
            ev->seen = (e->q ? IODIAG_SEEN_Q : 0) | (e->g ? IODIAG_SEEN_G : 0) |
                       (e->i ? IODIAG_SEEN_I : 0) | (e->d ? IODIAG_SEEN_D : 0);
            read_submitter(e, ev);
            bpf_ringbuf_submit(ev, 0);
        }
    }
    tbl_drop(e, false);
    return 0;
}

/* ---- merges and requeues: their own (rare) programs ---- */

static __always_inline bool bio_merge(struct bio *bio, bool front, bool btf, bool ref)
{
    struct iodiag_inflight *e = tbl_find(KEY(btf, bio), ref);
    if (!e)
        return false; /* not tracked (filtered out) */
    if (front)
        e->front_merged = 1; /* the request's head now; lookups walk past it */
    else
        tbl_drop(e, ref);
    return true;
}

/* A bio joined an existing request: it never gets a G of its own. */
static __always_inline int on_bio_merge(struct bio *bio, bool front, bool btf)
{
    if (reference_accounting)
        bio_merge(bio, front, btf, true);
    if (!bio_merge(bio, front, btf, false))
        return 0;
    struct gendisk *disk = RD2(btf, bio, bi_bdev, bd_disk);
    struct request_queue *q = disk ? (struct request_queue *)RD(btf, disk, queue) : 0;
    int qid = q ? RD(btf, q, id) : 0;
    __u32 dev = disk_dev(disk, btf);
    struct iodiag_dev_stats *s = disk_stats(disk_slot(qid, dev), dev);
    if (s)
        s->merges++;
    return 0;
}

/* A request merged into another one (its bios move over; it never completes). */
static __always_inline int on_rq_merge(struct request *rq, bool btf)
{
    if (reference_accounting) {
        struct iodiag_inflight *r = rq_entry(rq, btf, true);
        if (r)
            tbl_drop(r, true);
    }
    struct iodiag_inflight *e = rq_entry(rq, btf, false);
    if (!e)
        return 0;
    tbl_drop(e, false);
    struct request_queue *q = RD(btf, rq, q);
    __u32 dev = disk_dev(RD(btf, q, disk), btf);
    struct iodiag_dev_stats *s = disk_stats(disk_slot(RD(btf, q, id), dev), dev);
    if (s)
        s->merges++;
    return 0;
}

/* Put back for another dispatch: the next D counts, the wait goes to I2D. */
static __always_inline int on_rq_requeue(struct request *rq, bool btf)
{
    if (reference_accounting) {
        struct iodiag_inflight *r = rq_entry(rq, btf, true);
        if (r)
            r->d = 0;
    }
    struct iodiag_inflight *e = rq_entry(rq, btf, false);
    if (!e)
        return 0;
    struct request_queue *q = RD(btf, rq, q);
    __u32 dev = disk_dev(RD(btf, q, disk), btf);
    int slot = disk_slot(RD(btf, q, id), dev);
    struct iodiag_dev_stats *s = disk_stats(slot, dev);
    if (e->d)
        release_disk_share(disk_busy(slot, dev), e);
    e->d = 0;
    if (s)
        s->requeues++;
    return 0;
}

/* ---- tp_btf variants ----
 * The arguments are made untrusted pointers first (bpf_rdonly_cast, which the
 * verifier inlines to nothing): every pointer field loaded from a trusted
 * pointer makes the verifier search all of vmlinux BTF by name for a
 * "<type>__safe_trusted" marker (btf_nested_type_is_trusted; ~1/3 of this
 * object's load time on Linux 6.18). The loads stay plain fault-handled
 * loads either way. */
#define UNTRUSTED(ptr, type) KCAST(ptr, type)

/* Slot 0: the syscall collector's block_bio_queue program when it runs too
 * (collectors/bpf/tail_call_chain.hpp), tail-called for every bio so that the
 * tracepoint runs one program, not two. Empty: the tail call does nothing.
 * tp_btf only (a tail call needs a program of the same type and hook). */
struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} bio_queue_chain SEC(".maps");

SEC("tp_btf/block_bio_queue")
int BPF_PROG(btf_bio_queue, struct bio *bio)
{
    on_bio_queue(UNTRUSTED(bio, struct bio), true);
    bpf_tail_call(ctx, &bio_queue_chain, 0);
    return 0;
}
SEC("tp_btf/block_split")
int BPF_PROG(btf_split, struct bio *bio, unsigned int new_sector) { return on_bio_split(UNTRUSTED(bio, struct bio), true); }
SEC("tp_btf/block_getrq")
int BPF_PROG(btf_getrq, struct bio *bio) { return on_getrq(UNTRUSTED(bio, struct bio), true); }
SEC("tp_btf/block_rq_insert")
int BPF_PROG(btf_rq_insert, struct request *rq) { return on_rq_insert(UNTRUSTED(rq, struct request), true); }
SEC("tp_btf/block_rq_issue")
int BPF_PROG(btf_rq_issue, struct request *rq) { return on_rq_issue(UNTRUSTED(rq, struct request), true); }
SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{ return on_rq_complete(UNTRUSTED(rq, struct request), nr_bytes, true); }
SEC("tp_btf/block_bio_backmerge")
int BPF_PROG(btf_bio_backmerge, struct bio *bio) { return on_bio_merge(UNTRUSTED(bio, struct bio), false, true); }
SEC("tp_btf/block_bio_frontmerge")
int BPF_PROG(btf_bio_frontmerge, struct bio *bio) { return on_bio_merge(UNTRUSTED(bio, struct bio), true, true); }
SEC("tp_btf/block_rq_merge")
int BPF_PROG(btf_rq_merge, struct request *rq) { return on_rq_merge(UNTRUSTED(rq, struct request), true); }
SEC("tp_btf/block_rq_requeue")
int BPF_PROG(btf_rq_requeue, struct request *rq) { return on_rq_requeue(UNTRUSTED(rq, struct request), true); }

/* ---- raw_tp variants (CO-RE reads) ---- */
SEC("raw_tp/block_bio_queue")
int BPF_PROG(raw_bio_queue, struct bio *bio) { return on_bio_queue(bio, false); }
SEC("raw_tp/block_split")
int BPF_PROG(raw_split, struct bio *bio, unsigned int new_sector) { return on_bio_split(bio, false); }
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
