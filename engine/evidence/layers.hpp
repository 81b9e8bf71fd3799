// The layers of the I/O stack, bottom-up, as the decision graph walks them
// (seed 000 §8.7). Rules, collectors and the attribution all use these names.
#pragma once

#include <string>
#include <vector>

namespace iodiag::layer {

inline const std::string kDevice = "device";            // driver + device (D2C), SMART
inline const std::string kBlockQueue = "block_queue";   // tag wait, scheduler, merges (Q2G, G2I, I2D)
inline const std::string kFilesystem = "filesystem";    // VFS + fs code, inode locks seen as fs time
inline const std::string kJournal = "journal";          // jbd2 / xfs log on fsync
inline const std::string kPageCache = "page_cache";     // cache misses, readahead, major faults
inline const std::string kDirty = "dirty";              // balance_dirty_pages throttling
inline const std::string kReclaim = "reclaim";          // direct and memcg reclaim
inline const std::string kCgroup = "cgroup";            // blk-throttle, io.latency, memcg limits
inline const std::string kLocks = "locks";              // rwsem / mutex waits off-CPU
inline const std::string kSyscall = "syscall";          // whole syscall as the application sees it
inline const std::string kCpu = "cpu";                  // run-queue delay, application / CPU
// A Ceph OSD's own path, above the device it sits on (seed 004): BlueStore's
// commit (kv sync of RocksDB), the OSD's op path (messenger dispatch, op
// queue, PG lock, op execution) and waiting for the replicas (peers, network).
inline const std::string kBluestore = "bluestore";
inline const std::string kOsdOp = "osd_op";
inline const std::string kReplication = "replication";

// Bottom-up order.
inline const std::vector<std::string>& all() {
    static const std::vector<std::string> v{kDevice, kBlockQueue, kFilesystem, kJournal,
                                            kPageCache, kDirty, kReclaim, kCgroup,
                                            kLocks, kSyscall, kCpu};
    return v;
}

// The Ceph layers, bottom-up. They are in play only where a Ceph collector
// reported (a host without Ceph gets no rows, no trail steps and no coverage
// penalty for them).
inline const std::vector<std::string>& ceph() {
    static const std::vector<std::string> v{kBluestore, kOsdOp, kReplication};
    return v;
}

// Every layer a rule may name: the I/O stack's, then Ceph's.
inline const std::vector<std::string>& known() {
    static const std::vector<std::string> v = [] {
        std::vector<std::string> all_layers = all();
        all_layers.insert(all_layers.end(), ceph().begin(), ceph().end());
        return all_layers;
    }();
    return v;
}

}  // namespace iodiag::layer
