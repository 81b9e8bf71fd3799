#include "collectors/sysfs/block_device_name.hpp"

#include <filesystem>

namespace iodiag {

namespace fs = std::filesystem;

std::string block_device_name(const std::string& root, uint32_t major, uint32_t minor, bool partition_to_disk) {
    const std::string majmin = std::to_string(major) + ":" + std::to_string(minor);
    std::error_code ec;
    const fs::path link = fs::path(root.empty() ? "/" : root) / "sys/dev/block" / majmin;
    const fs::path target = fs::read_symlink(link, ec);
    if (ec) return majmin;
    // A partition's directory lies in its disk's (/sys/devices/.../sda/sda1).
    if (partition_to_disk && fs::exists(link / "partition", ec)) return target.parent_path().filename().string();
    return target.filename().string();
}

}  // namespace iodiag
