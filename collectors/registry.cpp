#include "collectors/registry.hpp"

#include "engine/derived_metrics.hpp"

namespace iodiag {

std::vector<std::unique_ptr<Collector>> make_collectors() {
    std::vector<std::unique_ptr<Collector>> c;
    // One line per collector; keep the order bottom-up (device first).
    return c;
}

MetricCatalog full_catalog() {
    MetricCatalog cat;
    for (const auto& c : make_collectors()) cat.add_all(c->metric_specs());
    cat.add_all(derived_metric_specs());
    return cat;
}

}  // namespace iodiag
