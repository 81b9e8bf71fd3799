// Who dirtied the data: /proc/PID/io write_bytes of every process at the
// start and end of the window. The kernel counts write_bytes when a process
// dirties page-cache pages (or sends direct I/O), so the difference says whose
// data writeback and journal commits carried in the window — often not the
// process that waited for them (an fsync waits for a commit that must write
// a big writer's ordered data first).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collectors/collector.hpp"

namespace iodiag {

struct ProcIo {
    std::string comm;
    std::string app;   // its application (applications.hpp), "" when not asked: its comm stands for it
    uint64_t write_bytes = 0;
};

// pid -> comm and write_bytes, read from ROOT/proc/[pid]/{io,comm}. Processes
// that vanish while being read, and kernel threads, are skipped.
std::map<int, ProcIo> read_proc_io(const std::string& root);

// Appends io.* metrics: the top writers of the window (write_bytes grown
// between `before` and `after`; a process new in `after` counts from 0).
void add_proc_io_metrics(const std::map<int, ProcIo>& before, const std::map<int, ProcIo>& after, double window_s,
                         Evidence& ev);

class ProcIoCollector : public Collector {
public:
    std::string name() const override { return "proc_io"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;
    bool finish_only_appends() const override { return true; }

private:
    std::string root_;
    double duration_s_ = 0;
    std::chrono::steady_clock::time_point start_;
    std::map<int, ProcIo> before_;
};

}  // namespace iodiag
