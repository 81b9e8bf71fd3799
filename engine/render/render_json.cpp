#include "engine/render/render.hpp"
#include "engine/triage/judgement.hpp"

namespace iodiag {

using nlohmann::json;

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json finding_json(const Verdict& v, const Finding& f) {
    json j{{"rule_id", f.rule_id},
           {"layer", f.layer},
           {"severity", to_string(f.severity)},
           {"instance_key", f.instance_key},
           {"instance", f.instance},
           {"title", f.title},
           {"mechanism", f.mechanism},
           {"share_pct", opt(f.share_pct)},
           {"share_metric", f.share_metric},
           {"confidence", f.confidence},
           {"score", f.score},
           {"source", f.source},
           {"folded", f.folded},
           {"sufferer", f.sufferer},
           {"culprit", f.culprit},
           {"verify", f.verify}};
    // Added: the name people use for a cgroup instance (the instance stays its label).
    if (auto n = v.cgroup_names.find(f.instance); n != v.cgroup_names.end() && f.instance_key == kCgroupLabel)
        j["instance_name"] = n->second.name;
    j["evidence"] = json::array();
    for (const auto& c : f.evidence)
        j["evidence"].push_back({{"name", c.name},
                                 {"labels", c.labels},
                                 {"value", c.text.empty() ? json(c.value) : json(c.text)},
                                 {"unit", c.unit},
                                 {"comparison", c.comparison},
                                 {"provenance", {{"kind", c.provenance.kind}, {"source", c.provenance.source}}}});
    j["fixes"] = json::array();
    for (const auto& fx : f.fixes)
        j["fixes"].push_back({{"priority", to_string(fx.priority)}, {"action", fx.action}, {"playbook", fx.playbook}});
    return j;
}

}  // namespace

json render_json(const Verdict& v) {
    json j;
    j["schema"] = "iodiag-verdict";
    j["schema_version"] = Verdict::kSchemaVersion;
    j["host"] = v.host;
    j["kernel"] = v.kernel;
    j["window"] = {{"start_unix", v.window.start_unix}, {"duration_s", v.window.duration_s}};
    j["status"] = status_word(v);
    if (!v.blind.empty()) j["blind"] = v.blind;
    j["coverage"] = v.coverage;
    j["fingerprint"] = v.fingerprint;
    j["findings"] = json::array();
    for (const auto& f : v.findings) j["findings"].push_back(finding_json(v, f));
    j["notes"] = json::array();
    for (const auto& f : v.notes) j["notes"].push_back(finding_json(v, f));
    j["fixes"] = json::array();
    for (const auto& fx : v.fixes)
        j["fixes"].push_back({{"priority", to_string(fx.priority)},
                              {"action", fx.action},
                              {"playbook", fx.playbook},
                              {"rule_id", fx.rule_id},
                              {"instance", fx.instance},
                              {"share_pct", opt(fx.share_pct)}});
    j["layers"] = json::array();
    for (const auto& r : v.layers)
        j["layers"].push_back({{"layer", r.layer},
                               {"state", to_string(r.state)},
                               {"share_slow_pct", opt(r.share_slow_pct)},
                               {"share_all_pct", opt(r.share_all_pct)},
                               {"share_basis", r.share_basis},
                               {"figures", r.figures},
                               {"observed_by", r.observed_by}});
    j["trail"] = json::array();
    for (const auto& s : v.trail)
        j["trail"].push_back({{"layer", s.layer}, {"state", to_string(s.state)}, {"summary", s.summary}, {"next", s.next}});
    j["collectors"] = json::array();
    for (const auto& c : v.collectors)
        j["collectors"].push_back({{"name", c.name}, {"available", c.available}, {"reason", c.reason}, {"layers", c.layers}});
    j["lost_events"] = json::array();
    for (const auto& l : v.lost_events)
        j["lost_events"].push_back(
            {{"collector", l.collector}, {"what", l.what}, {"count", l.count}, {"complete", l.complete}, {"source", l.source}});
    j["not_evaluated"] = v.not_evaluated;
    json who = json::object(), sources = json::object();
    for (const auto& w : v.who_suffered) {
        who[w.what] = w.value;
        sources[w.what] = w.source;
        // A bundle recorded before applications were named: the command
        // name stood for the application.
        if (w.what == "app" && !who.contains("comm")) who["comm"] = w.value;
        if (auto n = v.cgroup_names.find(w.value); w.what == "cgroup" && n != v.cgroup_names.end()) {
            who["cgroup_name"] = n->second.name;
            who["cgroup_kind"] = n->second.kind;
        }
    }
    if (!v.who_suffered.empty()) who["sources"] = sources;
    j["who_suffered"] = who;
    json culprit = json::object(), culprit_sources = json::object();
    for (const auto& w : v.caused_by) {
        culprit[w.what] = w.value;
        culprit_sources[w.what] = w.source;
    }
    if (!v.caused_by.empty()) culprit["sources"] = culprit_sources;
    j["caused_by"] = culprit;
    j["cgroup_names"] = json::object();
    for (const auto& [label, n] : v.cgroup_names)
        j["cgroup_names"][label] = {{"name", n.name},
                                    {"kind", n.kind},
                                    {"provenance", {{"kind", n.provenance.kind}, {"source", n.provenance.source}}}};
    j["distributions"] = json::array();
    for (const auto& h : v.distributions)
        j["distributions"].push_back({{"name", h.name},
                                      {"labels", h.labels},
                                      {"unit", h.unit},
                                      {"log2_buckets", h.hist.buckets()},
                                      {"p50", h.hist.percentile(50).value},
                                      {"p99", h.hist.percentile(99).value},
                                      {"p999", h.hist.percentile(99.9).value},
                                      {"provenance", {{"kind", h.provenance.kind}, {"source", h.provenance.source}}}});
    j["slowest"] = json::array();
    for (const auto& e : v.slowest)
        j["slowest"].push_back({{"kind", e.kind}, {"labels", e.labels}, {"values", e.values}, {"unit", e.unit},
                                {"provenance", {{"kind", e.provenance.kind}, {"source", e.provenance.source}}}});
    return j;
}

}  // namespace iodiag
