#include "collectors/cgroup/cgroup_collector.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "collectors/cgroup/cgroup_v1.hpp"
#include "collectors/cgroup/cgroup_v2.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace fs = std::filesystem;
using cgroup::Snapshot;

namespace {

uint64_t grew(uint64_t before, uint64_t after) { return after >= before ? after - before : 0; }

std::optional<uint64_t> delta_opt(const std::optional<uint64_t>& b, const std::optional<uint64_t>& a) {
    if (!a) return std::nullopt;
    return grew(b.value_or(0), *a);   // a group created during the window starts at 0
}

uint64_t map_delta(const std::map<std::string, uint64_t>& b, const std::map<std::string, uint64_t>& a,
                   const std::string& key, bool* present) {
    auto ia = a.find(key);
    if (ia == a.end()) {
        if (present) *present = false;
        return 0;
    }
    if (present) *present = true;
    auto ib = b.find(key);
    return grew(ib == b.end() ? 0 : ib->second, ia->second);
}

std::string fmt(double v, int decimals = 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string human_bytes(double v) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        ++i;
    }
    return fmt(v, i == 0 ? 0 : 1) + " " + units[i];
}

bool controller_listed(const std::string& file, const std::string& controller) {
    auto line = try_read_first_line(file);
    if (!line) return false;
    for (const auto& c : split_ws(*line))
        if (c == controller) return true;
    return false;
}

}  // namespace

CgroupCollector::CgroupCollector()
    : clock_([] {
          return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
      }) {}

