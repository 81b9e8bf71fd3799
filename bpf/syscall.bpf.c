// SPDX-License-Identifier: GPL-2.0
/* Above the block layer: per-thread timing of file syscalls and of what each
 * one waited for inside (see syscall_events.h for the accounting model).
 *
 * Cost discipline: syscalls:sys_enter_<name> tracepoints (not raw_syscalls),
 * so the program only runs for the traced syscalls, never for futex/epoll/...
 * One hash entry per in-flight syscall (key tid); everything else is per-CPU
 * arrays aggregated in the kernel; only slow syscalls go to user space. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "syscall_events.h"

char LICENSE[] SEC("license") = "GPL";

/* Turns a pointer obtained from a probe read into a BTF pointer, so its fields
 * are read with plain (fault-handled) loads instead of one helper call each. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define KCAST(ptr, type) ((type *)bpf_rdonly_cast((ptr), bpf_core_type_id_kernel(type)))

#define S_IFMT 00170000
#define S_IFREG 0100000
#define FS_REQUIRES_DEV 1   /* include/linux/fs.h */
#define S_IFBLK 0060000

/* Set by user space before load. */
const volatile __u32 target_tgid = 0;        /* 0 = every process */
const volatile __u32 self_tgid = 0;          /* iodiag itself is never traced */
const volatile __u64 exemplar_min_ns = 1000000;
const volatile __u32 nranges = 0;
/* bit of BIO_BPS_THROTTLED in bio->bi_flags, from kernel BTF (0xff = unknown) */
const volatile __u32 bio_throttled_bit = 0xff;
/* syscall number -> enum iod_sys + 1 (0 = not traced) */
const volatile __u8 sys_of_nr[IOD_MAX_NR] = {};
const volatile struct iod_krange ranges[IOD_MAX_RANGES] = {};

struct inflight {
    __u64 start_ns;
    __u64 mark_ns;               /* last state change */
    __u64 ns[CLS_COUNT];
    __u64 file;                  /* struct file * (fd syscalls) */
    __u64 upath;                 /* openat: user pointer to the path */
    __s64 offset;
    __u32 sys;
    __u32 flags;
    __u8 state;                  /* CLS_NONE on CPU, else the current wait class */
    __u8 journal_kind;           /* enum iod_journal_kind of a CLS_JOURNAL state */
    __u8 reclaim_depth;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, struct inflight);
} inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, GRP_COUNT * IOD_HIST_BUCKETS);
    __type(key, __u32);
    __type(value, __u64);
} hist SEC(".maps");

/* Reads only: [0..B) hits, [B..2B) misses. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2 * IOD_HIST_BUCKETS);
    __type(key, __u32);
    __type(value, __u64);
} read_hitmiss SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, IOD_HIST_BUCKETS);
    __type(key, __u32);
    __type(value, struct iod_bucket_sums);
} bucket_sums SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, struct iod_proc_val);
} procs SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, CNT_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, GAUGE_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} gauges SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 20);
} exemplars SEC(".maps");

/* blk-throttle: when each cgroup (io controller kernfs id) last had a held
 * bio released (block_bio_queue of a bio flagged BIO_BPS_THROTTLED). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u64);
    __type(value, __u64);
} throttle_release SEC(".maps");

struct stack_buf { __u64 ip[IOD_STACK_DEPTH]; };
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct stack_buf);
} stack_scratch SEC(".maps");

static __always_inline void count(__u32 idx, __u64 v)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &idx);
    if (c) *c += v;
}

static __always_inline void count_max(__u32 idx, __u64 v)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &idx);
    if (c && v > *c) *c = v;
}

static __always_inline void gauge(__u32 idx, __u64 v)
{
    __u64 *g = bpf_map_lookup_elem(&gauges, &idx);
    if (g) *g = v;
}

/* bucket 0 = 0..1, bucket i = [2^i, 2^(i+1)-1], as Log2Histogram; capped.
 * Branch-per-bit instead of a loop keeps the verifier's work small. */
