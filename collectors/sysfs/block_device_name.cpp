#include "collectors/sysfs/block_device_name.hpp"

#include <filesystem>

#include "collectors/procfs/mounts.hpp"
#include "collectors/text_file.hpp"

namespace iodiag {

namespace fs = std::filesystem;

namespace {

// The block device an anonymous device number stands for: a btrfs
// filesystem gives its files and superblock one (major 0, one per
// subvolume), which /sys does not link; the mount table's line with that
// number names what was mounted (its source, /dev/loop0 or a /dev/mapper
// link). Empty when no mount names a block device for it (tmpfs, NFS).
std::string mounted_block_device(const std::string& root, uint32_t major, uint32_t minor) {
    const std::string path = under_root(root, "/proc/self/mountinfo");
    const auto table = try_read_text_file(path);
    if (!table) return {};
    std::vector<Mount> mounts;
    try {
        mounts = parse_mountinfo(*table, path);
    } catch (const SourceError&) {
        return {};   // a table it cannot read names nothing: the number stands
    }
    for (const Mount& m : mounts) {
        if (m.major != major || m.minor != minor || m.source.rfind("/dev/", 0) != 0) continue;
        std::error_code ec;
        const fs::path target = fs::weakly_canonical(under_root(root, m.source), ec);
        const std::string name = (ec ? fs::path(m.source) : target).filename().string();
        if (fs::exists(under_root(root, "/sys/class/block/" + name), ec)) return name;
    }
    return {};
}

}  // namespace

std::string block_device_name(const std::string& root, uint32_t major, uint32_t minor, bool partition_to_disk) {
    const std::string majmin = std::to_string(major) + ":" + std::to_string(minor);
    std::error_code ec;
    const fs::path link = fs::path(root.empty() ? "/" : root) / "sys/dev/block" / majmin;
    const fs::path target = fs::read_symlink(link, ec);
    if (ec) {
        const std::string mounted = major == 0 ? mounted_block_device(root, major, minor) : "";
        return mounted.empty() ? majmin : mounted;
    }
    // A partition's directory lies in its disk's (/sys/devices/.../sda/sda1).
    if (partition_to_disk && fs::exists(link / "partition", ec)) return target.parent_path().filename().string();
    return target.filename().string();
}

}  // namespace iodiag
