// A hand-built catalog for the rule loader / evaluator tests, so they do not
// depend on which collectors are registered.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "engine/evidence/metric_catalog.hpp"
#include "engine/rules/rules.hpp"

namespace iodiag::testing {

inline MetricCatalog rule_test_catalog() {
    MetricCatalog c;
    using K = MetricSpec::Kind;
    c.add({"disk.util_pct", K::Metric, "pct", "device", "device", ""});
    c.add({"disk.aqu_sz", K::Metric, "requests", "device", "device", ""});
    c.add({"disk.read_await_ms", K::Metric, "ms", "device", "device", ""});
    c.add({"device.nominal_read_latency_ms", K::Metric, "ms", "device", "device", ""});
    c.add({"queue.nr_requests", K::Metric, "requests", "block_queue", "device", ""});
    c.add({"queue.scheduler", K::Fact, "", "block_queue", "device", ""});
    c.add({"device.class", K::Fact, "", "device", "device", ""});
    c.add({"block.d2c_us", K::Histogram, "us", "device", "device", ""});
    c.add({"block.d2c_share_pct", K::Metric, "pct", "device", "device", ""});
    c.add({"vm.allocstall", K::Metric, "count", "reclaim", "", ""});
    c.add({"mem.dirty_bytes", K::Metric, "bytes", "dirty", "", ""});
    c.add({"window.duration_s", K::Metric, "s", "", "", ""});
    c.add({"cgroup.io_pressure_some_pct", K::Metric, "pct", "cgroup", "cgroup", ""});
    // Truth-table leaves.
    c.add({"t.x", K::Metric, "count", "device", "", ""});
    c.add({"t.y", K::Metric, "count", "device", "", ""});
    return c;
}

inline std::vector<Diagnostic> with_code(const std::vector<Diagnostic>& diags, const std::string& code) {
    std::vector<Diagnostic> out;
    std::copy_if(diags.begin(), diags.end(), std::back_inserter(out),
                 [&](const Diagnostic& d) { return d.code == code; });
    return out;
}

}  // namespace iodiag::testing
