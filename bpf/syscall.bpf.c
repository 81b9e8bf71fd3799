// SPDX-License-Identifier: GPL-2.0
/* Above the block layer: per-thread timing of file syscalls and of what each
 * one waited for inside (see syscall_events.h for the accounting model).
 *
 * Cost discipline (per traced syscall, enter + exit): the syscall number is
 * checked against a read-only table before anything else; the thread's state
 * lives in its task local storage (no hash map); nothing is zeroed at entry;
 * everything the exit adds to is one per-CPU array entry (one lookup, no
 * atomics), per-process time a per-CPU slot found by the tgid's hash; a
 * syscall that never left the CPU is added there without the per-class
 * bookkeeping (account_fast); only slow syscalls go to user space. All aggregates are cumulative: user space
 * takes differences of readings for the per-interval series, so nothing is
 * lost between two readings. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "log2_flat.h"
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
/* frames of the first stack walk per wait (classify_stack), 1..IOD_STACK_DEPTH */
const volatile __u32 first_walk_frames = IOD_STACK_FIRST_WALK;
/* proc_time slots - 1 (a power of two minus one), as the map was sized */
const volatile __u32 proc_slot_mask = 1023;
/* syscall number -> enum iod_sys + 1 (0 = not traced) */
const volatile __u8 sys_of_nr[IOD_MAX_NR] = {};
/* enum iod_sys -> its iod_group_of(), filled by user space from that function:
 * read from a table, the group is one unknown to the verifier, where the
 * switch gave it one path per group through everything that follows */
const volatile __u8 group_of_sys[SYS_COUNT] = {};
/* log2 of the page size (the page cache's index unit), from user space */
const volatile __u32 page_shift = 12;
/* The wait classifier's function ranges, sorted by start: filled by user space
 * after load and before attach (writable data, so that /proc/kallsyms is read
 * while the kernel verifies the programs). */
__u32 nranges = 0;
struct iod_krange ranges[IOD_MAX_RANGES] = {};
/* The pages of kernel text that hold a classifier function, written with the
 * ranges (collectors/bpf/text_page_filter.hpp): bit (ip - range_base) >>
 * range_page_shift of range_pages. A frame on no marked page lies in no
 * classifier function, so the binary search is skipped for it; most frames
 * of a wait (the tracing's, the scheduler's, the wait primitives') are such.
 * A marked page only says "search": the answer is the search's. */
__u64 range_base = 0;
__u32 range_page_shift = 0;
__u64 range_pages[IOD_RANGE_PAGE_WORDS] = {};
/* Bit of BIO_BPS_THROTTLED in bio->bi_flags, from kernel BTF (0xff =
 * unknown): writable data for the same reason (user space finds it in the
 * parsed BTF while the kernel verifies), written before attach. */
__u32 bio_throttled_bit = 0xff;


struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct iod_inflight);
} task_state SEC(".maps");

/* Everything the per-syscall path adds to (struct iod_aggregates), per CPU. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct iod_aggregates);
} aggregates SEC(".maps");

/* Who each process is (written once per process, so allocated on first
 * use: preallocating 8,192 entries took ~3 ms of the collector's start). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 8192);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u32);
    __type(value, struct iod_proc_info);
} procs SEC(".maps");

/* struct iod_ra_misses per filesystem device and process (syscall_events.h). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct iod_ra_key);
    __type(value, struct iod_ra_misses);
} ra_misses SEC(".maps");

/* struct iod_sync_writes per filesystem device and process (syscall_events.h). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct iod_ra_key);
    __type(value, struct iod_sync_writes);
} sync_writes SEC(".maps");

/* Threads that exited having dirtied data (syscall_events.h iod_exit_info).
 * When it is full, later exits are not recorded, and their data not named. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u32);
    __type(value, struct iod_exit_info);
} exits SEC(".maps");

/* A new procs entry is put together here (with its command line it is too
 * big for the BPF stack of claim_proc's call chain). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct iod_proc_info);
} proc_info_scratch SEC(".maps");

/* Per-process time, per CPU, in a slot indexed by a hash of the tgid (user
 * space sizes it), IOD_PROC_SLOTS_PER_GROUP slots to an element (slot i is
 * element i / IOD_PROC_SLOTS_PER_GROUP); processes whose slot is taken go to
 * proc_time_overflow. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1024 / IOD_PROC_SLOTS_PER_GROUP);
    __type(key, __u32);
    __type(value, struct iod_proc_time_group);
} proc_time SEC(".maps");

/* Slot `idx` (already masked with proc_slot_mask) on this CPU. */
static __always_inline struct iod_proc_time *proc_slot(__u32 idx)
{
    __u32 group = idx / IOD_PROC_SLOTS_PER_GROUP;
    struct iod_proc_time_group *g = bpf_map_lookup_elem(&proc_time, &group);
    if (!g)
        return 0;
    return &g->slot[idx & (IOD_PROC_SLOTS_PER_GROUP - 1)];
}

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, 4096);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u32);
    __type(value, struct iod_proc_time);
} proc_time_overflow SEC(".maps");

/* Zeroes for a new overflow entry (too big for the BPF stack). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct iod_proc_time);
} proc_time_zero SEC(".maps");

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

/* The stack of the wait being classified, and the binary search's bounds
 * (kept here rather than in registers: see class_of_ip). */
struct stack_buf {
    __u64 ip[IOD_STACK_DEPTH];
    __u32 lo, hi;
};
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct stack_buf);
} stack_scratch SEC(".maps");

static __always_inline struct iod_aggregates *aggs(void)
{
    __u32 zero = 0;
    return bpf_map_lookup_elem(&aggregates, &zero);
}

/* The bound is checked on the register that indexes (barrier_var keeps the
 * compiler from checking a copy). */
static __always_inline void count(__u32 idx, __u64 v)
{
    struct iod_aggregates *a = aggs();
    barrier_var(idx);
    if (!a || idx >= CNT_COUNT) return;
    barrier_var(idx);
    a->counters[idx] += v;
}

/* The entry of a filesystem device and process in `map` (a hash keyed by
 * struct iod_ra_key), created from `zero` at the first use; NULL (and the
 * counter `full` counted) when the table is full. */
static __always_inline void *device_process_entry(void *map, struct inode *inode, __u32 tgid, const void *zero,
                                                  __u32 full)
{
    struct iod_ra_key k = {.dev = inode->i_sb->s_dev, .tgid = tgid};
    void *m = bpf_map_lookup_elem(map, &k);
    if (m) return m;
    bpf_map_update_elem(map, &k, zero, BPF_NOEXIST);
    m = bpf_map_lookup_elem(map, &k);
    if (!m) count(full, 1);
    return m;
}

/* The readahead counts of a filesystem device and process (from its first miss). */
static __always_inline struct iod_ra_misses *ra_misses_of(struct inode *inode, __u32 tgid)
{
    const struct iod_ra_misses zero = {};
    return device_process_entry(&ra_misses, inode, tgid, &zero, CNT_RA_TABLE_FULL);
}

