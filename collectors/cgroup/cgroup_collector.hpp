// cgroup collector (v1 and v2): for every group with I/O or memory-control
// activity in the window, its blk-throttle limits and how close its measured
// rate came to them, its io.latency / io.weight setting, its pressure (v2),
// and its memory limit with the reclaim it caused (limit hits, pgscan/pgsteal
// on v2, refaults, major faults).
//
// One logical view per group path: on a hybrid host the I/O numbers come from
// whichever hierarchy holds the I/O controller (v1 blkio or v2 io), memory from
// whichever holds memory, pressure from v2. Labels: {cgroup: "/fio-test"}
// (path relative to the hierarchy root) and, per device, {cgroup, device}.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_hierarchy.hpp"
#include "collectors/cgroup/cgroup_model.hpp"
#include "collectors/collector.hpp"

namespace iodiag {

class CgroupCollector : public Collector {
public:
    // Seconds on a monotonic clock; tests inject a fake one to fix the window.
    using Clock = std::function<double()>;
    CgroupCollector();
    explicit CgroupCollector(Clock clock) : clock_(std::move(clock)) {}

    std::string name() const override { return "cgroup"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;

    // Reads every selected group now (public for tests).
    std::map<std::string, cgroup::Snapshot> snapshot_all(std::vector<std::string>* problems) const;

private:
    struct Sources {
        std::string io;       // "v1 blkio", "v2 io" or ""
        std::string memory;   // "v1 memory", "v2 memory" or ""
    };
    cgroup::Snapshot read_group(const std::string& path) const;
    void emit_group(const std::string& path, const cgroup::Snapshot& before,
                    const cgroup::Snapshot& after, double window_s, Evidence& ev) const;
    std::string dir_in(const std::string& mount, const std::string& path) const;

    std::string root_ = "/";
    std::string filter_;   // CollectOptions::cgroup
    cgroup::Mounts mounts_;
    bool v2_io_ = false, v2_memory_ = false;
    Sources sources_;
    std::map<std::string, cgroup::Snapshot> before_;
    Clock clock_;
    double t0_ = 0;
};

}  // namespace iodiag
