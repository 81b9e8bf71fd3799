// The name people use for a neighbor's cgroup (a systemd unit, a container,
// a pod), where the evidence has one: cgroup.name {cgroup: LABEL} and
// cgroup.kind {cgroup: LABEL}, keyed by the cgroup label exactly as the
// evidence prints it, copied next to each neighbor's cgroup fact so a rule's
// text can say it in a conditional clause and still read without it.
#include "engine/derive/contention.hpp"

namespace iodiag::derive {

namespace {

// prefix.neighbor_cgroup -> prefix.neighbor_cgroup_name / _kind, same labels.
constexpr const char* kPrefixes[] = {"device", "cpu", "journal"};

}  // namespace

void add_neighbor_cgroup_names(Evidence& ev) {
    std::vector<Fact> found;
    for (const auto& f : ev.facts)
        for (const char* p : kPrefixes)
            if (f.name == std::string(p) + ".neighbor_cgroup") found.push_back(f);
    for (const auto& f : found) {
        const std::string prefix = f.name.substr(0, f.name.size() - std::string(".neighbor_cgroup").size());
        for (const char* what : {"name", "kind"})
            if (const Fact* n = ev.find_fact(std::string("cgroup.") + what, {{"cgroup", f.value}}))
                ev.add_fact(prefix + ".neighbor_cgroup_" + what, f.labels, n->value,
                            derived(std::string("cgroup.") + what + " of " + f.value + " (" + n->provenance.source + ")"));
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