static __always_inline __u32 log2_bucket(__u64 v)
{
    __u32 r = 0;
    if (v >> 32) { v >>= 32; r += 32; }
    if (v >> 16) { v >>= 16; r += 16; }
    if (v >> 8) { v >>= 8; r += 8; }
    if (v >> 4) { v >>= 4; r += 4; }
    if (v >> 2) { v >>= 2; r += 2; }
    if (v >> 1) { r += 1; }
    return r < IOD_HIST_BUCKETS ? r : IOD_HIST_BUCKETS - 1;
}

/* Charges the time since the last state change to the class the thread was in. */
static __always_inline void charge(struct inflight *f, __u64 now)
{
    __u32 cls;
    if (f->reclaim_depth)
        cls = CLS_RECLAIM;              /* a wait inside reclaim counts once, to reclaim */
    else if (f->state == CLS_NONE)
        cls = CLS_FILESYSTEM;
    else
        cls = f->state;
    if (cls < CLS_COUNT && now > f->mark_ns) {
        f->ns[cls] += now - f->mark_ns;
        if (cls == CLS_JOURNAL && f->journal_kind > IOD_JOURNAL_NONE && f->journal_kind <= IOD_JOURNAL_BTRFS_LOG)
            count(CNT_JBD2_WAIT_NS + f->journal_kind - 1, now - f->mark_ns);
    }
    f->mark_ns = now;
}

/* Direct BTF pointer walks (bpf_get_current_task_btf): each load is a plain
 * instruction with fault handling, several times cheaper than a
 * bpf_probe_read_kernel call per field on this per-syscall path. */
static __always_inline struct file *fd_to_file(__u64 fd)
{
    struct task_struct *t = bpf_get_current_task_btf();
    struct fdtable *fdt = t->files->fdt;
    if (!fdt || fd >= fdt->max_fds)
        return NULL;
    struct file *f = NULL;
    bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]);
    return f;
}

/* Storage files only: regular files on a block-backed superblock, or block
 * devices. procfs/sysfs/tmpfs/pipes/sockets are not storage latency. btrfs
 * (several devices, an anonymous s_dev) leaves s_bdev NULL: its filesystem
 * type's FS_REQUIRES_DEV says it is block-backed all the same. */
static __always_inline bool is_storage_file(struct file *f)
{
    if (!f) return false;
    struct inode *i = KCAST(f, struct file)->f_inode;
    if (!i) return false;
    umode_t mode = i->i_mode;
    if ((mode & S_IFMT) == S_IFBLK) return true;
    if ((mode & S_IFMT) != S_IFREG) return false;
    struct super_block *sb = i->i_sb;
    if (sb->s_bdev != NULL) return true;
    return (sb->s_type->fs_flags & FS_REQUIRES_DEV) != 0;
}

static __always_inline bool traced_process(__u32 tgid)
{
    if (tgid == self_tgid) return false;
    return target_tgid == 0 || tgid == target_tgid;
}

static __always_inline __u64 io_cgroup_id(struct task_struct *t)
{
    int idx = bpf_core_enum_value(enum cgroup_subsys_id, io_cgrp_id);
    if (idx < 0 || idx >= CGROUP_SUBSYS_COUNT) return 0;
    struct cgroup_subsys_state *css = BPF_CORE_READ(t, cgroups, subsys[idx]);
    if (!css) return 0;
    return BPF_CORE_READ(css, cgroup, kn, id);
}

