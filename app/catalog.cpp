#include "app/catalog.hpp"

#include "collectors/registry.hpp"
#include "engine/derive/derived_metrics.hpp"
#include "engine/triage/history_metrics.hpp"

namespace iodiag {

MetricCatalog full_catalog() {
    MetricCatalog cat;
    cat.add_all(collector_metric_specs());
    cat.add_all(derived_metric_specs());
    cat.add_all(history_metric_specs());
    return cat;
}

}  // namespace iodiag