/* The durability waits of a filesystem device and process (from its first). */
static __always_inline struct iod_sync_writes *sync_writes_of(struct inode *inode, __u32 tgid)
{
    const struct iod_sync_writes zero = {};
    return device_process_entry(&sync_writes, inode, tgid, &zero, CNT_SYNC_TABLE_FULL);
}

/* uapi values, stable across kernels: O_DSYNC (asm-generic/fcntl.h; O_SYNC
 * includes it), MS_SYNCHRONOUS = SB_SYNCHRONOUS and MS_DIRSYNC = SB_DIRSYNC
 * (linux/mount.h), and S_SYNC and S_DIRSYNC (include/linux/fs.h, the inode
 * flags FS_SYNC_FL and FS_DIRSYNC_FL set). */
#define IOD_O_DSYNC 010000
#define IOD_SB_SYNCHRONOUS 16
#define IOD_SB_DIRSYNC 128
#define IOD_S_SYNC 1
#define IOD_S_DIRSYNC 64

/* Why the kernel made a write to `file` synchronous (enum iod_sync_reason). */
static __always_inline __u32 sync_reason(struct file *file, struct inode *inode)
{
    if (KCAST(file, struct file)->f_flags & IOD_O_DSYNC) return IOD_SYNC_FILE;
    if (inode->i_sb->s_flags & IOD_SB_SYNCHRONOUS) return IOD_SYNC_MOUNT;
    if (inode->i_flags & IOD_S_SYNC) return IOD_SYNC_INODE;
    return IOD_SYNC_NONE;
}

/* Why the kernel made the directory change that created `file` synchronous
 * (IS_DIRSYNC of its directory: the superblock's SB_SYNCHRONOUS or
 * SB_DIRSYNC, the directory's S_SYNC or S_DIRSYNC); IOD_SYNC_REASONS when it
 * did not. */
static __always_inline __u32 dirsync_reason(struct file *file, struct inode *inode)
{
    unsigned long sb_flags = inode->i_sb->s_flags;
    if (sb_flags & IOD_SB_SYNCHRONOUS) return IOD_SYNC_MOUNT;
    if (sb_flags & IOD_SB_DIRSYNC) return IOD_SYNC_DIRSYNC;
    struct inode *dir = KCAST(file, struct file)->f_path.dentry->d_parent->d_inode;
    if (dir && (dir->i_flags & (IOD_S_SYNC | IOD_S_DIRSYNC))) return IOD_SYNC_DIRSYNC;
    return IOD_SYNC_REASONS;
}

static __always_inline void count_max(__u32 idx, __u64 v)
{
    struct iod_aggregates *a = aggs();
    barrier_var(idx);
    if (!a || idx >= CNT_COUNT) return;
    barrier_var(idx);
    if (v > a->counters[idx]) a->counters[idx] = v;
}

static __always_inline void gauge(__u32 idx, __u64 v)
{
    __u64 *g = bpf_map_lookup_elem(&gauges, &idx);
    if (g) *g = v;
}

/* The thread's storage, or NULL. Most threads that switch, wake or make a
 * syscall (kernel workers, io-wq, ksoftirqd, untraced processes) have no BPF
 * task storage at all: that is one plain load of task->bpf_storage, while
 * the helper (the tracing variant, with its per-CPU recursion lock) costs a
 * call and ~20 ns even when it finds nothing. */
static __always_inline struct iod_inflight *stored_state(struct task_struct *t)
{
    if (!KCAST(t, struct task_struct)->bpf_storage)   /* untrusted: see fd_to_file */
        return NULL;
    return bpf_task_storage_get(&task_state, t, 0, 0);
}

/* The thread's in-flight syscall, or NULL when it has none. */
static __always_inline struct iod_inflight *inflight_of(struct task_struct *t)
{
    struct iod_inflight *f = stored_state(t);
    return f && f->sys ? f : NULL;
}

/* Charges the time since the last state change to the class the thread was in.
 * The mark never moves backwards: a wakeup is timed on the waker's CPU, whose
 * clock may be a little behind the one that set the mark; such an instant is
 * charged nowhere and the mark stays. The syscall's duration is taken from
 * the final mark, so the charged parts add up to it to the nanosecond. */
/* A class's time in a syscall's parts: ns[cls] where `charged` says it holds
 * one, else 0 (ns[] is not zeroed at entry), without a branch: a branch per
 * class would multiply the verifier's paths. */
static __always_inline __u64 charged_ns(const struct iod_inflight *f, __u16 charged, __u32 cls)
{
    return f->ns[cls] & -(__u64)((charged >> cls) & 1);
}

static __always_inline void charge(struct iod_inflight *f, __u64 now)
{
    if (now <= f->mark_ns)
        return;
    __u32 cls;
    if (f->reclaim_depth)
        cls = CLS_RECLAIM;              /* a wait inside reclaim counts once, to reclaim */
    else if (f->state == CLS_NONE)
        cls = (f->flags & IOD_F_MISS_FILL) ? CLS_PAGE_CACHE : CLS_FILESYSTEM;
    else
        cls = f->state;
    __u64 d = now - f->mark_ns;
    if (cls < CLS_COUNT) {
        __u16 bit = 1u << cls;
        if (f->charged & bit) {
            f->ns[cls] += d;
        } else {
            f->ns[cls] = d;
            f->charged |= bit;
        }
        if (cls == CLS_JOURNAL && f->journal_kind > IOD_JOURNAL_NONE && f->journal_kind <= IOD_JOURNAL_BTRFS_LOG)
            count(CNT_JBD2_WAIT_NS + f->journal_kind - 1, d);
    }
    f->mark_ns = now;
}

/* Direct BTF pointer walks (bpf_get_current_task_btf): each load is a plain
 * instruction with fault handling, several times cheaper than a
 * bpf_probe_read_kernel call per field on this per-syscall path. */
static __always_inline struct file *fd_to_file(__u64 fd)
{
    /* untrusted (bpf_rdonly_cast, inlined to nothing): a pointer loaded from
     * a trusted one makes the verifier search all of vmlinux BTF by name for
     * a "__safe_trusted" marker at every such load it checks */
    struct task_struct *t = KCAST(bpf_get_current_task_btf(), struct task_struct);
    struct fdtable *fdt = t->files->fdt;
    if (!fdt || fd >= fdt->max_fds)
        return NULL;
    /* The slot fdt->fd[fd] read with a plain (fault-handled) load instead of
     * a bpf_probe_read_kernel call (~40 ns here): the verifier cannot index
     * a struct file ** with BTF, so the slot's address is cast to a struct
     * whose first member is a struct file * (struct kiocb: ki_filp). */
    __u64 slot = (__u64)fdt->fd + fd * sizeof(void *);
    return KCAST((void *)slot, struct kiocb)->ki_filp;
}

/* Storage files only: regular files on a block-backed superblock, or block
 * devices. procfs/sysfs/tmpfs/pipes/sockets are not storage latency. btrfs
 * (several devices, an anonymous s_dev) leaves s_bdev NULL: its filesystem
 * type's FS_REQUIRES_DEV says it is block-backed all the same. */
