#include "collectors/cgroup/container_state.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "collectors/cgroup/cgroup_path_shape.hpp"
#include "collectors/text_file.hpp"

namespace iodiag::cgroup {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A JSON file, or a discarded value when it is missing or not JSON: state a
// runtime is writing (or a file of another version) names nothing, it does
// not fail the collection.
json read_json(const std::string& path) {
    const auto text = try_read_text_file(path);
    if (!text) return json(json::value_t::discarded);
    return json::parse(*text, nullptr, false);
}

std::string string_at(const json& j, const std::string& key) {
    if (!j.is_object()) return "";
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& object_at(const json& j, const std::string& key) {
    static const json kEmpty = json::object();
    if (!j.is_object()) return kEmpty;
    const auto it = j.find(key);
    return it != j.end() && it->is_object() ? *it : kEmpty;
}

// Entry names of a directory, none when it cannot be read (never throws).
std::vector<std::string> entries(const std::string& dir, bool directories_only = false) {
    std::vector<std::string> out;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec))
        if (!directories_only || it->is_directory(ec)) out.push_back(it->path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

std::string docker_data_root(const std::string& root) {
    const json daemon = read_json(under_root(root, "/etc/docker/daemon.json"));
    for (const char* key : {"data-root", "graph"})
        if (std::string dir = string_at(daemon, key); !dir.empty() && dir.front() == '/') return dir;
    return "/var/lib/docker";
}

std::optional<ContainerState> docker_state(const std::string& root, const std::string& id) {
    const std::string path = docker_data_root(root) + "/containers/" + id + "/config.v2.json";
    const json j = read_json(under_root(root, path));
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    ContainerState s;
    s.runtime = runtime::kDocker;
    s.name = string_at(j, "Name");
    if (!s.name.empty() && s.name.front() == '/') s.name.erase(0, 1);   // Docker keeps "/web"
    s.source = path + " (Name";
    // Kubernetes through dockershim / cri-dockerd labels its containers.
    const json& labels = object_at(object_at(j, "Config"), "Labels");
    if (std::string k8s = string_at(labels, "io.kubernetes.container.name"); !k8s.empty()) s.name = k8s;
    s.pod_name = string_at(labels, "io.kubernetes.pod.name");
    s.pod_namespace = string_at(labels, "io.kubernetes.pod.namespace");
    s.sandbox = string_at(labels, "io.kubernetes.docker.type") == "podsandbox";
    if (!s.pod_name.empty()) s.source += ", Config.Labels io.kubernetes.*";
    s.source += ")";
    return s;
}

// An OCI bundle's config.json (containerd's tasks, CRI-O's containers): the
// runtime's annotations name the container and its pod.
struct AnnotationKeys {
    const char* runtime;
    std::vector<const char*> name;   // the first one set
    const char* pod_name;
    const char* pod_namespace;
    const char* type;                // "sandbox" for a pod's pause container
};

const AnnotationKeys kContainerdKeys{runtime::kContainerd,
                                     {"io.kubernetes.cri.container-name", "nerdctl/name"},
                                     "io.kubernetes.cri.sandbox-name",
                                     "io.kubernetes.cri.sandbox-namespace",
                                     "io.kubernetes.cri.container-type"};
const AnnotationKeys kCrioKeys{runtime::kCrio,
                               {"io.kubernetes.container.name"},
                               "io.kubernetes.pod.name",
                               "io.kubernetes.pod.namespace",
                               "io.kubernetes.cri-o.ContainerType"};

std::optional<ContainerState> oci_bundle_state(const std::string& root, const std::string& path,
                                               const AnnotationKeys& keys) {
    const json j = read_json(under_root(root, path));
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    const json& a = object_at(j, "annotations");
    ContainerState s;
    s.runtime = keys.runtime;
    for (const char* k : keys.name)
        if (s.name.empty()) s.name = string_at(a, k);
    s.pod_name = string_at(a, keys.pod_name);
    s.pod_namespace = string_at(a, keys.pod_namespace);
    s.sandbox = string_at(a, keys.type) == "sandbox";
    s.source = path + " (annotations)";
    return s;
}

// containerd keeps each running task's OCI bundle per namespace (k8s.io for
// the CRI plugin, moby for Docker, default for ctr and nerdctl).
std::optional<ContainerState> containerd_state(const std::string& root, const std::string& id) {
    for (const char* tasks : {"/run/containerd/io.containerd.runtime.v2.task", "/run/containerd/io.containerd.runtime.v1.linux"})
        for (const auto& ns : entries(under_root(root, tasks)))
            if (auto s = oci_bundle_state(root, std::string(tasks) + "/" + ns + "/" + id + "/config.json", kContainerdKeys))
                return s;
    return std::nullopt;
}

std::optional<ContainerState> crio_state(const std::string& root, const std::string& id) {
    for (const char* store : {"/run/containers/storage", "/var/lib/containers/storage"})
        if (auto s = oci_bundle_state(root, std::string(store) + "/overlay-containers/" + id + "/userdata/config.json",
                                      kCrioKeys))
            return s;
    return std::nullopt;
}

// The kubelet's etc-hosts of a pod with its own network: a header line, the
// localhost lines, then the pod's "IP [FQDN] hostname" line, then any
// HostAliases. A host-network pod's file is the host's (another header).
void parse_etc_hosts(const std::string& text, PodState& s) {
    size_t i = 0;
    bool first = true;
    while (i < text.size()) {
        const size_t j = std::min(text.find('\n', i), text.size());
        const std::string line = text.substr(i, j - i);
        i = j + 1;
        if (first) {
            if (line != "# Kubernetes-managed hosts file.") return;
            first = false;
            continue;
        }
        if (line.rfind("# Entries added by HostAliases", 0) == 0) return;
        const auto fields = split_ws(line);
        if (fields.size() < 2 || fields[0].front() == '#') continue;
        const std::string& host = fields.back();
        if (host == "localhost" || host.rfind("ip6-", 0) == 0) continue;
        s.name = host;
        // hostname.subdomain.namespace.svc.cluster-domain
        if (fields.size() >= 3) {
            const std::string& fqdn = fields[1];
            const size_t svc = fqdn.find(".svc.");
            if (svc != std::string::npos) {
                const size_t dot = fqdn.rfind('.', svc - 1);
                if (dot != std::string::npos) s.pod_namespace = fqdn.substr(dot + 1, svc - dot - 1);
            }
        }
    }
}

bool is_pod_uid_text(const std::string& uid) {
    return uid.size() == 36 && std::all_of(uid.begin(), uid.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
           });
}

}  // namespace

