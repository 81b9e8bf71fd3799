// The list of collectors iodiag runs, and the catalog of what they can emit.
#pragma once

#include <memory>
#include <vector>

#include "collectors/collector.hpp"
#include "engine/metric_catalog.hpp"

namespace iodiag {

std::vector<std::unique_ptr<Collector>> make_collectors();
// Every collector's metric specs plus the metrics the engine derives.
MetricCatalog full_catalog();

}  // namespace iodiag
