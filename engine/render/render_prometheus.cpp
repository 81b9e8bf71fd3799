#include "engine/render/render_prometheus.hpp"
#include "engine/triage/judgement.hpp"

#include "engine/render/plugin_output.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace iodiag {

namespace {

// Label values may hold anything a device or collector is called; the text
// format escapes backslash, double quote and newline.
std::string escape_label(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

std::string number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    // Shortest text that reads back as the same double: Unix timestamps keep
    // their fraction, ratios do not grow trailing digits.
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

// One metric family: HELP and TYPE once, then its samples, contiguous (the
// format requires a family's samples to be grouped).
class Family {
public:
    Family(std::string name, std::string type, std::string help)
        : name_(std::move(name)), type_(std::move(type)), help_(std::move(help)) {}
    void add(const Labels& labels, double value) { samples_.emplace_back(labels, value); }
    bool empty() const { return samples_.empty(); }
    void write(std::ostringstream& out, const std::string& mode) const {
        if (samples_.empty()) return;   // a family without samples says nothing
        out << "# HELP " << name_ << " " << help_ << "\n# TYPE " << name_ << " " << type_ << "\n";
        for (const auto& [labels, value] : samples_) {
            Labels all = labels;
            all["mode"] = mode;
            out << name_ << "{";
            bool first = true;
            for (const auto& [k, v] : all) {
                out << (first ? "" : ",") << k << "=\"" << escape_label(v) << "\"";
                first = false;
            }
            out << "} " << number(value) << "\n";
        }
    }

private:
    std::string name_, type_, help_;
    std::vector<std::pair<Labels, double>> samples_;
};

// Findings folded to bounded labels: the device is a label (whole block
// devices, a handful per host); any other instance (cgroup path, pid, file)
// is not, so one rule firing on three cgroups is one series. The culprit (who
// the finding blames: a neighbor's command and its cgroup's name, no figures)
// is a label too: a few per host, and what an alert must say.
struct FoldedFinding {
    Labels labels;
    std::optional<double> share_pct;   // the largest instance's measured share
    int instances = 0;
};

std::vector<FoldedFinding> fold_findings(const Verdict& v) {
    std::map<Labels, FoldedFinding> folded;
    for (const auto& f : v.findings) {
        Labels l{{"rule_id", f.rule_id}, {"layer", f.layer}, {"severity", to_string(f.severity)}};
        if (f.instance_key == "device" && !f.instance.empty()) l["device"] = f.instance;
        if (!f.culprit.empty()) l["culprit"] = f.culprit;
        auto& ff = folded[l];
        ff.labels = l;
        ++ff.instances;
        if (f.share_pct) ff.share_pct = std::max(ff.share_pct.value_or(0.0), *f.share_pct);
    }
    std::vector<FoldedFinding> out;
    for (auto& [_, ff] : folded) out.push_back(std::move(ff));
    return out;
}

// Histogram percentile in seconds, when its unit is known.
std::optional<double> p99_seconds(const HistogramMetric& h) {
    if (h.hist.empty()) return std::nullopt;
    const double p = h.hist.percentile(99).value;
    if (h.unit == "us") return p / 1e6;
    if (h.unit == "ns") return p / 1e9;
    if (h.unit == "ms") return p / 1e3;
    return std::nullopt;
}

}  // namespace

std::string render_prometheus(const Verdict& v, const Evidence& ev, const PrometheusRun& run) {
    std::deque<Family> families;   // deque: references stay valid as families are added
    auto family = [&](std::string name, std::string type, std::string help) -> Family& {
        families.emplace_back(std::move(name), std::move(type), std::move(help));
        return families.back();
    };

    family("iodiag_build_info", "gauge", "iodiag version that wrote this file (always 1).")
        .add({{"version", run.version}}, 1);
    family("iodiag_status", "gauge",
           "State as iodiag check exits: 0 OK, 1 WARNING, 2 CRITICAL (worst finding on the triage path), "
           "3 UNKNOWN (no layer's latency observed).")
        .add({}, static_cast<int>(plugin_state(v)));
    family("iodiag_verdict_info", "gauge",
           "The verdict's fingerprint (same causes on the same host, same value: the de-duplication key) and "
           "status (always 1).")
        .add({{"fingerprint", v.fingerprint}, {"status", status_word(v)}}, 1);
    family("iodiag_coverage_ratio", "gauge", "Share of the I/O stack's layers whose latency was observed (0..1).")
        .add({}, v.coverage);
    family("iodiag_last_run_timestamp_seconds", "gauge", "When the run that wrote this file finished (Unix time).")
        .add({}, run.finished_unix);
    family("iodiag_last_run_duration_seconds", "gauge",
           "How long that run took, from starting the collectors to the verdict.")
        .add({}, run.duration_s);
    family("iodiag_window_start_timestamp_seconds", "gauge", "Start of the observation window (Unix time).")
        .add({}, v.window.start_unix);
    family("iodiag_window_duration_seconds", "gauge", "Length of the observation window.")
        .add({}, v.window.duration_s);

    auto& available = family("iodiag_collector_available", "gauge",
                             "1 when the collector observed, 0 when it could not (the verdict says why).");
    for (const auto& c : v.collectors) available.add({{"collector", c.name}}, c.available ? 1 : 0);

    auto& lost = family("iodiag_collector_lost_events", "gauge",
                        "Events a collector lost in the window (what it lost in label what).");
    for (const auto& m : ev.metrics)
        if (m.name == "collector.lost_events" && m.labels.count("collector") && m.labels.count("what"))
            lost.add({{"collector", m.labels.at("collector")}, {"what", m.labels.at("what")}}, m.value);

    auto& observed = family("iodiag_layer_observed", "gauge",
                            "1 when the layer's latency was observed; 0 means unknown, never healthy.");
    auto& abnormal = family("iodiag_layer_abnormal", "gauge", "1 when a warning or critical finding is on the layer.");
    auto& share = family("iodiag_layer_share_ratio", "gauge",
                         "Share of syscall time attributed to the layer (0..1): basis slow = of slow "
                         "operations, all = of all traced operations.");
    for (const auto& r : v.layers) {
        const Labels l{{"layer", r.layer}};
        observed.add(l, r.state == LayerState::NotObserved ? 0 : 1);
        abnormal.add(l, r.state == LayerState::Abnormal ? 1 : 0);
        if (r.share_slow_pct) share.add({{"layer", r.layer}, {"basis", "slow"}}, *r.share_slow_pct / 100.0);
        if (r.share_all_pct) share.add({{"layer", r.layer}, {"basis", "all"}}, *r.share_all_pct / 100.0);
    }

    auto& findings = family("iodiag_finding", "gauge",
                            "1 for each finding on the triage path (rule, layer, severity, device when the "
                            "instance is a device, culprit when the finding blames someone), labelled with the "
                            "verdict fingerprint.");
    auto& finding_share = family("iodiag_finding_share_ratio", "gauge",
                                 "Measured share of latency a finding explains (0..1); the largest instance's "
                                 "when the rule fired on several non-device instances.");
    auto& finding_instances = family("iodiag_finding_instances", "gauge",
                                     "How many instances (cgroups, processes, ...) the rule fired on.");
    for (const auto& ff : fold_findings(v)) {
        Labels with_fp = ff.labels;
        with_fp["fingerprint"] = v.fingerprint;
        findings.add(with_fp, 1);
        if (ff.share_pct) finding_share.add(ff.labels, *ff.share_pct / 100.0);
        finding_instances.add(ff.labels, ff.instances);
    }
    // Cgroups by the names people use (a systemd unit, a container, a pod),
    // never by path: a path holds container ids and pod uids, a new series
    // for every container started (docs/cgroup-names.md).
    auto& finding_cgroups = family("iodiag_finding_cgroup", "gauge",
                                   "1 for each cgroup a finding on the triage path is about, by the name people use for "
                                   "it (systemd unit, container, pod) and its kind; not written for a bundle recorded "
                                   "before cgroups were named.");
    for (const auto& f : v.findings)
        if (auto n = v.cgroup_names.find(f.instance); f.instance_key == "cgroup" && n != v.cgroup_names.end())
            finding_cgroups.add({{"rule_id", f.rule_id}, {"layer", f.layer}, {"severity", to_string(f.severity)},
                                 {"cgroup_name", n->second.name}, {"cgroup_kind", n->second.kind}},
                                1);
    auto& sufferer = family("iodiag_sufferer_info", "gauge",
                            "Who suffered most when there are findings (always 1): the application and its process's "
                            "cgroup by name and kind (no pid or path, which change with every restart).");
    if (!v.findings.empty() && !v.who_suffered.empty()) {
        Labels l;
        for (const auto& w : v.who_suffered) {
            if (w.what == "app") l["app"] = w.value;
            if (auto n = v.cgroup_names.find(w.value); w.what == "cgroup" && n != v.cgroup_names.end()) {
                l["cgroup_name"] = n->second.name;
                l["cgroup_kind"] = n->second.kind;
            }
        }
        sufferer.add(l, 1);
    }
    // The notes apart, as the text output tags them ("note; its rule is
    // critical"): counted under the findings' severity, a rule kept off the
    // triage path made `iodiag_findings{severity="critical"}` page someone for
    // what the status itself did not carry.
    const auto count_by_severity = [](const std::vector<Finding>& list) {
        std::map<std::string, int> n{{"info", 0}, {"warning", 0}, {"critical", 0}};
        for (const auto& f : list) ++n[to_string(f.severity)];
        return n;
    };
    auto& counts = family("iodiag_findings", "gauge", "Number of findings on the triage path, by severity.");
    for (const auto& [sev, n] : count_by_severity(v.findings)) counts.add({{"severity", sev}}, n);
    auto& notes = family("iodiag_notes", "gauge",
                         "Number of notes (rules that fired but are off the triage path or unfelt by the slow "
                         "syscalls: not a diagnosis), by their rule's severity.");
    for (const auto& [sev, n] : count_by_severity(v.notes)) notes.add({{"rule_severity", sev}}, n);
    family("iodiag_rules_not_evaluated", "gauge", "Rules that could not be evaluated for missing evidence.")
        .add({}, static_cast<double>(v.not_evaluated.size()));

    // Per device: the block layer's tails (from the BPF histograms) and
    // diskstats' view, for dashboards and for alerting on a device's own past.
    auto& d2c = family("iodiag_device_d2c_p99_seconds", "gauge",
                       "99th percentile of device time (D2C: issue to completion) in the window.");
    auto& q2c = family("iodiag_device_q2c_p99_seconds", "gauge",
                       "99th percentile of block-layer time (Q2C: queued to completion) in the window.");
    for (const auto& h : ev.histograms) {
        auto dev = h.labels.find("device");
        if (dev == h.labels.end() || h.labels.size() != 1) continue;
        auto p99 = p99_seconds(h);
        if (!p99) continue;
        if (h.name == "block.d2c_us") d2c.add({{"device", dev->second}}, *p99);
        if (h.name == "block.q2c_us") q2c.add({{"device", dev->second}}, *p99);
    }
    auto& await = family("iodiag_device_await_seconds", "gauge",
                         "Mean time of the device's completed requests in the window (/proc/diskstats).");
    auto& util = family("iodiag_device_utilization_ratio", "gauge",
                        "Share of the window with a request in flight on the device (/proc/diskstats, 0..1).");
    for (const auto& m : ev.metrics) {
        auto dev = m.labels.find("device");
        if (dev == m.labels.end() || m.labels.size() != 1) continue;
        if (m.name == "disk.await_ms" && m.unit == "ms") await.add({{"device", dev->second}}, m.value / 1000.0);
        if (m.name == "disk.util_pct" && m.unit == "pct") util.add({{"device", dev->second}}, m.value / 100.0);
    }

    std::ostringstream out;
    for (const auto& f : families) f.write(out, run.mode);
    return out.str();
}

}  // namespace iodiag
