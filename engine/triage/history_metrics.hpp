// The host's own past as evidence: `iodiag check` keeps a bundle per run (its
// state directory, app/history_store.hpp) and compares tonight with the runs
// before it. What the comparison finds are ordinary metrics, `history.*`, with
// provenance kind "history" whose source names the runs compared; rules
// (rules/history.yaml) decide what is a drift. They are added to the evidence
// before the analysis and saved in tonight's bundle, so a replay of it gives
// the same verdict.
//
// A device with no reference latency for its class (virtio, a cloud volume,
// dm, md, a loop device over those) gets one this way: its own normal.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

// What the comparison needs of one past run, read from its bundle (the rest of
// the bundle is not kept in memory).
struct RunSummary {
    std::string name;        // the bundle's file name, e.g. iodiag-check-20261201T021500Z.json
    std::string host;
    double start_unix = 0;
    struct Device {
        double requests = 0;
        std::optional<double> d2c_p99_us, q2c_p99_us;
    };
    std::map<std::string, Device> devices;            // by kernel name
    std::map<std::string, double> layer_share_pct;    // attr.slow.<layer>_pct
    struct Op {
        double count = 0;
        std::optional<double> p99_us;
    };
    std::map<std::string, Op> ops;                    // traced syscalls by op (syscall.ops, syscall.p99_us)
    struct Smart {
        std::string device;   // kernel name in that run
        std::optional<double> percent_used, media_errors;
    };
    std::map<std::string, Smart> nvme;   // by serial ("device:<name>" when the serial is unknown)
};

RunSummary summarize_run(const Evidence& ev, const std::string& name);

// A p99 needs this many requests to be more than the window's slowest few
// (the same floor as rules/block.yaml's enough_requests_for_p99): nights with
// fewer do not enter a device's median.
constexpr double kHistoryMinRequests = 100;
// The same floor for an operation's p99 (syscall.p99_us {op}).
constexpr double kHistoryMinOps = 100;

struct HistoryContext {
    std::string where;   // the state directory, for the provenance
    size_t nights = 7;   // the median is over the last N runs where the device (layer) had data
};

// Adds the history.* metrics and facts of `tonight` against `past` (runs of
// the same host, any order; tonight's own run not among them).
void add_history_metrics(Evidence& tonight, const std::vector<RunSummary>& past, const HistoryContext& ctx);

std::vector<MetricSpec> history_metric_specs();

}  // namespace iodiag
