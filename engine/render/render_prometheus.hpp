// A verdict as a node_exporter textfile-collector file (Prometheus text
// exposition format 0.0.4): every family with HELP and TYPE, base units
// (seconds, ratios 0..1), no timestamps (node_exporter stamps the scrape), and
// names iodiag_*.
//
// Label cardinality is bounded by design: the only labels are the run mode,
// rule id, layer, severity, device (whole block devices), collector names, the
// share basis and the verdict fingerprint (one value per file, it changes only
// when the set of causes changes). Never pids, file names or cgroup paths:
// findings on those instances are folded into one series per rule (present,
// and the largest instance's share).
#pragma once

#include <string>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

struct PrometheusRun {
    // What produced the file: "check", "watch", "diagnose", "record", "replay".
    // Every series carries it as label `mode`, so two commands writing two
    // files into one textfile directory never collide in node_exporter.
    std::string mode;
    double finished_unix = 0;   // when this run finished (wall clock)
    double duration_s = 0;      // how long the whole run took (start of collectors to verdict)
    std::string version;        // iodiag's version, for iodiag_build_info
};

// `evidence` is what the verdict was computed from (the per-device latency
// histograms are read from it).
std::string render_prometheus(const Verdict& v, const Evidence& evidence, const PrometheusRun& run);

}  // namespace iodiag
