#include "collectors/procfs/meminfo.hpp"

#include <spdlog/spdlog.h>

#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

const char* const kMeminfo = "/proc/meminfo";

struct MeminfoMetric {
    const char* metric;
    const char* key;
    const std::string& layer;
    const char* description;
};

const std::vector<MeminfoMetric>& meminfo_metrics() {
    static const std::vector<MeminfoMetric> v{
        {"mem.total_bytes", "MemTotal", layer::kReclaim, "Usable RAM"},
        {"mem.free_bytes", "MemFree", layer::kReclaim, "Free RAM"},
        {"mem.available_bytes", "MemAvailable", layer::kReclaim,
         "Kernel's estimate of memory available without swapping"},
        {"mem.cached_bytes", "Cached", layer::kPageCache, "Page cache (without buffers and swap cache)"},
        {"mem.dirty_bytes", "Dirty", layer::kDirty, "Dirty page cache waiting for writeback"},
        {"mem.writeback_bytes", "Writeback", layer::kDirty, "Page cache under writeback"},
        {"mem.active_file_bytes", "Active(file)", layer::kPageCache, "Active file-backed pages"},
        {"mem.inactive_file_bytes", "Inactive(file)", layer::kPageCache, "Inactive file-backed pages"},
    };
    return v;
}

}  // namespace

std::map<std::string, std::uint64_t> parse_meminfo(const std::string& text, const std::string& path) {
    std::map<std::string, std::uint64_t> out;
    for_each_line(text, path, [&](const std::vector<std::string>&, const std::string& line, const std::string& where) {
        const auto colon = line.find(':');
        if (colon == std::string::npos || colon == 0)
            throw SourceError(where + ": expected 'Key: value [kB]', got '" + line + "'");
        const std::string key = line.substr(0, colon);
        const auto f = split_ws(line.substr(colon + 1));
        if (f.empty() || f.size() > 2 || (f.size() == 2 && f[1] != "kB"))
            throw SourceError(where + ": expected 'Key: value [kB]', got '" + line + "'");
        std::uint64_t value = parse_u64(f[0], where);
        if (f.size() == 2) {
            if (value > UINT64_MAX / 1024) throw SourceError(where + ": value out of range '" + f[0] + "'");
            value *= 1024;
        }
        if (!out.emplace(key, value).second) throw SourceError(where + ": '" + key + "' seen twice");
    });
    if (out.empty()) throw SourceError(path + ": empty");
    return out;
}

void add_meminfo_metrics(const std::map<std::string, std::uint64_t>& meminfo, Evidence& ev) {
    for (const auto& m : meminfo_metrics()) {
        auto it = meminfo.find(m.key);
        if (it == meminfo.end()) continue;  // older kernels lack some (MemAvailable before 3.14)
        ev.add_metric(m.metric, {}, static_cast<double>(it->second), "bytes",
                      {"file", std::string(kMeminfo) + " " + m.key});
    }
}

std::vector<MetricSpec> MeminfoCollector::metric_specs() const {
    std::vector<MetricSpec> out;
    for (const auto& m : meminfo_metrics())
        out.push_back({m.metric, MetricSpec::Kind::Metric, "bytes", m.layer, "",
                       std::string(m.description) + " at the end of the window (" + kMeminfo + " " + m.key +
                           ")"});
    return out;
}

CollectorStatus MeminfoCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    path_ = under_root(opts.root, kMeminfo);
    try {
        parse_meminfo(read_text_file(path_), path_);
    } catch (const SourceError& e) {
        st.reason = e.what();
        return st;
    }
    st.available = true;
    return st;
}

void MeminfoCollector::finish(Evidence& ev) {
    try {
        add_meminfo_metrics(parse_meminfo(read_text_file(path_), path_), ev);
    } catch (const SourceError& e) {
        spdlog::warn("meminfo: {}", e.what());
        mark_unavailable_at_finish(ev, name(), {}, e.what());
    }
}

}  // namespace iodiag