static __always_inline int on_enter(__u32 sys, __u64 fd, __s64 offset, bool offset_from_file, __u64 upath)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (!traced_process(id >> 32)) return 0;
    struct file *f = NULL;
    if (sys == SYS_IO_URING_ENTER) {
        /* the ring's fd: not a storage file, traced for its completion waits */
    } else if (sys != SYS_OPENAT) {
        f = fd_to_file(fd);
        if (!is_storage_file(f)) return 0;
        if (offset_from_file) offset = KCAST(f, struct file)->f_pos;
    }
    struct inflight v = {};
    v.start_ns = v.mark_ns = bpf_ktime_get_ns();
    v.file = (__u64)f;
    v.upath = upath;
    v.offset = offset;
    v.sys = sys;
    v.state = CLS_NONE;
    __u32 tid = (__u32)id;
    if (bpf_map_update_elem(&inflight, &tid, &v, BPF_ANY))
        count(CNT_INFLIGHT_FULL, 1);
    return 0;
}

static __always_inline __u64 memcg_v1_id(void)
{
    int idx = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
    if (idx < 0 || idx >= CGROUP_SUBSYS_COUNT) return 0;
    /* Probe reads here: walking t->cgroups (RCU) as BTF pointers made every
     * program using this take seconds to verify. */
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    struct cgroup_subsys_state *css = BPF_CORE_READ(t, cgroups, subsys[idx]);
    if (!css) return 0;
    /* On the default (v2) hierarchy this is the v2 cgroup; user space tells
     * them apart by looking the id up under the v1 memory mount. */
    return BPF_CORE_READ(css, cgroup, kn, id);
}

/* A global function: the verifier checks it once, on its own, instead of in
 * every path of on_exit through which it is reached (that multiplied the
 * sys_exit program's verification to ~440k instructions, most of start()). */
__noinline int send_exemplar(struct inflight *f, __u64 id, __u64 total, long ret, __u32 sys)
{
    if (!f) return 0;
    struct iod_exemplar *e = bpf_ringbuf_reserve(&exemplars, sizeof(*e), 0);
    if (!e) { count(CNT_EXEMPLAR_DROPS, 1); return 0; }
    e->tgid = id >> 32;
    e->tid = (__u32)id;
    e->sys = sys;
    e->flags = f->flags;
    e->ret = ret;
    e->offset = f->offset;
    e->total_ns = total;
    e->cgid = bpf_get_current_cgroup_id();
    e->memcg = memcg_v1_id();
    e->io_cg = io_cgroup_id((struct task_struct *)bpf_get_current_task());
    __builtin_memcpy(e->ns, f->ns, sizeof(e->ns));
    bpf_get_current_comm(e->comm, sizeof(e->comm));
    e->name[0] = 0;
    e->parent[0] = 0;
    e->ino = 0;
    struct file *file = (struct file *)f->file;
    if (sys == SYS_OPENAT && ret >= 0)
        file = fd_to_file(ret);
    if (file) {
        struct dentry *d = BPF_CORE_READ(file, f_path.dentry);
        bpf_probe_read_kernel_str(e->name, sizeof(e->name), BPF_CORE_READ(d, d_name.name));
        bpf_probe_read_kernel_str(e->parent, sizeof(e->parent), BPF_CORE_READ(d, d_parent, d_name.name));
        e->ino = BPF_CORE_READ(file, f_inode, i_ino);
    } else if (f->upath) {
        bpf_probe_read_user_str(e->name, sizeof(e->name), (void *)f->upath);
        e->flags |= IOD_F_PATH_FROM_USER;
    }
    bpf_ringbuf_submit(e, 0);
    return 0;
}

/* First syscall of a process: its entry, with the cgroups read once (global
 * function, verified once). */
__noinline int add_proc(__u32 tgid)
{
    struct iod_proc_val nv = {};
    nv.cgid = bpf_get_current_cgroup_id();
    nv.memcg = memcg_v1_id();
    nv.io_cg = io_cgroup_id((struct task_struct *)bpf_get_current_task());
    bpf_get_current_comm(nv.comm, sizeof(nv.comm));
    bpf_map_update_elem(&procs, &tgid, &nv, BPF_NOEXIST);
    return 0;
}

