// A verdict as a monitoring plugin's result (Nagios / Icinga / NRPE plugin
// guidelines): a state with its exit code, one status line
//   IODIAG WARNING - <title of the top finding> | 'label'=value[UOM];warn;crit;min;max ...
// and the performance data behind it. `iodiag check` prints it.
//
// State (= exit code) from the verdict:
//   0 OK        no warning or critical finding in the layers that were observed
//   1 WARNING   the worst finding is a warning
//   2 CRITICAL  the worst finding is critical
//   3 UNKNOWN   nothing could be observed (no layer's latency was measured);
//               also bad arguments, unreadable rules or site configuration (set
//               by the command, not here)
// Info-level findings (notes) never raise the state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/triage/verdict.hpp"

namespace iodiag {

enum class PluginState { Ok = 0, Warning = 1, Critical = 2, Unknown = 3 };
std::string to_string(PluginState s);   // "OK", "WARNING", "CRITICAL", "UNKNOWN"

// One performance-data item. UOM as the plugin guidelines define them: "" (a
// number of things), "s", "%", "B", "c" (a continuous counter). A value that
// could not be determined prints as "U".
struct PerfDatum {
    std::string label;
    std::optional<double> value;
    std::string uom;
    std::optional<double> warn, crit, min, max;
    std::string to_string() const;   // 'label'=value[UOM];warn;crit;min;max (trailing empty fields dropped)
};

struct PluginResult {
    PluginState state = PluginState::Unknown;
    std::string summary;               // the text after "IODIAG STATE - "
    std::vector<PerfDatum> perfdata;
    std::string status_line() const;   // "IODIAG STATE - summary | perfdata" (one line)
};

// The state the verdict maps to (see the table above).
PluginState plugin_state(const Verdict& v);

// State, summary and performance data: status, findings, coverage, window,
// each layer's measured share of slow syscall time, and per busy device (at
// most kMaxPerfDevices, busiest first) D2C and Q2C p99 in seconds, with the
// seed 000 §9.4 alert level (10x the device's reference latency) as the
// warning mark where a reference exists, else 3x the device's own median from
// its history, and NVMe percentage used. The figures are read from the
// evidence the verdict was judged on (Verdict::judged_on: the collected one,
// with its history.* metrics for a check, and what the analysis derived from
// it); a verdict without it gets no per-device data.
PluginResult plugin_result(const Verdict& v);
constexpr size_t kMaxPerfDevices = 4;

// A text meant for the lines after the status line ("long output"): plugin
// runners read everything after the first '|' there as more performance data,
// so a '|' in the text is replaced by a broken bar.
std::string plugin_long_output(const std::string& text);

// {"state", "exit_code", "status_line", "summary", "perfdata": [{label, value,
// uom, warn, crit, min, max}]} — the "check" object of `iodiag check --format json`.
nlohmann::json plugin_json(const PluginResult& r);

}  // namespace iodiag
