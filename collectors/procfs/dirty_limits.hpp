// Dirty page limits computed the way the kernel computes them
// (mm/page-writeback.c), with the vm.dirty_* sysctls they come from, so that
// rules can tell how close the dirty pages are to throttling writers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"

namespace iodiag {

// totalreserve_pages as calculate_totalreserve_pages() (mm/page_alloc.c)
// computes it from /proc/zoneinfo: per zone, the largest lowmem_reserve
// ("protection:") entry for its own and higher zones plus its high watermark,
// capped at its managed pages; summed over all zones of all nodes. Throws
// SourceError naming `path` for a zone with missing or malformed fields.
std::uint64_t parse_totalreserve_pages(const std::string& zoneinfo, const std::string& path);

struct DirtyInputs {
    std::uint64_t page_size = 4096;
    std::uint64_t free_pages = 0;       // NR_FREE_PAGES
    std::uint64_t active_file = 0;      // NR_ACTIVE_FILE (pages)
    std::uint64_t inactive_file = 0;    // NR_INACTIVE_FILE (pages)
    std::uint64_t totalreserve_pages = 0;
    std::uint64_t dirty_ratio = 0, dirty_background_ratio = 0;  // vm.* sysctls, percent
    std::uint64_t dirty_bytes = 0, dirty_background_bytes = 0;  // vm.* sysctls, 0 = use the ratio
};

struct DirtyLimitsPages {
    std::uint64_t dirtyable = 0;   // global_dirtyable_memory()
    std::uint64_t thresh = 0;      // dirty limit: writers are throttled towards it
    std::uint64_t bg_thresh = 0;   // background writeback starts above it
    std::uint64_t freerun = 0;     // dirty_freerun_ceiling(): no pause at all below it
};

// The kernel's integer arithmetic (global_dirtyable_memory, domain_dirty_limits,
// dirty_freerun_ceiling) for a non-realtime task in the global domain.
DirtyLimitsPages compute_dirty_limits(const DirtyInputs& in);

class DirtyLimitsCollector : public Collector {
public:
    std::string name() const override { return "dirty_limits"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;

    // Reads everything below `root` and appends the metrics. Throws SourceError
    // naming the file when a source needed for a value cannot be read.
    static void collect(const std::string& root, Evidence& ev);

private:
    std::string root_ = "/";
};

}  // namespace iodiag
