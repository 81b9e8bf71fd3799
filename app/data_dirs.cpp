#include "app/data_dirs.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace iodiag::cli {

namespace fs = std::filesystem;

std::string find_data_dir(const std::string& name, const std::string& explicit_dir) {
    if (!explicit_dir.empty()) return explicit_dir;
    std::string env_name = "IODIAG_" + std::string(name == "rules" ? "RULES" : "PLAYBOOKS") + "_DIR";
    if (const char* env = std::getenv(env_name.c_str()); env && *env) return env;
    std::vector<fs::path> candidates;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        candidates.push_back(exe.parent_path() / ".." / "share" / "iodiag" / name);
        candidates.push_back(exe.parent_path() / ".." / name);
    }
    candidates.push_back(fs::path(IODIAG_SOURCE_DIR) / name);
    for (const auto& c : candidates)
        if (fs::is_directory(c, ec)) return fs::weakly_canonical(c, ec).string();
    return (fs::path(IODIAG_SOURCE_DIR) / name).string();
}

}  // namespace iodiag::cli
