#include "engine/evidence/cgroup_labels.hpp"

namespace iodiag {

bool fact_names_a_cgroup(const std::string& fact_name) {
    const size_t dot = fact_name.rfind('.');
    if (dot == std::string::npos) return false;   // "cgroup" alone is a label key, not a fact name
    const std::string last = fact_name.substr(dot + 1);
    const std::string suffix = "_cgroup";
    return last == "cgroup" ||
           (last.size() > suffix.size() && last.compare(last.size() - suffix.size(), suffix.size(), suffix) == 0);
}

std::set<std::string> cgroup_labels(const Evidence& ev) {
    std::set<std::string> out;
    auto take = [&](const Labels& l) {
        if (auto it = l.find(kCgroupLabel); it != l.end() && !it->second.empty()) out.insert(it->second);
    };
    for (const auto& m : ev.metrics) take(m.labels);
    for (const auto& f : ev.facts) {
        take(f.labels);
        if (fact_names_a_cgroup(f.name) && !f.value.empty()) out.insert(f.value);
    }
    for (const auto& h : ev.histograms) take(h.labels);
    for (const auto& e : ev.exemplars) take(e.labels);
    for (const auto& s : ev.series.histograms) take(s.labels);
    for (const auto& s : ev.series.values) take(s.labels);
    return out;
}

std::optional<CgroupName> find_cgroup_name(const Evidence& ev, const std::string& label) {
    const Fact* name = ev.find_fact(kCgroupNameFact, {{kCgroupLabel, label}});
    if (!name || name->value.empty()) return std::nullopt;
    const Fact* kind = ev.find_fact(kCgroupKindFact, {{kCgroupLabel, label}});
    return CgroupName{name->value, kind ? kind->value : "", name->provenance};
}

std::string name_with_path(const std::string& name, const std::string& label) {
    if (name.empty() || name == label) return label;
    return name + " (" + label + ")";
}

std::string cgroup_shown(const Evidence& ev, const std::string& label) {
    const auto n = find_cgroup_name(ev, label);
    return n ? name_with_path(n->name, label) : label;
}

}  // namespace iodiag
