#include "collectors/ceph/ceph_osd_host.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "collectors/text_file.hpp"

namespace iodiag {

namespace fs = std::filesystem;

std::vector<OsdSocket> find_osd_sockets(const std::string& run_dir) {
    std::vector<OsdSocket> out;
    std::error_code ec;
    fs::directory_iterator it(run_dir, ec);
    if (ec) return out;
    static const std::regex re(R"(^([A-Za-z0-9_.-]+)-osd\.([0-9]{1,9})\.asok$)");
    for (const auto& e : it) {
        const std::string name = e.path().filename().string();
        std::smatch m;
        if (!std::regex_match(name, m, re)) continue;
        std::error_code sec;
        if (!fs::is_socket(e.path(), sec)) continue;
        out.push_back({e.path().string(), m[1], std::stoi(m[2])});
    }
    std::sort(out.begin(), out.end(), [](const OsdSocket& a, const OsdSocket& b) {
        return a.id != b.id ? a.id < b.id : a.path < b.path;
    });
    return out;
}

std::optional<std::string> whole_disk_of(const std::string& root, const std::string& dev_path) {
    std::error_code ec;
    // Follow links (/dev/vg/lv -> ../dm-3, /dev/disk/by-id/...) under the root.
    fs::path p = under_root(root, dev_path);
    for (int hops = 0; hops < 16 && fs::is_symlink(p, ec); ++hops) {
        fs::path target = fs::read_symlink(p, ec);
        if (ec) return std::nullopt;
        if (target.is_absolute())
            p = under_root(root, target.string());
        else
            p = (p.parent_path() / target).lexically_normal();
    }
    const std::string name = p.filename().string();
    if (name.empty()) return std::nullopt;
    // A partition's sysfs entry sits inside its disk's: /sys/class/block/sdb1
    // -> .../block/sdb/sdb1. The block tracer counts requests per whole disk.
    const std::string sys = under_root(root, "/sys/class/block/" + name);
    if (!fs::exists(sys, ec)) return std::nullopt;
    if (fs::exists(sys + "/partition", ec)) {
        const fs::path real = fs::canonical(sys, ec);
        if (!ec && real.has_parent_path()) return real.parent_path().filename().string();
    }
    return name;
}

OsdDevices resolve_osd_devices(const std::string& root, const std::string& osd_data) {
    OsdDevices d;
    auto one = [&](const char* link, std::string& into) {
        std::error_code ec;
        const fs::path p = under_root(root, osd_data + "/" + link);
        if (!fs::is_symlink(p, ec)) return;
        const fs::path target = fs::read_symlink(p, ec);
        if (ec) return;
        const std::string abs = target.is_absolute() ? target.string() : (fs::path(osd_data) / target).lexically_normal().string();
        if (auto disk = whole_disk_of(root, abs)) {
            into = *disk;
            d.how += std::string(d.how.empty() ? "" : "; ") + osd_data + "/" + link + " -> " + abs + " (" + *disk + ")";
        }
    };
    one("block", d.block);
    one("block.db", d.db);
    one("block.wal", d.wal);
    return d;
}

std::string thread_group_of(const std::string& comm) {
    static const std::pair<const char*, const char*> prefixes[] = {
        {"msgr-worker", "msgr-worker"}, {"tp_osd_tp", "tp_osd_tp"},   {"bstore_kv_sync", "bstore_kv_sync"},
        {"bstore_kv_final", "bstore_kv_final"}, {"bstore_aio", "bstore_aio"}, {"rocksdb", "rocksdb"},
    };
    for (const auto& [p, g] : prefixes)
        if (comm.rfind(p, 0) == 0) return g;
    return "other";
}

std::optional<std::pair<uint64_t, uint64_t>> parse_schedstat(const std::string& text) {
    const auto f = split_ws(text);
    if (f.size() < 2) return std::nullopt;
    try {
        return std::pair<uint64_t, uint64_t>{parse_u64(f[0], "schedstat"), parse_u64(f[1], "schedstat")};
    } catch (const SourceError&) {
        return std::nullopt;
    }
}

std::optional<ThreadCpuByGroup> read_thread_cpu(const std::string& root, int pid) {
    if (pid <= 0) return std::nullopt;
    const std::string dir = under_root(root, "/proc/" + std::to_string(pid) + "/task");
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) return std::nullopt;
    ThreadCpuByGroup out;
    for (const auto& e : it) {
        const auto stat = try_read_first_line(e.path().string() + "/schedstat");
        const auto comm = try_read_first_line(e.path().string() + "/comm");
        if (!stat || !comm) continue;   // the thread exited meanwhile
        const auto v = parse_schedstat(*stat);
        if (!v) continue;
        ThreadCpu& g = out[thread_group_of(*comm)];
        g.cpu_ns += v->first;
        g.wait_ns += v->second;
        ++g.threads;
    }
    if (out.empty()) return std::nullopt;
    return out;
}

std::optional<int> nic_rx_queues(const std::string& root) {
    std::error_code ec;
    fs::directory_iterator it(under_root(root, "/sys/class/net"), ec);
    if (ec) return std::nullopt;
    std::optional<int> best;
    for (const auto& e : it) {
        if (e.path().filename() == "lo") continue;
        fs::directory_iterator q(e.path() / "queues", ec);
        if (ec) {
            ec.clear();
            continue;
        }
        int rx = 0;
        for (const auto& qe : q)
            if (qe.path().filename().string().rfind("rx-", 0) == 0) ++rx;
        if (rx > 0) best = std::max(best.value_or(0), rx);
    }
    return best;
}

}  // namespace iodiag
