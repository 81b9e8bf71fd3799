#include "collectors/cgroup/cgroup_path_shape.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

namespace iodiag::cgroup {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::vector<std::string> components(const std::string& path) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i <= path.size()) {
        const size_t j = std::min(path.find('/', i), path.size());
        if (j > i) out.push_back(path.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

std::string join(const std::vector<std::string>& parts, size_t from) {
    std::string out;
    for (size_t i = from; i < parts.size(); ++i) out += "/" + parts[i];
    return out;
}

// Controllers' rank for telling_path: the I/O controller says most about
// whose I/O it is.
int controller_rank(const std::string& controllers) {
    int best = 3;
    size_t i = 0;
    while (i <= controllers.size()) {
        const size_t j = std::min(controllers.find(',', i), controllers.size());
        const std::string c = controllers.substr(i, j - i);
        if (c == "blkio" || c == "io") best = std::min(best, 0);
        else if (c == "memory") best = std::min(best, 1);
        else if (c == "cpu" || c == "cpuacct") best = std::min(best, 2);
        i = j + 1;
    }
    return best;
}

bool is_hex(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A pod uid as the kubelet writes it: 8-4-4-4-12 hex digits joined by `sep`
// ('-' in cgroupfs paths; '_' in systemd slice names, where '-' nests).
bool is_pod_uid(const std::string& s, char sep) {
    static constexpr std::array<size_t, 5> kGroups{8, 4, 4, 4, 12};
    size_t at = 0;
    for (size_t g = 0; g < kGroups.size(); ++g) {
        if (g > 0) {
            if (at >= s.size() || s[at] != sep) return false;
            ++at;
        }
        if (at + kGroups[g] > s.size() || !is_hex(s.substr(at, kGroups[g]))) return false;
        at += kGroups[g];
    }
    return at == s.size();
}

// A container's own cgroup directory: "<prefix>-<id>.scope" (systemd
// drivers), "crio-<id>" or a bare "<id>" (cgroupfs drivers).
struct ContainerDir {
    std::string runtime;   // "" when the directory does not say
    std::string id;
    bool monitor = false;
    std::string what;
};

std::optional<ContainerDir> container_dir(const std::string& c, const std::string& parent) {
    if (is_container_id(c))
        return ContainerDir{parent == "docker" ? runtime::kDocker : "", c, false,
                            parent == "docker" ? "/docker/<id> (Docker, cgroupfs driver)"
                                               : "a directory named by a 64-hex container id (cgroupfs driver)"};
    static const std::vector<std::pair<std::string, ContainerDir>> kScopes = {
        {"docker-", {runtime::kDocker, "", false, "docker-<id>.scope (Docker, systemd driver)"}},
        {"cri-containerd-", {runtime::kContainerd, "", false, "cri-containerd-<id>.scope (containerd CRI, systemd driver)"}},
        {"nerdctl-", {runtime::kContainerd, "", false, "nerdctl-<id>.scope (containerd, systemd driver)"}},
        {"crio-conmon-", {runtime::kCrio, "", true, "crio-conmon-<id>.scope (CRI-O's container monitor)"}},
        {"crio-", {runtime::kCrio, "", false, "crio-<id>.scope (CRI-O, systemd driver)"}},
    };
    for (const auto& [prefix, shape] : kScopes) {
        if (!starts_with(c, prefix)) continue;
        std::string rest = c.substr(prefix.size());
        if (ends_with(rest, ".scope")) rest.resize(rest.size() - 6);
        else if (prefix != "crio-") continue;   // only CRI-O's cgroupfs driver names a bare "crio-<id>"
        if (!is_container_id(rest)) continue;
        ContainerDir d = shape;
        d.id = rest;
        if (!ends_with(c, ".scope")) d.what = "crio-<id> (CRI-O, cgroupfs driver)";
        return d;
    }
    return std::nullopt;
}

// Kubernetes: the pod's directory under a kubepods ancestor, with its QoS.
struct PodDir {
    size_t index = 0;
    std::string uid, qos, what;
};

std::optional<PodDir> pod_dir(const std::vector<std::string>& parts) {
    bool under_kubepods = false;
    for (size_t i = 0; i < parts.size(); ++i) {
        const std::string& c = parts[i];
        // cgroupfs driver: .../kubepods[/burstable|/besteffort]/pod<uid>
        if (under_kubepods && starts_with(c, "pod") && is_pod_uid(c.substr(3), '-')) {
            const std::string& parent = parts[i - 1];
            const std::string qos = parent == "burstable" || parent == "besteffort" ? parent : "guaranteed";
            return PodDir{i, c.substr(3), qos, "kubepods/<qos>/pod<uid> (kubelet, cgroupfs driver)"};
        }
        if (c.find("kubepods") == std::string::npos) continue;
        under_kubepods = true;
        // systemd driver: kubepods[-burstable|-besteffort]-pod<uid with _>.slice
        const size_t pod = c.rfind("-pod");
        if (!ends_with(c, ".slice") || pod == std::string::npos) continue;
        std::string uid = c.substr(pod + 4, c.size() - 6 - (pod + 4));
        if (!is_pod_uid(uid, '_')) continue;
        std::replace(uid.begin(), uid.end(), '_', '-');
        const std::string qos = c.find("-burstable-pod") != std::string::npos    ? "burstable"
                                : c.find("-besteffort-pod") != std::string::npos ? "besteffort"
                                                                                   : "guaranteed";
        return PodDir{i, uid, qos, "kubepods-<qos>-pod<uid>.slice (kubelet, systemd driver)"};
    }
    return std::nullopt;
}

// systemd units that own a cgroup.
std::string systemd_kind(const std::string& c) {
    if (ends_with(c, ".slice")) return kind::kSystemdSlice;
    if (ends_with(c, ".scope")) return kind::kSystemdScope;
    for (const char* s : {".service", ".socket", ".mount", ".swap"})
        if (ends_with(c, s)) return kind::kSystemdUnit;
    return "";
}

// N of "user-N.slice".
std::string user_slice_uid(const std::string& c) {
    if (!starts_with(c, "user-") || !ends_with(c, ".slice")) return "";
    const std::string n = c.substr(5, c.size() - 5 - 6);
    return !n.empty() && std::all_of(n.begin(), n.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ? n : "";
}

}  // namespace

bool is_container_id(const std::string& s) { return s.size() == 64 && is_hex(s); }

std::string telling_path(const std::string& label) {
    if (label.empty() || label.front() == '/') return label;
    // "controllers:/path" entries joined by ','; a controller list itself may
    // hold commas ("cpu,cpuacct:/x"), so a token without ":/" belongs to the
    // next entry's controllers.
    std::string best, pending;
    int best_rank = 4;
    size_t i = 0;
    while (i <= label.size()) {
        const size_t j = std::min(label.find(',', i), label.size());
        const std::string token = label.substr(i, j - i);
        i = j + 1;
        const size_t colon = token.find(":/");
        if (colon == std::string::npos) {
            pending += (pending.empty() ? "" : ",") + token;
            continue;
        }
        const std::string controllers = (pending.empty() ? "" : pending + ",") + token.substr(0, colon);
        pending.clear();
        const int rank = controller_rank(controllers);
        if (rank < best_rank) best_rank = rank, best = token.substr(colon + 1);
    }
    return best.empty() ? label : best;
}

PathShape parse_path_shape(const std::string& path) {
    PathShape s;
    s.path = path;
    const auto parts = components(path);
    if (path.empty() || path.front() != '/') {
        s.what = "not a cgroup path";
        s.leaf = path;
        return s;
    }
    if (parts.empty()) {
        s.what = "the root cgroup";
        return s;
    }
    s.leaf = parts.back();
    for (const auto& c : parts)
        if (auto uid = user_slice_uid(c); !uid.empty()) s.uid = uid;

    if (auto pod = pod_dir(parts)) {
        s.pod_uid = pod->uid;
        s.qos = pod->qos;
        s.what = pod->what;
        s.kind = kind::kPod;
        s.below = join(parts, pod->index + 1);
        if (pod->index + 1 < parts.size())
            if (auto c = container_dir(parts[pod->index + 1], parts[pod->index])) {
                s.kind = kind::kPodContainer;
                s.runtime = c->runtime;
                s.container_id = c->id;
                s.monitor = c->monitor;
                s.what += ", container " + c->what;
                s.below = join(parts, pod->index + 2);
            }
        return s;
    }
    for (size_t i = 0; i < parts.size(); ++i)
        if (auto c = container_dir(parts[i], i > 0 ? parts[i - 1] : "")) {
            s.runtime = c->runtime;
            s.container_id = c->id;
            s.monitor = c->monitor;
            s.what = c->what;
            s.kind = c->runtime == runtime::kDocker       ? kind::kDocker
                     : c->runtime == runtime::kContainerd ? kind::kContainerd
                     : c->runtime == runtime::kCrio       ? kind::kCrio
                                                          : kind::kPlain;   // the runtime's state may tell
            s.below = join(parts, i + 1);
            return s;
        }
    // The innermost systemd unit: what is below it is the unit's own sub-groups.
    for (size_t i = parts.size(); i-- > 0;)
        if (auto k = systemd_kind(parts[i]); !k.empty()) {
            s.kind = k;
            s.unit = parts[i];
            s.below = join(parts, i + 1);
            s.what = "systemd " + std::string(k == kind::kSystemdSlice   ? "slice"
                                              : k == kind::kSystemdScope ? "scope"
                                                                         : "unit") +
                     " name";
            return s;
        }
    s.what = "a plain cgroup path (no unit, container or pod shape)";
    return s;
}

}  // namespace iodiag::cgroup