std::vector<MetricSpec> CgroupCollector::metric_specs() const {
    using K = MetricSpec::Kind;
    const std::string C = layer::kCgroup, R = layer::kReclaim, P = layer::kPageCache;
    return {
        {"cgroup.io_read_bytes_per_s", K::Metric, "bytes/s", C, "cgroup",
         "bytes read by the group per second over the window (all devices)"},
        {"cgroup.io_write_bytes_per_s", K::Metric, "bytes/s", C, "cgroup",
         "bytes written by the group per second (all devices)"},
        {"cgroup.io_read_iops", K::Metric, "1/s", C, "cgroup", "read I/Os of the group per second"},
        {"cgroup.io_write_iops", K::Metric, "1/s", C, "cgroup", "write I/Os of the group per second"},
        {"cgroup.io_limit_utilisation_pct", K::Metric, "pct", C, "cgroup",
         "highest measured rate / configured blk-throttle limit over the group's devices and limit "
         "kinds (io.max or v1 blkio.throttle.*_device)"},
        {"cgroup.io_limit_device", K::Fact, "", C, "cgroup",
         "device of the most utilised limit: \"name (MAJ:MIN)\""},
        {"cgroup.io_limit_setting", K::Fact, "", C, "cgroup",
         "the most utilised limit as configured, in the file's own syntax"},
        {"cgroup.io_limit_measured", K::Fact, "", C, "cgroup",
         "limit and measured rate of the most utilised limit, in words"},
        {"cgroup.device_read_iops", K::Metric, "1/s", C, "cgroup",
         "per device (labels {cgroup, device}): read I/Os per second"},
        {"cgroup.device_write_iops", K::Metric, "1/s", C, "cgroup",
         "per device (labels {cgroup, device}): write I/Os per second"},
        {"cgroup.device_read_bytes_per_s", K::Metric, "bytes/s", C, "cgroup",
         "per device (labels {cgroup, device}): bytes read per second"},
        {"cgroup.device_write_bytes_per_s", K::Metric, "bytes/s", C, "cgroup",
         "per device (labels {cgroup, device}): bytes written per second"},
        {"cgroup.device_read_iops_limit", K::Metric, "1/s", C, "cgroup",
         "per device (labels {cgroup, device}): riops / read_iops_device limit"},
        {"cgroup.device_write_iops_limit", K::Metric, "1/s", C, "cgroup",
         "per device (labels {cgroup, device}): wiops / write_iops_device limit"},
        {"cgroup.device_read_bps_limit", K::Metric, "bytes/s", C, "cgroup",
         "per device (labels {cgroup, device}): rbps / read_bps_device limit"},
        {"cgroup.device_write_bps_limit", K::Metric, "bytes/s", C, "cgroup",
         "per device (labels {cgroup, device}): wbps / write_bps_device limit"},
        {"cgroup.device_io_limit_utilisation_pct", K::Metric, "pct", C, "cgroup",
         "per device (labels {cgroup, device}): highest rate / limit"},
        {"cgroup.io_top_device", K::Fact, "", C, "cgroup",
         "device with the most I/Os of the group in the window: \"name\""},
        {"cgroup.io_top_device_majmin", K::Fact, "", C, "cgroup", "its MAJ:MIN"},
        {"cgroup.io_pressure_some_pct", K::Metric, "pct", C, "cgroup",
         "share of the window some task of the group stalled on I/O (v2 io.pressure total delta)"},
        {"cgroup.io_pressure_full_pct", K::Metric, "pct", C, "cgroup",
         "share of the window all non-idle tasks of the group stalled on I/O (v2)"},
        {"cgroup.memory_pressure_some_pct", K::Metric, "pct", R, "cgroup",
         "share of the window some task of the group stalled on memory (v2 memory.pressure)"},
        {"cgroup.memory_pressure_full_pct", K::Metric, "pct", R, "cgroup",
         "share of the window all non-idle tasks of the group stalled on memory (v2)"},
        {"cgroup.cpu_pressure_some_pct", K::Metric, "pct", layer::kCpu, "cgroup",
         "share of the window some runnable task of the group waited for a CPU (v2)"},
        {"cgroup.io_latency_target_us", K::Metric, "us", C, "cgroup",
         "lowest io.latency target set on the group (v2), microseconds"},
        {"cgroup.io_latency_configured", K::Metric, "bool", C, "cgroup",
         "1 if the group has an io.latency target, 0 if not (v2 groups only)"},
        {"cgroup.io_weight", K::Fact, "", C, "cgroup", "io.weight as configured (v2)"},
        {"cgroup.hierarchy", K::Fact, "", C, "cgroup",
         "where the group's numbers come from, e.g. \"io: v1 blkio; memory: v1 memory\""},
        {"cgroup.v2_dir", K::Fact, "", C, "cgroup",
         "the group's directory in the cgroup v2 hierarchy, when it exists there"},
        {"cgroup.mounts", K::Fact, "", C, "", "cgroup hierarchies found in /proc/mounts"},
        {"cgroup.memory_limit_bytes", K::Metric, "bytes", R, "cgroup",
         "memory limit (v1 memory.limit_in_bytes, v2 memory.max); absent when unlimited"},
        {"cgroup.memory_high_bytes", K::Metric, "bytes", R, "cgroup", "v2 memory.high; absent when max"},
        {"cgroup.memory_usage_bytes", K::Metric, "bytes", R, "cgroup",
         "memory charged to the group at the end of the window"},
        {"cgroup.memory_usage_pct_of_limit", K::Metric, "pct", R, "cgroup",
         "usage / the lower of memory.high and the limit"},
        {"cgroup.memory_limit_hits_delta", K::Metric, "count", R, "cgroup",
         "times the group hit its limit in the window (v1 memory.failcnt; v2 memory.events high+max)"},
        {"cgroup.memory_failcnt_delta", K::Metric, "count", R, "cgroup", "v1 memory.failcnt growth"},
        {"cgroup.memory_events_high_delta", K::Metric, "count", R, "cgroup",
         "v2 memory.events high growth (throttled and reclaimed above memory.high)"},
        {"cgroup.memory_events_max_delta", K::Metric, "count", R, "cgroup",
         "v2 memory.events max growth (allocation hit memory.max)"},
        {"cgroup.memory_events_oom_delta", K::Metric, "count", R, "cgroup", "v2 memory.events oom growth"},
        {"cgroup.memory_events_oom_kill_delta", K::Metric, "count", R, "cgroup",
         "v2 memory.events oom_kill growth"},
        {"cgroup.memory_pgscan_delta", K::Metric, "pages", R, "cgroup",
         "pages scanned by reclaim for the group (v2 memory.stat pgscan; v1 does not expose it)"},
        {"cgroup.memory_pgsteal_delta", K::Metric, "pages", R, "cgroup",
         "pages reclaimed from the group (v2 memory.stat pgsteal)"},
        {"cgroup.memory_pgmajfault_delta", K::Metric, "count", P, "cgroup",
         "major faults of the group in the window (memory.stat pgmajfault)"},
        {"cgroup.memory_workingset_refault_file_delta", K::Metric, "pages", P, "cgroup",
         "file pages read again soon after reclaim evicted them (cache too small)"},
        {"cgroup.memory_pgpgin_delta", K::Metric, "pages", P, "cgroup",
         "pages charged to the group in the window (v1 memory.stat pgpgin)"},
        {"cgroup.memory_file_bytes", K::Metric, "bytes", P, "cgroup", "page cache charged to the group"},
        {"cgroup.memory_dirty_bytes", K::Metric, "bytes", layer::kDirty, "cgroup",
         "dirty page cache of the group"},
        {"cgroup.memory_writeback_bytes", K::Metric, "bytes", layer::kDirty, "cgroup",
         "page cache of the group under writeback"},
    };
}

