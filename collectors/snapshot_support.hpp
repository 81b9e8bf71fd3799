// Small helpers shared by the procfs/sysfs snapshot collectors (diskstats,
// vmstat, meminfo, dirty_limits, psi, block_queue_config).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

// Measures the observation window between the two snapshots ourselves, with a
// monotonic clock: the requested duration is not what actually elapsed (the
// process may be delayed, the window cut short by a signal).
class MonotonicStopwatch {
public:
    void start() { start_ = std::chrono::steady_clock::now(); }
    double elapsed_s() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

private:
    std::chrono::steady_clock::time_point start_{};
};

// Kernel name of a device given as "vda" or "/dev/vda".
inline std::string kernel_device_name(const std::string& dev) {
    return dev.rfind("/dev/", 0) == 0 ? dev.substr(5) : dev;
}

// Whether the --device filter (empty = all) selects the kernel device `name`.
inline bool device_selected(const std::vector<std::string>& filter, const std::string& name) {
    return filter.empty() || std::any_of(filter.begin(), filter.end(),
                                         [&](const std::string& d) { return kernel_device_name(d) == name; });
}

// finish() has no return value, yet a source can vanish or turn unreadable
// between start() and finish(). Then the collector's status in the evidence
// becomes unavailable with the reason, so that nobody reads "no metrics" as
// "healthy". Updates the status recorded from start(), or adds one.
inline void mark_unavailable_at_finish(Evidence& ev, const std::string& collector,
                                       const std::vector<std::string>& layers,
                                       const std::string& reason) {
    for (auto& st : ev.collectors) {
        if (st.name == collector) {
            st.available = false;
            st.reason = reason;
            return;
        }
    }
    ev.collectors.push_back({collector, false, reason, layers});
}

}  // namespace iodiag
