// The service, container or pod an application runs in, as people know it
// (issue 33: an application is its processes grouped into the unit, container
// or pod its cgroup names). Two programs of one unit are parts of one
// application when the engine decides whose data or load something was: a
// backup script's `cp` and the `sync` it runs after it are one job, and the
// sync waiting for the cp's data waits for its own.
#include "engine/derive/derive_steps.hpp"

#include <set>

#include "engine/evidence/application_label.hpp"
#include "engine/evidence/cgroup_labels.hpp"

namespace iodiag::derive {

namespace {

// The kinds of cgroup that hold one service (docs/cgroup-names.md). Not a
// slice (many services), a scope (a login session's unrelated programs, a
// transient unit) or a plain directory.
bool holds_one_service(const std::string& kind) {
    static const std::set<std::string> kinds = {"systemd-unit",         "docker-container", "containerd-container",
                                                "crio-container",       "k8s-pod",          "k8s-container"};
    return kinds.count(kind) > 0;
}

}  // namespace

std::string service_of_cgroup(const Evidence& ev, const std::string& cgroup) {
    if (cgroup.empty()) return "";
    const auto n = find_cgroup_name(ev, cgroup);
    return n && holds_one_service(n->kind) ? n->name : "";
}

std::string service_of_pid(const Evidence& ev, const std::string& pid) {
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.proc.time_us" && label_of(m.labels, "pid") == pid)
            return service_of_cgroup(ev, label_of(m.labels, "cgroup"));
    return "";
}

std::string top_writer_pid(const std::string& top_writer) {
    const size_t at = top_writer.rfind(" (pid ");
    if (at == std::string::npos || top_writer.back() != ')') return "";
    return top_writer.substr(at + 6, top_writer.size() - at - 7);
}

std::string service_of_app(const Evidence& ev, const std::string& app) {
    std::set<std::string> services;
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.proc.time_us" && application_label(m.labels) == app)
            services.insert(service_of_cgroup(ev, label_of(m.labels, "cgroup")));
    return services.size() == 1 ? *services.begin() : "";
}

}  // namespace iodiag::derive
