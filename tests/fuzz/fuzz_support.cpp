#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/fuzz_tree.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace iodiag::fuzz {

namespace fs = std::filesystem;

std::map<std::string, TargetFn>& registry() {
    static std::map<std::string, TargetFn> targets;
    return targets;
}

namespace {

constexpr const char* kHeader = "@@ ";

bool safe_relative(const std::string& path) {
    if (path.empty() || path.size() > 240 || path[0] == '/' || path.find('\0') != std::string::npos) return false;
    size_t start = 0;
    while (start <= path.size()) {
        const auto slash = path.find('/', start);
        const std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        if (slash == std::string::npos) return part != "." && part != "..";   // "" = trailing '/': a directory
        if (part.empty() || part == "." || part == "..") return false;
        start = slash + 1;
    }
    return true;
}

std::string scratch_parent() {
    if (const char* t = std::getenv("TMPDIR"); t && *t) return t;
    if (::access("/dev/shm", W_OK) == 0) return "/dev/shm";
    return "/tmp";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> unpack_entries(const std::string& packed) {
    std::vector<std::pair<std::string, std::string>> out;
    // Header positions: "@@ " at the start of the input or of a line.
    std::vector<size_t> headers;
    for (size_t pos = 0; pos < packed.size();) {
        if (packed.compare(pos, 3, kHeader) == 0) headers.push_back(pos);
        const auto nl = packed.find('\n', pos);
        if (nl == std::string::npos) break;
        pos = nl + 1;
    }
    for (size_t i = 0; i < headers.size() && out.size() < ScratchTree::kMaxEntries; ++i) {
        const size_t name_begin = headers[i] + 3;
        const size_t name_end = std::min(packed.find('\n', name_begin), packed.size());
        const size_t content_begin = std::min(name_end + 1, packed.size());
        size_t content_end = i + 1 < headers.size() ? headers[i + 1] : packed.size();
        if (i + 1 < headers.size() && content_end > content_begin) --content_end;   // the packer's newline
        const std::string name = packed.substr(name_begin, name_end - name_begin);
        if (!safe_relative(name)) continue;
        out.emplace_back(name, content_end > content_begin
                                   ? packed.substr(content_begin, content_end - content_begin)
                                   : std::string{});
    }
    return out;
}

std::string pack_entries(const std::vector<std::pair<std::string, std::string>>& entries) {
    std::string out;
    for (size_t i = 0; i < entries.size(); ++i) {
        out += kHeader + entries[i].first + "\n" + entries[i].second;
        if (i + 1 < entries.size()) out += "\n";
    }
    return out;
}

ScratchTree::ScratchTree() {
    std::string tmpl = scratch_parent() + "/iodiag-fuzz-XXXXXX";
    if (!::mkdtemp(tmpl.data())) fail("cannot make a scratch directory under " + scratch_parent());
    root_ = tmpl;
}

ScratchTree::~ScratchTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
}

const std::string& ScratchTree::unpack(const std::string& packed) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root_, ec)) fs::remove_all(e.path(), ec);
    for (const auto& [name, content] : unpack_entries(packed)) {
        const fs::path p = fs::path(root_) / name;
        if (name.back() == '/') {
            fs::create_directories(p, ec);
            continue;
        }
        fs::create_directories(p.parent_path(), ec);
        // An earlier entry may have made a file where this one needs a
        // directory (or the reverse): that entry is skipped, as a real tree
        // cannot hold both.
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        if (out) out << content;
    }
    return root_;
}

}  // namespace iodiag::fuzz
