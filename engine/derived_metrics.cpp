#include "engine/derived_metrics.hpp"

namespace iodiag {

std::vector<MetricSpec> derived_metric_specs() { return {}; }

void add_derived_metrics(Evidence&) {}

}  // namespace iodiag
