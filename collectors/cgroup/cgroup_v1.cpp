#include "collectors/cgroup/cgroup_v1.hpp"

#include <sstream>

#include "collectors/text_file.hpp"

namespace iodiag::cgroup {

std::map<std::string, std::pair<uint64_t, uint64_t>> parse_v1_rw_stat(const std::string& text,
                                                                      const std::string& path) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> out;
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        const auto f = split_ws(line);
        if (f.empty() || f[0] == "Total") continue;
        const std::string where = path + ":" + std::to_string(n);
        if (f.size() != 3 || f[0].find(':') == std::string::npos)
            throw SourceError(where + ": expected 'MAJ:MIN Op value'");
        const uint64_t v = parse_u64(f[2], where);
        if (f[1] == "Read") out[f[0]].first = v;
        else if (f[1] == "Write") out[f[0]].second = v;
        // Sync, Async, Discard, Total: derived from or beside read/write
    }
    return out;
}

namespace {

std::optional<uint64_t> read_u64_file(const std::string& path) {
    auto line = try_read_first_line(path);
    if (!line) return std::nullopt;
    return parse_u64(*line, path);
}

void read_blkio(const std::string& dir, Snapshot& s) {
    const std::string bytes_path = dir + "/blkio.throttle.io_service_bytes";
    const std::string ios_path = dir + "/blkio.throttle.io_serviced";
    if (auto t = try_read_text_file(bytes_path))
        for (const auto& [dev, rw] : parse_v1_rw_stat(*t, bytes_path)) {
            s.io[dev].rbytes = rw.first;
            s.io[dev].wbytes = rw.second;
        }
    if (auto t = try_read_text_file(ios_path))
        for (const auto& [dev, rw] : parse_v1_rw_stat(*t, ios_path)) {
            s.io[dev].rios = rw.first;
            s.io[dev].wios = rw.second;
        }
    struct LimitFile {
        const char* file;
        std::optional<uint64_t> IoLimit::*field;
    };
    const LimitFile files[] = {
        {"blkio.throttle.read_bps_device", &IoLimit::rbps},
        {"blkio.throttle.write_bps_device", &IoLimit::wbps},
        {"blkio.throttle.read_iops_device", &IoLimit::riops},
        {"blkio.throttle.write_iops_device", &IoLimit::wiops},
    };
    for (const auto& lf : files) {
        const std::string p = dir + "/" + lf.file;
        if (auto t = try_read_text_file(p))
            for (const auto& [dev, v] : parse_device_values(*t, p))
                if (v != 0) s.io_limits[dev].*(lf.field) = v;
    }
}

void read_memory(const std::string& dir, Snapshot& s) {
    const std::string stat_path = dir + "/memory.stat";
    auto stat = try_read_text_file(stat_path);
    if (!stat) return;
    s.has_memory = true;
    // Only the group's own counters; the "total_*" lines are hierarchical sums.
    const auto raw = parse_flat_keyed(*stat, stat_path);
    auto copy = [&](const char* from, const char* to) {
        auto it = raw.find(from);
        if (it != raw.end()) s.memory_stat[to] = it->second;
    };
    copy("cache", "file");
    copy("dirty", "dirty");
    copy("writeback", "writeback");
    copy("pgmajfault", "pgmajfault");
    copy("workingset_refault", "workingset_refault_file");   // older kernels
    copy("workingset_refault_file", "workingset_refault_file");
    copy("pgpgin", "pgpgin");
    copy("pgpgout", "pgpgout");
    if (auto v = read_u64_file(dir + "/memory.limit_in_bytes"); v && !is_unlimited(*v))
        s.memory_limit = v;
    s.memory_usage = read_u64_file(dir + "/memory.usage_in_bytes");
    s.memory_failcnt = read_u64_file(dir + "/memory.failcnt");
}

}  // namespace

Snapshot read_v1(const std::string& blkio_dir, const std::string& memory_dir) {
    Snapshot s;
    s.version = "v1";
    if (!blkio_dir.empty()) read_blkio(blkio_dir, s);
    if (!memory_dir.empty()) read_memory(memory_dir, s);
    return s;
}

}  // namespace iodiag::cgroup