std::string CgroupCollector::dir_in(const std::string& mount, const std::string& path) const {
    const std::string base = under_root(root_, mount);
    return path == "/" ? base : base + path;
}

Snapshot CgroupCollector::read_group(const std::string& path) const {
    auto existing = [&](const std::string& mount) -> std::string {
        if (mount.empty()) return "";
        const std::string d = dir_in(mount, path);
        std::error_code ec;
        return fs::is_directory(d, ec) ? d : "";
    };
    const std::string v2dir = existing(mounts_.v2);
    Snapshot merged = v2dir.empty() ? Snapshot{} : cgroup::read_v2(v2dir);
    const bool v1_io = sources_.io == "v1 blkio", v1_mem = sources_.memory == "v1 memory";
    if (v1_io || v1_mem) {
        const Snapshot v1 = cgroup::read_v1(v1_io ? existing(mounts_.v1.count("blkio") ? mounts_.v1.at("blkio") : "") : "",
                                            v1_mem ? existing(mounts_.v1.count("memory") ? mounts_.v1.at("memory") : "") : "");
        if (v1_io) {
            merged.io = v1.io;
            merged.io_limits = v1.io_limits;
        }
        if (v1_mem) {
            merged.memory_limit = v1.memory_limit;
            merged.memory_high.reset();
            merged.memory_usage = v1.memory_usage;
            merged.memory_failcnt = v1.memory_failcnt;
            merged.memory_events.clear();
            merged.memory_stat = v1.memory_stat;
            merged.has_memory = v1.has_memory;
        }
    }
    merged.version = v2dir.empty() ? "v1" : (v1_io || v1_mem ? "v1+v2" : "v2");
    return merged;
}

std::map<std::string, Snapshot> CgroupCollector::snapshot_all(std::vector<std::string>* problems) const {
    std::set<std::string> paths;
    auto add_tree = [&](const std::string& mount) {
        if (mount.empty()) return;
        for (const auto& p : cgroup::list_groups(under_root(root_, mount))) paths.insert(p);
    };
    add_tree(mounts_.v2);
    if (sources_.io == "v1 blkio") add_tree(mounts_.v1.at("blkio"));
    if (sources_.memory == "v1 memory") add_tree(mounts_.v1.at("memory"));
    std::map<std::string, Snapshot> out;
    for (const auto& p : paths) {
        if (!filter_.empty() && p != filter_ && p.rfind(filter_ + "/", 0) != 0) continue;
        try {
            out[p] = read_group(p);
        } catch (const SourceError& e) {
            if (problems) problems->push_back(e.what());
        }
    }
    return out;
}

