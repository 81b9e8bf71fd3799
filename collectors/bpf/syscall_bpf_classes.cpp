#include "collectors/bpf/syscall_bpf_classes.hpp"

#include "bpf/syscall_events.h"
#include "engine/evidence/layers.hpp"

namespace iodiag::syscall_bpf {

const std::vector<std::string>& class_layers() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> l(CLS_COUNT);
        l[CLS_FILESYSTEM] = layer::kFilesystem;
        l[CLS_CPU] = layer::kCpu;
        l[CLS_PAGE_CACHE] = layer::kPageCache;
        l[CLS_DEVICE] = layer::kDevice;
        l[CLS_BLOCK_QUEUE] = layer::kBlockQueue;
        l[CLS_DIRTY] = layer::kDirty;
        l[CLS_RECLAIM] = layer::kReclaim;
        l[CLS_JOURNAL] = layer::kJournal;
        l[CLS_LOCKS] = layer::kLocks;
        l[CLS_CGROUP] = layer::kCgroup;
        l[CLS_OTHER] = "other";
        return l;
    }();
    return v;
}

const std::vector<std::string>& syscall_names() {
    static const std::vector<std::string> v = {
        "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
        "preadv2", "pwritev2", "fsync", "fdatasync", "sync_file_range", "openat", "io_uring_enter"};
    static_assert(SYS_COUNT == 15);
    return v;
}

const std::vector<std::string>& group_names() {
    static const std::vector<std::string> v = {"read", "write", "fsync", "sync_file_range", "open",
                                               "io_uring_enter"};
    static_assert(GRP_COUNT == 6);
    return v;
}

int group_of_syscall(int sys) { return static_cast<int>(iod_group_of(static_cast<unsigned>(sys))); }

