// The site configuration (/etc/iodiag/iodiag.yaml, or --config FILE): what an
// operator adapts for a host or a fleet without editing the shipped rules.
// It is data, validated like the rules (file:line:col, stable codes), never
// executed.
//
//   rules:
//     device.saturated: {disable: true}
//     device.slow_for_class:
//       severity: critical                 # info | warning | critical
//       thresholds:                        # a comparison of the rule's condition -> its new value
//         disk.read_await_ms: 20           #   the only comparison of that metric
//         disk.avg_read_kb: 128
//     history.device_latency_drift:
//       thresholds:
//         history.d2c_p99_ratio: 5
//   devices:
//     vdb:                                 # kernel name, or a /dev path (resolved on the live host)
//       class: nvme                        # the reference class (nvme, sata_ssd, hdd)
//     /dev/disk/by-id/virtio-data:
//       read_latency_ms: 2                 # reference latency, e.g. a cloud volume's SLA
//       write_latency_ms: 5
//   history:                               # iodiag check's state directory
//     state_dir: /var/lib/iodiag
//     nights: 7                            # the median is taken over the last N runs
//     keep: 30                             # bundles kept, at most
//     max_bytes: 128MiB                    # bytes kept, at most
//
// A threshold is addressed by the metric its comparison reads, within the
// rule's condition (`when`, macros expanded):
//   METRIC                 the one comparison of METRIC
//   METRIC / RATIO_OF      the comparison of METRIC over RATIO_OF
//   METRIC pNN             the comparison of the NN-th percentile of histogram METRIC
// (both qualifiers may be combined: "block.d2c_us p99 / device.nominal_read_latency_ms").
// An address that matches no comparison, or more than one, is an error that
// lists the rule's comparisons. The rule's verify checks with the same address
// get the same value, so "verify after the fix" checks the threshold in force.
//
// Diagnostic codes (stable, in addition to E001 syntax, E003 unknown key,
// E006 bad severity, E009 wrong type, E014 unreadable file):
//   C001 unknown rule id            C002 threshold matches no comparison of the rule
//   C003 ambiguous threshold        C004 bad value (not a finite number, out of range)
//   C005 unknown device class       C006 bad device name
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"
#include "engine/rules/rules.hpp"

namespace iodiag {

// Where iodiag looks when --config is not given; a missing file there is fine.
inline const std::string kDefaultSiteConfig = "/etc/iodiag/iodiag.yaml";

struct ThresholdOverride {
    std::string address;    // as written
    double value = 0;
    SourcePos pos;
    std::vector<SourcePos> matches;   // the comparisons it addresses (one, unless a macro leaf repeats)
};

struct RuleOverride {
    std::string rule_id;
    bool disable = false;
    std::optional<Severity> severity;
    std::vector<ThresholdOverride> thresholds;
    SourcePos pos;
};

struct DeviceConfig {
    std::string key;        // as written: kernel name or /dev path
    std::optional<std::string> device_class;
    std::optional<double> read_latency_ms, write_latency_ms;
    SourcePos pos, class_pos, read_pos, write_pos;
};

struct HistoryConfig {
    std::optional<std::string> state_dir;
    std::optional<size_t> nights, keep;
    std::optional<uint64_t> max_bytes;
};

struct SiteConfig {
    std::string file;   // "" = none was read
    std::vector<RuleOverride> rules;
    std::vector<DeviceConfig> devices;
    HistoryConfig history;
    std::vector<Diagnostic> diagnostics;
    bool ok() const;
};

// 134217728, "128MiB", "500MB", "2 GiB" -> bytes; nullopt when not a size.
std::optional<uint64_t> parse_byte_size(const std::string& text);

// What a configuration is checked against.
struct SiteConfigContext {
    const RuleSet* rules = nullptr;              // rule ids, threshold addresses
    const MetricCatalog* catalog = nullptr;      // units, for the range of a threshold
    std::vector<std::string> device_classes;     // classes with a reference latency
};

// Reads and checks `file`. Never throws: problems become diagnostics (E014
// when unreadable).
SiteConfig load_site_config(const std::string& file, const SiteConfigContext& ctx);
SiteConfig parse_site_config(const std::string& yaml, const std::string& file, const SiteConfigContext& ctx);

// Applies the rule overrides (disable, severity, thresholds) to a rule set the
// configuration was checked against. Each changed rule's mechanism says what
// the site configuration changed and where. Returns one line per change.
std::vector<std::string> apply_rule_overrides(const SiteConfig& config, RuleSet& rules);

// Puts the device entries into the evidence, for devices the evidence has:
// `device.class` (replacing the collector's fact) and
// `device.nominal_read_latency_ms` / `device.nominal_write_latency_ms`, with
// provenance kind "config" and source "FILE:LINE". The derived metrics then
// leave those devices' references alone. `resolve` turns a key (a kernel name
// or a /dev path) into a kernel name, "" when it names no device here.
// Returns one line per device configured.
using DeviceResolver = std::function<std::string(const std::string& key)>;
std::vector<std::string> apply_device_config(const SiteConfig& config, Evidence& ev,
                                             const DeviceResolver& resolve);

}  // namespace iodiag