CollectorStatus CgroupCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    root_ = opts.root;
    filter_ = opts.cgroup;
    if (filter_.size() > 1 && filter_.back() == '/') filter_.pop_back();
    try {
        mounts_ = cgroup::read_mounts(root_);
    } catch (const SourceError& e) {
        st.reason = e.what();
        return st;
    }
    if (mounts_.v2.empty() && mounts_.v1.empty()) {
        st.reason = under_root(root_, "/proc/mounts") + ": no cgroup or cgroup2 file system mounted";
        return st;
    }
    const std::string v2root = mounts_.v2.empty() ? "" : under_root(root_, mounts_.v2);
    v2_io_ = !v2root.empty() && controller_listed(v2root + "/cgroup.controllers", "io");
    v2_memory_ = !v2root.empty() && controller_listed(v2root + "/cgroup.controllers", "memory");
    sources_.io = mounts_.has_v1("blkio") ? "v1 blkio" : (v2_io_ ? "v2 io" : "");
    sources_.memory = mounts_.has_v1("memory") ? "v1 memory" : (v2_memory_ ? "v2 memory" : "");

    std::vector<std::string> notes;
    if (sources_.io.empty())
        notes.push_back("no I/O controller (neither v1 blkio nor v2 io is available): I/O limits and "
                        "per-group I/O are not observed");
    if (sources_.io == "v1 blkio")
        notes.push_back("cgroup v1 blkio has no throttled-time statistic of its own: limits are compared "
                        "with the measured rate (blkio.throttle.io_serviced / io_service_bytes); the time "
                        "bios wait in blk-throttle (before block_bio_queue, outside Q2C) is measured by the "
                        "syscall collector for threads waiting for their own I/O (direct/sync I/O), and "
                        "throttled buffered writeback shows as dirty throttling");
    if (sources_.memory == "v1 memory")
        notes.push_back("cgroup v1 memory.stat has no pgscan/pgsteal: memcg reclaim is seen through "
                        "memory.failcnt, refaults and major faults");
    if (mounts_.v2.empty())
        notes.push_back("no cgroup v2 hierarchy: no per-group pressure (PSI) and no io.latency");
    // The cgroup layer's latency is observed only where blk-throttle stalls can
    // be seen per group: v2 with the io controller (io.max next to io.pressure).
    if (v2_io_ && sources_.io == "v2 io") st.layers = {layer::kCgroup};

    t0_ = clock_();
    std::vector<std::string> problems;
    before_ = snapshot_all(&problems);
    st.available = true;
    for (const auto& p : problems) notes.push_back(p);
    for (const auto& n : notes) st.reason += (st.reason.empty() ? "" : "; ") + n;
    return st;
}

void CgroupCollector::finish(Evidence& ev) {
    const double window_s = clock_() - t0_;
    std::vector<std::string> problems;
    const auto after = snapshot_all(&problems);
    std::string mounts;
    for (const auto& [ctrl, dir] : mounts_.v1) mounts += (mounts.empty() ? "v1 " : ", v1 ") + ctrl + "=" + dir;
    if (!mounts_.v2.empty()) mounts += (mounts.empty() ? "v2=" : "; v2=") + mounts_.v2;
    ev.add_fact("cgroup.mounts", {}, mounts, {"file", under_root(root_, "/proc/mounts")});
    for (const auto& [path, a] : after) {
        auto it = before_.find(path);
        const Snapshot empty{};
        emit_group(path, it == before_.end() ? empty : it->second, a, window_s, ev);
    }
}

