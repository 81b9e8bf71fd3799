#include "engine/triage/not_evaluated.hpp"

#include <map>

namespace iodiag {

namespace {

// Evidence that a device or cgroup did I/O in the window (any value above 0).
const std::set<std::string> kDeviceIo = {"disk.ios_per_s", "block.requests"};
const std::set<std::string> kCgroupIo = {
    "cgroup.io_read_iops",     "cgroup.io_write_iops",     "cgroup.io_read_bytes_per_s",
    "cgroup.io_write_bytes_per_s", "cgroup.device_read_iops", "cgroup.device_write_iops",
    "cgroup.device_read_bytes_per_s", "cgroup.device_write_bytes_per_s", "cgroup.blk_throttled_bios"};

// One line per rule that could not be evaluated: on which instances, and the
// evidence names it missed (instance labels left out, so one line covers all).
// Evaluations that found no evidence at all (nothing cited) are instances the
// rule does not speak about (another collector's cgroup, a device with no such
// log) or rules whose collector did not run; the layer table says which
// collectors were missing, so they are counted in one line, not listed.
std::vector<std::string> summarize_unknown(const std::vector<const RuleResult*>& unknown) {
    std::map<std::string, std::pair<std::vector<std::string>, std::set<std::string>>> by_rule;
    std::vector<std::string> order;
    size_t without_evidence = 0;
    for (const RuleResult* r : unknown) {
        if (r->cited.empty()) {
            ++without_evidence;
            continue;
        }
        auto [it, fresh] = by_rule.try_emplace(r->rule->id);
        if (fresh) order.push_back(r->rule->id);
        if (!r->instance.empty()) it->second.first.push_back(r->instance);
        for (const auto& m : r->missing) it->second.second.insert(m.substr(0, m.find(" (")));
    }
    std::vector<std::string> lines;
    for (const auto& id : order) {
        const auto& [instances, missing] = by_rule.at(id);
        std::string line = id;
        if (!instances.empty()) {
            line += " on " + std::to_string(instances.size()) + " instance(s) (";
            for (size_t i = 0; i < instances.size() && i < 3; ++i) line += (i ? ", " : "") + instances[i];
            line += instances.size() > 3 ? ", ...)" : ")";
        }
        line += ": missing ";
        size_t i = 0;
        for (const auto& m : missing) line += (i++ ? ", " : "") + m;
        lines.push_back(line);
    }
    if (without_evidence)
        lines.push_back(std::to_string(without_evidence) +
                        " more rule evaluation(s) found no evidence at all for their instance (see COLLECTORS)");
    return lines;
}

}  // namespace

InstancesInPlay::InstancesInPlay(const Evidence& ev) {
    for (const auto& m : ev.metrics) {
        if (!(m.value > 0)) continue;
        if (kDeviceIo.count(m.name))
            if (auto d = m.labels.find("device"); d != m.labels.end()) devices.insert(d->second);
        if (kCgroupIo.count(m.name))
            if (auto c = m.labels.find("cgroup"); c != m.labels.end()) cgroups.insert(c->second);
    }
}

bool InstancesInPlay::contains(const RuleResult& r) const {
    const std::string& kind = r.rule->for_each;
    if (kind == "device") return devices.count(r.instance) > 0;
    if (kind == "cgroup") return cgroups.count(r.instance) > 0;
    return true;
}

void summarize_not_evaluated(Verdict& v, const std::vector<const RuleResult*>& unknown, const Evidence& ev) {
    v.not_evaluated = summarize_unknown(unknown);
    const InstancesInPlay in_play(ev);
    std::vector<const RuleResult*> active;
    for (const RuleResult* r : unknown)
        if (in_play.contains(*r) && !r->cited.empty()) active.push_back(r);
    v.not_evaluated_active = summarize_unknown(active);
    v.not_evaluated_idle = unknown.size() - active.size();
}

}  // namespace iodiag
