// /proc/vmstat: reclaim, fault and refault counters as deltas over the window,
// dirty/writeback page gauges at its end; per interval of the window (series
// vmstat.<counter>) the same deltas and gauges plus the writeback and
// throttling counters and the dirty limits.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/interval_snapshots.hpp"
#include "collectors/snapshot_support.hpp"

namespace iodiag {

// name -> value of every "name value" line.
using VmstatCounters = std::map<std::string, std::uint64_t>;

// Parses /proc/vmstat text. Throws SourceError naming `path` (and the line) for
// an empty file, a line that is not "name number", or a name seen twice.
VmstatCounters parse_vmstat(const std::string& text, const std::string& path);

// One value the collector reports, and how it is found in /proc/vmstat across
// kernel versions (e.g. allocstall per zone since 4.8, one counter before;
// workingset_refault split into _file/_anon in 5.9). nullopt when this kernel
// has none of the counters: then the metric is not emitted.
struct VmstatValue {
    std::string metric;  // e.g. "vm.allocstall"
    std::string formula; // for provenance, e.g. "sum of allocstall_*"
    std::optional<std::uint64_t> (*extract)(const VmstatCounters&);
};
const std::vector<VmstatValue>& vmstat_delta_values();  // counters: delta over the window
const std::vector<VmstatValue>& vmstat_gauge_values();  // gauges: value at the end

// Kept per interval only: pages dirtied and written (writeback), direct
// reclaimers throttled, reclaim writing pages itself; gauges: the dirty
// limits in pages (what the kernel throttles against, which a sysctl change
// moves mid-window).
const std::vector<VmstatValue>& vmstat_series_only_deltas();
const std::vector<VmstatValue>& vmstat_series_only_gauges();

// "vm.allocstall" -> "vmstat.allocstall": the series name of a value.
std::string vmstat_series_name(const std::string& metric);

// What a sample keeps of /proc/vmstat: the values of every delta and gauge
// above (window ones and series-only ones, in that order), not the whole file
// (an hour at 1 s intervals would be ~600,000 counters).
using VmstatSeriesSnapshot = std::vector<std::optional<std::uint64_t>>;
VmstatSeriesSnapshot vmstat_series_snapshot(const VmstatCounters& counters);

// Appends the series: every delta value (unit count, per interval) and every
// gauge (unit pages, at each interval's end) this kernel has. A counter that
// went backwards in an interval gets no series (warned).
void add_vmstat_series(const IntervalSnapshots<VmstatSeriesSnapshot>& snapshots, Evidence& ev);

// Appends the deltas between two snapshots and the gauges of `after`.
// A counter that went backwards (reset, wrap) is skipped with a warning.
void add_vmstat_metrics(const VmstatCounters& before, const VmstatCounters& after, Evidence& ev);

class VmstatCollector : public Collector {
public:
    std::string name() const override { return "vmstat"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void sample(size_t interval) override;
    void finish(Evidence& ev) override;

private:
    std::string path_;
    VmstatCounters before_;
    IntervalSnapshots<VmstatSeriesSnapshot> series_;
};

}  // namespace iodiag
