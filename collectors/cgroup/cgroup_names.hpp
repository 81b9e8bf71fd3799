// The names people use for the cgroups in the evidence (docs/cgroup-names.md).
//
// At the end of collection, for every distinct cgroup label value in the
// evidence (engine/evidence/cgroup_labels.hpp), add_cgroup_names() adds
//   cgroup.name {cgroup: <the label value>} = e.g. "postgresql@15-main.service",
//                "docker container web 3f4a5b6c7d8e", "burstable pod shop/web-7d4b9 container nginx"
//   cgroup.kind {cgroup: <the label value>} = systemd-unit | systemd-slice | systemd-scope |
//                docker-container | containerd-container | crio-container | k8s-pod |
//                k8s-container | plain
// from the path's shape (cgroup_path_shape.hpp) and what the host's runtime
// and kubelet state directories say (container_state.hpp), so that a replayed
// bundle shows the names the host had.
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

namespace cgroup {

struct Naming {
    std::string name;
    std::string kind;
    Provenance provenance;
};

// The name of one cgroup label. With an empty host_root, from the path alone;
// else the runtimes' and the kubelet's state under host_root is read too.
Naming name_cgroup(const std::string& label, const std::string& host_root);

}  // namespace cgroup

// cgroup.name and cgroup.kind for every cgroup label in the evidence that has
// none yet; host state is read under `root`.
void add_cgroup_names(Evidence& ev, const std::string& root);

std::vector<MetricSpec> cgroup_name_specs();

}  // namespace iodiag
