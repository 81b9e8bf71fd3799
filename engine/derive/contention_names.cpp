// The name people use for a neighbor's cgroup (a systemd unit, a container,
// a pod), where the evidence has one (cgroup.name and cgroup.kind of the
// label, docs/cgroup-names.md), as facts of their own next to each neighbor's
// cgroup fact. A rule's text shows a *_cgroup fact by its name and path
// already; the name alone is what a finding's culprit says (a Prometheus
// label: bounded, no path), and the kind is cited as evidence.
#include "engine/derive/contention.hpp"

#include "engine/evidence/cgroup_labels.hpp"

namespace iodiag::derive {

namespace {

// prefix.neighbor_cgroup -> prefix.neighbor_cgroup_name / _kind, same labels.
constexpr const char* kNeighborPrefixes[] = {"device", "cpu", "journal"};

}  // namespace

void add_neighbor_cgroup_names(Evidence& ev) {
    std::vector<Fact> found;
    for (const auto& f : ev.facts)
        for (const char* p : kNeighborPrefixes)
            if (f.name == std::string(p) + ".neighbor_cgroup") found.push_back(f);
    for (const auto& f : found) {
        const auto n = find_cgroup_name(ev, f.value);
        if (!n) continue;
        const std::string prefix = f.name.substr(0, f.name.size() - std::string(".neighbor_cgroup").size());
        const std::string from = " of " + f.value + " (" + n->provenance.source + ")";
        ev.add_fact(prefix + ".neighbor_cgroup_name", f.labels, n->name, derived("cgroup.name" + from));
        if (!n->kind.empty())
            ev.add_fact(prefix + ".neighbor_cgroup_kind", f.labels, n->kind, derived("cgroup.kind" + from));
    }
}

std::vector<MetricSpec> neighbor_name_specs() {
    using K = MetricSpec::Kind;
    std::vector<MetricSpec> specs;
    const struct { const char* prefix; std::string layer; const char* key; } parts[] = {
        {"device", layer::kDevice, "device"}, {"cpu", layer::kCpu, ""}, {"journal", layer::kJournal, ""}};
    for (const auto& p : parts) {
        specs.push_back({std::string(p.prefix) + ".neighbor_cgroup_name", K::Fact, "", p.layer, p.key,
                         "the name people use for the neighbor's cgroup (systemd unit, container, pod), where known"});
        specs.push_back({std::string(p.prefix) + ".neighbor_cgroup_kind", K::Fact, "", p.layer, p.key,
                         "what the neighbor's cgroup is (systemd-unit, docker-container, k8s-pod, ...), where known"});
    }
    return specs;
}

}  // namespace iodiag::derive