static __always_inline int on_exit(long ret)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id;
    struct inflight *f = bpf_map_lookup_elem(&inflight, &tid);
    if (!f) return 0;
    __u64 now = bpf_ktime_get_ns();
    charge(f, now);
    __u32 sys = f->sys;
    if (sys == SYS_OPENAT) {
        /* only opens that produced a storage file */
        if (ret < 0 || !is_storage_file(fd_to_file(ret))) goto out;
    }
    __u64 total = now - f->start_ns;
    __u32 b = log2_bucket(total / 1000);
    __u32 grp = iod_group_of(sys);
    __u32 k = grp * IOD_HIST_BUCKETS + b;
    __u64 *h = bpf_map_lookup_elem(&hist, &k);
    if (h) *h += 1;

    /* io_uring_enter waits for completions of work done elsewhere (io-wq,
     * interrupts): its time is not an operation's latency, so it gets a
     * histogram but stays out of the attribution. */
    if (grp != GRP_IO_URING_ENTER) {
        struct iod_bucket_sums *s = bpf_map_lookup_elem(&bucket_sums, &b);
        if (s) {
            s->count += 1;
            s->total_ns += total;
            for (int i = 0; i < CLS_COUNT; i++) s->ns[i] += f->ns[i];
        }
    }
    if (grp == GRP_READ && ret >= 0) {
        /* a hit: no page-cache-miss wait, no block I/O wait, no reclaim */
        bool miss = f->ns[CLS_PAGE_CACHE] || f->ns[CLS_DEVICE] || f->ns[CLS_BLOCK_QUEUE];
        __u32 hk = (miss ? IOD_HIST_BUCKETS : 0) + b;
        __u64 *hm = bpf_map_lookup_elem(&read_hitmiss, &hk);
        if (hm) *hm += 1;
    }

    __u32 tgid = id >> 32;
    struct iod_proc_val *pv = bpf_map_lookup_elem(&procs, &tgid);
    if (!pv) {
        add_proc(tgid);
        pv = bpf_map_lookup_elem(&procs, &tgid);
    }
    if (pv && b < IOD_HIST_BUCKETS) {
        __sync_fetch_and_add(&pv->ops, 1);
        __sync_fetch_and_add(&pv->ns_by_bucket[b], total);
    }
    if (total >= exemplar_min_ns && grp != GRP_IO_URING_ENTER)
        send_exemplar(f, id, total, ret, sys);
out:
    bpf_map_delete_elem(&inflight, &tid);
    return 0;
}

/* One enter and one exit program on the raw syscall tracepoints
 * (raw_syscalls sys_enter/sys_exit as tp_btf), filtered by syscall number
 * through sys_of_nr (filled from <sys/syscall.h> by user space) before any
 * other work: an untraced syscall costs an array load and a compare.
 * Raw tracepoint links detach without the per-event RCU synchronisation that
 * perf-event tracepoints (syscalls:sys_enter_<name>) pay on close, ~80 ms
 * each here, which made finish() take seconds with 30 of them. The syscall
 * arguments are read from the user registers (x86-64 syscall ABI: di, si,
 * dx, r10); 32-bit compat syscalls use another numbering and are skipped,
 * as the syscalls:* tracepoints skip them. */
#define IOD_USER32_CS 0x23

static __always_inline int sys_of_regs(struct pt_regs *regs, long nr)
{
    if (nr < 0 || nr >= IOD_MAX_NR) return -1;
    int sys = (int)sys_of_nr[nr] - 1;
    if (sys < 0) return -1;
    if (regs->cs == IOD_USER32_CS) return -1;
    return sys;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long nr)
{
    int sys = sys_of_regs(regs, nr);
    if (sys < 0) return 0;
    __u64 fd = regs->di;
    switch (sys) {
    case SYS_PREAD64: case SYS_PWRITE64: case SYS_PREADV: case SYS_PWRITEV:
    case SYS_PREADV2: case SYS_PWRITEV2:
        /* offset in the 4th argument */
        return on_enter(sys, fd, (__s64)regs->r10, false, 0);
    case SYS_SYNC_FILE_RANGE:
        return on_enter(sys, fd, (__s64)regs->si, false, 0);
    case SYS_OPENAT:
        /* the path (user pointer) in the 2nd argument; the file is known at exit */
        return on_enter(sys, 0, -1, false, regs->si);
    case SYS_READ: case SYS_WRITE: case SYS_READV: case SYS_WRITEV:
        return on_enter(sys, fd, -1, true, 0);
    default:   /* fsync, fdatasync, io_uring_enter */
        return on_enter(sys, fd, -1, false, 0);
    }
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
    if (sys_of_regs(regs, (long)regs->orig_ax) < 0) return 0;
    return on_exit(ret);
}

