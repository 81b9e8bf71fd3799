// /proc/diskstats: per whole disk IOPS, throughput, awaits, utilisation and
// queue depth over the observation window (what iostat -x shows); per
// interval of the window the series disk.iops, disk.await_ms, disk.util_pct.
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

// One /proc/diskstats line. Times are in milliseconds, sizes in 512-byte
// sectors (always 512 there, whatever the device's sector size).
struct DiskStatsRecord {
    unsigned major = 0, minor = 0;
    std::string name;
    std::uint64_t reads = 0, read_merges = 0, read_sectors = 0, read_ticks_ms = 0;
    std::uint64_t writes = 0, write_merges = 0, write_sectors = 0, write_ticks_ms = 0;
    std::uint64_t in_flight = 0, io_ticks_ms = 0, time_in_queue_ms = 0;
    bool has_discard = false;  // 18+ fields (4.18+)
    std::uint64_t discards = 0, discard_merges = 0, discard_sectors = 0, discard_ticks_ms = 0;
    bool has_flush = false;    // 20 fields (5.5+)
    std::uint64_t flushes = 0, flush_ticks_ms = 0;
};

// Parses all lines of /proc/diskstats (14, 18 or 20 fields; the 7-field
// partition lines of 2.6.25-era kernels are ignored). Keyed by device name.
// Throws SourceError naming `path` and the line for anything else.
std::map<std::string, DiskStatsRecord> parse_diskstats(const std::string& text, const std::string& path);

// Appends the disk.* metrics of one device for the window between two
// snapshots. Returns false (and appends nothing) when a counter went backwards
// (wrap, or the device was replaced): a negative rate is never reported.
bool add_disk_metrics(const DiskStatsRecord& before, const DiskStatsRecord& after, double window_s,
                      Evidence& ev);

// What a sample keeps of one disk: all completed requests (reads + writes +
// discards + flushes, where the kernel has them), their summed ticks, and
// io_ticks (time with at least one request in flight).
struct DiskTotals {
    unsigned major = 0, minor = 0;
    std::uint64_t ios = 0, ticks_ms = 0, io_ticks_ms = 0;
};
DiskTotals disk_totals(const DiskStatsRecord& r);
// The totals of `devices` (those present in `records`).
using DiskSeriesSnapshot = std::map<std::string, DiskTotals>;
DiskSeriesSnapshot disk_series_snapshot(const std::map<std::string, DiskStatsRecord>& records,
                                        const std::vector<std::string>& devices);

// Appends disk.iops (1/s), disk.await_ms (ms; 0 where no I/O completed, where
// disk.iops is 0) and disk.util_pct (pct) per interval for each device that did
// any I/O in the window. A device missing from a sample, renumbered, or with a
// counter going backwards gets no series (warned).
void add_disk_series(const IntervalSnapshots<DiskSeriesSnapshot>& snapshots, const std::vector<std::string>& devices,
                     Evidence& ev);

class DiskstatsCollector : public Collector {
public:
    std::string name() const override { return "diskstats"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void sample(size_t interval) override;
    void finish(Evidence& ev) override;

private:
    std::string path_;
    std::vector<std::string> disks_;  // whole disks to report, in /sys/block
    std::map<std::string, DiskStatsRecord> before_;
    IntervalSnapshots<DiskSeriesSnapshot> series_;
    MonotonicStopwatch window_;
};

}  // namespace iodiag
