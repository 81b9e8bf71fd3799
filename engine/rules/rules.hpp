// Rules are data (rules/*.yaml). This header is the rule model, the loader
// (reader -> checker with file:line errors and stable codes) and the evaluator.
//
// YAML shape (see rules/README.md for the full reference):
//
//   macros:                       # optional named conditions, used as {macro: NAME}
//     device_busy: {metric: disk.util_pct, op: ">=", value: 90}
//   rules:
//     - id: device.saturated
//       layer: device
//       severity: warning          # info | warning | critical
//       confidence: 0.8            # 0..1, before the engine lowers it for unobserved layers
//       for_each: device           # optional instance label; omitted = global rule
//       title: "{device} is saturated"
//       when:                      # a condition tree
//         all:
//           - {macro: device_busy}
//           - {metric: disk.aqu_sz, op: ">=", value: 4}
//           - {metric: disk.read_await_ms, ratio_of: device.nominal_read_latency_ms, op: ">", value: 10}
//           - {metric: block.d2c_us, percentile: 99, op: ">", value: 1000}
//           - {fact: queue.scheduler, op: "==", value: none}
//           - {fact: device.class, in: [hdd, sata_ssd]}
//           - any: [...]
//           - not: {...}
//       share_metric: block.d2c_share_pct   # optional: measured share of latency (pct)
//       mechanism: >
//         Why this adds latency, in plain words. Placeholders {device} (instance)
//         and {metric.name} (formatted value with unit) are filled in.
//       evidence: [disk.util_pct, disk.aqu_sz, disk.await_ms]
//       fixes:
//         - {priority: P1, action: "Lower the queue depth ...", playbook: device-saturated}
//       verify:                    # after the fix, these should hold
//         - {metric: disk.aqu_sz, op: "<", value: 1}
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

enum class Severity { Info, Warning, Critical };
std::string to_string(Severity s);

// Where something was written, for error messages and `rules list`.
struct SourcePos {
    std::string file;
    int line = 0;   // 1-based
    int column = 0; // 1-based
};

enum class CmpOp { Gt, Ge, Lt, Le, Eq, Ne };
std::string to_string(CmpOp op);

// One leaf comparison.
//  - metric: the named metric (for the rule's instance if it has instance_key),
//    or, when `percentile` is set, that percentile of the named histogram.
//  - ratio_of: if set, the left side is metric / ratio_of (metric-vs-metric).
//  - fact: compares a fact's string value with `text` (==, !=) or `one_of`.
struct Comparison {
    std::string metric;
    std::optional<double> percentile;
    std::string ratio_of;
    std::string fact;
    CmpOp op = CmpOp::Gt;
    double value = 0;
    std::string text;                  // for fact ==/!=
    std::vector<std::string> one_of;   // for fact `in:`
    SourcePos pos;
};

struct Condition {
    enum class Kind { All, Any, Not, Leaf };
    Kind kind = Kind::Leaf;
    std::vector<Condition> children;   // All/Any: any count; Not: exactly one
    Comparison leaf;                   // Kind::Leaf
    SourcePos pos;
};

enum class Priority { P0, P1, P2, P3, P4, P5 };
std::string to_string(Priority p);

struct Fix {
    Priority priority = Priority::P4;
    std::string action;
    std::string playbook;   // id of playbooks/<id>.yaml
};

// A rule's `layer` for a rule run for each layer (for_each: layer): its
// findings name the layer of their instance.
inline const std::string kLayerOfInstance = "{layer}";

