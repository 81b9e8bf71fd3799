/* Shared between bpf/syscall.bpf.c and collectors/bpf/syscall_bpf*.cpp: the
 * operations traced, the classes a syscall's time is charged to, and the
 * layout of the maps and ring-buffer records.
 *
 * Accounting model: while a traced syscall is in flight, its thread is in
 * exactly one state at any instant (on CPU in the syscall, off CPU in a
 * classified wait, runnable but not running, inside reclaim). Every state
 * change charges the time since the previous change to one class, so the
 * classes are disjoint and always add up to the syscall's duration. */
#ifndef IODIAG_SYSCALL_EVENTS_H
#define IODIAG_SYSCALL_EVENTS_H

/* Traced syscalls (index into the per-op tables). */
enum iod_sys {
    SYS_READ, SYS_WRITE, SYS_PREAD64, SYS_PWRITE64, SYS_READV, SYS_WRITEV,
    SYS_PREADV, SYS_PWRITEV, SYS_PREADV2, SYS_PWRITEV2, SYS_FSYNC, SYS_FDATASYNC,
    SYS_SYNC_FILE_RANGE, SYS_OPENAT, SYS_IO_URING_ENTER,
    SYS_COUNT
};

/* Operation groups the histograms are kept per (label "op"). */
enum iod_group {
    GRP_READ, GRP_WRITE, GRP_FSYNC, GRP_SYNC_FILE_RANGE, GRP_OPEN, GRP_IO_URING_ENTER,
    GRP_COUNT
};

/* The group a traced syscall's histogram is kept in; one definition for the
 * BPF program and user space. */
static inline unsigned iod_group_of(unsigned sys)
{
    switch (sys) {
    case SYS_READ: case SYS_PREAD64: case SYS_READV: case SYS_PREADV: case SYS_PREADV2:
        return GRP_READ;
    case SYS_WRITE: case SYS_PWRITE64: case SYS_WRITEV: case SYS_PWRITEV: case SYS_PWRITEV2:
        return GRP_WRITE;
    case SYS_FSYNC: case SYS_FDATASYNC: return GRP_FSYNC;
    case SYS_SYNC_FILE_RANGE: return GRP_SYNC_FILE_RANGE;
    case SYS_OPENAT: return GRP_OPEN;
    default: return GRP_IO_URING_ENTER;
    }
}

/* Where an instant of a syscall's time is charged. */
enum iod_class {
    CLS_FILESYSTEM,   /* on CPU inside the syscall, in no measured child: VFS + fs code + copy */
    CLS_CPU,          /* runnable but not running: run-queue delay, preemption */
    CLS_PAGE_CACHE,   /* a page-cache miss: filling it on CPU (from page_cache_sync_ra: folio
                       * allocation, the filesystem's block mapping, bio submission) and
                       * waiting off CPU for its data (folio wait under filemap_*) */
    CLS_DEVICE,       /* off CPU waiting for the thread's own block I/O (queue + device) */
    CLS_BLOCK_QUEUE,  /* off CPU waiting for a block-layer tag (blk_mq_get_tag) */
    CLS_DIRTY,        /* paused in balance_dirty_pages */
    CLS_RECLAIM,      /* inside direct or memcg reclaim (anything within it counts here) */
    CLS_JOURNAL,      /* waiting for jbd2 (commit, transaction lock, log space) */
    CLS_LOCKS,        /* off CPU on an rwsem / mutex (i_rwsem ...) */
    CLS_CGROUP,       /* held by blk-throttle / io cgroup controls */
    CLS_OTHER,        /* off CPU in a wait no classifier names */
    CLS_COUNT,
    CLS_NONE = 0xff   /* state: on CPU */
};

#define IOD_HIST_BUCKETS 32      /* log2 microsecond buckets, as engine/evidence/histogram.hpp */
#define IOD_MAX_RANGES 96        /* kernel functions the wait classifier knows */
#define IOD_STACK_DEPTH 32       /* frames examined per off-CPU wait */
#define IOD_STACK_FIRST_WALK 12  /* frames of the first, shorter walk (see classify_stack) */
#define IOD_RANGE_PAGE_WORDS 256 /* 64-bit words of the classifier's text-page bitmap */
#define IOD_NAME_LEN 64
#define IOD_COMM_LEN 16
#define IOD_MAX_NR 512          /* syscall numbers covered by sys_of_nr */

/* A kernel function's text range and the class a wait under it belongs to.
 * Sorted by start; filled from /proc/kallsyms by user space before load. */
