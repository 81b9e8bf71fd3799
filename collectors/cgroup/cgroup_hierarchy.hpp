// Where the cgroup hierarchies are mounted (read from /proc/mounts, never
// assumed), how to list their groups, how a BPF cgroup id maps to a path, and
// how a "MAJ:MIN" maps to a block device name.
//
// Hosts differ: pure cgroup v2 at /sys/fs/cgroup (most production hosts),
// hybrid (v1 controllers at /sys/fs/cgroup/<controller>, v2 at
// /sys/fs/cgroup/unified, as on the machines this project is tested on), or
// pure v1.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace iodiag::cgroup {

struct Mounts {
    std::string v2;                              // mount point of cgroup2, "" if none
    std::map<std::string, std::string> v1;       // controller ("blkio", "memory") -> mount point
    bool has_v1(const std::string& controller) const { return v1.count(controller) != 0; }
};

// Parses /proc/mounts text. Mount points are returned as written there (the
// caller prefixes a fixture root). Octal escapes (\040) are decoded.
Mounts parse_mounts(const std::string& proc_mounts_text);
// Reads <root>/proc/mounts; throws SourceError naming the path.
Mounts read_mounts(const std::string& root);

// Every group under a hierarchy's mount point, as paths relative to it
// ("/", "/fio-test", "/a/b"), sorted. Depth- and count-limited (kMaxGroups,
// with a warning) so a runaway tree cannot stall the collector or fill memory.
inline constexpr size_t kMaxGroups = 65536;
std::vector<std::string> list_groups(const std::string& mount_dir, int max_depth = 16);

// A cgroup v2 group's id, as bpf_get_current_cgroup_id() and tracepoints'
// cgroup_ino report it, is the inode number of its directory in cgroupfs.
// This resolver maps ids back to paths relative to the v2 root; it rescans
// the tree once when an id is unknown (groups come and go).
class IdResolver {
public:
    explicit IdResolver(std::string v2_mount_dir) : dir_(std::move(v2_mount_dir)) {}
    std::optional<std::string> path_of(uint64_t id);
    void rescan();

private:
    std::string dir_;
    std::map<uint64_t, std::string> by_id_;
    bool scanned_ = false;
};

// Convenience for other collectors: resolves with a process-wide resolver on
// the live system's v2 hierarchy (found in /proc/mounts). nullopt when there is
// no v2 hierarchy or the id is unknown.
std::optional<std::string> cgroup_path_for_id(uint64_t id);

// Block device name of "MAJ:MIN" from <root>/sys/dev/block/MAJ:MIN (uevent
// DEVNAME, else the link's target name); returns "MAJ:MIN" itself if unknown.
std::string device_name(const std::string& root, const std::string& maj_min);

}  // namespace iodiag::cgroup
