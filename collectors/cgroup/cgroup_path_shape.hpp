// What a cgroup's path says runs in it, from the path alone (no host lookup):
// the layouts systemd, Docker, containerd, CRI-O and the kubelet create, for
// cgroup v1 (one hierarchy per controller, the same path in each) and v2.
//
//   /system.slice/postgresql@15-main.service          systemd unit
//   /user.slice/user-1000.slice/session-3.scope       systemd scope (a login session)
//   /docker/<64 hex>                                  Docker, cgroupfs driver
//   /system.slice/docker-<64 hex>.scope               Docker, systemd driver
//   /system.slice/cri-containerd-<64 hex>.scope       containerd's CRI plugin
//   /kubepods/burstable/pod<uid>/<64 hex>             kubelet, cgroupfs driver
//   /kubepods.slice/kubepods-besteffort.slice/
//     kubepods-besteffort-pod<uid, _ for ->.slice/crio-<64 hex>.scope   kubelet, systemd driver
//
// Deterministic: the same path always gives the same shape; the names a
// runtime's state adds are looked up at collection time (cgroup_names.hpp).
#pragma once

#include <string>

namespace iodiag::cgroup {

// The kinds of fact cgroup.kind.
namespace kind {
inline constexpr const char* kSystemdUnit = "systemd-unit";
inline constexpr const char* kSystemdSlice = "systemd-slice";
inline constexpr const char* kSystemdScope = "systemd-scope";
inline constexpr const char* kDocker = "docker-container";
inline constexpr const char* kContainerd = "containerd-container";
inline constexpr const char* kCrio = "crio-container";
inline constexpr const char* kPod = "k8s-pod";
inline constexpr const char* kPodContainer = "k8s-container";
inline constexpr const char* kPlain = "plain";
}  // namespace kind

// The container runtimes a path can name.
namespace runtime {
inline constexpr const char* kDocker = "docker";
inline constexpr const char* kContainerd = "containerd";
inline constexpr const char* kCrio = "cri-o";
}  // namespace runtime

struct PathShape {
    std::string kind = kind::kPlain;
    std::string path;           // the path parsed
    std::string what;           // the shape recognised, in words, for the provenance
    std::string leaf;           // the last component ("" for the root)
    std::string unit;           // systemd: the innermost unit, scope or slice
    std::string uid;            // systemd: N of an enclosing user-N.slice
    std::string runtime;        // runtime::*, when the path names it
    std::string container_id;   // 64 hex digits
    bool monitor = false;       // CRI-O's conmon scope (the container's monitor, not the container)
    std::string pod_uid;        // Kubernetes pod uid, with dashes
    std::string qos;            // Kubernetes QoS class: guaranteed, burstable, besteffort
    std::string below;          // the path below the unit, container or pod named ("" usually)
};

// The path a cgroup label stands for. The syscall collector names a v1 task's
// groups "memory:/a,blkio:/b": the most telling controller's path is taken,
// blkio (io) first, then memory, then cpu, then any other; a v2 or cgroup
// collector label ("/a/b") is its own path; anything else (the syscall
// collector's "cgroup-id:N" for a group that did not resolve) is returned as
// it is.
std::string telling_path(const std::string& label);

PathShape parse_path_shape(const std::string& path);

// True for 64 lower-case hex digits (a Docker, containerd or CRI-O container id).
bool is_container_id(const std::string& s);

}  // namespace iodiag::cgroup
