// Metrics the engine derives from collected evidence before the rules run:
// reference values (nominal device latency by class, seed 000 §3.1, labelled
// "reference" so nobody mistakes them for measurements) and combinations of
// measured values. Deterministic, so live runs and replays derive the same.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

std::vector<MetricSpec> derived_metric_specs();
// A device reference already in the evidence (the site configuration's, kind
// "config") is kept: it wins over the class table and the backing disk.
void add_derived_metrics(Evidence& ev);
// Device classes the reference table has a nominal latency for.
std::vector<std::string> reference_classes();
// The reference latencies alone (part of add_derived_metrics).
void add_nominal_latencies(Evidence& ev);
// The Q2C total of the suffering application's (attr.app.name) own requests
// per device it submits to, when the block collector measured them
// (block.submitter_q2c_total_us) and they add up to more than nothing; else
// empty. Devices in `skip` (a stack's lower devices) are left out.
std::map<std::string, double> app_own_q2c(const Evidence& ev, const std::set<std::string>& skip = {});

}  // namespace iodiag
