// What the syscall BPF collector read from its maps and ring buffer at the end
// of the window, in plain C++ (no BPF types), and the pure step that turns it
// into Evidence. Tests build snapshots by hand.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/bpf/readahead_misses.hpp"
#include "collectors/bpf/sync_writes.hpp"
#include "collectors/bpf/syscall_bpf_attribution.hpp"
#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag::syscall_bpf {

struct ProcessTime {
    uint32_t pid = 0;
    std::string comm;
    // Its command line as of its I/O (argv joined by spaces, cut at
    // kCmdlineMaxBytes, collectors/procfs/proc_cmdline.hpp), "" when
    // unknown: what tells two programs with one comm apart (two `python3`).
    // Recorded in the kernel at its first traced syscall and again at each
    // exec, as its comm is; /proc/PID/cmdline at the window's end where the
    // kernel could not read it; "" for a kernel thread.
    std::string cmdline;
    // The application it is part of (collectors/procfs/applications.hpp);
    // "" in snapshots built without one: its comm stands for it.
    std::string app;
    std::string cgroup;
    // /proc/PID/cgroup as the window ends, read only to match --victim: the
    // cgroup above is the one it was first seen in, and a service's process
    // may have been moved into its unit after it started.
    std::string cgroup_now;
    uint64_t ops = 0;
    std::vector<uint64_t> ns_by_bucket;   // summed syscall time per log2 us bucket
};

// One process's exemplars (syscalls >= exemplar_min_us) summed per log2 us
// duration bucket: time per class (index = enum iod_class), total time, count.
struct ProcParts {
    std::vector<std::vector<uint64_t>> class_ns;   // [bucket][class]
    std::vector<uint64_t> total_ns, count;         // [bucket]
    // of them, at the window's edge: still waiting when it ended (IOD_F_IN_FLIGHT) or
    // already waiting when it started (IOD_F_BEFORE_WINDOW); their time is a lower bound
    uint64_t in_flight = 0;
};

struct SlowOp {
    std::string comm;
    std::string app;                // as ProcessTime::app
    // Its process's command line (as ProcessTime's), "" when unknown or when
    // the process ran another program (exec) by the window's end.
    std::string cmdline;
    uint32_t pid = 0;
    uint32_t tid = 0;
    std::string cgroup;
    std::string file;
    int sys = 0;                    // enum iod_sys
    int64_t ret = 0;
    int64_t offset = -1;
    uint64_t total_ns = 0;
    std::vector<uint64_t> class_ns; // index = enum iod_class
    uint32_t flags = 0;
};

// Whether a filesystem's fsync/log tracepoints were traced: its counters are
// emitted when attached (counted) or not in the kernel (0, nothing to count).
enum class FsTrace { Attached, NotInKernel, Failed };

// The cumulative aggregates at the end of one interval (sample()); the series
// are differences of consecutive readings.
struct Reading {
    std::vector<std::vector<uint64_t>> hist;   // [group][bucket] counts
    std::vector<BucketSums> buckets;           // attributed syscalls per duration bucket
    std::vector<uint64_t> counters;            // index = enum iod_counter
};

struct Snapshot {
    std::vector<std::vector<uint64_t>> hist;   // [group][bucket] counts
    std::vector<uint64_t> read_hit, read_miss; // [bucket]
    std::vector<BucketSums> buckets;           // attributed syscalls per duration bucket
    std::vector<ProcessTime> procs;
    std::vector<uint64_t> counters;            // index = enum iod_counter
    std::vector<uint64_t> gauges;              // index = enum iod_gauge
    std::vector<SlowOp> slowest;               // the slowest exemplars kept (bounded)
    // summed exemplar time per file label and duration bucket (for attr.slow.top_file)
    std::map<std::string, std::vector<uint64_t>> file_ns_by_bucket;
    // Every exemplar received (not only the slowest kept), summed per process
    // (tgid): what each process's own slow syscalls waited for.
    std::map<uint32_t, ProcParts> proc_parts;
    // Synchronous readahead per filesystem device and process (readahead_misses.hpp).
    std::vector<ReadaheadMisses> readahead;
    // Writes that waited for durability per filesystem device and process (sync_writes.hpp).
    std::vector<SyncWrites> sync_writes;
    uint32_t page_bytes = 4096;
    uint64_t exemplars_received = 0;
    // Traced syscalls still waiting when the window ended, counted with their
    // time so far (collectors/bpf/inflight_syscalls.hpp): in `buckets`,
    // `procs`, `proc_parts` and (flagged IOD_F_IN_FLIGHT) `slowest`.
    uint64_t in_flight_at_end = 0;
    // Traced syscalls already waiting when the programs attached, timed from
    // then (collectors/bpf/waits_before_window.hpp; flagged IOD_F_BEFORE_WINDOW).
    uint64_t waiting_at_start = 0;
    // Tracepoint runs the kernel skipped (collectors/bpf/bpf_program_stats.hpp);
    // absent where the kernel does not report them.
    std::optional<uint64_t> program_runs_skipped;
    double exemplar_min_us = 0;
    std::string victim;                        // CollectOptions::victim ("" = find it)
    std::string attach;                        // where the syscalls were timed (the attach mode that ran)
    int hz = 0;                                // kernel HZ for jiffies (0 = unknown)
    std::string hz_source;
    FsTrace xfs = FsTrace::Failed;             // xfs_file_fsync + xfs_log_force
    FsTrace btrfs = FsTrace::Failed;           // btrfs_sync_file
    bool journal_waits_split = false;          // CNT_*_WAIT_NS measured (off-CPU waits classified)
    std::optional<double> user_threshold_us;   // slow threshold; p99 when absent
    double slow_percentile = 99;
    // One cumulative reading per interval (empty: no series). The last one is
    // the window's own figures (hist, buckets, counters above).
    std::vector<Reading> readings;
};

// Every metric, fact and histogram emit() may add.
std::vector<MetricSpec> metric_specs();
// Appends histograms, attribution metrics, facts, exemplars, lost events and,
// from the readings, the per-interval series: syscall.latency_us {op},
// layer.time_us {layer} (all traced syscalls), layer.slow_time_us {layer}
// (the slow set, as the window's attr.slow defines it), and the event counts
// dirty.throttle_events, reclaim.direct_events, reclaim.memcg_events.
void emit(const Snapshot& s, Evidence& ev);

}  // namespace iodiag::syscall_bpf
