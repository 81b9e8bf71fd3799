// cgroups joined to the time their tasks lost and to the devices their limits
// slow.
#include "engine/derive/derive_steps.hpp"

#include <map>

namespace iodiag::derive {

namespace {

// "memory:/a,blkio:/b" (the syscall collector's name for a v1 task's groups)
// -> the path in the given controller's hierarchy; a v2 path stays as it is.
std::string cgroup_path_for(const std::string& name, const std::string& controller) {
    if (name.empty() || name[0] == '/') return name;
    for (size_t b = 0, e; b < name.size(); b = e + 1) {
        e = name.find(',', b);
        if (e == std::string::npos) e = name.size();
        const std::string part = name.substr(b, e - b);
        const size_t colon = part.find(':');
        if (colon != std::string::npos && part.substr(0, colon) == controller) return part.substr(colon + 1);
    }
    return "";
}

}  // namespace

// One cgroup name across collectors: the share of the slow syscalls' time spent
// by the tasks of each cgroup the cgroup collector reports (by its I/O
// controller's path on v1, or its v2 path), so a cgroup's limit and the time
// its tasks lost meet in one place.
void add_cgroup_join(Evidence& ev) {
    std::map<std::string, double> slow_us;
    double all_slow = 0;
    for (const auto& m : ev.metrics) {
        if (m.name != "syscall.cgroup.slow_time_us") continue;
        const auto it = m.labels.find("cgroup");
        if (it == m.labels.end()) continue;
        all_slow += m.value;
        std::set<std::string> paths{cgroup_path_for(it->second, "blkio"), cgroup_path_for(it->second, "io"),
                                    cgroup_path_for(it->second, "memory")};
        for (const auto& p : paths)
            if (!p.empty()) slow_us[p] += m.value;
    }
    if (all_slow <= 0) return;
    for (const auto& cg : ev.instances("cgroup")) {
        const auto it = slow_us.find(cg);
        ev.add_metric("cgroup.slow_share_pct", {{"cgroup", cg}}, it == slow_us.end() ? 0 : 100.0 * it->second / all_slow,
                      "pct",
                      derived("syscall.cgroup.slow_time_us of the tasks in this group (v1: its blkio/memory path "
                              "in the syscall collector's 'controller:/path' name) / all slow-set time"));
    }
}

// A cgroup I/O limit on the disk under a stacked device: the loop worker issues
// the backing I/O on behalf of the submitter's group, so a limit on the lower
// disk slows the upper device. Per upper device: the most used such limit.
void add_limits_below(Evidence& ev) {
    const std::vector<std::string> cgroups = ev.instances("cgroup");   // once: not per device
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Fact* bottom = ev.find_fact("device.bottom_device", l);
        if (!bottom) continue;
        double best = -1;
        std::string best_cg;
        for (const auto& cg : cgroups) {
            const Labels cl{{"cgroup", cg}};
            const Fact* dev = ev.find_fact("cgroup.io_limit_device", cl);
            const Metric* util = ev.find_metric("cgroup.io_limit_utilisation_pct", cl);
            if (!dev || !util) continue;
            // "vda (254:0)": the limit's device by name.
            const Fact* chain = ev.find_fact("device.stack_chain", l);
            const std::string name = dev->value.substr(0, dev->value.find(' '));
            if (!chain || chain->value.find(" " + name) == std::string::npos) continue;
            if (util->value > best) best = util->value, best_cg = cg;
        }
        if (best < 0) continue;
        ev.add_metric("device.lower_limit_utilisation_pct", l, best, "pct",
                      derived("cgroup.io_limit_utilisation_pct of cgroup " + best_cg +
                              ", whose limit is on a device under this one (device.stack_chain)"));
        ev.add_fact("device.lower_limit_cgroup", l, best_cg, derived("cgroup with that limit"));
        if (const Fact* s = ev.find_fact("cgroup.io_limit_setting", {{"cgroup", best_cg}}))
            ev.add_fact("device.lower_limit_setting", l, s->value, s->provenance);
    }
}

std::vector<MetricSpec> cgroup_specs() {
    using K = MetricSpec::Kind;
    return {
        {"device.lower_limit_utilisation_pct", K::Metric, "pct", layer::kCgroup, "device",
         "use of a cgroup I/O limit set on a device under this one"},
        {"device.lower_limit_cgroup", K::Fact, "", layer::kCgroup, "device", "the cgroup with that limit"},
        {"device.lower_limit_setting", K::Fact, "", layer::kCgroup, "device", "that limit's setting"},
        {"cgroup.slow_share_pct", K::Metric, "pct", layer::kCgroup, "cgroup",
         "share of the slow syscalls' time spent by this group's tasks"},
    };
}

}  // namespace iodiag::derive
