#include "collectors/cgroup/cgroup_v2.hpp"

#include "collectors/text_file.hpp"

namespace iodiag::cgroup {

namespace {

// "max" -> nullopt; a number -> value.
std::optional<uint64_t> read_limit_file(const std::string& path) {
    auto line = try_read_first_line(path);
    if (!line || *line == "max") return std::nullopt;
    return parse_u64(*line, path);
}

std::optional<Pressure> read_pressure(const std::string& path) {
    auto t = try_read_text_file(path);
    if (!t) return std::nullopt;
    return parse_pressure(*t, path);
}

}  // namespace

Snapshot read_v2(const std::string& dir) {
    Snapshot s;
    s.version = "v2";
    const std::string stat_path = dir + "/io.stat";
    if (auto t = try_read_text_file(stat_path))
        for (const auto& [dev, keyed] : parse_nested_keyed(*t, stat_path)) {
            const auto& kv = keyed;   // clang < 16 cannot capture a structured binding
            auto get = [&](const char* k) {
                auto it = kv.find(k);
                return it == kv.end() ? 0 : it->second;
            };
            s.io[dev] = {get("rbytes"), get("wbytes"), get("rios"), get("wios")};
        }
    const std::string max_path = dir + "/io.max";
    if (auto t = try_read_text_file(max_path))
        for (const auto& [dev, keyed] : parse_nested_keyed(*t, max_path)) {
            const auto& kv = keyed;   // clang < 16 cannot capture a structured binding
            IoLimit l;
            auto get = [&](const char* k) -> std::optional<uint64_t> {
                auto it = kv.find(k);
                if (it == kv.end()) return std::nullopt;
                return it->second;
            };
            l.rbps = get("rbps");
            l.wbps = get("wbps");
            l.riops = get("riops");
            l.wiops = get("wiops");
            if (l.any()) s.io_limits[dev] = l;
        }
    const std::string lat_path = dir + "/io.latency";
    if (auto t = try_read_text_file(lat_path)) {
        s.io_latency_file = true;
        for (const auto& [dev, kv] : parse_nested_keyed(*t, lat_path)) {
            auto it = kv.find("target");
            if (it != kv.end() && it->second != 0) s.io_latency_target_us[dev] = it->second;
        }
    }
    if (auto t = try_read_text_file(dir + "/io.weight")) {
        s.io_weight = *t;
        while (!s.io_weight.empty() && (s.io_weight.back() == '\n' || s.io_weight.back() == ' '))
            s.io_weight.pop_back();
    }
    s.io_pressure = read_pressure(dir + "/io.pressure");
    s.memory_pressure = read_pressure(dir + "/memory.pressure");
    s.cpu_pressure = read_pressure(dir + "/cpu.pressure");

    const std::string mstat_path = dir + "/memory.stat";
    if (auto t = try_read_text_file(mstat_path)) {
        s.has_memory = true;
        const auto raw = parse_flat_keyed(*t, mstat_path);
        auto copy = [&](const char* from, const char* to) {
            auto it = raw.find(from);
            if (it != raw.end()) s.memory_stat[to] = it->second;
        };
        copy("file", "file");
        copy("file_dirty", "dirty");
        copy("file_writeback", "writeback");
        copy("pgmajfault", "pgmajfault");
        copy("workingset_refault_file", "workingset_refault_file");
        copy("pgscan", "pgscan");
        copy("pgsteal", "pgsteal");
        s.memory_limit = read_limit_file(dir + "/memory.max");
        s.memory_high = read_limit_file(dir + "/memory.high");
        if (auto line = try_read_first_line(dir + "/memory.current"))
            s.memory_usage = parse_u64(*line, dir + "/memory.current");
        const std::string ev_path = dir + "/memory.events";
        if (auto e = try_read_text_file(ev_path)) s.memory_events = parse_flat_keyed(*e, ev_path);
    }
    return s;
}

}  // namespace iodiag::cgroup
