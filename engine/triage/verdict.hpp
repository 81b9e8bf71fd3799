// The verdict: what iodiag concludes from one Evidence. Built by analyze()
// (engine/analysis.hpp), printed by the renderers (engine/render.hpp).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/cgroup_labels.hpp"
#include "engine/evidence/evidence.hpp"
#include "engine/rules/rules.hpp"
#include "engine/triage/lost_events.hpp"

namespace iodiag {

// Unjudged: the layer's latency was observed, but a rule that judges it could
// not be evaluated (e.g. a busy device whose class has no reference latency),
// so "nothing fired" does not mean "normal".
enum class LayerState { Abnormal, Normal, Unjudged, NotObserved };
std::string to_string(LayerState s);

struct Finding {
    std::string rule_id;
    std::string layer;
    Severity severity = Severity::Warning;
    std::string instance_key;   // e.g. "device"; "" for global rules
    std::string instance;       // e.g. "loop0"
    std::string title;
    std::string mechanism;
    std::optional<double> share_pct;   // measured share of latency, when known
    std::string share_metric;          // the metric the share was read from (says of what)
    double confidence = 0;             // 0..1, lowered when the layer's latency was not observed
    double score = 0;                  // ranking key, see verdict.cpp
    std::vector<CitedValue> evidence;
    std::vector<Fix> fixes;
    std::vector<std::string> verify;
    std::string source;                // rules file:line
    // Findings of other rules folded into this one (same cause): "rule@instance".
    std::vector<std::string> folded;
    // The application whose slow syscalls the share is over, when it is not
    // the one that suffered most (a second application slowed by another cause).
    std::string sufferer;
    // Who the finding blames, when its rule names someone (a neighbor process
    // and its cgroup's name): bounded, so the Prometheus textfile labels with it.
    std::string culprit;
};

// A fix, in the order to apply it: by its finding's share (Amdahl), then P0..P5.
struct OrderedFix {
    Priority priority = Priority::P4;
    std::string action;
    std::string playbook;
    std::string rule_id;
    std::string instance;
    std::optional<double> share_pct;
};

// One step of the bottom-up walk of the decision graph.
struct TrailStep {
    std::string layer;
    LayerState state = LayerState::NotObserved;
    std::string summary;   // e.g. "loop0 await 12.3 ms vs nominal 0.3 ms"
    std::string next;      // why the walk went on, e.g. "normal -> look higher"
};

// One row of the per-layer table.
struct LayerRow {
    std::string layer;
    LayerState state = LayerState::NotObserved;
    std::optional<double> share_slow_pct;   // share of slow operations' time
    std::optional<double> share_all_pct;    // share of all operations' time
    std::string share_basis;                // what the share is a share of
    std::string figures;                    // key measured figures
    std::string observed_by;                // collectors, or why not observed
};

// One field of the "who suffered" line, with where it was read from.
struct WhoField {
    std::string what;     // app, pid, file, cgroup
    std::string value;    // the cgroup's label for "cgroup" (its name: Verdict::cgroup_names)
    std::string source;   // how it was chosen (a derived fact's provenance)
};

struct Verdict {
    static constexpr int kSchemaVersion = 1;
    std::string host;
    std::string kernel;
    Window window;
    Severity status = Severity::Info;   // worst finding; Info = nothing abnormal found
    // Non-empty when the layers that carry the applications' latency were not
    // observed (engine/triage/judgement.hpp): with no finding the status is
    // then UNKNOWN, not OK. status_word() gives the word every output prints.
    std::string blind;
    double coverage = 0;                // share of layers whose latency was observed, 0..1
    std::vector<Finding> findings;      // ranked, best explanation first
    std::vector<Finding> notes;         // info-level findings and ones off the triage path
    std::vector<OrderedFix> fixes;
    std::vector<TrailStep> trail;
    std::vector<LayerRow> layers;
    std::vector<std::string> not_evaluated;   // "rule id (instance): missing X, Y"
    // The text verdict's short form (engine/triage/not_evaluated.hpp): the
    // lines of not_evaluated for global rules and for the devices and cgroups
    // that did I/O in the window, and how many evaluations it leaves out.
    std::vector<std::string> not_evaluated_active;
    size_t not_evaluated_idle = 0;
    std::vector<CollectorStatus> collectors;
    // Events collectors saw but could not account, with what stays complete.
    std::vector<LostEvents> lost_events;
    // Who suffered most: the application the findings judge and its process
    // (pid, file, cgroup), every field of the same process (attr.who.*);
    // empty when the syscall collector did not run.
    std::vector<WhoField> who_suffered;
    // Whose load the first finding that names another program blames (app,
    // pid, cgroup, finding): the culprit beside the victim; empty when no
    // finding names one.
    std::vector<WhoField> caused_by;
    // The names people use for the cgroups this verdict cites (findings'
    // instances and evidence, who suffered, the slowest operations), by
    // label; a bundle recorded before names were kept has none.
    std::map<std::string, CgroupName> cgroup_names;
    // Latency distributions worth looking at (seed 000 §4: the shape, not the
    // mean): syscall latency per operation, page-cache hits vs misses, and the
    // busiest device's block time (Q2C) and device time (D2C).
    std::vector<HistogramMetric> distributions;
    // The slowest single operations with their measured parts, slowest first.
    std::vector<Exemplar> slowest;
    std::string fingerprint;
    // The evidence the verdict was judged on: the collected evidence with what
    // engine/derive derived from it (reference latencies, shares, the Ceph
    // attribution). Set by analyze(); never printed as such. Whoever needs a
    // derived figure beside the verdict (a plugin's threshold, a diff's other
    // side) reads it here instead of deriving again. Null in a hand-built verdict.
    std::shared_ptr<const Evidence> judged_on;
};

}  // namespace iodiag