/* ---- off-CPU classification ---------------------------------------------- */

struct classify_ctx {
    struct stack_buf *sb;
    __u32 n;
    __u32 cls;
    __u32 kind;
};

/* Class of the function holding one frame (binary search over the sorted
 * ranges), or CLS_NONE. */
static __always_inline __u32 class_of_ip(__u64 ip, __u32 *kind)
{
    __u32 nr = nranges;
    if (nr > IOD_MAX_RANGES) nr = IOD_MAX_RANGES;
    __u32 lo = 0, hi = nr;
    for (int k = 0; k < 8; k++) {   /* 2^7 >= IOD_MAX_RANGES */
        if (lo >= hi) break;
        __u32 mid = (lo + hi) / 2;
        if (mid >= IOD_MAX_RANGES) break;
        if (ranges[mid].start <= ip) lo = mid + 1; else hi = mid;
    }
    if (lo == 0 || lo > IOD_MAX_RANGES) return CLS_NONE;
    __u32 j = lo - 1;
    if (j < IOD_MAX_RANGES && ip < ranges[j].end) {
        *kind = ranges[j].kind;
        return ranges[j].cls;
    }
    return CLS_NONE;
}

/* bpf_loop callback: stop at the innermost frame in a known function. */
static long classify_frame(__u32 i, void *data)
{
    struct classify_ctx *c = data;
    if (i >= c->n) return 1;
    /* IOD_STACK_DEPTH is a power of two: the mask is the bound the verifier sees */
    __u32 cls = class_of_ip(c->sb->ip[i & (IOD_STACK_DEPTH - 1)], &c->kind);
    if (cls == CLS_NONE) return 0;
    c->cls = cls;
    return 1;
}

/* Class of the innermost frame that lies in a known function; CLS_OTHER if none.
 * *kind: that function's journal kind (0 unless CLS_JOURNAL). */
