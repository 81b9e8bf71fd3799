#include "collectors/procfs/proc_pids.hpp"

#include <cstdlib>
#include <filesystem>
#include <limits>

namespace iodiag {

std::vector<int> numeric_entries(const std::string& dir) {
    std::vector<int> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        const long n = std::strtol(name.c_str(), nullptr, 10);
        if (n > 0 && n <= std::numeric_limits<int>::max()) out.push_back(static_cast<int>(n));
    }
    return out;
}

}  // namespace iodiag