struct iod_krange {
    unsigned long long start;
    unsigned long long end;
    unsigned int cls;
    unsigned int kind;   /* enum iod_journal_kind for CLS_JOURNAL functions, else 0 */
};

/* Whose journal a CLS_JOURNAL function belongs to: the journal layer's wait
 * time is also summed per kind (CNT_*_WAIT_NS), so rules can tell jbd2
 * commits from XFS log forces when both filesystems are busy. */
enum iod_journal_kind { IOD_JOURNAL_NONE = 0, IOD_JOURNAL_JBD2, IOD_JOURNAL_XFS_LOG, IOD_JOURNAL_BTRFS_LOG };

/* Per log2 bucket of total syscall duration: how many attributed syscalls
 * ended there and where their time went. Lets user space pick the slow set
 * (buckets at or above the window's p99) after the fact, without exemplars. */
struct iod_bucket_sums {
    unsigned long long count;
    unsigned long long total_ns;
    unsigned long long ns[CLS_COUNT];
};

/* Per process (hash procs, key = tgid): who it is, recorded in the kernel
 * when the process is first seen (its first traced syscall), not read from
 * /proc later. The cgroup stays the first (a process moving cgroups within
 * the window keeps it); the command and command line are taken again when the
 * process exec's (sched_process_exec): a shell's child that opened its
 * redirection before exec'ing the program is named as the program. */
#define IOD_CMDLINE_LEN 256     /* bytes of argv kept (user space cuts /proc's at the same bound) */
struct iod_proc_info {
    unsigned long long cgid;    /* cgroup v2 id (0 when unknown) */
    unsigned long long memcg;   /* cgroup v1 memory controller kernfs id (0 when none) */
    unsigned long long io_cg;   /* io (v1 blkio) controller kernfs id (0 when none) */
    char comm[IOD_COMM_LEN];
    unsigned int cmdline_len;   /* bytes of cmdline read (0: none: a kernel thread, or not readable) */
    unsigned int pad;
    char cmdline[IOD_CMDLINE_LEN];   /* argv as the process's memory holds it: NUL-separated, cut */
};

/* A thread that exited in the window having dirtied data (hash exits, key =
 * its thread id), as the kernel knew it at its exit: what /proc can no longer
 * say of it. Its data shows in /proc/PID/io of the process that reaped it (a
 * shell that started the writer), so proc_io names the writer from this
 * (collectors/procfs/proc_io.cpp). */
struct iod_exit_info {
    unsigned int tgid;
    unsigned int pad;
    unsigned long long write_bytes;   /* task_io_accounting write_bytes: its own, since it started */
    char comm[IOD_COMM_LEN];
};

/* Per process and CPU: time spent in traced syscalls per log2 bucket of their
 * duration, so "who suffered most in the slow set" can be answered for any
 * threshold. Kept in a per-CPU array indexed by a hash of the tgid (the slot
 * is the process's on that CPU while `tgid` matches; a colliding process goes
 * to a per-CPU hash), so the per-syscall path has no hash map and no atomics. */
struct iod_proc_time {
    unsigned int tgid;          /* 0 = free slot */
    unsigned int pad;
    unsigned long long ops;
    unsigned long long ns_by_bucket[IOD_HIST_BUCKETS];
};

/* The per-CPU array holds its slots in groups, IOD_PROC_SLOTS_PER_GROUP to an
 * element: the kernel allocates a per-CPU array element by element (one
 * per-CPU allocation each), so 4,096 single slots took 6-19 ms to create on a
 * 2-CPU VM, on the syscall collector's start path; 128 groups of 32 take ~1 ms.
 * A group is ~8.5 KiB, under the per-CPU allocator's 32 KiB unit. */
#define IOD_PROC_SLOTS_PER_GROUP 32
struct iod_proc_time_group {
    struct iod_proc_time slot[IOD_PROC_SLOTS_PER_GROUP];
};

