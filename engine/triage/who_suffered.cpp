#include "engine/triage/who_suffered.hpp"

namespace iodiag {

std::vector<WhoField> who_suffered(const Evidence& ev) {
    std::vector<WhoField> who;
    for (const char* what : {"app", "comm", "pid", "file", "cgroup", "given"})
        if (const Fact* f = ev.find_fact(std::string("attr.who.") + what))
            who.push_back({what, f->value, f->provenance.source});
    return who;
}

std::vector<WhoField> caused_by(const std::vector<Finding>& findings) {
    for (const auto& f : findings) {
        if (f.severity == Severity::Info) continue;
        auto cited = [&](const std::string& suffix) -> const CitedValue* {
            for (const auto& c : f.evidence)
                if (c.name.size() > suffix.size() && c.name.compare(c.name.size() - suffix.size(), suffix.size(), suffix) == 0)
                    return &c;
            return nullptr;
        };
        const CitedValue* app = cited(".neighbor_comm");
        if (!app) continue;
        const std::string from = "finding " + f.rule_id + (f.instance.empty() ? "" : " on " + f.instance) + ": ";
        std::vector<WhoField> who;
        // The flusher writes what others dirtied: the dirtier is the culprit.
        if (const CitedValue* d = cited(".neighbor_dirtier")) {
            std::string name = d->text, pid;
            if (const size_t at = name.rfind(" (pid "); at != std::string::npos) {
                pid = name.substr(at + 6, name.size() - at - 7);
                name = name.substr(0, at);
            }
            who.push_back({"app", name, from + d->name + " (" + d->provenance.source + ")"});
            if (!pid.empty()) who.push_back({"pid", pid, from + d->name});
        } else {
            who.push_back({"app", app->text, from + app->name + " (" + app->provenance.source + ")"});
            if (const CitedValue* p = cited(".neighbor_pid")) who.push_back({"pid", p->text, from + p->name});
            if (const CitedValue* c = cited(".neighbor_cgroup")) who.push_back({"cgroup", c->text, from + c->name});
        }
        who.push_back({"finding", f.rule_id, "the highest-ranked warning or critical finding naming another program"});
        return who;
    }
    return {};
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
    for (const auto* who : {&v.who_suffered, &v.caused_by})
        for (const auto& w : *who)
            if (w.what == "cgroup") cite(w.value);
    for (const auto& e : v.slowest) cite_labels(e.labels);
    for (const auto& h : v.distributions) cite_labels(h.labels);
    return out;
}

}  // namespace iodiag
