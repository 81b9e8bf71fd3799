#include "collectors/cgroup/cgroup_names.hpp"

#include <map>
#include <optional>

#include "collectors/cgroup/cgroup_path_shape.hpp"
#include "collectors/cgroup/container_state.hpp"
#include "engine/evidence/cgroup_labels.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace cgroup {

namespace {

std::string short_id(const std::string& id) { return id.substr(0, 12); }

// What the runtimes and the kubelet recorded, where the host was asked.
struct HostSays {
    std::optional<ContainerState> container;
    std::optional<PodState> pod;
    std::string user;
    std::vector<std::string> sources;
};

HostSays ask_host(const PathShape& s, const std::string& root) {
    HostSays h;
    if (root.empty()) return h;
    if (!s.container_id.empty()) {
        h.container = find_container_state(root, s.container_id, s.runtime);
        if (h.container) h.sources.push_back(h.container->source);
    }
    if (!s.pod_uid.empty()) {
        h.pod = find_pod_state(root, s.pod_uid);
        if (h.pod) h.sources.push_back(h.pod->source);
    }
    if (!s.uid.empty()) {
        h.user = find_user_name(root, s.uid);
        if (!h.user.empty()) h.sources.push_back("/etc/passwd (uid " + s.uid + ")");
    }
    return h;
}

// "shop/web-7d4b9", "web-7d4b9" or the uid: the pod as kubectl names it,
// the CRI's record first (exact), then the kubelet's directory.
std::string pod_ref(const PathShape& s, const HostSays& h) {
    std::string name, ns;
    if (h.container && !h.container->pod_name.empty()) name = h.container->pod_name, ns = h.container->pod_namespace;
    else if (h.pod && !h.pod->name.empty()) name = h.pod->name, ns = h.pod->pod_namespace;
    if (name.empty()) return s.pod_uid;
    return ns.empty() ? name : ns + "/" + name;
}

// The container of a pod: its name from the runtime, else the pod's only
// container directory (the sandbox has none, so a monitor or sandbox shape
// never takes it), else the short id.
std::string pod_container(const PathShape& s, const HostSays& h) {
    const std::string id = short_id(s.container_id);
    if (s.monitor) return "conmon of container " + id;
    if (h.container && h.container->sandbox) return "sandbox " + id;
    if (h.container && !h.container->name.empty()) return "container " + h.container->name;
    if (!h.container && h.pod && h.pod->containers.size() == 1) return "container " + h.pod->containers.front();
    return "container " + id;
}

std::string runtime_kind(const std::string& runtime) {
    if (runtime == runtime::kDocker) return kind::kDocker;
    if (runtime == runtime::kContainerd) return kind::kContainerd;
    if (runtime == runtime::kCrio) return kind::kCrio;
    return kind::kPlain;
}

}  // namespace

Naming name_cgroup(const std::string& label, const std::string& host_root) {
    const std::string path = telling_path(label);
    const PathShape s = parse_path_shape(path);
    if (path.empty() || path.front() != '/') {
        // The syscall collector's "cgroup-id:N": the group was gone before
        // its id could be looked up.
        const bool id = label.rfind("cgroup-id:", 0) == 0;
        return {id ? "unresolved cgroup id " + label.substr(10) : label, kind::kPlain,
                {"derived", id ? "the cgroup id did not resolve to a path in the mounted hierarchies"
                               : "not a cgroup path: shown as it is"}};
    }
    const HostSays h = ask_host(s, host_root);
    Naming n;
    n.kind = s.kind;
    if (s.kind == kind::kPod) {
        n.name = s.qos + " pod " + pod_ref(s, h);
    } else if (s.kind == kind::kPodContainer) {
        n.name = s.qos + " pod " + pod_ref(s, h) + " " + pod_container(s, h);
    } else if (!s.container_id.empty()) {
        // A container outside Kubernetes; a bare id's runtime is whichever state holds it.
        const std::string runtime = h.container ? h.container->runtime : s.runtime;
        n.kind = runtime_kind(runtime);
        const std::string id = short_id(s.container_id);
        const std::string named = h.container && !h.container->name.empty() ? h.container->name + " " : "";
        n.name = s.monitor ? runtime + " conmon of container " + id
                           : (runtime.empty() ? "" : runtime + " ") + "container " + named + id;
    } else if (!s.unit.empty()) {
        n.name = s.unit;
        if (!s.uid.empty()) n.name += " of user " + (h.user.empty() ? s.uid : h.user);
    } else {
        n.name = s.leaf.empty() ? "root cgroup" : s.leaf;
    }
    if (!s.below.empty()) n.name += " " + s.below;
    std::string source = "cgroup path " + path + ": " + s.what;
    for (const auto& from : h.sources) source += "; " + from;
    n.provenance = {h.sources.empty() ? "derived" : "file", source};
    return n;
}

}  // namespace cgroup

void add_cgroup_names(Evidence& ev, const std::string& root) {
    std::map<std::string, cgroup::Naming> by_path;   // a v1 label and the cgroup collector's share a path
    for (const auto& label : cgroup_labels(ev)) {
        if (find_cgroup_name(ev, label)) continue;
        const std::string path = cgroup::telling_path(label);
        auto it = by_path.find(path);
        if (it == by_path.end())
            it = by_path.insert_or_assign(path, cgroup::name_cgroup(label, root)).first;
        const Labels l{{kCgroupLabel, label}};
        ev.add_fact(kCgroupNameFact, l, it->second.name, it->second.provenance);
        ev.add_fact(kCgroupKindFact, l, it->second.kind, it->second.provenance);
    }
}

std::vector<MetricSpec> cgroup_name_specs() {
    using K = MetricSpec::Kind;
    return {
        {kCgroupNameFact, K::Fact, "", layer::kCgroup, kCgroupLabel,
         "the name people use for what runs in the cgroup: systemd unit, container (runtime, name, short id), "
         "Kubernetes pod (QoS class, namespace/name or uid) and container; for a plain path its last component"},
        {kCgroupKindFact, K::Fact, "", layer::kCgroup, kCgroupLabel,
         "what the cgroup holds: systemd-unit, systemd-slice, systemd-scope, docker-container, "
         "containerd-container, crio-container, k8s-pod, k8s-container or plain"},
    };
}

}  // namespace iodiag