/* Global counters (per-CPU array index). */
enum iod_counter {
    CNT_DIRTY_EVENTS, CNT_DIRTY_PAUSE_JIFFIES, CNT_DIRTY_PERIOD_JIFFIES,
    CNT_DIRECT_RECLAIM, CNT_MEMCG_RECLAIM, CNT_RECLAIM_THROTTLED, CNT_RECLAIM_THROTTLED_US,
    CNT_RA_SYNC, CNT_RA_ASYNC, CNT_RA_PAGES,
    CNT_EXT4_FSYNC, CNT_EXT4_FSYNC_NS,
    CNT_EXEMPLAR_DROPS, CNT_INFLIGHT_FULL, CNT_WAITS_CLASSIFIED, CNT_WAITS_UNCLASSIFIED,
    CNT_JBD2_COMMITS, CNT_JBD2_RUNNING, CNT_JBD2_LOCKED, CNT_JBD2_FLUSHING, CNT_JBD2_LOGGING,
    CNT_JBD2_MAX_LOCKED, CNT_JBD2_MAX_FLUSHING, CNT_JBD2_MAX_LOGGING,
    CNT_THROTTLED_BIOS,
    CNT_XFS_FSYNC, CNT_XFS_LOG_FORCES, CNT_BTRFS_FSYNC,
    CNT_JBD2_WAIT_NS, CNT_XFS_LOG_WAIT_NS, CNT_BTRFS_LOG_WAIT_NS,   /* index = CNT_JBD2_WAIT_NS + kind - 1 */
    CNT_PROCS_FULL,            /* a process's time not kept: its slot taken and the overflow hash full */
    CNT_WAIT_STACK_FAILED,     /* an off-CPU wait whose kernel stack could not be read: charged to other */
    CNT_WAIT_STACK_REWALKS,    /* waits whose first IOD_STACK_FIRST_WALK frames named no class: walked again whole */
    CNT_RA_TABLE_FULL,         /* a synchronous readahead not kept per device and process: its table full */
    CNT_SYNC_TABLE_FULL,       /* a write's durability wait not kept per device and process: its table full */
    CNT_COUNT
};
/* CNT_INFLIGHT_FULL: a syscall not timed because its thread's task storage
 * could not be created (out of memory, or a nested program held the lock). */

/* Everything the per-syscall path adds to, in one per-CPU array entry (one
 * map lookup per program run), cumulative since attach: user space takes
 * differences of readings for the per-interval series. */
struct iod_aggregates {
    unsigned long long hist[GRP_COUNT][IOD_HIST_BUCKETS];   /* syscall duration per op */
    unsigned long long read_hit[IOD_HIST_BUCKETS];          /* reads with no miss / I/O wait */
    unsigned long long read_miss[IOD_HIST_BUCKETS];
    struct iod_bucket_sums buckets[IOD_HIST_BUCKETS];       /* attributed syscalls per duration bucket */
    unsigned long long counters[CNT_COUNT];
};

/* Latest dirty-throttle state seen (plain array, last writer wins). */
enum iod_gauge { GAUGE_DIRTY_PAGES, GAUGE_DIRTY_LIMIT, GAUGE_DIRTY_SETPOINT, GAUGE_DIRTY_CGROUP_INO, GAUGE_COUNT };

/* One slow syscall, sent through the ring buffer. */
struct iod_exemplar {
    unsigned int tgid;
    unsigned int tid;
    unsigned int sys;        /* enum iod_sys */
    unsigned int flags;      /* IOD_F_* */
    long long ret;           /* bytes or error */
    long long offset;        /* -1 when not meaningful */
    unsigned long long total_ns;
    unsigned long long cgid;
    unsigned long long memcg;
    unsigned long long io_cg;
    unsigned long long ino;
    unsigned long long ns[CLS_COUNT];
    char comm[IOD_COMM_LEN];
    char name[IOD_NAME_LEN];     /* file's dentry name (or openat's path) */
    char parent[IOD_NAME_LEN];   /* parent dentry name */
};

/* A thread's traced syscall in flight, in the thread's task local storage
 * (map task_state): no hash map on the per-syscall path, and freed with the
 * thread. The storage outlives the syscall; `sys` says whether one is in
 * flight. ns[k] holds a value only for the classes in `charged` (nothing is
 * zeroed at entry: a syscall that never leaves the CPU charges one class,
 * once). User space reads it at the window's end through a pidfd of each
 * thread (collectors/bpf/inflight_syscalls.hpp): the syscalls still waiting. */
struct iod_inflight {
    unsigned long long start_ns;
    unsigned long long mark_ns;               /* last state change */
    unsigned long long ns[CLS_COUNT];
    unsigned long long file;                  /* struct file * (fd syscalls) */
    unsigned long long upath;                 /* openat: user pointer to the path */
    unsigned long long seen_file, seen_inode; /* the last file this thread used, and its inode... */
    long long offset;
    unsigned int sys;                         /* enum iod_sys + 1; 0 = no traced syscall in flight */
    unsigned int flags;
    unsigned short charged;                   /* classes with a value in ns[] */
    unsigned char state;                      /* CLS_NONE on CPU, else the current wait class */
    unsigned char journal_kind;               /* enum iod_journal_kind of a CLS_JOURNAL state */
    unsigned char reclaim_depth;
    unsigned char seen_storage;               /* ...and whether it is a storage file (saves the
                                               * inode and superblock walk when it comes again) */
};