std::optional<ContainerState> find_container_state(const std::string& root, const std::string& id,
                                                   const std::string& runtime_hint) {
    if (!is_container_id(id)) return std::nullopt;
    using Lookup = std::function<std::optional<ContainerState>(const std::string&, const std::string&)>;
    std::vector<std::pair<std::string, Lookup>> order = {
        {runtime::kDocker, docker_state}, {runtime::kContainerd, containerd_state}, {runtime::kCrio, crio_state}};
    std::stable_partition(order.begin(), order.end(), [&](const auto& o) { return o.first == runtime_hint; });
    for (const auto& [_, lookup] : order)
        if (auto s = lookup(root, id)) return s;
    return std::nullopt;
}

std::optional<PodState> find_pod_state(const std::string& root, const std::string& uid) {
    if (!is_pod_uid_text(uid)) return std::nullopt;
    const std::string dir = "/var/lib/kubelet/pods/" + uid;
    std::error_code ec;
    if (!fs::is_directory(under_root(root, dir), ec)) return std::nullopt;
    PodState s;
    std::vector<std::string> read;
    if (const auto hosts = try_read_text_file(under_root(root, dir + "/etc-hosts"))) {
        parse_etc_hosts(*hosts, s);
        if (!s.name.empty()) read.push_back(dir + "/etc-hosts (hostname)");
    }
    // The service-account token volume carries the pod's namespace.
    const std::string projected = dir + "/volumes/kubernetes.io~projected/";
    for (const auto& v : entries(under_root(root, projected))) {
        const auto ns = try_read_first_line(under_root(root, projected + v + "/namespace"));
        if (!ns || ns->empty()) continue;
        s.pod_namespace = *ns;
        read.push_back(projected + v + "/namespace");
        break;
    }
    s.containers = entries(under_root(root, dir + "/containers"), true);
    if (!s.containers.empty()) read.push_back(dir + "/containers/");
    for (const auto& r : read) s.source += (s.source.empty() ? "" : ", ") + r;
    if (s.source.empty()) s.source = dir;
    return s;
}

std::string find_user_name(const std::string& root, const std::string& uid) {
    const auto text = try_read_text_file(under_root(root, "/etc/passwd"));
    if (!text || uid.empty()) return "";
    size_t i = 0;
    while (i < text->size()) {
        const size_t j = std::min(text->find('\n', i), text->size());
        const std::string line = text->substr(i, j - i);
        i = j + 1;
        // name:password:uid:...
        const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1),
                     c = b == std::string::npos ? b : line.find(':', b + 1);
        if (c != std::string::npos && line.compare(b + 1, c - b - 1, uid) == 0)
            return line.substr(0, a);
    }
    return "";
}

}  // namespace iodiag::cgroup
