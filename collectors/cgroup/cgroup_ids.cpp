#include "collectors/cgroup/cgroup_ids.hpp"

#include <sys/stat.h>

#include "collectors/cgroup/cgroup_hierarchy.hpp"
#include "collectors/cgroup/cgroup_label.hpp"
#include "collectors/text_file.hpp"

namespace iodiag {

CgroupIdNames::CgroupIdNames(std::string root) : root_(std::move(root)) {}

std::map<uint64_t, std::string> CgroupIdNames::scan(const std::string& mount_dir) {
    std::map<uint64_t, std::string> out;
    if (mount_dir.empty()) return out;
    // The same depth-limited walk as the cgroup collector's.
    for (const auto& group : cgroup::list_groups(mount_dir)) {
        struct stat st {};
        if (stat((group == "/" ? mount_dir : mount_dir + group).c_str(), &st) == 0) out[st.st_ino] = group;
    }
    return out;
}

void CgroupIdNames::ensure_scanned() {
    if (scanned_) return;
    scanned_ = true;
    auto text = try_read_text_file(under_root(root_, "/proc/self/mounts"));
    if (!text) return;
    const cgroup::Mounts m = cgroup::parse_mounts(*text);
    auto mount = [&](const std::string& dir) { return dir.empty() ? "" : under_root(root_, dir); };
    v2_mount_ = mount(m.v2);
    memory_mount_ = m.has_v1("memory") ? mount(m.v1.at("memory")) : "";
    blkio_mount_ = m.has_v1("blkio") ? mount(m.v1.at("blkio")) : "";
    v2_ = scan(v2_mount_);
    memory_ = scan(memory_mount_);
    blkio_ = scan(blkio_mount_);
}

std::string CgroupIdNames::v2_path(uint64_t id) {
    ensure_scanned();
    auto it = v2_.find(id);
    return it == v2_.end() ? "" : it->second;
}

std::string CgroupIdNames::v1_memory_path(uint64_t id) {
    ensure_scanned();
    auto it = memory_.find(id);
    return it == memory_.end() ? "" : it->second;
}

std::string CgroupIdNames::v1_blkio_path(uint64_t id) {
    ensure_scanned();
    auto it = blkio_.find(id);
    return it == blkio_.end() ? "" : it->second;
}

std::string CgroupIdNames::label(uint64_t v2_id, uint64_t memcg_id, uint64_t blkio_id) {
    const std::string l = cgroup::label_of(memcg_id ? v1_memory_path(memcg_id) : "",
                                           blkio_id ? v1_blkio_path(blkio_id) : "", v2_id ? v2_path(v2_id) : "");
    return l.empty() ? "cgroup-id:" + std::to_string(v2_id) : l;
}

bool CgroupIdNames::blkio_on_v1() {
    ensure_scanned();
    return !blkio_mount_.empty();
}

CgroupIdNames::Ids CgroupIdNames::ids_of(int pid) {
    ensure_scanned();
    const cgroup::ProcessCgroups c = cgroup::read_process_cgroups(root_, pid);
    auto id = [](const std::string& mount, const std::string& path) -> uint64_t {
        struct stat st {};
        if (mount.empty() || path.empty()) return 0;
        return stat((path == "/" ? mount : mount + path).c_str(), &st) == 0 ? st.st_ino : 0;
    };
    Ids ids;
    ids.v2 = id(v2_mount_, c.v2);
    ids.memory = id(memory_mount_, c.memory_v1);
    ids.blkio = id(blkio_mount_, c.blkio_v1);
    ids.io = blkio_mount_.empty() ? ids.v2 : ids.blkio;
    return ids;
}

std::string CgroupIdNames::blkcg_path(uint64_t id) {
    return blkio_on_v1() ? v1_blkio_path(id) : v2_path(id);
}

}  // namespace iodiag
