#include "collectors/procfs/vmstat.hpp"

#include <spdlog/spdlog.h>

#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

const char* const kVmstat = "/proc/vmstat";

// Zone suffixes of the per-zone counters of kernels before 4.8
// (pgscan_direct_normal, ...). pgscan_direct_throttle is NOT one of them.
const std::vector<std::string> kZoneSuffixes{"dma", "dma32", "normal", "high", "movable", "device"};

std::optional<std::uint64_t> get(const VmstatCounters& c, const std::string& key) {
    auto it = c.find(key);
    if (it == c.end()) return std::nullopt;
    return it->second;
}

// `key` itself when present, else the sum of its per-zone variants.
std::optional<std::uint64_t> single_or_per_zone(const VmstatCounters& c, const std::string& key) {
    if (auto v = get(c, key)) return v;
    std::optional<std::uint64_t> sum;
    for (const auto& z : kZoneSuffixes)
        if (auto v = get(c, key + "_" + z)) sum = sum.value_or(0) + *v;
    return sum;
}

std::optional<std::uint64_t> allocstall(const VmstatCounters& c) {
    // "allocstall" (before 4.8) or allocstall_<zone> (4.8+): sum whatever exists.
    std::optional<std::uint64_t> sum;
    for (auto it = c.lower_bound("allocstall"); it != c.end() && it->first.rfind("allocstall", 0) == 0; ++it)
        sum = sum.value_or(0) + it->second;
    return sum;
}

std::optional<std::uint64_t> workingset_refault(const VmstatCounters& c) {
    auto file = get(c, "workingset_refault_file");
    auto anon = get(c, "workingset_refault_anon");
    if (file || anon) return file.value_or(0) + anon.value_or(0);
    return get(c, "workingset_refault");  // before 5.9
}

}  // namespace

VmstatCounters parse_vmstat(const std::string& text, const std::string& path) {
    VmstatCounters out;
    for_each_line(text, path, [&](const std::vector<std::string>& f, const std::string& line, const std::string& where) {
        if (f.size() != 2) throw SourceError(where + ": expected 'name value', got '" + line + "'");
        const auto value = parse_u64(f[1], where);
        if (!out.emplace(f[0], value).second) throw SourceError(where + ": '" + f[0] + "' seen twice");
    });
    if (out.empty()) throw SourceError(path + ": empty");
    return out;
}

const std::vector<VmstatValue>& vmstat_delta_values() {
    static const std::vector<VmstatValue> v{
        {"vm.allocstall", "sum of allocstall_* (direct reclaim entries)", allocstall},
        {"vm.pgscan_direct", "pgscan_direct (or sum of pgscan_direct_<zone>)",
         [](const VmstatCounters& c) { return single_or_per_zone(c, "pgscan_direct"); }},
        {"vm.pgsteal_direct", "pgsteal_direct (or sum of pgsteal_direct_<zone>)",
         [](const VmstatCounters& c) { return single_or_per_zone(c, "pgsteal_direct"); }},
        {"vm.pgscan_kswapd", "pgscan_kswapd (or sum of pgscan_kswapd_<zone>)",
         [](const VmstatCounters& c) { return single_or_per_zone(c, "pgscan_kswapd"); }},
        {"vm.pgsteal_kswapd", "pgsteal_kswapd (or sum of pgsteal_kswapd_<zone>)",
         [](const VmstatCounters& c) { return single_or_per_zone(c, "pgsteal_kswapd"); }},
        {"vm.pgmajfault", "pgmajfault", [](const VmstatCounters& c) { return get(c, "pgmajfault"); }},
        {"vm.workingset_refault", "workingset_refault_file + workingset_refault_anon (or workingset_refault)",
         workingset_refault},
        {"vm.compact_stall", "compact_stall", [](const VmstatCounters& c) { return get(c, "compact_stall"); }},
    };
    return v;
}

