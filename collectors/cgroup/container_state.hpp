// What the host already records about a container or a pod, read from the
// state directories of the runtimes and the kubelet (no daemon asked, no
// socket opened): the names people use for what a cgroup holds.
//
//   Docker      <data-root>/containers/<id>/config.v2.json  "Name", Config.Labels
//               (data-root from /etc/docker/daemon.json, else /var/lib/docker)
//   containerd  /run/containerd/io.containerd.runtime.v2.task/<namespace>/<id>/config.json
//               (the OCI bundle: annotations io.kubernetes.cri.*, nerdctl/name)
//   CRI-O       /run/containers/storage/overlay-containers/<id>/userdata/config.json
//               (and under /var/lib/containers: annotations io.kubernetes.*)
//   kubelet     /var/lib/kubelet/pods/<uid>/etc-hosts (the pod's hostname),
//               volumes/kubernetes.io~projected/*/namespace, containers/<name>/
//
// Every path is taken under a root prefix ("/" live, a fixture tree in tests).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace iodiag::cgroup {

struct ContainerState {
    std::string runtime;          // whose state holds it: docker, containerd, cri-o
    std::string name;             // the container's name ("web"; a Kubernetes container's name)
    std::string pod_name;         // Kubernetes: the pod's name and namespace, where the runtime keeps them
    std::string pod_namespace;
    bool sandbox = false;         // a pod's sandbox (pause) container
    std::string source;           // the file read and the fields taken
};

// Container `id` (64 hex) in the runtimes' state, `runtime_hint`'s first
// (the runtime the cgroup path names, or "" for all in turn).
std::optional<ContainerState> find_container_state(const std::string& root, const std::string& id,
                                                   const std::string& runtime_hint);

struct PodState {
    std::string name;                     // the pod's hostname (its name unless its spec sets one)
    std::string pod_namespace;            // from the service-account volume or the hostname's FQDN
    std::vector<std::string> containers;  // containers/<name>/ directories (not the sandbox)
    std::string source;
};

// Pod `uid` in the kubelet's pod directory, nullopt when it has none.
std::optional<PodState> find_pod_state(const std::string& root, const std::string& uid);

// The login name of `uid` from /etc/passwd, "" when it has none.
std::string find_user_name(const std::string& root, const std::string& uid);

}  // namespace iodiag::cgroup
