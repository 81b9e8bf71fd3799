#include "app/data_dirs.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <spdlog/spdlog.h>

namespace iodiag::cli {

namespace fs = std::filesystem;

namespace {

bool same_dir(const fs::path& a, const fs::path& b) {
    std::error_code ec1, ec2;
    return fs::equivalent(a, b, ec1) && !ec1 && !ec2;
}

}  // namespace

DataDir locate_data_dir(const std::string& name, const std::string& explicit_dir) {
    if (!explicit_dir.empty()) return {explicit_dir, "given on the command line"};
    if (const char* env = std::getenv("IODIAG_DATA_DIR"); env && *env)
        return {(fs::path(env) / name).string(), "$IODIAG_DATA_DIR"};
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    std::vector<DataDir> candidates;
    if (!ec) candidates.push_back({(exe.parent_path() / ".." / "share" / "iodiag" / name).string(),
                                   "the installation next to the binary"});
    const fs::path installed = fs::path(IODIAG_INSTALL_DATADIR) / name;
    candidates.push_back({installed.string(), "the install location compiled in"});
    // The source tree only for the binary in its build tree: an installed
    // binary must never depend on the checkout it was built from.
    if (!ec && same_dir(exe.parent_path(), IODIAG_BUILD_DIR))
        candidates.push_back({(fs::path(IODIAG_SOURCE_DIR) / name).string(), "the source tree (build-tree binary)"});
    for (auto& c : candidates) {
        if (fs::is_directory(c.path, ec)) {
            c.path = fs::weakly_canonical(c.path, ec).string();
            return c;
        }
    }
    return {installed.string(), "nothing found; the install location"};
}

std::string find_data_dir(const std::string& name, const std::string& explicit_dir) {
    DataDir d = locate_data_dir(name, explicit_dir);
    spdlog::debug("{}: {} ({})", name, d.path, d.how);
    return d.path;
}

std::string data_dir_search_order(const std::string& name) {
    return "$IODIAG_DATA_DIR/" + name + ", <exe>/../share/iodiag/" + name + ", " +
           (fs::path(IODIAG_INSTALL_DATADIR) / name).string() + ", the source tree's " + name +
           "/ for a build-tree binary";
}

}  // namespace iodiag::cli