static __always_inline bool on_block_backed_fs(struct inode *i)
{
    struct super_block *sb = i->i_sb;
    if (sb->s_bdev != NULL) return true;
    return (sb->s_type->fs_flags & FS_REQUIRES_DEV) != 0;
}

static __always_inline bool is_storage_file(struct file *f)
{
    if (!f) return false;
    struct inode *i = KCAST(f, struct file)->f_inode;
    if (!i) return false;
    umode_t mode = i->i_mode;
    if ((mode & S_IFMT) == S_IFBLK) return true;
    if ((mode & S_IFMT) != S_IFREG) return false;
    return on_block_backed_fs(i);
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
    struct task_struct *t = bpf_get_current_task_btf();
    if (!traced_process(t->tgid)) return 0;
    struct iod_inflight *v;
    struct file *f = NULL;
    if (sys == SYS_IO_URING_ENTER || sys == SYS_OPENAT) {
        /* io_uring_enter: the ring's fd, not a storage file, traced for its
         * completion waits; openat: the file is known at exit */
        v = stored_state(t);
    } else {
        f = fd_to_file(fd);
        if (!f) return 0;
        struct inode *i = KCAST(f, struct file)->f_inode;
        if (!i) return 0;
        umode_t type = i->i_mode & S_IFMT;
        /* Sockets, pipes, ttys, eventfds: no storage, and known to be none
         * from the inode's mode alone, before the thread's state is looked
         * up (a helper call, ~30 ns here): a server's reads and writes on
         * its sockets run this program (their events are read's and
         * write's) and should cost it as little as can be. */
        if (type != S_IFREG && type != S_IFBLK) return 0;
        v = stored_state(t);
        if (type == S_IFREG) {
            /* the superblock walk, cached for the thread's last file */
            bool storage;
            if (v && v->seen_file == (__u64)f && v->seen_inode == (__u64)i) {
                storage = v->seen_storage;
            } else {
                storage = on_block_backed_fs(i);
                if (v) {
                    v->seen_file = (__u64)f;
                    v->seen_inode = (__u64)i;
                    v->seen_storage = storage;
                }
            }
            if (!storage) return 0;
        }
        if (offset_from_file) offset = KCAST(f, struct file)->f_pos;
    }
    if (!v) {
        v = bpf_task_storage_get(&task_state, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
        if (!v) {
            count(CNT_INFLIGHT_FULL, 1);
            return 0;
        }
    }
    v->start_ns = v->mark_ns = bpf_ktime_get_ns();
    v->file = (__u64)f;
    v->upath = upath;
    v->offset = offset;
    v->sys = sys + 1;
    v->flags = 0;
    v->charged = 0;
    v->state = CLS_NONE;
    v->journal_kind = 0;
    v->reclaim_depth = 0;
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
__noinline int send_exemplar(struct iod_inflight *f, __u64 id, __u64 total, long ret, __u32 sys)
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
    __u16 charged = f->charged;
    for (int k = 0; k < CLS_COUNT; k++)
        e->ns[k] = charged_ns(f, charged, k);
    bpf_get_current_comm(e->comm, sizeof(e->comm));
    e->name[0] = 0;
    e->parent[0] = 0;
    e->ino = 0;
    struct file *file = (struct file *)f->file;
    if (sys == SYS_OPENAT && ret >= 0)
        file = fd_to_file(ret);
    else if (f->flags & IOD_F_BEFORE_WINDOW)
        file = fd_to_file(f->file);   /* user space knew the descriptor, not the file */
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

/* The current process's command line into pi: its argv as its memory holds
 * it (mm->arg_start..arg_end, NUL-separated; user space turns the NULs into
 * spaces), the first IOD_CMDLINE_LEN bytes. None (cmdline_len 0) for a kernel
 * thread (no mm), or when the bytes are not in memory (a probe read does not
 * fault pages in). Read once per process (claim_proc) and once per exec. */
static __always_inline void read_cmdline(struct iod_proc_info *pi)
{
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    struct mm_struct *mm = BPF_CORE_READ(t, mm);
    pi->cmdline_len = 0;
    if (!mm) return;
    unsigned long start = BPF_CORE_READ(mm, arg_start), end = BPF_CORE_READ(mm, arg_end);
    if (end <= start) return;
    __u32 len = end - start > IOD_CMDLINE_LEN ? IOD_CMDLINE_LEN : (__u32)(end - start);
    barrier_var(len);
    if (len == 0 || len > IOD_CMDLINE_LEN) return;
    if (bpf_probe_read_user(pi->cmdline, len, (void *)start) == 0)
        pi->cmdline_len = len;
}

/* A process first seen on this CPU: its identity (once per process, with the
 * cgroups and the command line read once), then its time slot on this CPU,
 * or its overflow entry when another process holds the slot. Global functions (this one and
 * account_syscall) are verified once, on their own, instead of once per path
 * of sys_exit that reaches them (that made sys_exit ~100k verified
 * instructions and most of the collector's start time). */
__noinline int claim_proc(__u32 tgid, __u32 idx)
{
    __u32 zero = 0;
    struct iod_proc_info *nv;
    if (!bpf_map_lookup_elem(&procs, &tgid) && (nv = bpf_map_lookup_elem(&proc_info_scratch, &zero))) {
        nv->cgid = bpf_get_current_cgroup_id();
        nv->memcg = memcg_v1_id();
        nv->io_cg = io_cgroup_id((struct task_struct *)bpf_get_current_task());
        bpf_get_current_comm(nv->comm, sizeof(nv->comm));
        read_cmdline(nv);
        if (bpf_map_update_elem(&procs, &tgid, nv, BPF_NOEXIST) && !bpf_map_lookup_elem(&procs, &tgid))
            count(CNT_PROCS_FULL, 1);
    }
    struct iod_proc_time *slot = proc_slot(idx);
    if (slot && !slot->tgid) {
        slot->tgid = tgid;
        return 0;
    }
    if (bpf_map_lookup_elem(&proc_time_overflow, &tgid))
        return 0;
    struct iod_proc_time *z = bpf_map_lookup_elem(&proc_time_zero, &zero);
    if (!z) return 0;
    bpf_map_update_elem(&proc_time_overflow, &tgid, z, BPF_NOEXIST);
    struct iod_proc_time *o = bpf_map_lookup_elem(&proc_time_overflow, &tgid);
    if (o) o->tgid = tgid;
    else count(CNT_PROCS_FULL, 1);
    return 0;
}

static __always_inline struct iod_proc_time *proc_time_of(__u32 tgid)
{
    __u32 idx = (tgid * 2654435761u) & proc_slot_mask;
    struct iod_proc_time *p = proc_slot(idx);
    if (p && p->tgid == tgid) return p;
    claim_proc(tgid, idx);
    p = proc_slot(idx);
    if (p && p->tgid == tgid) return p;
    return bpf_map_lookup_elem(&proc_time_overflow, &tgid);
}

/* iod_group_of(sys), or GRP_COUNT for no traced syscall. */
static __always_inline __u32 group_of(__u32 sys)
{
    return sys < SYS_COUNT ? group_of_sys[sys] : GRP_COUNT;
}

/* Adds one finished syscall to the per-CPU aggregates and its process's time. */
/* A syscall's wait for durability: its journal, device and block-queue parts. */
static __always_inline __u64 durability_wait_ns(struct iod_inflight *f, __u16 charged)
{
    return charged_ns(f, charged, CLS_DEVICE) + charged_ns(f, charged, CLS_BLOCK_QUEUE) +
           charged_ns(f, charged, CLS_JOURNAL);
}

__noinline int account_syscall(struct iod_inflight *f, __u32 sys, long ret, __u64 total, __u32 tgid)
{
    struct iod_aggregates *a = aggs();
    if (!a || !f) return 0;
    /* bucket 0 = 0..1, bucket i = [2^i, 2^(i+1)-1], as Log2Histogram; one
     * bounded unknown to the verifier (log2_flat.h), checked once */
    __u32 b = iodiag_log2_flat(total / 1000, IOD_HIST_BUCKETS);
    __u32 grp = group_of(sys);
    barrier_var(b);
    if (b >= IOD_HIST_BUCKETS || grp >= GRP_COUNT) return 0;
    barrier_var(b);
    a->hist[grp][b] += 1;
    __u16 charged = f->charged;

    /* io_uring_enter waits for completions of work done elsewhere (io-wq,
     * interrupts): its time is not an operation's latency, so it gets a
     * histogram but stays out of the attribution. */
    if (grp != GRP_IO_URING_ENTER) {
        struct iod_bucket_sums *s = &a->buckets[b];
        s->count += 1;
        s->total_ns += total;
        if (charged == (1u << CLS_FILESYSTEM)) {
            s->ns[CLS_FILESYSTEM] += f->ns[CLS_FILESYSTEM];   /* never left the CPU: the common case */
        } else {
            for (int i = 0; i < CLS_COUNT; i++)
                s->ns[i] += charged_ns(f, charged, i);
        }
    }
    if (grp == GRP_READ && ret >= 0) {
        /* a hit: no page-cache-miss wait, no block I/O wait, no reclaim */
        const __u16 miss_bits = (1u << CLS_PAGE_CACHE) | (1u << CLS_DEVICE) | (1u << CLS_BLOCK_QUEUE);
        if (charged & miss_bits) a->read_miss[b] += 1;
        else a->read_hit[b] += 1;
    }
    struct iod_proc_time *pv = proc_time_of(tgid);
    if (pv) {
        pv->ops += 1;
        pv->ns_by_bucket[b] += total;
    }
    /* A read that waited for the page cache (a miss's fill, a page still
     * under readahead): that wait per filesystem device and process, on
     * every such read, not only the slow ones sent as exemplars, so that the
     * readahead setting's part of a fast device's reader is measured too. */
    if (grp == GRP_READ && (charged & (1u << CLS_PAGE_CACHE)) && f->file && f->file == f->seen_file &&
        f->seen_inode) {
        struct iod_ra_misses *m = ra_misses_of(KCAST((void *)f->seen_inode, struct inode), tgid);
        if (m) {
            __sync_fetch_and_add(&m->cache_wait_ns, f->ns[CLS_PAGE_CACHE]);
            __sync_fetch_and_add(&m->cache_read_ns, total);
        }
    }
    /* A write that waited for durability (its data's block I/O, the journal),
     * with why the kernel made it synchronous; and the fsyncs beside them:
     * whether a `sync` mount or attribute explains a writer's waits. Only
     * writes that waited look the table up: a buffered write's fast path
     * never does. */
    const __u16 durable_bits = (1u << CLS_DEVICE) | (1u << CLS_BLOCK_QUEUE) | (1u << CLS_JOURNAL);
    if ((grp == GRP_WRITE && (charged & durable_bits)) || grp == GRP_FSYNC) {
        if (f->file && f->file == f->seen_file && f->seen_inode) {
            struct inode *inode = KCAST((void *)f->seen_inode, struct inode);
            struct iod_sync_writes *w = sync_writes_of(inode, tgid);
            if (w && grp == GRP_FSYNC) {
                __sync_fetch_and_add(&w->fsyncs, 1);
                __sync_fetch_and_add(&w->fsync_time_ns, total);
            } else if (w) {
                __u32 r = sync_reason((struct file *)f->file, inode);
                __u64 wait = durability_wait_ns(f, charged);
                barrier_var(r);
                if (r < IOD_SYNC_REASONS) {
                    __sync_fetch_and_add(&w->writes[r], 1);
                    __sync_fetch_and_add(&w->wait_ns[r], wait);
                    __sync_fetch_and_add(&w->time_ns[r], total);
                }
            }
        }
    }
    /* An open that waited for the journal where the kernel makes directory
     * changes synchronous: a create that committed its new directory entry
     * before returning (ext4_create -> ext4_handle_sync, XFS: a synchronous
     * transaction and a log force), which a create elsewhere does in memory.
     * Only such opens look the table up (rare: an open does not wait for the
     * journal otherwise). */
    if (grp == GRP_OPEN && ret >= 0 && (charged & (1u << CLS_JOURNAL))) {
        struct file *file = fd_to_file(ret);
        struct inode *inode = file ? KCAST(file, struct file)->f_inode : NULL;
        if (inode) {
            __u32 r = dirsync_reason(file, inode);
            barrier_var(r);
            struct iod_sync_writes *w = r < IOD_SYNC_REASONS ? sync_writes_of(inode, tgid) : NULL;
            if (w && r < IOD_SYNC_REASONS) {
                __u64 wait = durability_wait_ns(f, charged);
                __sync_fetch_and_add(&w->writes[r], 1);
                __sync_fetch_and_add(&w->wait_ns[r], wait);
                __sync_fetch_and_add(&w->time_ns[r], total);
            }
        }
    }
    return 0;
}

/* The common syscall: it never left the CPU and entered no measured child, so
 * all of it is the filesystem's (what charge() and account_syscall would add
 * for it, without their class bookkeeping). */
static __always_inline int account_fast(__u32 grp, long ret, __u64 total, __u32 tgid)
{
    struct iod_aggregates *a = aggs();
    if (!a) return 0;
    __u32 b = iodiag_log2_flat(total / 1000, IOD_HIST_BUCKETS);
    if (b >= IOD_HIST_BUCKETS || grp >= GRP_COUNT) return 0;
    a->hist[grp][b] += 1;
    if (grp != GRP_IO_URING_ENTER) {   /* out of the attribution: see account_syscall */
        struct iod_bucket_sums *s = &a->buckets[b];
        s->count += 1;
        s->total_ns += total;
        s->ns[CLS_FILESYSTEM] += total;
        if (grp == GRP_READ && ret >= 0) a->read_hit[b] += 1;
    }
    struct iod_proc_time *pv = proc_time_of(tgid);
    if (pv) {
        pv->ops += 1;
        pv->ns_by_bucket[b] += total;
    }
    return 0;
}

/* The exit of traced syscall `sys` (enum iod_sys). An in-flight syscall of
 * another number is one whose exit the kernel skipped (a per-syscall
 * tracepoint program is skipped while another kprobe/tracepoint program is
 * active on the CPU; counted in the programs' recursion misses): it is
 * dropped, never timed to this exit. */
static __always_inline int on_exit(__u32 sys, long ret)
{
    struct task_struct *t = bpf_get_current_task_btf();
    struct iod_inflight *f = inflight_of(t);
    if (!f) return 0;
    if (f->sys != sys + 1) {
        f->sys = 0;
        return 0;
    }
    f->sys = 0;
    __u64 now = bpf_ktime_get_ns();
    /* Nothing charged since entry (no switch, reclaim or page-cache fill: each
     * charges first), so the mark is still the start and the whole syscall is
     * on-CPU filesystem time. Below the exemplar threshold nothing else is
     * needed from the thread's state; io_uring_enter never sends one (most
     * of its calls submit and return without waiting: one per I/O with
     * fio's defaults). An fsync takes the full path, which counts it per
     * device beside the writes (a fast one: its data was durable already). */
    if (!f->charged && f->state == CLS_NONE && !f->reclaim_depth && !(f->flags & IOD_F_MISS_FILL) &&
        sys != SYS_OPENAT && sys != SYS_FSYNC && sys != SYS_FDATASYNC && now > f->mark_ns) {
        __u64 total = now - f->mark_ns;
        __u32 grp = group_of(sys);
        if (total < exemplar_min_ns || grp == GRP_IO_URING_ENTER)
            return account_fast(grp, ret, total, t->tgid);
    }
    charge(f, now);
    if (sys == SYS_OPENAT) {
        /* only opens that produced a storage file */
        if (ret < 0 || !is_storage_file(fd_to_file(ret))) return 0;
    }
    __u64 total = f->mark_ns - f->start_ns;   /* == the sum of the charged parts */
    __u32 tgid = t->tgid;
    account_syscall(f, sys, ret, total, tgid);
    if (total >= exemplar_min_ns && group_of(sys) != GRP_IO_URING_ENTER)
        send_exemplar(f, ((__u64)tgid << 32) | (__u32)t->pid, total, ret, sys);
    return 0;
}

/* Where the syscall programs attach (user space chooses, see
 * collectors/bpf/syscall_bpf.cpp):
 *  - per-syscall tracepoints (syscalls:sys_enter_<name>/sys_exit_<name>),
 *    one enter and one exit program attached to the events of the traced
 *    syscalls only: every other syscall runs no program of ours. Enabling
 *    any syscall event still sends every syscall of the machine through the
 *    kernel's syscall-tracing slow path (TIF_SYSCALL_TRACEPOINT), where the
 *    perf handler tests the syscall's bit in a bitmap and returns; that test
 *    is the floor every other syscall pays (tests/bench/hook_floor.bpf.c).
 *    Their perf events cost an RCU synchronisation each when closed, ~20 ms
 *    here: user space stops the programs with `stopped` and releases the
 *    events off its exit path (collectors/bpf/deferred_release.hpp).
 *  - the raw syscall tracepoints (raw_syscalls sys_enter/sys_exit as
 *    tp_btf), where the per-syscall ones are missing: filtered by syscall
 *    number through sys_of_nr (filled from <sys/syscall.h> by user space)
 *    before any other work, but a program run for every syscall on the
 *    machine. The syscall arguments are read from the user registers (x86-64
 *    syscall ABI: di, si, dx, r10); 32-bit compat syscalls use another
 *    numbering and are skipped, as the syscalls:* tracepoints skip them. */
#define IOD_USER32_CS 0x23

/* Set by user space when the window ends: every program does nothing more
 * (its maps stop moving, as after a detach), and the perf events and links
 * are released after iodiag's exit (collectors/bpf/deferred_release.hpp):
 * detaching costs an RCU wait per perf event and a kernel text patch per raw
 * tracepoint. */
__u32 stopped = 0;

/* The syscall number's enum iod_sys, or -1 when it is not traced. */
static __always_inline int sys_of_nr_checked(long nr)
{
    if (nr < 0 || nr >= IOD_MAX_NR) return -1;
    return (int)sys_of_nr[nr] - 1;
}

static __always_inline int sys_of_regs(struct pt_regs *regs, long nr)
{
    int sys = sys_of_nr_checked(nr);
    if (sys < 0) return -1;
    if (regs->cs == IOD_USER32_CS) return -1;
    return sys;
}

/* A traced syscall's entry from its arguments 0, 1 and 3 (the file
 * descriptor; openat's path or sync_file_range's offset; the positional
 * syscalls' offset). */
static __always_inline int enter_with_args(int sys, __u64 a0, __u64 a1, __u64 a3)
{
    switch (sys) {
    case SYS_PREAD64: case SYS_PWRITE64: case SYS_PREADV: case SYS_PWRITEV:
    case SYS_PREADV2: case SYS_PWRITEV2:
        /* offset in the 4th argument */
        return on_enter(sys, a0, (__s64)a3, false, 0);
    case SYS_SYNC_FILE_RANGE:
        return on_enter(sys, a0, (__s64)a1, false, 0);
    case SYS_OPENAT:
        /* the path (user pointer) in the 2nd argument; the file is known at exit */
        return on_enter(sys, 0, -1, false, a1);
    case SYS_READ: case SYS_WRITE: case SYS_READV: case SYS_WRITEV:
        return on_enter(sys, a0, -1, true, 0);
    default:   /* fsync, fdatasync, io_uring_enter */
        return on_enter(sys, a0, -1, false, 0);
    }
}

/* Slot 0: the io_uring collector's program for the exit of io_uring_enter
 * when it runs too (collectors/bpf/tail_call_chain.hpp), tail-called at the
 * exits of io_uring_enter only, so that the io_uring collector attaches no
 * program of its own there. Empty: the tail call does nothing. Its programs
 * must be of the calling program's type: user space loads one attach mode's
 * programs only, and the io_uring collector puts the matching one here. */
struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} io_uring_exit_chain SEC(".maps");

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long nr)
{
    if (stopped) return 0;
    int sys = sys_of_regs(regs, nr);
    if (sys < 0) return 0;
    return enter_with_args(sys, regs->di, regs->si, regs->r10);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
    if (stopped) return 0;
    int sys = sys_of_regs(regs, (long)regs->orig_ax);
    if (sys < 0) return 0;
    on_exit(sys, ret);
    if (sys == SYS_IO_URING_ENTER)
        bpf_tail_call(ctx, &io_uring_exit_chain, 0);
    return 0;
}