static __always_inline __u32 classify_stack(void *ctx, __u8 *kind)
{
    __u32 zero = 0;
    struct stack_buf *sb = bpf_map_lookup_elem(&stack_scratch, &zero);
    if (!sb) return CLS_OTHER;
    long n = bpf_get_stack(ctx, sb->ip, sizeof(sb->ip), 0);
    if (n <= 0) return CLS_OTHER;
    struct classify_ctx c = {.sb = sb, .n = (__u32)(n / sizeof(__u64)), .cls = CLS_NONE, .kind = 0};
    bpf_loop(IOD_STACK_DEPTH, classify_frame, &c, 0);
    *kind = (__u8)c.kind;
    if (c.cls == CLS_NONE || c.cls >= CLS_COUNT) {
        count(CNT_WAITS_UNCLASSIFIED, 1);
        return CLS_OTHER;
    }
    count(CNT_WAITS_CLASSIFIED, 1);
    return c.cls;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    __u64 now = 0;
    __u32 ptid = prev->pid;
    struct inflight *f = bpf_map_lookup_elem(&inflight, &ptid);
    if (f) {
        now = bpf_ktime_get_ns();
        charge(f, now);
        if (preempt || (prev_state & 0xff) == 0)
            f->state = CLS_CPU;            /* still runnable: waits for a CPU */
        else if (f->reclaim_depth)
            f->state = CLS_RECLAIM;        /* no need to look: reclaim takes it all */
        else
            f->state = classify_stack(ctx, &f->journal_kind);
    }
    __u32 ntid = next->pid;
    f = bpf_map_lookup_elem(&inflight, &ntid);
    if (f) {
        if (!now) now = bpf_ktime_get_ns();
        charge(f, now);
        f->state = CLS_NONE;
    }
    return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
    __u32 tid = p->pid;
    struct inflight *f = bpf_map_lookup_elem(&inflight, &tid);
    if (f && f->state != CLS_NONE && f->state != CLS_CPU) {
        __u64 now = bpf_ktime_get_ns();
        if (f->state == CLS_DEVICE && !(f->flags & IOD_F_Q_INLINE)) {
            /* Waited for block I/O whose bios never reached block_bio_queue
             * from this thread: blk-throttle held them. The part of the wait
             * before the cgroup's held bios were released is the throttle's.
             * (The cgroup is looked up only here, off the per-syscall path.) */
            __u64 cg = io_cgroup_id(p);
            __u64 *rel = cg ? bpf_map_lookup_elem(&throttle_release, &cg) : NULL;
            if (rel && *rel > f->mark_ns && *rel <= now) {
                f->state = CLS_CGROUP;
                charge(f, *rel);
                f->state = CLS_DEVICE;
            }
        }
        charge(f, now);
        f->state = CLS_CPU;                /* woken: from now on run-queue delay */
    }
    return 0;
}

/* ---- children with their own tracepoints --------------------------------- */

static __always_inline struct inflight *current_inflight(void)
{
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    return bpf_map_lookup_elem(&inflight, &tid);
}

static __always_inline void reclaim_begin(void)
{
    struct inflight *f = current_inflight();
    if (!f) return;
    charge(f, bpf_ktime_get_ns());
    if (f->reclaim_depth < 8) f->reclaim_depth++;
    f->flags |= IOD_F_RECLAIM;
}

