#include "engine/triage/judgement.hpp"

#include <algorithm>
#include <set>

#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

// Layers a finding on another layer stands for, because its mechanism is the
// time spent there: the fsync chain (fsync -> journal commit -> the data it
// carries, through the queue and any I/O control, on the device), a device
// finding (its requests' queue and the cache misses it serves), a limit under
// a stacked device (that device's time), reclaim (the cache it evicts).
const std::map<std::string, std::set<std::string>>& explained_layers() {
    static const std::map<std::string, std::set<std::string>> m = {
        {layer::kJournal, {layer::kDevice, layer::kBlockQueue, layer::kCgroup}},
        {layer::kDevice, {layer::kBlockQueue, layer::kPageCache}},
        {layer::kBlockQueue, {layer::kDevice}},
        {layer::kCgroup, {layer::kDevice, layer::kBlockQueue}},
        {layer::kReclaim, {layer::kPageCache}},
    };
    return m;
}

// Share metrics that are shares of the applications' slow syscall time (not
// of a device's block time).
bool share_of_applications_time(const std::string& metric) {
    for (const char* prefix : {"attr.sufferer.", "attr.slow.", "judge.share_pct", "cgroup.slow_share_pct",
                               "device.slow_share_pct", "device.io_wait_share_pct", "device.tag_wait_share_pct",
                               "device.scheduler_wait_share_pct", "device.submitter_share_all_pct",
                               // a wait x the others' share of it (engine/derive/contention_*.cpp)
                               "device.contention_share_pct", "cpu.contention_share_pct", "journal.contention_share_pct",
                               // the part of its time a setting explains (engine/derive/setting_*.cpp)
                               "setting.readahead_share_pct"})
        if (metric.rfind(prefix, 0) == 0) return true;
    return false;
}

}  // namespace

bool finding_covers(const Finding& f, const std::string& layer) {
    if (f.layer == layer) return true;
    const auto it = explained_layers().find(f.layer);
    return it != explained_layers().end() && it->second.count(layer) > 0;
}

void drop_covered_dominant_layer(std::vector<Finding>& findings) {
    auto covered = [&](const Finding& g) {
        return g.rule_id == kDominantLayerRule &&
               std::any_of(findings.begin(), findings.end(), [&](const Finding& f) {
                   return f.rule_id != kDominantLayerRule && f.severity != Severity::Info && finding_covers(f, g.layer);
               });
    };
    findings.erase(std::remove_if(findings.begin(), findings.end(), covered), findings.end());
}

std::optional<double> unfelt_share(const Finding& f, const Evidence& ev, double felt_pct) {
    if (!f.share_pct || !share_of_applications_time(f.share_metric) || *f.share_pct >= felt_pct) return std::nullopt;
    // A layer's share of the suffering application's slow time and of the
    // machine's slow set: unfelt only when neither waited there (another
    // program's slow syscalls may have).
    double most = *f.share_pct;
    for (const auto& [mine, other] : {std::pair<std::string, std::string>{"attr.sufferer.", "attr.slow."},
                                      std::pair<std::string, std::string>{"attr.slow.", "attr.sufferer."}})
        if (f.share_metric.rfind(mine, 0) == 0)
            if (const Metric* m = ev.find_metric(other + f.share_metric.substr(mine.size()))) {
                if (m->value >= felt_pct) return std::nullopt;
                most = std::max(most, m->value);
            }
    return most;
}

std::map<std::string, std::string> model_judged_normal(const Evidence& ev) {
    std::map<std::string, std::string> out;
    for (const auto& l : ev.instances("layer")) {
        const Metric* abnormal = ev.find_metric("judge.abnormal", {{"layer", l}});
        const Fact* reason = ev.find_fact("judge.reason", {{"layer", l}});
        if (abnormal && abnormal->value == 0 && reason) out[l] = reason->value;
    }
    return out;
}

std::string blind_reason(const Evidence& ev) {
    if (ev.layer_observed(layer::kSyscall) || ev.layer_observed(layer::kBlockQueue)) return "";
    std::string why;
    for (const auto& c : ev.collectors)
        if (!c.available && (c.name == "syscall_bpf" || c.name == "block_bpf"))
            why += (why.empty() ? "" : "; ") + c.name + ": " + c.reason;
    return "the layers that carry the applications' latency (syscalls, block requests) were not observed" +
           (why.empty() ? std::string() : " (" + why + ")") + ": nothing found means nothing known";
}

std::string status_word(const Verdict& v) {
    if (!v.findings.empty()) return to_string(v.status);
    return v.blind.empty() ? "ok" : "unknown";
}

}  // namespace iodiag