/* The records of the syscalls:sys_enter_<name> and sys_exit_<name> events
 * (their tracefs format: the syscall number at offset 8, the arguments or
 * the return value from offset 16; the first 8 bytes hold the kernel's
 * pointer to the caller's registers for BPF, not the common fields). A
 * record holds the syscall's own arguments only, and the kernel refuses to
 * attach a program that reads past the end of an event's record (EACCES):
 * hence three enter programs, by the last argument each reads. */
struct iod_syscall_enter_record {
    __u64 regs;
    __s32 nr;
    __u32 pad;
    __u64 args[6];
};
struct iod_syscall_exit_record {
    __u64 regs;
    __s32 nr;
    __u32 pad;
    __s64 ret;
};

/* Attached by user space to sys_enter_<name> of each traced syscall (no
 * name in the section: one program, several events), the program by the
 * arguments its syscalls need (collectors/bpf/syscall_bpf.cpp, enter_program):
 * the file descriptor only (read, write, readv, writev, fsync, fdatasync,
 * io_uring_enter)... */
SEC("tracepoint")
int sys_enter_fd(struct iod_syscall_enter_record *rec)
{
    if (stopped) return 0;
    int sys = sys_of_nr_checked(rec->nr);
    if (sys < 0) return 0;
    return enter_with_args(sys, rec->args[0], 0, 0);
}