static __always_inline void reclaim_end(void)
{
    struct inflight *f = current_inflight();
    if (!f) return;
    charge(f, bpf_ktime_get_ns());
    if (f->reclaim_depth) f->reclaim_depth--;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(direct_reclaim_begin) { count(CNT_DIRECT_RECLAIM, 1); reclaim_begin(); return 0; }
SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(direct_reclaim_end) { reclaim_end(); return 0; }
SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(memcg_reclaim_begin) { count(CNT_MEMCG_RECLAIM, 1); reclaim_begin(); return 0; }
SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(memcg_reclaim_end) { reclaim_end(); return 0; }

/* Inline Q marks the thread's bios as not held; a released held bio marks
 * its cgroup's release time (blk-throttle dispatches from a worker). */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(on_bio_queue, struct bio *bio)
{
    struct inflight *f = current_inflight();
    if (f) {
        if (!(f->flags & IOD_F_Q_INLINE)) f->flags |= IOD_F_Q_INLINE;
        return 0;
    }
    if (bio_throttled_bit >= 16 || !(bio->bi_flags & (1u << bio_throttled_bit)))
        return 0;
    struct blkcg_gq *blkg = bio->bi_blkg;
    if (!blkg) return 0;
    __u64 cg = BPF_CORE_READ(blkg, blkcg, css.cgroup, kn, id);
    __u64 now = bpf_ktime_get_ns();
    bpf_map_update_elem(&throttle_release, &cg, &now, BPF_ANY);
    count(CNT_THROTTLED_BIOS, 1);
    return 0;
}

/* The simple event tracepoints below are raw (tp_btf): their arguments are
 * the tracepoint's own, and their links detach without an RCU sync each. */
SEC("tp_btf/mm_vmscan_throttled")
int BPF_PROG(on_vmscan_throttled, int nid, int usec_timeout, int usec_delayed, int reason)
{
    count(CNT_RECLAIM_THROTTLED, 1);
    if (usec_delayed > 0) count(CNT_RECLAIM_THROTTLED_US, usec_delayed);
    return 0;
}

/* Stays a perf-event tracepoint: limit, setpoint and cgroup_ino are computed
 * in the event's record, not passed as arguments (one ~80 ms detach). */
SEC("tracepoint/writeback/balance_dirty_pages")
int on_balance_dirty_pages(struct trace_event_raw_balance_dirty_pages *ctx)
{
    count(CNT_DIRTY_EVENTS, 1);
    if (ctx->pause > 0) count(CNT_DIRTY_PAUSE_JIFFIES, ctx->pause);
    count(CNT_DIRTY_PERIOD_JIFFIES, ctx->period);
    gauge(GAUGE_DIRTY_PAGES, ctx->dirty);
    gauge(GAUGE_DIRTY_LIMIT, ctx->limit);
    gauge(GAUGE_DIRTY_SETPOINT, ctx->setpoint);
    gauge(GAUGE_DIRTY_CGROUP_INO, ctx->cgroup_ino);
    struct inflight *f = current_inflight();
    if (f) f->flags |= IOD_F_DIRTY_THROTTLED;
    return 0;
}

/* The event record copies these four fields (jiffies) from the stats. */
SEC("tp_btf/jbd2_run_stats")
int BPF_PROG(on_jbd2_run_stats, dev_t dev, tid_t tid, struct transaction_run_stats_s *stats)
{
    __u64 running = stats->rs_running, locked = stats->rs_locked;
    __u64 flushing = stats->rs_flushing, logging = stats->rs_logging;
    count(CNT_JBD2_COMMITS, 1);
    count(CNT_JBD2_RUNNING, running);
    count(CNT_JBD2_LOCKED, locked);
    count(CNT_JBD2_FLUSHING, flushing);
    count(CNT_JBD2_LOGGING, logging);
    count_max(CNT_JBD2_MAX_LOCKED, locked);
    count_max(CNT_JBD2_MAX_FLUSHING, flushing);
    count_max(CNT_JBD2_MAX_LOGGING, logging);
    return 0;
}

SEC("tp_btf/ext4_sync_file_enter")
int BPF_PROG(on_ext4_sync_enter) { count(CNT_EXT4_FSYNC, 1); return 0; }

/* XFS has no jbd2: fsync forces its log (CIL push, iclog writes) through
 * xfs_log_force_seq, which fires xfs_log_force (as does xfs_log_force). */
SEC("tp_btf/xfs_file_fsync")
int BPF_PROG(on_xfs_fsync) { count(CNT_XFS_FSYNC, 1); return 0; }

SEC("tp_btf/xfs_log_force")
int BPF_PROG(on_xfs_log_force) { count(CNT_XFS_LOG_FORCES, 1); return 0; }

SEC("tp_btf/btrfs_sync_file")
int BPF_PROG(on_btrfs_fsync) { count(CNT_BTRFS_FSYNC, 1); return 0; }

SEC("tp_btf/page_cache_sync_ra")
int BPF_PROG(on_sync_ra)
{
    count(CNT_RA_SYNC, 1);
    struct inflight *f = current_inflight();
    if (f) f->flags |= IOD_F_READAHEAD;
    return 0;
}

SEC("tp_btf/page_cache_async_ra")
int BPF_PROG(on_async_ra)
{
    count(CNT_RA_ASYNC, 1);
    struct inflight *f = current_inflight();
    if (f) f->flags |= IOD_F_READAHEAD;
    return 0;
}

/* Pages readahead asked the filesystem for (the non-large-folio path; the
 * large-folio path of page_cache_ra_order falls back to this one or is not
 * counted, so this is a lower bound). */
SEC("tp_btf/page_cache_ra_unbounded")
int BPF_PROG(on_ra_unbounded, struct inode *inode, unsigned long index, unsigned long nr_to_read)
{
    count(CNT_RA_PAGES, nr_to_read);
    return 0;
}
