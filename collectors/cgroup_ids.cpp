#include "collectors/cgroup_ids.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <sstream>

#include "collectors/text_file.hpp"

namespace iodiag {

namespace fs = std::filesystem;

CgroupIdNames::CgroupIdNames(std::string root) : root_(std::move(root)) {}

std::map<uint64_t, std::string> CgroupIdNames::scan(const std::string& mount_dir) {
    std::map<uint64_t, std::string> out;
    if (mount_dir.empty()) return out;
    struct stat st {};
    if (stat(mount_dir.c_str(), &st) == 0) out[st.st_ino] = "/";
    std::error_code ec;
    fs::recursive_directory_iterator it(mount_dir, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        if (!it->is_directory(ec)) continue;
        if (stat(it->path().c_str(), &st) != 0) continue;
        out[st.st_ino] = "/" + fs::relative(it->path(), mount_dir, ec).string();
    }
    return out;
}

void CgroupIdNames::ensure_scanned() {
    if (scanned_) return;
    scanned_ = true;
    // /proc/self/mounts: "cgroup2 /sys/fs/cgroup/unified cgroup2 ..." and
    // "cgroup /sys/fs/cgroup/memory cgroup rw,...,memory 0 0"
    auto text = try_read_text_file(under_root(root_, "/proc/self/mounts"));
    if (!text) return;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
        auto f = split_ws(line);
        if (f.size() < 4) continue;
        if (f[2] == "cgroup2" && v2_mount_.empty()) v2_mount_ = under_root(root_, f[1]);
        if (f[2] == "cgroup") {
            std::istringstream opts(f[3]);
            std::string o;
            while (std::getline(opts, o, ',')) {
                if (o == "memory" && memory_mount_.empty()) memory_mount_ = under_root(root_, f[1]);
                if (o == "blkio" && blkio_mount_.empty()) blkio_mount_ = under_root(root_, f[1]);
            }
        }
    }
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
    const std::string mem = memcg_id ? v1_memory_path(memcg_id) : "";
    const std::string blk = blkio_id ? v1_blkio_path(blkio_id) : "";
    const std::string v2 = v2_id ? v2_path(v2_id) : "";
    std::string v1;
    if (!mem.empty() && mem != "/") v1 = "memory:" + mem;
    if (!blk.empty() && blk != "/") v1 += (v1.empty() ? "" : ",") + std::string("blkio:") + blk;
    if (!v1.empty()) return v1;
    if (!v2.empty()) return v2;
    if (!mem.empty() || !blk.empty()) return "/";
    return "cgroup-id:" + std::to_string(v2_id);
}

}  // namespace iodiag