/* ...and the 2nd argument (openat's path, sync_file_range's offset)... */
SEC("tracepoint")
int sys_enter_fd_arg1(struct iod_syscall_enter_record *rec)
{
    if (stopped) return 0;
    int sys = sys_of_nr_checked(rec->nr);
    if (sys < 0) return 0;
    return enter_with_args(sys, rec->args[0], rec->args[1], 0);
}

/* ...and the 4th (the positional reads' and writes' offset). */
SEC("tracepoint")
int sys_enter_fd_arg3(struct iod_syscall_enter_record *rec)
{
    if (stopped) return 0;
    int sys = sys_of_nr_checked(rec->nr);
    if (sys < 0) return 0;
    return enter_with_args(sys, rec->args[0], 0, rec->args[3]);
}

SEC("tracepoint")
int sys_exit_event(struct iod_syscall_exit_record *rec)
{
    if (stopped) return 0;
    int sys = sys_of_nr_checked(rec->nr);
    if (sys < 0) return 0;
    on_exit(sys, rec->ret);
    if (sys == SYS_IO_URING_ENTER)
        bpf_tail_call(rec, &io_uring_exit_chain, 0);
    return 0;
}

/* ---- off-CPU classification ---------------------------------------------- */

/* Class of the function holding one frame (binary search over the sorted
 * ranges), or CLS_NONE; its journal kind in bits 8..15. A global function:
 * verified once, whatever the ranges hold (they are written after load).
 * The search's bounds go through memory (sb->lo, sb->hi) at every step: the
 * verifier does not track map memory, so the two ways out of one step meet
 * again as the same state. Kept in registers, every bound was a distinct
 * known value and each of the 2^7 paths was verified on its own (60k
 * instructions, ~200 ms of the syscall collector's start). */
