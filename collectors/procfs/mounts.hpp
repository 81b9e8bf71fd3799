// The filesystems mounted on block devices and their options, from
// /proc/self/mountinfo: what the settings catalog (docs/settings.md) needs to
// name a mount option as a cause (`sync` making every write wait for the
// device) and to give its fix (the mount point to remount).
#pragma once

#include <string>
#include <vector>

#include "collectors/collector.hpp"

namespace iodiag {

struct Mount {
    unsigned major = 0, minor = 0;
    std::string root;          // the directory of the filesystem mounted ("/" for the whole)
    std::string mount_point;
    std::string fstype;
    std::string options;       // per-mount options, then the superblock's ("rw,relatime,rw,sync")
    std::string source;        // what was mounted ("/dev/loop0"; "none", "tmpfs" for the virtual ones)
};

// Every line of a mountinfo text (proc(5)); the octal escapes of paths
// (\040 for a space) decoded. Throws SourceError naming path:line for a line
// without its fields.
std::vector<Mount> parse_mountinfo(const std::string& text, const std::string& path);

// Whether a comma-separated option list holds `option` ("sync" is not "async").
bool has_mount_option(const std::string& options, const std::string& option);

class MountsCollector : public Collector {
public:
    std::string name() const override { return "mounts"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;
    bool finish_only_appends() const override { return true; }

    // Reads root's /proc/self/mountinfo and appends, per block device with a
    // filesystem mounted (its first mount of the whole filesystem, else its
    // first): fs.mount_point, fs.type, fs.mount_options, fs.mount_sync,
    // fs.mount_dirsync. Throws SourceError naming the file.
    static void collect(const std::string& root, const std::vector<std::string>& devices, Evidence& ev);

private:
    std::string root_ = "/";
    std::vector<std::string> devices_;
};

}  // namespace iodiag