#define IOD_F_DIRTY_THROTTLED 0x1u
#define IOD_F_READAHEAD 0x2u
#define IOD_F_RECLAIM 0x4u
#define IOD_F_PATH_FROM_USER 0x8u  /* name is openat's user-space path */
#define IOD_F_Q_INLINE 0x10u       /* a bio of this syscall reached block_bio_queue in its own context */
#define IOD_F_CQ_WAIT 0x20u        /* io_uring_enter is waiting for completions (io_uring_cqring_wait fired) */
#define IOD_F_MISS_FILL 0x40u      /* on CPU filling the page cache: from page_cache_{sync,async}_ra to a page-cache wait or the return */
#define IOD_F_RA_MISSED 0x80u      /* this syscall had a synchronous readahead (a page-cache miss) already */
#define IOD_F_RA_SEQUENTIAL 0x100u /* ...and its first one continued the file's previous read */
#define IOD_F_IN_FLIGHT 0x200u     /* set by user space: still waiting when the window ended (read from task_state) */
#define IOD_F_BEFORE_WINDOW 0x400u /* set by user space: already waiting when the window started, timed from then;
                                    * `file` holds the descriptor until the exit resolves it
                                    * (collectors/bpf/waits_before_window.hpp) */

/* Synchronous readahead (a read that missed the page cache and waits for
 * it) per filesystem device and process: what tells whether the readahead
 * setting explains a reader's misses. Cumulative; user space reads it at
 * the window's end. */
struct iod_ra_key {
    unsigned int dev;     /* the filesystem's s_dev (kernel encoding: major << 20 | minor) */
    unsigned int tgid;
};
struct iod_ra_misses {
    unsigned long long misses;       /* page_cache_sync_ra calls */
    unsigned long long sequential;   /* ...of a read continuing the file's previous one */
    unsigned long long unwidened;    /* ...sequential, with a window no larger than the pages asked for */
    unsigned long long window_pages; /* sum of the file's readahead window (ra_pages) at each call */
    unsigned long long async;        /* page_cache_async_ra calls: a sequential read reached a marked page */
    unsigned long long async_window_pages;   /* sum of ra_pages at those */
    unsigned long long cache_wait_ns;        /* the process's reads' page-cache wait on the device's files */
    unsigned long long cache_read_ns;        /* those reads' whole duration (the wait, and the CPU work and
                                              * run-queue delay around it) */
};

/* Why a write waited inside the syscall for its data to be durable (the
 * journal, its own block I/O): the kernel makes a write synchronous
 * (IOCB_DSYNC, iocb_flags() in include/linux/fs.h) when the file was opened
 * O_SYNC or O_DSYNC, the filesystem is mounted `sync` (SB_SYNCHRONOUS), or
 * the inode has the sync attribute (`chattr +S`, S_SYNC); in that order, as
 * the first one present makes the others moot. IOD_SYNC_NONE: a write that
 * waited with none of them (direct I/O, RWF_DSYNC, a page under writeback).
 * A create is counted too when it waited for the journal and the kernel made
 * directory changes synchronous (IS_DIRSYNC, include/linux/fs.h): the
 * filesystem mounted `sync` (IOD_SYNC_MOUNT), mounted `dirsync`
 * (SB_DIRSYNC), or the directory with the dirsync or sync attribute
 * (`chattr +D`/`+S`) (IOD_SYNC_DIRSYNC). */
enum iod_sync_reason { IOD_SYNC_FILE, IOD_SYNC_MOUNT, IOD_SYNC_INODE, IOD_SYNC_NONE, IOD_SYNC_DIRSYNC,
                       IOD_SYNC_REASONS };

/* Per filesystem device and process (key struct iod_ra_key): the writes that
 * waited for durability, by reason, and the fsync-family calls on the
 * device's files (what tells a `sync` mount's extra commits from commits the
 * application asks for anyway). Cumulative; read at the window's end. */
struct iod_sync_writes {
    unsigned long long writes[IOD_SYNC_REASONS];
    unsigned long long wait_ns[IOD_SYNC_REASONS];   /* their journal + device + block-queue wait */
    unsigned long long time_ns[IOD_SYNC_REASONS];   /* their whole duration (the wait, and the CPU work
                                                     * and run-queue delay around it) */
    unsigned long long fsyncs;
    unsigned long long fsync_time_ns;   /* their whole duration */
};

#endif