__noinline int class_of_ip(struct stack_buf *sb, __u64 ip)
{
    if (!sb) return CLS_NONE;
    __u32 nr = nranges;
    if (nr > IOD_MAX_RANGES) nr = IOD_MAX_RANGES;
    sb->lo = 0;
    sb->hi = nr;
    for (int k = 0; k < 8; k++) {   /* 2^7 >= IOD_MAX_RANGES */
        __u32 lo = sb->lo, hi = sb->hi;
        if (lo >= hi) break;
        __u32 mid = (lo + hi) / 2;
        if (mid >= IOD_MAX_RANGES) break;
        if (ranges[mid].start <= ip) sb->lo = mid + 1; else sb->hi = mid;
    }
    __u32 lo = sb->lo;
    if (lo == 0 || lo > IOD_MAX_RANGES) return CLS_NONE;
    __u32 j = lo - 1;
    if (j < IOD_MAX_RANGES && ip < ranges[j].end)
        return (int)((ranges[j].cls & 0xff) | (ranges[j].kind & 0xff) << 8);
    return CLS_NONE;
}

/* The innermost of frames [from, n) that lies in a known function: its
 * class_of_ip(), or CLS_NONE. A global function with a plain bounded loop:
 * verified once, one pass per frame (the bpf_loop callback it replaces was
 * re-verified until its states converged: 60k instructions, ~180 ms of the
 * collector's start), and no indirect call per frame at run time. */
__noinline int classify_frames(struct stack_buf *sb, __u32 from, __u32 n)
{
    if (!sb) return CLS_NONE;
    __u32 shift = range_page_shift & 63;
    /* Counted from `from` by k, not by frame with the frames below `from`
     * skipped: compared with a known frame index at every step, `from` took
     * each value on a path of its own (depth^2 / 2 paths, 59k instructions,
     * ~35 ms of the collector's start); from + k leaves it unknown. */
    for (__u32 k = 0; k < IOD_STACK_DEPTH; k++) {
        __u32 i = from + k;
        if (i >= n || i >= IOD_STACK_DEPTH) break;
        barrier_var(i);   /* index by the checked register, not a pointer stepped from sb->ip + from */
        __u64 ip = sb->ip[i];
        __u64 page = (ip - range_base) >> shift;   /* below the base wraps to far above */
        if (page >= IOD_RANGE_PAGE_WORDS * 64) continue;
        if (!((range_pages[page / 64] >> (page % 64)) & 1)) continue;
        int found = class_of_ip(sb, ip);
        if ((found & 0xff) != CLS_NONE) return found;
    }
    return CLS_NONE;
}

/* Class of the innermost frame that lies in a known function; CLS_OTHER if none.
 * *kind: that function's journal kind (0 unless CLS_JOURNAL).
 * The stack walk is the largest part of this collector's cost where threads
 * wait often (fsync): measured on fsync-heavy fio here, ~1.5 us per call
 * even for one frame (the unwinder first walks the helper's own frames), ~2
 * us for 12 frames, ~2.4 us whole. The classified function of a wait is
 * usually within the first IOD_STACK_FIRST_WALK frames (tracing 4, the
 * scheduler 2-5, then the waiting function), so the first walk stops there;
 * only when those frames name nothing and the stack goes on is it walked
 * again whole (syscall_bpf.wait_stack_rewalks: ~0.2 % of the waits of that
 * fio). The answer is the whole walk's either way: the first walk's frames
 * are the whole walk's first frames. */
