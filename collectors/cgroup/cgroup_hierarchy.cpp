#include "collectors/cgroup/cgroup_hierarchy.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "collectors/text_file.hpp"

#include <spdlog/spdlog.h>

namespace iodiag::cgroup {

namespace fs = std::filesystem;

namespace {

// /proc/mounts escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() &&
            std::isdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isdigit(static_cast<unsigned char>(s[i + 2])) &&
            std::isdigit(static_cast<unsigned char>(s[i + 3]))) {
            out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

// `rel` is dir's path below the mount point ("" at the top). Built by
// appending names, not with fs::relative (a realpath() per group, which
// thousands of groups turn into seconds).
void walk(const fs::path& dir, const std::string& rel, int depth, int max_depth, std::vector<std::string>& out) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (out.size() >= kMaxGroups) return;
        if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
        const std::string path = rel + "/" + e.path().filename().string();
        out.push_back(path);
        if (depth + 1 < max_depth) walk(e.path(), path, depth + 1, max_depth, out);
    }
}

// A mount point as the kernel prints it: absolute, without "." or ".."
// components or NUL bytes (anything else would lead a fixture root out of its
// tree, or a NUL cut the path short so that every level of the walk lists the
// same directory again).
bool plain_absolute(const std::string& dir) {
    if (dir.empty() || dir[0] != '/' || dir.find('\0') != std::string::npos) return false;
    for (const char* bad : {"/../", "/./"})
        if (dir.find(bad) != std::string::npos) return false;
    for (const char* end : {"/..", "/."})
        if (dir.size() >= std::strlen(end) && dir.compare(dir.size() - std::strlen(end), std::strlen(end), end) == 0)
            return false;
    return true;
}

}  // namespace

Mounts parse_mounts(const std::string& text) {
    Mounts m;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const auto f = split_ws(line);
        if (f.size() < 4) continue;
        const std::string& type = f[2];
        const std::string dir = unescape_octal(f[1]);
        if (!plain_absolute(dir)) continue;
        if (type == "cgroup2") {
            if (m.v2.empty()) m.v2 = dir;
        } else if (type == "cgroup") {
            std::istringstream opts(f[3]);
            std::string opt;
            while (std::getline(opts, opt, ','))
                if (opt == "blkio" || opt == "memory" || opt == "cpu" || opt == "cpuacct" ||
                    opt == "io")
                    m.v1.emplace(opt, dir);
        }
    }
    return m;
}

Mounts read_mounts(const std::string& root) {
    return parse_mounts(read_text_file(under_root(root, "/proc/mounts")));
}

std::vector<std::string> list_groups(const std::string& mount_dir, int max_depth) {
    std::vector<std::string> out{"/"};
    walk(fs::path(mount_dir), "", 0, max_depth, out);
    if (out.size() >= kMaxGroups)
        spdlog::warn("more than {} cgroups under {}: only the first {} found are read", kMaxGroups, mount_dir,
                     kMaxGroups);
    std::sort(out.begin(), out.end());
    return out;
}

void IdResolver::rescan() {
    by_id_.clear();
    scanned_ = true;
    for (const auto& rel : list_groups(dir_)) {
        const std::string full = rel == "/" ? dir_ : dir_ + rel;
        struct stat st {};
        if (::stat(full.c_str(), &st) == 0) by_id_[static_cast<uint64_t>(st.st_ino)] = rel;
    }
}

std::optional<std::string> IdResolver::path_of(uint64_t id) {
    if (!scanned_) rescan();
    auto it = by_id_.find(id);
    if (it == by_id_.end()) {
        rescan();   // a group created since the last scan
        it = by_id_.find(id);
        if (it == by_id_.end()) return std::nullopt;
    }
    return it->second;
}

std::optional<std::string> cgroup_path_for_id(uint64_t id) {
    static std::mutex mu;
    static std::optional<IdResolver> resolver;
    static bool tried = false;
    std::lock_guard<std::mutex> lock(mu);
    if (!tried) {
        tried = true;
        try {
            const Mounts m = read_mounts("/");
            if (!m.v2.empty()) resolver.emplace(m.v2);
        } catch (const SourceError&) {
        }
    }
    if (!resolver) return std::nullopt;
    return resolver->path_of(id);
}

std::string device_name(const std::string& root, const std::string& maj_min) {
    // Only "MAJ:MIN" becomes a path: a key read from a cgroup file must not
    // lead the lookup anywhere else.
    const auto colon = maj_min.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == maj_min.size() ||
        maj_min.find_first_not_of("0123456789:") != std::string::npos || maj_min.find(':', colon + 1) != std::string::npos)
        return maj_min;
    const std::string dir = under_root(root, "/sys/dev/block/" + maj_min);
    if (auto uevent = try_read_text_file(dir + "/uevent")) {
        std::istringstream in(*uevent);
        std::string line;
        while (std::getline(in, line))
            if (line.rfind("DEVNAME=", 0) == 0) return line.substr(8);
    }
    std::error_code ec;
    const fs::path target = fs::read_symlink(dir, ec);
    if (!ec) return target.filename().string();
    return maj_min;
}

}  // namespace iodiag::cgroup
