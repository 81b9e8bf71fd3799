#include "collectors/cgroup_hierarchy.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "collectors/text_file.hpp"

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

void walk(const fs::path& base, const fs::path& dir, int depth, int max_depth,
          std::vector<std::string>& out) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
        out.push_back("/" + fs::relative(e.path(), base, ec).generic_string());
        if (depth + 1 < max_depth) walk(base, e.path(), depth + 1, max_depth, out);
    }
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
    walk(fs::path(mount_dir), fs::path(mount_dir), 0, max_depth, out);
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