struct Rule {
    std::string id;
    std::string layer;   // a layer name, or kLayerOfInstance
    Severity severity = Severity::Warning;
    double confidence = 0.8;
    std::string for_each;   // "" = global
    std::string title;
    Condition when;
    std::string share_metric;
    std::string mechanism;
    std::vector<std::string> evidence;
    std::vector<Fix> fixes;
    std::vector<Comparison> verify;
    // Rules whose findings describe the same cause as this one: when this rule
    // fires, their findings on the same instance (or on an instance this
    // finding cites) are folded into it, evidence included (one cause, one
    // finding).
    std::vector<std::string> supersedes;
    SourcePos pos;
    // Filled by the loader from the catalog: name -> instance label key ("" =
    // global) for every metric, fact and histogram the rule uses. The evaluator
    // looks a name up with labels {key: instance} or {}; a name missing here
    // (a rule built by hand) is tried per instance first, then globally.
    std::map<std::string, std::string> instance_keys;
};

// Stable diagnostic codes. Never renumber; add new ones at the end.
//  E001 YAML syntax error           E002 missing required key
//  E003 unknown key                  E004 unknown metric / fact / histogram
//  E005 bad operator or comparison   E006 bad priority / severity / confidence
//  E007 duplicate rule id            E008 unknown layer
//  E009 wrong type (e.g. list expected)  E010 unknown playbook
//  E011 unknown placeholder          E012 unknown macro (or macro cycle)
//  E013 instance mismatch (metric's instance key differs from for_each)
//  E014 cannot read file
//  W001 macro defined but never used
//  E015 playbook id differs from its file name
//  W003 playbook applies_to names a rule that does not exist
struct Diagnostic {
    std::string code;
    bool error = true;   // false = warning
    SourcePos pos;
    std::string message;
    // "file:line:col: CODE: message"
    std::string to_string() const;
};

struct RuleSet {
    std::vector<Rule> rules;
    std::vector<Diagnostic> diagnostics;
    bool ok() const;   // no errors (warnings allowed)
    nlohmann::json to_json() const;   // {"rules": [...ids...], "diagnostics": [...]}
};

// Layers known to the engine (the decision graph's vertices).
const std::vector<std::string>& known_layers();

struct LoadContext {
    const MetricCatalog* catalog = nullptr;           // names rules may use
    std::vector<std::string> playbook_ids;            // ids that exist in playbooks/
};

// Loads every *.yaml under each path (a file or a directory), in sorted order.
// Never throws: problems become diagnostics.
RuleSet load_rules(const std::vector<std::string>& paths, const LoadContext& ctx);
// Same, from a string (file name used for positions only). For tests.
RuleSet load_rules_from_string(const std::string& yaml, const std::string& file,
                               const LoadContext& ctx);

// ---- evaluation ----

enum class Tri { False, True, Unknown };

// A value a finding cites: what it is, what it was compared with, where it came from.
struct CitedValue {
    std::string name;
    Labels labels;
    double value = 0;
    std::string unit;
    std::string comparison;   // e.g. "> 10 x device.nominal_read_latency_ms (= 1 ms); measured 25 x",
                              // ">= 90 %", "in [hdd, sata_ssd]", or "" if only cited
    Provenance provenance;
    std::string text;         // a fact's value (value and unit unused), e.g. "none"
    std::string formatted;    // value with unit ("12.3 ms", "97 %") or the fact's text
};

struct RuleResult {
    const Rule* rule = nullptr;
    std::string instance;          // value of the for_each label, "" for global rules
    Tri outcome = Tri::Unknown;
    std::vector<CitedValue> cited; // the rule's evidence list and the leaves that decided
    std::vector<std::string> missing;   // names that could not be resolved (why Unknown)
    std::optional<double> share_pct;    // from share_metric when present
    std::vector<std::string> verify;    // rendered verify comparisons
    // A finding's prose, filled only when the outcome is True (empty otherwise):
    std::string title;                  // placeholders filled
    std::string mechanism;              // placeholders filled
    std::vector<Fix> fixes;             // the rule's fixes, placeholders in action filled
};

// Evaluates every rule, for each instance of its for_each label found in the
// evidence (or once if global). Returns a result for every evaluation,
// including False and Unknown ones (the graph walk needs them all).
std::vector<RuleResult> evaluate_rules(const RuleSet& rules, const Evidence& ev);

}  // namespace iodiag