void CgroupCollector::emit_group(const std::string& path, const Snapshot& b, const Snapshot& a,
                                 double window_s, Evidence& ev) const {
    if (window_s <= 0) return;
    const Labels l{{"cgroup", path}};
    const bool v1_io = sources_.io == "v1 blkio";
    const std::string io_dir =
        v1_io ? dir_in(mounts_.v1.at("blkio"), path) : (mounts_.v2.empty() ? "" : dir_in(mounts_.v2, path));
    const std::string mem_dir = sources_.memory == "v1 memory" ? dir_in(mounts_.v1.at("memory"), path)
                                                               : (mounts_.v2.empty() ? "" : dir_in(mounts_.v2, path));
    const std::string v2_dir = mounts_.v2.empty() ? "" : dir_in(mounts_.v2, path);
    const Provenance io_stat{"file", io_dir + (v1_io ? "/blkio.throttle.io_serviced, io_service_bytes" : "/io.stat")};
    const Provenance io_lim{"file", io_dir + (v1_io ? "/blkio.throttle.{read,write}_{bps,iops}_device" : "/io.max")};
    const Provenance mem_stat{"file", mem_dir + "/memory.stat"};

    // --- I/O deltas per device ---
    struct Rates {
        double rios = 0, wios = 0, rbytes = 0, wbytes = 0;
    };
    std::map<std::string, Rates> rates;
    uint64_t total_ios = 0;
    for (const auto& [dev, io] : a.io) {
        auto ib = b.io.find(dev);
        const cgroup::DeviceIo before = ib == b.io.end() ? cgroup::DeviceIo{} : ib->second;
        const uint64_t rios = grew(before.rios, io.rios), wios = grew(before.wios, io.wios);
        const uint64_t rb = grew(before.rbytes, io.rbytes), wb = grew(before.wbytes, io.wbytes);
        total_ios += rios + wios;
        if (rios + wios + rb + wb == 0) continue;
        rates[dev] = {rios / window_s, wios / window_s, rb / window_s, wb / window_s};
    }

    // --- memory deltas ---
    const auto failcnt = delta_opt(b.memory_failcnt, a.memory_failcnt);
    bool has_high = false, has_max = false, has_oom = false, has_kill = false;
    const uint64_t ev_high = map_delta(b.memory_events, a.memory_events, "high", &has_high);
    const uint64_t ev_max = map_delta(b.memory_events, a.memory_events, "max", &has_max);
    const uint64_t ev_oom = map_delta(b.memory_events, a.memory_events, "oom", &has_oom);
    const uint64_t ev_kill = map_delta(b.memory_events, a.memory_events, "oom_kill", &has_kill);
    bool has_pgscan = false, has_pgsteal = false, has_majf = false, has_refault = false, has_pgpgin = false;
    const uint64_t pgscan = map_delta(b.memory_stat, a.memory_stat, "pgscan", &has_pgscan);
    const uint64_t pgsteal = map_delta(b.memory_stat, a.memory_stat, "pgsteal", &has_pgsteal);
    const uint64_t majf = map_delta(b.memory_stat, a.memory_stat, "pgmajfault", &has_majf);
    const uint64_t refault = map_delta(b.memory_stat, a.memory_stat, "workingset_refault_file", &has_refault);
    const uint64_t pgpgin = map_delta(b.memory_stat, a.memory_stat, "pgpgin", &has_pgpgin);
    const uint64_t limit_hits = failcnt.value_or(0) + ev_high + ev_max;
    const bool memory_activity = limit_hits + ev_oom + pgscan + majf + refault > 0;

    // Only groups that did something in the window.
    if (total_ios == 0 && rates.empty() && !memory_activity) return;

    ev.add_fact("cgroup.hierarchy", l,
                "io: " + (sources_.io.empty() ? std::string("none") : sources_.io) +
                    "; memory: " + (sources_.memory.empty() ? std::string("none") : sources_.memory) +
                    (a.io_pressure ? "; pressure: v2" : ""),
                {"file", under_root(root_, "/proc/mounts")});
    std::error_code ec;
    if (!v2_dir.empty() && fs::is_directory(v2_dir, ec)) ev.add_fact("cgroup.v2_dir", l, v2_dir, {"file", v2_dir});

    // --- I/O rates and limits ---
    if (!sources_.io.empty()) {
        Rates sum;
        for (const auto& [dev, r] : rates) {
            sum.rios += r.rios;
            sum.wios += r.wios;
            sum.rbytes += r.rbytes;
            sum.wbytes += r.wbytes;
        }
        ev.add_metric("cgroup.io_read_iops", l, sum.rios, "1/s", io_stat);
        ev.add_metric("cgroup.io_write_iops", l, sum.wios, "1/s", io_stat);
        ev.add_metric("cgroup.io_read_bytes_per_s", l, sum.rbytes, "bytes/s", io_stat);
        ev.add_metric("cgroup.io_write_bytes_per_s", l, sum.wbytes, "bytes/s", io_stat);
        std::string top_dev;
        double top_ios = -1;
        for (const auto& [dev, r] : rates) {
            const std::string name = cgroup::device_name(root_, dev);
            const Labels dl{{"cgroup", path}, {"device", name}};
            ev.add_metric("cgroup.device_read_iops", dl, r.rios, "1/s", io_stat);
            ev.add_metric("cgroup.device_write_iops", dl, r.wios, "1/s", io_stat);
            ev.add_metric("cgroup.device_read_bytes_per_s", dl, r.rbytes, "bytes/s", io_stat);
            ev.add_metric("cgroup.device_write_bytes_per_s", dl, r.wbytes, "bytes/s", io_stat);
            if (r.rios + r.wios > top_ios) {
                top_ios = r.rios + r.wios;
                top_dev = dev;
            }
        }
        if (!top_dev.empty()) {
            ev.add_fact("cgroup.io_top_device", l, cgroup::device_name(root_, top_dev), io_stat);
            ev.add_fact("cgroup.io_top_device_majmin", l, top_dev, io_stat);
        }

        // Utilisation of each configured limit; the highest names the binding one.
        struct Kind {
            const char* key;          // io.max key
            const char* v1_file;      // v1 file
            std::optional<uint64_t> cgroup::IoLimit::*limit;
            double Rates::*rate;
            const char* metric;
            const char* unit;
            const char* what;
        };
        const Kind kinds[] = {
            {"riops", "blkio.throttle.read_iops_device", &cgroup::IoLimit::riops, &Rates::rios,
             "cgroup.device_read_iops_limit", "1/s", "read IO/s"},
            {"wiops", "blkio.throttle.write_iops_device", &cgroup::IoLimit::wiops, &Rates::wios,
             "cgroup.device_write_iops_limit", "1/s", "write IO/s"},
            {"rbps", "blkio.throttle.read_bps_device", &cgroup::IoLimit::rbps, &Rates::rbytes,
             "cgroup.device_read_bps_limit", "bytes/s", "read bytes/s"},
            {"wbps", "blkio.throttle.write_bps_device", &cgroup::IoLimit::wbps, &Rates::wbytes,
             "cgroup.device_write_bps_limit", "bytes/s", "write bytes/s"},
        };
        double best = -1;
        std::string best_dev, best_setting, best_measured;
        for (const auto& [dev, lim] : a.io_limits) {
            const std::string name = cgroup::device_name(root_, dev);
            const Labels dl{{"cgroup", path}, {"device", name}};
            auto ir = rates.find(dev);
            const Rates r = ir == rates.end() ? Rates{} : ir->second;
            double dev_best = -1;
            for (const auto& k : kinds) {
                const auto& v = lim.*(k.limit);
                if (!v || *v == 0) continue;
                ev.add_metric(k.metric, dl, static_cast<double>(*v), k.unit, io_lim);
                const double measured = r.*(k.rate);
                const double util = 100.0 * measured / static_cast<double>(*v);
                dev_best = std::max(dev_best, util);
                if (util > best) {
                    best = util;
                    best_dev = name + " (" + dev + ")";
                    best_setting = v1_io ? std::string(k.v1_file) + " " + dev + " " + std::to_string(*v)
                                         : "io.max " + dev + " " + k.key + "=" + std::to_string(*v);
                    const bool bytes = std::string(k.unit) == "bytes/s";
                    best_measured = std::string(k.what) + " limit " +
                                    (bytes ? human_bytes(static_cast<double>(*v)) + "/s" : std::to_string(*v) + "/s") +
                                    ", measured " + (bytes ? human_bytes(measured) + "/s" : fmt(measured) + "/s") +
                                    " over " + fmt(window_s) + " s";
                }
            }
            if (dev_best >= 0)
                ev.add_metric("cgroup.device_io_limit_utilisation_pct", dl, dev_best, "pct",
                              {"derived", "measured rate / limit: " + io_stat.source + " over " + io_lim.source});
        }
        if (best >= 0) {
            ev.add_metric("cgroup.io_limit_utilisation_pct", l, best, "pct",
                          {"derived", "max over devices of measured rate / limit (" + io_stat.source + ", " +
                                          io_lim.source + ")"});
            ev.add_fact("cgroup.io_limit_device", l, best_dev, io_lim);
            ev.add_fact("cgroup.io_limit_setting", l, best_setting, io_lim);
            ev.add_fact("cgroup.io_limit_measured", l, best_measured,
                        {"derived", io_stat.source + " over the window"});
        }
    }

    // --- v2 io.latency / io.weight / pressure ---
    if (a.version != "v1") {
        if (a.io_latency_file || !a.io_latency_target_us.empty()) {
            ev.add_metric("cgroup.io_latency_configured", l, a.io_latency_target_us.empty() ? 0 : 1, "bool",
                          {"file", v2_dir + "/io.latency"});
            if (!a.io_latency_target_us.empty()) {
                uint64_t lo = UINT64_MAX;
                for (const auto& [dev, t] : a.io_latency_target_us) lo = std::min(lo, t);
                ev.add_metric("cgroup.io_latency_target_us", l, static_cast<double>(lo), "us",
                              {"file", v2_dir + "/io.latency"});
            }
        }
        if (!a.io_weight.empty()) ev.add_fact("cgroup.io_weight", l, a.io_weight, {"file", v2_dir + "/io.weight"});
        auto pressure = [&](const std::optional<cgroup::Pressure>& pb, const std::optional<cgroup::Pressure>& pa,
                            const char* file, const char* some, const char* full) {
            if (!pa) return;
            const Provenance p{"file", v2_dir + "/" + file + " (total= delta over the window)"};
            const double us = window_s * 1e6;
            if (pa->some_us)
                ev.add_metric(some, l,
                              std::min(100.0, 100.0 * grew(pb ? pb->some_us.value_or(0) : 0, *pa->some_us) / us),
                              "pct", p);
            if (full && pa->full_us)
                ev.add_metric(full, l,
                              std::min(100.0, 100.0 * grew(pb ? pb->full_us.value_or(0) : 0, *pa->full_us) / us),
                              "pct", p);
        };
        pressure(b.io_pressure, a.io_pressure, "io.pressure", "cgroup.io_pressure_some_pct",
                 "cgroup.io_pressure_full_pct");
        pressure(b.memory_pressure, a.memory_pressure, "memory.pressure", "cgroup.memory_pressure_some_pct",
                 "cgroup.memory_pressure_full_pct");
        pressure(b.cpu_pressure, a.cpu_pressure, "cpu.pressure", "cgroup.cpu_pressure_some_pct", nullptr);
    }

    // --- memory ---
    if (a.has_memory) {
        const bool v1m = sources_.memory == "v1 memory";
        const Provenance lim{"file", mem_dir + (v1m ? "/memory.limit_in_bytes" : "/memory.max")};
        if (a.memory_limit) ev.add_metric("cgroup.memory_limit_bytes", l, double(*a.memory_limit), "bytes", lim);
        if (a.memory_high)
            ev.add_metric("cgroup.memory_high_bytes", l, double(*a.memory_high), "bytes",
                          {"file", mem_dir + "/memory.high"});
        if (a.memory_usage) {
            ev.add_metric("cgroup.memory_usage_bytes", l, double(*a.memory_usage), "bytes",
                          {"file", mem_dir + (v1m ? "/memory.usage_in_bytes" : "/memory.current")});
            std::optional<uint64_t> cap = a.memory_limit;
            if (a.memory_high && (!cap || *a.memory_high < *cap)) cap = a.memory_high;
            if (cap && *cap > 0)
                ev.add_metric("cgroup.memory_usage_pct_of_limit", l, 100.0 * double(*a.memory_usage) / double(*cap),
                              "pct", {"derived", "usage / limit from " + mem_dir});
        }
        if (failcnt)
            ev.add_metric("cgroup.memory_failcnt_delta", l, double(*failcnt), "count",
                          {"file", mem_dir + "/memory.failcnt"});
        const Provenance events{"file", mem_dir + "/memory.events"};
        if (has_high) ev.add_metric("cgroup.memory_events_high_delta", l, double(ev_high), "count", events);
        if (has_max) ev.add_metric("cgroup.memory_events_max_delta", l, double(ev_max), "count", events);
        if (has_oom) ev.add_metric("cgroup.memory_events_oom_delta", l, double(ev_oom), "count", events);
        if (has_kill) ev.add_metric("cgroup.memory_events_oom_kill_delta", l, double(ev_kill), "count", events);
        if (failcnt || has_high || has_max)
            ev.add_metric("cgroup.memory_limit_hits_delta", l, double(limit_hits), "count",
                          {"derived", v1m ? mem_dir + "/memory.failcnt growth"
                                          : mem_dir + "/memory.events high+max growth"});
        if (has_pgscan) ev.add_metric("cgroup.memory_pgscan_delta", l, double(pgscan), "pages", mem_stat);
        if (has_pgsteal) ev.add_metric("cgroup.memory_pgsteal_delta", l, double(pgsteal), "pages", mem_stat);
        if (has_majf) ev.add_metric("cgroup.memory_pgmajfault_delta", l, double(majf), "count", mem_stat);
        if (has_refault)
            ev.add_metric("cgroup.memory_workingset_refault_file_delta", l, double(refault), "pages", mem_stat);
        if (has_pgpgin) ev.add_metric("cgroup.memory_pgpgin_delta", l, double(pgpgin), "pages", mem_stat);
        auto gauge = [&](const char* key, const char* metric) {
            auto it = a.memory_stat.find(key);
            if (it != a.memory_stat.end()) ev.add_metric(metric, l, double(it->second), "bytes", mem_stat);
        };
        gauge("file", "cgroup.memory_file_bytes");
        gauge("dirty", "cgroup.memory_dirty_bytes");
        gauge("writeback", "cgroup.memory_writeback_bytes");
    }
}

}  // namespace iodiag
