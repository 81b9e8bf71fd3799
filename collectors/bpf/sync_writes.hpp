// Writes that waited for durability, per filesystem device and application,
// with why the kernel made them synchronous (issue 34: whether a `sync`
// mount or the sync attribute explains a writer's waits). The syscall BPF
// collector counts them in the kernel (bpf/syscall.bpf.c sync_writes, enum
// iod_sync_reason); this is the pure step from those counts to evidence.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag::syscall_bpf {

// The label of each enum iod_sync_reason, in its order: the file opened
// O_SYNC/O_DSYNC (the application asked), the filesystem mounted `sync`, the
// inode's sync attribute (chattr +S), none of them (direct I/O, RWF_DSYNC),
// and a create the kernel made synchronous as a directory change (the
// filesystem mounted `dirsync`, or the directory's dirsync or sync attribute;
// a create on a `sync` mount is counted under "mount").
inline constexpr std::array<const char*, 5> kSyncReasons = {"o_sync", "mount", "attribute", "other", "dirsync"};

struct SyncWrites {
    std::string device;   // the filesystem's own device (a partition, not its disk)
    std::string app;      // the process's application ("" unknown: "pid N" is shown)
    uint32_t pid = 0;
    std::array<uint64_t, kSyncReasons.size()> writes{};    // write-family syscalls (and creates) that waited, per reason
    std::array<uint64_t, kSyncReasons.size()> wait_ns{};   // their journal + device + block-queue wait
    std::array<uint64_t, kSyncReasons.size()> time_ns{};   // their whole duration
    uint64_t fsyncs = 0;                                     // fsync/fdatasync calls on the device's files
    uint64_t fsync_time_ns = 0;                              // their whole duration

    uint64_t total_wait_ns() const;
    void add_counts(const SyncWrites& o);
};

// The (device, application) pairs kept with their own values, longest wait
// first; the others are summed per device under "(other applications)".
inline constexpr size_t kSyncWritesApplicationsKept = 32;

std::vector<MetricSpec> sync_writes_specs();
// fs.sync_writes, fs.sync_write_wait_us and fs.sync_write_time_us{device,
// app, reason} (reasons with writes only) and fs.fsyncs{device, app}, summed
// over the processes of each application.
void emit_sync_writes(const std::vector<SyncWrites>& writes, Evidence& ev);

}  // namespace iodiag::syscall_bpf