const std::map<std::string, int>& wait_classifier_functions() {
    static const std::map<std::string, int> m = {
        // page-cache miss: waiting for a folio being read, under the read/fault paths
        {"filemap_read", CLS_PAGE_CACHE}, {"filemap_get_pages", CLS_PAGE_CACHE},
        {"filemap_update_page", CLS_PAGE_CACHE}, {"filemap_fault", CLS_PAGE_CACHE},
        {"filemap_splice_read", CLS_PAGE_CACHE}, {"do_read_cache_folio", CLS_PAGE_CACHE},
        // the thread's own block I/O in flight (queue + device; the block collector splits it)
        {"submit_bio_wait", CLS_DEVICE}, {"folio_wait_writeback", CLS_DEVICE},
        {"folio_wait_stable", CLS_DEVICE}, {"__filemap_fdatawait_range", CLS_DEVICE},
        {"__iomap_dio_rw", CLS_DEVICE}, {"__blkdev_direct_IO_simple", CLS_DEVICE},
        {"__blkdev_direct_IO_async", CLS_DEVICE}, {"blkdev_direct_IO", CLS_DEVICE},
        {"__wait_on_buffer", CLS_DEVICE}, {"blk_wait_io", CLS_DEVICE},
        // no free tag: the queue is full
        {"blk_mq_get_tag", CLS_BLOCK_QUEUE},
        // dirty throttling
        {"balance_dirty_pages", CLS_DIRTY}, {"balance_dirty_pages_ratelimited_flags", CLS_DIRTY},
        // reclaim (the reclaim tracepoints cover most of it; these catch throttling around it)
        {"throttle_direct_reclaim", CLS_RECLAIM}, {"reclaim_throttle", CLS_RECLAIM},
        {"__alloc_pages_direct_reclaim", CLS_RECLAIM}, {"try_to_free_pages", CLS_RECLAIM},
        {"try_to_free_mem_cgroup_pages", CLS_RECLAIM}, {"mem_cgroup_handle_over_high", CLS_RECLAIM},
        {"shrink_folio_list", CLS_RECLAIM},
        // journal
        {"jbd2_log_wait_commit", CLS_JOURNAL}, {"wait_transaction_locked", CLS_JOURNAL},
        {"wait_transaction_switching", CLS_JOURNAL}, {"add_transaction_credits", CLS_JOURNAL},
        {"start_this_handle", CLS_JOURNAL}, {"__jbd2_log_wait_for_space", CLS_JOURNAL},
        {"jbd2_journal_wait_updates", CLS_JOURNAL}, {"do_get_write_access", CLS_JOURNAL},
        {"jbd2_journal_lock_updates", CLS_JOURNAL}, {"jbd2_complete_transaction", CLS_JOURNAL},
        // XFS log force (fsync): push the CIL into iclogs, wait for the iclog writes;
        // xlog_wait is inlined, so its sleep shows in xlog_force_lsn/xlog_cil_force_seq
        {"xfs_log_force", CLS_JOURNAL}, {"xfs_log_force_seq", CLS_JOURNAL},
        {"xlog_cil_force_seq", CLS_JOURNAL}, {"xlog_cil_push_now", CLS_JOURNAL},
        {"xlog_force_lsn", CLS_JOURNAL}, {"xlog_wait_on_iclog", CLS_JOURNAL},
        // XFS log space: a transaction waits for log grant space (tail pushing)
        {"xlog_grant_head_wait", CLS_JOURNAL}, {"xlog_state_get_iclog_space", CLS_JOURNAL},
        // btrfs has no journal but a log tree: fsync commits it (waiting for other
        // writers to join, for another task's log commit, for the log blocks and the
        // superblocks to be written) or, when it cannot, commits the transaction
        {"btrfs_sync_log", CLS_JOURNAL}, {"wait_log_commit", CLS_JOURNAL},
        {"btrfs_wait_tree_log_extents", CLS_JOURNAL}, {"write_all_supers", CLS_JOURNAL},
        {"btrfs_commit_transaction", CLS_JOURNAL}, {"wait_current_trans", CLS_JOURNAL},
        {"wait_for_commit", CLS_JOURNAL}, {"btrfs_write_and_wait_transaction", CLS_JOURNAL},
        // sleeping locks (i_rwsem is an rwsem)
        {"rwsem_down_write_slowpath", CLS_LOCKS}, {"rwsem_down_read_slowpath", CLS_LOCKS},
        {"__mutex_lock", CLS_LOCKS}, {"__mutex_lock_slowpath", CLS_LOCKS},
        {"percpu_rwsem_wait", CLS_LOCKS}, {"__percpu_down_read", CLS_LOCKS},
        // block-layer QoS. All of them sleep in rq_qos_wait, so the table names
        // the policy that called it instead: writeback throttling (wbt) limits
        // the whole device's queue, not a cgroup, so it is block-queue time;
        // iocost and io.latency are cgroup controls (blkcg_iolatency_throttle
        // is only there when CONFIG_BLK_CGROUP_IOLATENCY is built in).
        {"wbt_wait", CLS_BLOCK_QUEUE},
        {"ioc_rqos_throttle", CLS_CGROUP}, {"blkcg_iolatency_throttle", CLS_CGROUP},
        {"blkcg_maybe_throttle_current", CLS_CGROUP},
    };
    return m;
}

unsigned journal_kind_of_function(const std::string& name) {
    static const std::map<std::string, unsigned> kinds = [] {
        std::map<std::string, unsigned> m;
        for (const char* f : {"xfs_log_force", "xfs_log_force_seq", "xlog_cil_force_seq", "xlog_cil_push_now",
                              "xlog_force_lsn", "xlog_wait_on_iclog", "xlog_grant_head_wait",
                              "xlog_state_get_iclog_space"})
            m[f] = IOD_JOURNAL_XFS_LOG;
        for (const char* f : {"btrfs_sync_log", "wait_log_commit", "btrfs_wait_tree_log_extents", "write_all_supers",
                              "btrfs_commit_transaction", "wait_current_trans", "wait_for_commit",
                              "btrfs_write_and_wait_transaction"})
            m[f] = IOD_JOURNAL_BTRFS_LOG;
        return m;
    }();
    const auto& table = wait_classifier_functions();
    const auto it = table.find(name);
    if (it == table.end() || it->second != CLS_JOURNAL) return IOD_JOURNAL_NONE;
    const auto k = kinds.find(name);
    return k != kinds.end() ? k->second : unsigned{IOD_JOURNAL_JBD2};   // the other journal functions are jbd2's
}

}  // namespace iodiag::syscall_bpf
