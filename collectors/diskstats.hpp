// /proc/diskstats: per whole disk IOPS, throughput, awaits, utilisation and
// queue depth over the observation window (what iostat -x shows).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
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

class DiskstatsCollector : public Collector {
public:
    std::string name() const override { return "diskstats"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;

private:
    std::string path_;
    std::vector<std::string> disks_;  // whole disks to report, in /sys/block
    std::map<std::string, DiskStatsRecord> before_;
    MonotonicStopwatch window_;
};

}  // namespace iodiag
