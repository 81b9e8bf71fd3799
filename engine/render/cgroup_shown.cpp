#include "engine/render/cgroup_shown.hpp"

namespace iodiag {

std::string named(const Verdict& v, const std::string& maybe_cgroup) {
    const auto it = v.cgroup_names.find(maybe_cgroup);
    return it == v.cgroup_names.end() ? maybe_cgroup : name_with_path(it->second.name, maybe_cgroup);
}

Labels named_labels(const Verdict& v, const Labels& labels) {
    Labels out = labels;
    if (auto it = out.find(kCgroupLabel); it != out.end()) it->second = named(v, it->second);
    return out;
}

std::string name_only(const Verdict& v, const std::string& maybe_cgroup) {
    const auto it = v.cgroup_names.find(maybe_cgroup);
    return it == v.cgroup_names.end() || it->second.name.empty() ? maybe_cgroup : it->second.name;
}

}  // namespace iodiag