const std::vector<VmstatValue>& vmstat_gauge_values() {
    static const std::vector<VmstatValue> v{
        {"vm.nr_dirty", "nr_dirty", [](const VmstatCounters& c) { return get(c, "nr_dirty"); }},
        {"vm.nr_writeback", "nr_writeback", [](const VmstatCounters& c) { return get(c, "nr_writeback"); }},
    };
    return v;
}

const std::vector<VmstatValue>& vmstat_series_only_deltas() {
    static const std::vector<VmstatValue> v{
        {"vm.nr_dirtied", "nr_dirtied", [](const VmstatCounters& c) { return get(c, "nr_dirtied"); }},
        {"vm.nr_written", "nr_written", [](const VmstatCounters& c) { return get(c, "nr_written"); }},
        {"vm.pgscan_direct_throttle", "pgscan_direct_throttle",
         [](const VmstatCounters& c) { return get(c, "pgscan_direct_throttle"); }},
        {"vm.nr_vmscan_write", "nr_vmscan_write", [](const VmstatCounters& c) { return get(c, "nr_vmscan_write"); }},
        {"vm.nr_vmscan_immediate_reclaim", "nr_vmscan_immediate_reclaim",
         [](const VmstatCounters& c) { return get(c, "nr_vmscan_immediate_reclaim"); }},
    };
    return v;
}

const std::vector<VmstatValue>& vmstat_series_only_gauges() {
    static const std::vector<VmstatValue> v{
        {"vm.nr_dirty_threshold", "nr_dirty_threshold",
         [](const VmstatCounters& c) { return get(c, "nr_dirty_threshold"); }},
        {"vm.nr_dirty_background_threshold", "nr_dirty_background_threshold",
         [](const VmstatCounters& c) { return get(c, "nr_dirty_background_threshold"); }},
    };
    return v;
}

std::string vmstat_series_name(const std::string& metric) {
    return "vmstat." + (metric.rfind("vm.", 0) == 0 ? metric.substr(3) : metric);
}

namespace {

struct SeriesValue {
    const VmstatValue* value;
    bool delta;
};

// Every value kept per interval, in the order of VmstatSeriesSnapshot.
const std::vector<SeriesValue>& series_values() {
    static const std::vector<SeriesValue> v = [] {
        std::vector<SeriesValue> out;
        for (const auto* table : {&vmstat_delta_values(), &vmstat_series_only_deltas()})
            for (const auto& val : *table) out.push_back({&val, true});
        for (const auto* table : {&vmstat_gauge_values(), &vmstat_series_only_gauges()})
            for (const auto& val : *table) out.push_back({&val, false});
        return out;
    }();
    return v;
}

}  // namespace

VmstatSeriesSnapshot vmstat_series_snapshot(const VmstatCounters& c) {
    VmstatSeriesSnapshot out;
    for (const auto& sv : series_values()) out.push_back(sv.value->extract(c));
    return out;
}

void add_vmstat_series(const IntervalSnapshots<VmstatSeriesSnapshot>& snapshots, Evidence& ev) {
    if (!snapshots.complete() || snapshots.intervals() == 0) return;
    const auto& values = series_values();
    for (size_t k = 0; k < values.size(); ++k) {
        const VmstatValue& val = *values[k].value;
        const bool delta = values[k].delta;
        ValueSeries vs{vmstat_series_name(val.metric), {}, delta ? "count" : "pages", {},
                       delta ? Provenance{"derived", "delta per interval of " + val.formula + " in " + kVmstat}
                             : Provenance{"file", std::string(kVmstat) + " " + val.formula +
                                                      " at the end of each interval"}};
        bool whole = true;
        snapshots.for_each_interval([&](const VmstatSeriesSnapshot& a, const VmstatSeriesSnapshot& b, double,
                                        size_t i) {
            const auto& x = a.at(k);
            const auto& y = b.at(k);
            if (!y || (delta && !x)) {
                whole = false;   // this kernel does not have it
            } else if (delta && *y < *x) {
                if (whole)
                    spdlog::warn("vmstat: {} went backwards in interval {} ({} -> {}); no series", val.metric, i,
                                 *x, *y);
                whole = false;
            }
            vs.intervals.push_back(!whole ? 0 : delta ? static_cast<double>(*y - *x) : static_cast<double>(*y));
        });
        if (whole) ev.series.values.push_back(std::move(vs));
    }
}

