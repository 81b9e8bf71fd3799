// The list of collectors iodiag runs, and the specs of what they can emit.
#pragma once

#include <memory>
#include <vector>

#include "collectors/collector.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

std::vector<std::unique_ptr<Collector>> make_collectors();
// Every collector's metric, fact and histogram specs, and the cgroup names
// added after them (collectors/cgroup/cgroup_names.hpp) (the engine adds what
// it derives: app/catalog.hpp).
std::vector<MetricSpec> collector_metric_specs();

}  // namespace iodiag
