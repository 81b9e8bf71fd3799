#include "engine/triage/who_suffered.hpp"

namespace iodiag {

std::vector<WhoField> who_suffered(const Evidence& ev) {
    std::vector<WhoField> who;
    for (const char* what : {"app", "pid", "file", "cgroup"})
        if (const Fact* f = ev.find_fact(std::string("attr.who.") + what))
            who.push_back({what, f->value, f->provenance.source});
    return who;
}

std::map<std::string, CgroupName> cited_cgroup_names(const Verdict& v, const Evidence& ev) {
    std::map<std::string, CgroupName> out;
    auto cite = [&](const std::string& label) {
        if (label.empty() || out.count(label)) return;
        if (auto n = find_cgroup_name(ev, label)) out.emplace(label, std::move(*n));
    };
    auto cite_labels = [&](const Labels& l) {
        if (auto it = l.find(kCgroupLabel); it != l.end()) cite(it->second);
    };
    for (const auto* list : {&v.findings, &v.notes})
        for (const auto& f : *list) {
            if (f.instance_key == kCgroupLabel) cite(f.instance);
            for (const auto& c : f.evidence) {
                cite_labels(c.labels);
                if (fact_names_a_cgroup(c.name)) cite(c.text);
            }
        }
    for (const auto& w : v.who_suffered)
        if (w.what == "cgroup") cite(w.value);
    for (const auto& e : v.slowest) cite_labels(e.labels);
    for (const auto& h : v.distributions) cite_labels(h.labels);
    return out;
}

}  // namespace iodiag
