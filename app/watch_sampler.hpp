// The cheap sources `iodiag watch` keeps on all the time: /proc/diskstats,
// /proc/pressure/{io,memory} and /proc/vmstat, read once per interval and
// turned into a WatchSample with the collectors' own parsers and delta
// functions (the same figures a diagnosis reports, per second).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/watch_triggers.hpp"
#include "collectors/procfs/diskstats.hpp"
#include "collectors/procfs/psi.hpp"
#include "collectors/procfs/vmstat.hpp"

namespace iodiag::cli {

class WatchSampler {
public:
    // root: "/" or a fixture tree; devices: --device filter (empty = every whole disk).
    WatchSampler(std::string root, std::vector<std::string> devices);

    // Takes a snapshot of every source. The first call (and the first after
    // restart()) only sets the baseline and returns nullopt; later calls
    // return the deltas since the previous one. `elapsed_s` is the time
    // between the two snapshots (measured by the caller, monotonic).
    std::optional<WatchSample> take(double now_unix, double elapsed_s);
    // Forget the baseline (after a capture, whose collectors ran in between).
    void restart() { have_baseline_ = false; }

    // What could not be read, once per source (empty when everything was).
    const std::vector<std::string>& problems() const { return problems_; }

private:
    void note(const std::string& problem);
    void refresh_disks();

    std::string root_;
    std::vector<std::string> filter_;
    std::vector<std::string> disks_;   // whole disks (entries of /sys/block)
    int samples_since_refresh_ = 0;
    bool have_baseline_ = false;
    std::map<std::string, DiskStatsRecord> disk_before_;
    std::optional<PsiTotals> io_before_, memory_before_;
    std::optional<VmstatCounters> vm_before_;
    std::vector<std::string> problems_;
};

}  // namespace iodiag::cli
