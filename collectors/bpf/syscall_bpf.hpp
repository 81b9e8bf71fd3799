// Collector "syscall_bpf": above the block layer. Times file syscalls per
// thread and splits each one into what it waited for (dirty throttling,
// reclaim, page-cache misses, journal, locks, its own block I/O, run-queue
// delay, filesystem/VFS on CPU, other), aggregated in the kernel
// (bpf/syscall.bpf.c); only slow syscalls come to user space as exemplars.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "collectors/collector.hpp"
#include "collectors/bpf/exited_writers.hpp"
#include "collectors/bpf/tail_call_chain.hpp"

namespace iodiag {

namespace syscall_bpf {
struct Snapshot;
}

struct SyscallBpfOptions {
    // Slow set for attr.slow.*: syscalls at or above this (us); unset = the window's p99.
    // CollectOptions::slow_threshold_us, when > 0, wins over it.
    std::optional<double> slow_threshold_us;
    // Syscalls at least this long are sent to user space as exemplars.
    double exemplar_min_us = 1000;
    // Exemplars kept in the evidence (the slowest).
    size_t max_exemplars = 64;
    // Frames of the first, short stack walk per off-CPU wait (bpf/syscall.bpf.c,
    // classify_stack); 0 = IOD_STACK_FIRST_WALK. Tests set 1 to send every
    // wait through the second, whole walk.
    unsigned first_walk_frames = 0;
    // Tests: called in finish() with what was read from the kernel, before
    // it becomes evidence (the processes' command lines are not evidence).
    std::function<void(const syscall_bpf::Snapshot&)> on_snapshot;
};

class SyscallBpfCollector : public Collector {
public:
    bool slow_to_start() const override { return true; }
    unsigned start_cpu_weight() const override { return 3; }
    explicit SyscallBpfCollector(SyscallBpfOptions opts = {});
    ~SyscallBpfCollector() override;
    std::string name() const override { return "syscall_bpf"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    // Reads the cumulative in-kernel aggregates (nothing is reset): the
    // series are differences of these readings (see syscall_bpf_snapshot.hpp).
    void sample(size_t interval) override;
    void finish(Evidence& ev) override;
    // Offers this collector's sys_exit program to the io_uring collector's
    // (collectors/bpf/tail_call_chain.hpp); set before start().
    void share_sys_exit(std::shared_ptr<TailCallChain> chain) { chain_ = std::move(chain); }
    // Its block_bio_queue program goes into the block collector's chain when
    // that one offers it, else it is attached in all_started(); set before start().
    void share_bio_queue(std::shared_ptr<TailCallChain> chain) { bio_queue_chain_ = std::move(chain); }
    // Offers its record of the threads that exit in the window having
    // dirtied data (sched_process_exit) to proc_io once attached; set before start().
    void share_exited_writers(std::shared_ptr<ExitedWriters> exited) { exited_ = std::move(exited); }
    void all_started() override;

    struct Impl;

private:
    // start() with one attach mode for the syscall programs: their own
    // per-syscall tracepoints when raw_because is empty, else the raw ones
    // (raw_because says why, in the status). A per-syscall attach the kernel
    // refuses is reported in *events_refused (start() then tries raw).
    CollectorStatus start_attached(const CollectOptions& opts, const std::string& raw_because,
                                   std::string* events_refused = nullptr);

    SyscallBpfOptions opts_;
    std::string victim_;   // CollectOptions::victim, for the snapshot
    std::shared_ptr<TailCallChain> chain_;
    std::shared_ptr<TailCallChain> bio_queue_chain_;
    std::shared_ptr<ExitedWriters> exited_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace iodiag
