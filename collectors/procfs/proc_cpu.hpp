// Who ran on the CPUs in the window: every process's on-CPU time (utime +
// stime of /proc/PID/stat, all its threads, in clock ticks) at the start and
// the end of the window, and the CPUs it may run on where it is restricted
// (Cpus_allowed_list of /proc/PID/status). When an application waits on the
// run queue, these say whose work held the CPUs (engine/derive/contention_cpu.cpp).
//
// What it misses, said in the evidence: processes that exited inside the
// window (their time is in /proc/stat's busy time, not in any process's:
// cpu.unattributed_us), and the per-CPU placement of a process that may run
// on several CPUs (only its allowed set is known).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collectors/collector.hpp"

namespace iodiag {

struct ProcCpu {
    std::string comm;
    uint64_t ticks = 0;         // utime + stime (USER_HZ ticks)
    uint64_t start_ticks = 0;   // starttime (ticks since boot): a pid reused is another process
    bool kthread = false;       // PF_KTHREAD
};

struct CpuSnapshot {
    std::map<int, ProcCpu> procs;
    uint64_t busy_ticks = 0;    // /proc/stat "cpu": all but idle and iowait
    uint64_t uptime_ticks = 0;  // /proc/uptime, in the same ticks
};

// Reads ROOT/proc/[pid]/stat of every process and ROOT/proc/stat, ROOT/proc/uptime.
CpuSnapshot read_cpu_snapshot(const std::string& root, long ticks_per_s);

// "0-2,5" -> "0,1,2,5" (an empty or malformed list gives "").
std::string expand_cpu_list(const std::string& list);

// The window's on-CPU time by process (top ones), totals, and the allowed
// CPUs of restricted processes. `online` is the online CPUs' list ("0-1");
// `self` (iodiag's own pid) is left out. Reads each top process's cgroup and
// allowed CPUs under `root` at the end of the window.
void add_proc_cpu_metrics(const CpuSnapshot& before, const CpuSnapshot& after, long ticks_per_s,
                          const std::string& online, int self, const std::string& root, Evidence& ev);

class ProcCpuCollector : public Collector {
public:
    std::string name() const override { return "proc_cpu"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;
    bool finish_only_appends() const override { return true; }

    static constexpr size_t kTopProcesses = 40;

private:
    std::string root_;
    long ticks_per_s_ = 100;
    CpuSnapshot before_;
};

}  // namespace iodiag
