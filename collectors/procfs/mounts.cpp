#include "collectors/procfs/mounts.hpp"

#include <map>

#include <spdlog/spdlog.h>

#include "collectors/snapshot_support.hpp"
#include "collectors/sysfs/block_device_name.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

// mountinfo escapes a space, tab, newline and backslash in a path as \ooo.
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' &&
            s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

}  // namespace

std::vector<Mount> parse_mountinfo(const std::string& text, const std::string& path) {
    std::vector<Mount> out;
    for_each_line(text, path, [&](const std::vector<std::string>& f, const std::string&, const std::string& where) {
        // id parent MAJ:MIN root mount_point options [optional fields...] - fstype source super_options
        size_t dash = 6;
        while (dash < f.size() && f[dash] != "-") ++dash;
        if (dash + 3 >= f.size()) throw SourceError(where + ": a mountinfo line without its fields");
        const size_t colon = f[2].find(':');
        if (colon == std::string::npos) throw SourceError(where + ": no MAJ:MIN in field 3 (" + f[2] + ")");
        Mount m;
        m.major = static_cast<unsigned>(parse_u64(f[2].substr(0, colon), where));
        m.minor = static_cast<unsigned>(parse_u64(f[2].substr(colon + 1), where));
        m.root = unescape(f[3]);
        m.mount_point = unescape(f[4]);
        m.fstype = f[dash + 1];
        m.options = f[5] + "," + f[dash + 3];
        m.source = unescape(f[dash + 2]);
        out.push_back(std::move(m));
    });
    return out;
}

bool has_mount_option(const std::string& options, const std::string& option) {
    size_t at = 0;
    while (at <= options.size()) {
        const size_t end = std::min(options.find(',', at), options.size());
        if (options.compare(at, end - at, option) == 0 && end - at == option.size()) return true;
        at = end + 1;
    }
    return false;
}

std::vector<MetricSpec> MountsCollector::metric_specs() const {
    using K = MetricSpec::Kind;
    return {
        {"fs.mount_point", K::Fact, "", layer::kFilesystem, "device", "where the device's filesystem is mounted"},
        {"fs.type", K::Fact, "", layer::kFilesystem, "device", "the filesystem type on the device"},
        {"fs.mount_options", K::Fact, "", layer::kFilesystem, "device",
         "the mount's options, then its superblock's (mountinfo fields 6 and 11)"},
        {"fs.mount_sync", K::Metric, "bool", layer::kFilesystem, "device",
         "1 when the filesystem is mounted sync (every write waits until it is durable)"},
        {"fs.mount_dirsync", K::Metric, "bool", layer::kFilesystem, "device",
         "1 when the filesystem is mounted dirsync (directory changes wait until durable)"},
        {"fs.mount_data_journal", K::Metric, "bool", layer::kFilesystem, "device",
         "1 when the filesystem is ext4 mounted data=journal (file data goes through the journal too)"},
        {"fs.mount_discard", K::Metric, "bool", layer::kFilesystem, "device",
         "1 when the filesystem discards freed blocks as it frees them (mount option discard, btrfs's "
         "discard=sync); 0 for none or btrfs's discard=async (queued, out of the commit)"},
    };
}

void MountsCollector::collect(const std::string& root, const std::vector<std::string>& devices, Evidence& ev) {
    const std::string path = under_root(root, "/proc/self/mountinfo");
    std::map<std::string, Mount> by_device;
    for (auto& m : parse_mountinfo(read_text_file(path), path)) {
        // Only block devices (/sys names them): tmpfs, proc and the like have
        // anonymous numbers and no storage latency. A btrfs mount's anonymous
        // number is named by its source (block_device_name); the virtual
        // ones are left out before that reads the mount table again for each.
        if (m.major == 0 && m.source.rfind("/dev/", 0) != 0) continue;
        const std::string name = block_device_name(root, m.major, m.minor, false);
        if (name.find(':') != std::string::npos || !device_selected(devices, name)) continue;
        const auto it = by_device.find(name);
        // The whole filesystem's mount rather than a bind mount of a directory in it.
        if (it == by_device.end() || (it->second.root != "/" && m.root == "/")) by_device[name] = std::move(m);
    }
    const Provenance prov{"procfs", path};
    for (const auto& [device, m] : by_device) {
        const Labels l{{"device", device}};
        ev.add_fact("fs.mount_point", l, m.mount_point, prov);
        ev.add_fact("fs.type", l, m.fstype, prov);
        ev.add_fact("fs.mount_options", l, m.options, prov);
        ev.add_metric("fs.mount_sync", l, has_mount_option(m.options, "sync") ? 1 : 0, "bool", prov);
        ev.add_metric("fs.mount_dirsync", l, has_mount_option(m.options, "dirsync") ? 1 : 0, "bool", prov);
        // Online discard: ext4's and XFS's `discard`, btrfs's `discard` or
        // `discard=sync`. btrfs's discard=async (its default on SSDs since
        // Linux 6.2) queues them off the commit path and is not this.
        const bool discard = has_mount_option(m.options, "discard") || has_mount_option(m.options, "discard=sync");
        ev.add_metric("fs.mount_discard", l, discard ? 1 : 0, "bool", prov);
        if (m.fstype == "ext4" || m.fstype == "ext3")
            ev.add_metric("fs.mount_data_journal", l, has_mount_option(m.options, "data=journal") ? 1 : 0, "bool",
                          prov);
    }
}

CollectorStatus MountsCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    root_ = opts.root;
    devices_ = opts.devices;
    const std::string path = under_root(root_, "/proc/self/mountinfo");
    if (!try_read_text_file(path)) {
        st.reason = path + ": not readable";
        return st;
    }
    st.available = true;
    return st;
}

void MountsCollector::finish(Evidence& ev) {
    try {
        collect(root_, devices_, ev);
    } catch (const SourceError& e) {
        spdlog::warn("mounts: {}", e.what());
        mark_unavailable_at_finish(ev, name(), {}, e.what());
    }
}

}  // namespace iodiag