void add_vmstat_metrics(const VmstatCounters& before, const VmstatCounters& after, Evidence& ev) {
    for (const auto& val : vmstat_delta_values()) {
        const auto a = val.extract(before);
        const auto b = val.extract(after);
        if (!a || !b) continue;  // this kernel does not have it
        if (*b < *a) {
            spdlog::warn("vmstat: {} went backwards ({} -> {}); not reported", val.metric, *a, *b);
            continue;
        }
        ev.add_metric(val.metric, {}, static_cast<double>(*b - *a), "count",
                      {"derived", "delta over the window of " + val.formula + " in /proc/vmstat"});
    }
    for (const auto& val : vmstat_gauge_values())
        if (const auto v = val.extract(after))
            ev.add_metric(val.metric, {}, static_cast<double>(*v), "pages",
                          {"file", std::string(kVmstat) + " " + val.formula});
}

std::vector<MetricSpec> VmstatCollector::metric_specs() const {
    using K = MetricSpec::Kind;
    auto m = [](std::string n, std::string unit, const std::string& lay, std::string d) {
        return MetricSpec{std::move(n), K::Metric, std::move(unit), lay, "", std::move(d)};
    };
    return {
        m("vm.allocstall", "count", layer::kReclaim, "Direct reclaim entries (allocstall_* summed) in the window"),
        m("vm.pgscan_direct", "count", layer::kReclaim, "Pages scanned by direct reclaim in the window"),
        m("vm.pgsteal_direct", "count", layer::kReclaim, "Pages reclaimed by direct reclaim in the window"),
        m("vm.pgscan_kswapd", "count", layer::kReclaim, "Pages scanned by kswapd in the window"),
        m("vm.pgsteal_kswapd", "count", layer::kReclaim, "Pages reclaimed by kswapd in the window"),
        m("vm.pgmajfault", "count", layer::kPageCache, "Major page faults (needed I/O) in the window"),
        m("vm.workingset_refault", "count", layer::kPageCache,
          "Refaults of recently evicted pages (file + anon) in the window: cache thrashing"),
        m("vm.compact_stall", "count", layer::kReclaim, "Direct compaction stalls in the window"),
        m("vm.nr_dirty", "pages", layer::kDirty, "Dirty page-cache pages at the end of the window"),
        m("vm.nr_writeback", "pages", layer::kDirty, "Pages under writeback at the end of the window"),
    };
}

CollectorStatus VmstatCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    path_ = under_root(opts.root, kVmstat);
    try {
        before_ = parse_vmstat(read_text_file(path_), path_);
        series_.begin(vmstat_series_snapshot(before_));
    } catch (const SourceError& e) {
        st.reason = e.what();
        return st;
    }
    st.available = true;
    return st;
}

void VmstatCollector::sample(size_t) {
    try {
        series_.take(vmstat_series_snapshot(parse_vmstat(read_text_file(path_), path_)));
    } catch (const SourceError& e) {
        series_.take(std::nullopt, e.what());
    }
}

void VmstatCollector::finish(Evidence& ev) {
    try {
        const auto after = parse_vmstat(read_text_file(path_), path_);
        add_vmstat_metrics(before_, after, ev);
    } catch (const SourceError& e) {
        spdlog::warn("vmstat: {}", e.what());
        mark_unavailable_at_finish(ev, name(), {}, e.what());
    }
    if (series_.intervals() > 0 && !series_.complete())
        spdlog::warn("vmstat: no per-interval series: {}", series_.failure());
    add_vmstat_series(series_, ev);
}

}  // namespace iodiag