static __always_inline __u32 classify_stack(void *ctx, __u8 *kind)
{
    __u32 zero = 0;
    struct stack_buf *sb = bpf_map_lookup_elem(&stack_scratch, &zero);
    __u32 frames = first_walk_frames;   /* a constant once loaded */
    if (frames == 0 || frames > IOD_STACK_DEPTH) frames = IOD_STACK_DEPTH;
    const long first = frames * sizeof(__u64);
    long n = sb ? bpf_get_stack(ctx, sb->ip, first, 0) : -1;
    if (!sb || n <= 0) {
        /* e.g. the per-CPU callchain buffer is in use by a nested user */
        count(CNT_WAIT_STACK_FAILED, 1);
        return CLS_OTHER;
    }
    __u32 found = (__u32)classify_frames(sb, 0, (__u32)(n / sizeof(__u64)));
    if ((found & 0xff) == CLS_NONE && n == first && frames < IOD_STACK_DEPTH) {
        count(CNT_WAIT_STACK_REWALKS, 1);
        long whole = bpf_get_stack(ctx, sb->ip, sizeof(sb->ip), 0);
        if (whole > first)
            found = (__u32)classify_frames(sb, frames, (__u32)(whole / sizeof(__u64)));
    }
    __u32 cls = found & 0xff;
    *kind = (__u8)(found >> 8);
    if (cls == CLS_NONE || cls >= CLS_COUNT) {
        count(CNT_WAITS_UNCLASSIFIED, 1);
        return CLS_OTHER;
    }
    count(CNT_WAITS_CLASSIFIED, 1);
    return cls;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    if (stopped) return 0;
    __u64 now = 0;
    struct iod_inflight *f = inflight_of(prev);
    if (f) {
        now = bpf_ktime_get_ns();
        charge(f, now);
        if (preempt || (prev_state & 0xff) == 0)
            f->state = CLS_CPU;            /* still runnable: waits for a CPU */
        else if (f->reclaim_depth)
            f->state = CLS_RECLAIM;        /* no need to look: reclaim takes it all */
        else if (f->flags & IOD_F_CQ_WAIT)
            f->state = CLS_OTHER;          /* a CQ wait (no classifier names io_cqring_wait; the
                                            * io_uring collector times it): no stack walk per wait */
        else
            f->state = classify_stack(ctx, &f->journal_kind);
        /* the miss's data wait: its fill on CPU is over (a wait inside the
         * fill, for reclaim, a tag or metadata, leaves it going on) */
        if (f->state == CLS_PAGE_CACHE) f->flags &= ~IOD_F_MISS_FILL;
    }
    f = inflight_of(next);
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
    if (stopped) return 0;
    struct iod_inflight *f = inflight_of(p);
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

/* ---- who a process is ------------------------------------------------------ */

/* A process exec'd: its tgid stays, its program changes. An entry made before
 * (a shell's child makes syscalls before it exec's: it opens its redirection,
 * `sh -c 'dd ... > f'`) takes the new program's command and command line, so
 * that the program is named, not the shell that started it. A process with no
 * entry yet gets one at its first traced syscall, with the new program's
 * names then. Once per exec on the machine (a hash lookup for the others),
 * nothing on the per-syscall path. The comm is already the new program's here
 * (begin_new_exec) and its argv on its new stack (mm->arg_start). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
    if (stopped) return 0;
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct iod_proc_info *pi = bpf_map_lookup_elem(&procs, &tgid);
    if (!pi) return 0;
    bpf_get_current_comm(pi->comm, sizeof(pi->comm));
    read_cmdline(pi);
    return 0;
}

#define PF_KTHREAD 0x00200000   /* include/linux/sched.h */

/* A thread exits: what it dirtied in its life (the kernel's per-task count,
 * made when the pages were dirtied) is recorded with its process and command,
 * for proc_io (collectors/procfs/proc_io.cpp): once reaped, a process's count
 * is added to its parent's /proc/PID/io, and a writer started from a shell
 * loop would be named as the shell. Threads that dirtied nothing (most), kernel
 * threads (they write others' data) and iodiag's own are not recorded. Once
 * per thread exit, nothing on the per-syscall path. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_task_exit, struct task_struct *p)
{
    if (stopped) return 0;
    struct task_struct *t = bpf_get_current_task_btf();
    if (!bpf_core_field_exists(t->ioac)) return 0;   /* a kernel without CONFIG_TASK_XACCT */
    __u64 bytes = t->ioac.write_bytes;
    if (!bytes || (t->flags & PF_KTHREAD) || t->tgid == self_tgid) return 0;
    __u32 tid = t->pid;
    struct iod_exit_info v = {.tgid = t->tgid, .write_bytes = bytes};
    bpf_get_current_comm(v.comm, sizeof(v.comm));
    bpf_map_update_elem(&exits, &tid, &v, BPF_ANY);
    return 0;
}

/* ---- children with their own tracepoints --------------------------------- */

static __always_inline struct iod_inflight *current_inflight(void)
{
    return inflight_of(bpf_get_current_task_btf());
}

static __always_inline void reclaim_begin(void)
{
    struct iod_inflight *f = current_inflight();
    if (!f) return;
    charge(f, bpf_ktime_get_ns());
    if (f->reclaim_depth < 8) f->reclaim_depth++;
    f->flags |= IOD_F_RECLAIM;
}

