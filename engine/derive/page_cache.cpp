// Whether the page cache is losing pages in the window.
#include "engine/derive/derive_steps.hpp"

#include <algorithm>

namespace iodiag::derive {

// Whether the page cache is losing pages in the window: reclaim scanned
// (kswapd or direct) or a memory cgroup hit its limit. A working set that
// does not fit is evicted and read again all the time, so it always comes
// with one of these. Without them the cache's misses are first reads of data
// it never held (a build or a scan reading cold files): no cache is too small
// for them. (Refaults alone do not tell: they count re-reads of pages evicted
// at any time before, hours ago included.)
void add_cache_eviction(Evidence& ev) {
    const Metric* kswapd = ev.find_metric("vm.pgscan_kswapd");
    const Metric* direct = ev.find_metric("vm.pgscan_direct");
    if (!kswapd && !direct) return;   // vmstat not read: unknown
    const double scanned = (kswapd ? kswapd->value : 0) + (direct ? direct->value : 0);
    double limit_hits = 0;
    for (const auto& m : ev.metrics)
        if (m.name == "cgroup.memory_limit_hits_delta") limit_hits += std::max(0.0, m.value);
    ev.add_metric("page_cache.evicting", {}, scanned > 0 || limit_hits > 0 ? 1 : 0, "bool",
                  derived("1 when in the window reclaim scanned pages (vm.pgscan_kswapd + vm.pgscan_direct > 0) or a "
                          "memory cgroup hit its limit (cgroup.memory_limit_hits_delta > 0)"));
}

std::vector<MetricSpec> page_cache_specs() {
    using K = MetricSpec::Kind;
    return {
        {"page_cache.evicting", K::Metric, "bool", layer::kPageCache, "",
         "1 when the page cache lost pages in the window (reclaim scanned, a memory cgroup hit its limit)"},
    };
}

}  // namespace iodiag::derive