static __always_inline void reclaim_end(void)
{
    struct iod_inflight *f = current_inflight();
    if (!f) return;
    charge(f, bpf_ktime_get_ns());
    if (f->reclaim_depth) f->reclaim_depth--;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(direct_reclaim_begin)
{
    if (stopped) return 0;
    count(CNT_DIRECT_RECLAIM, 1);
    reclaim_begin();
    return 0;
}
SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(direct_reclaim_end)
{
    if (stopped) return 0;
    reclaim_end();
    return 0;
}
SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(memcg_reclaim_begin)
{
    if (stopped) return 0;
    count(CNT_MEMCG_RECLAIM, 1);
    reclaim_begin();
    return 0;
}
SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(memcg_reclaim_end)
{
    if (stopped) return 0;
    reclaim_end();
    return 0;
}

/* Inline Q marks the thread's bios as not held; a released held bio marks
 * its cgroup's release time (blk-throttle dispatches from a worker). */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(on_bio_queue, struct bio *bio)
{
    if (stopped) return 0;
    struct iod_inflight *f = current_inflight();
    if (f) {
        if (!(f->flags & IOD_F_Q_INLINE)) f->flags |= IOD_F_Q_INLINE;
        return 0;
    }
    __u32 bit = bio_throttled_bit;   /* one read: the bound checked is the shift's */
    if (bit >= 16 || !(bio->bi_flags & (1u << bit)))
        return 0;
    struct blkcg_gq *blkg = KCAST(bio, struct bio)->bi_blkg;   /* untrusted: see fd_to_file */
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
    if (stopped) return 0;
    count(CNT_RECLAIM_THROTTLED, 1);
    if (usec_delayed > 0) count(CNT_RECLAIM_THROTTLED_US, usec_delayed);
    return 0;
}

/* balance_dirty_pages as tp_btf (a perf-event tracepoint here cost an RCU
 * synchronisation, 60-90 ms, when detached): the event record's dirty, limit
 * and setpoint are computed the way its TP_fast_assign does, from the
 * throttle control (dtc->limit since Linux 6.10, the domain's dirty_limit
 * before), and pause/period are arguments. */
SEC("tp_btf/balance_dirty_pages")
int BPF_PROG(on_balance_dirty_pages, struct bdi_writeback *wb, struct dirty_throttle_control *dtc,
             unsigned long dirty_ratelimit, unsigned long task_ratelimit, unsigned long dirtied,
             unsigned long period, long pause, unsigned long start_time)
{
    if (stopped) return 0;
    count(CNT_DIRTY_EVENTS, 1);
    if (pause > 0) count(CNT_DIRTY_PAUSE_JIFFIES, pause);
    count(CNT_DIRTY_PERIOD_JIFFIES, period);
    unsigned long limit = bpf_core_field_exists(dtc->limit) ? BPF_CORE_READ(dtc, limit)
                                                             : BPF_CORE_READ(dtc, dom, dirty_limit);
    unsigned long freerun = (BPF_CORE_READ(dtc, thresh) + BPF_CORE_READ(dtc, bg_thresh)) / 2;
    gauge(GAUGE_DIRTY_PAGES, BPF_CORE_READ(dtc, dirty));
    gauge(GAUGE_DIRTY_LIMIT, limit);
    gauge(GAUGE_DIRTY_SETPOINT, (limit + freerun) / 2);
    struct iod_inflight *f = current_inflight();
    if (f) f->flags |= IOD_F_DIRTY_THROTTLED;
    return 0;
}

/* The event record copies these four fields (jiffies) from the stats. */
SEC("tp_btf/jbd2_run_stats")
int BPF_PROG(on_jbd2_run_stats, dev_t dev, tid_t tid, struct transaction_run_stats_s *stats)
{
    if (stopped) return 0;
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
int BPF_PROG(on_ext4_sync_enter)
{
    if (stopped) return 0;
    count(CNT_EXT4_FSYNC, 1);
    return 0;
}

/* XFS has no jbd2: fsync forces its log (CIL push, iclog writes) through
 * xfs_log_force_seq, which fires xfs_log_force (as does xfs_log_force). */
SEC("tp_btf/xfs_file_fsync")
int BPF_PROG(on_xfs_fsync)
{
    if (stopped) return 0;
    count(CNT_XFS_FSYNC, 1);
    return 0;
}

SEC("tp_btf/xfs_log_force")
int BPF_PROG(on_xfs_log_force)
{
    if (stopped) return 0;
    count(CNT_XFS_LOG_FORCES, 1);
    return 0;
}

SEC("tp_btf/btrfs_sync_file")
int BPF_PROG(on_btrfs_fsync)
{
    if (stopped) return 0;
    count(CNT_BTRFS_FSYNC, 1);
    return 0;
}

/* io_uring_enter fires this once it has submitted and is about to wait for
 * completions: every later switch of this syscall is that wait (or a
 * preemption), so on_switch skips the stack walk for it. A wait inside the
 * submission (a tag or a lock) is still classified. */
SEC("tp_btf/io_uring_cqring_wait")
int BPF_PROG(on_cqring_wait)
{
    if (stopped) return 0;
    struct iod_inflight *f = current_inflight();
    if (f && f->sys == SYS_IO_URING_ENTER + 1) f->flags |= IOD_F_CQ_WAIT;
    return 0;
}

/* Whether this miss continues a sequential read of its file, the kernel's
 * own test (mm/readahead.c: the page asked for is the one after the file's
 * previous read, ra->prev_pos, or the same page). prev_pos moves only when a
 * read() returns, so the later misses of one read inherit the answer of its
 * first: a 1 MiB sequential read() with readahead off misses page by page. */
static __always_inline bool ra_sequential(struct iod_inflight *f, unsigned long index, struct file_ra_state *ra)
{
    if (f && (f->flags & IOD_F_RA_MISSED)) return f->flags & IOD_F_RA_SEQUENTIAL;
    const __u64 prev_index = (__u64)ra->prev_pos >> (page_shift & 63);
    const bool seq = index > 0 && index - prev_index <= 1;
    if (f) f->flags |= IOD_F_RA_MISSED | (seq ? IOD_F_RA_SEQUENTIAL : 0);
    return seq;
}

/* A read missed the page cache: what its thread does on CPU from here to the
 * wait for the data (allocating and charging folios, the filesystem mapping
 * their blocks, submitting the bios: on a loop device or a contended queue
 * lock that is most of a miss's cost) is the miss's, not the filesystem's.
 * The miss is also counted per device and process with its sequentiality
 * and the file's readahead window: a sequential miss the window could not
 * widen beyond the pages asked for (read_ahead_kb 0 or tiny) is one
 * synchronous device read per read(). */
SEC("tp_btf/page_cache_sync_ra")
int BPF_PROG(on_sync_ra, struct inode *inode, unsigned long index, struct file_ra_state *ra, unsigned long req_count)
{
    if (stopped) return 0;
    count(CNT_RA_SYNC, 1);
    struct iod_inflight *f = current_inflight();
    const __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (tgid != self_tgid && (!target_tgid || tgid == target_tgid)) {
        const bool seq = ra_sequential(f, index, ra);
        struct iod_ra_misses *m = ra_misses_of(inode, tgid);
        if (m) {
            const __u32 window = ra->ra_pages;
            __sync_fetch_and_add(&m->misses, 1);
            __sync_fetch_and_add(&m->window_pages, window);
            if (seq) __sync_fetch_and_add(&m->sequential, 1);
            if (seq && window <= req_count) __sync_fetch_and_add(&m->unwidened, 1);
        }
    }
    if (f) {
        charge(f, bpf_ktime_get_ns());
        f->flags |= IOD_F_READAHEAD | IOD_F_MISS_FILL;
    }
    return 0;
}

/* A sequential read reached the marked page of its readahead window: the
 * kernel reads the next window now, while the reader goes on. Counted per
 * device and process with the window's size: a window smaller than the
 * kernel's default bounds a sequential reader's throughput at a window per
 * device round trip. */
SEC("tp_btf/page_cache_async_ra")
int BPF_PROG(on_async_ra, struct inode *inode, unsigned long index, struct file_ra_state *ra, unsigned long req_count)
{
    if (stopped) return 0;
    count(CNT_RA_ASYNC, 1);
    const __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (tgid != self_tgid && (!target_tgid || tgid == target_tgid)) {
        struct iod_ra_misses *m = ra_misses_of(inode, tgid);
        if (m) {
            __sync_fetch_and_add(&m->async, 1);
            __sync_fetch_and_add(&m->async_window_pages, ra->ra_pages);
        }
    }
    /* The reader submits the next window itself, on its CPU (allocating the
     * folios, mapping their blocks, submitting the bios: through a loop
     * device, most of a small window's cost): page-cache filling, as a
     * synchronous miss's, until a page-cache wait or its return. */
    struct iod_inflight *f = current_inflight();
    if (f) {
        charge(f, bpf_ktime_get_ns());
        f->flags |= IOD_F_READAHEAD | IOD_F_MISS_FILL;
    }
    return 0;
}

/* Pages readahead asked the filesystem for (the non-large-folio path; the
 * large-folio path of page_cache_ra_order falls back to this one or is not
 * counted, so this is a lower bound). */
SEC("tp_btf/page_cache_ra_unbounded")
int BPF_PROG(on_ra_unbounded, struct inode *inode, unsigned long index, unsigned long nr_to_read)
{
    if (stopped) return 0;
    count(CNT_RA_PAGES, nr_to_read);
    return 0;
}
