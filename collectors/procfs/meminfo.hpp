// /proc/meminfo at the end of the window: how much memory is free, cached,
// dirty, under writeback.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/snapshot_support.hpp"

namespace iodiag {

// Key -> value, with "kB" values converted to bytes and unit-less values
// (HugePages_Total, ...) kept as they are. Throws SourceError naming `path`
// and the line for an empty file, a line that is not "Key: number [kB]", or a
// key seen twice.
std::map<std::string, std::uint64_t> parse_meminfo(const std::string& text, const std::string& path);

// Appends the mem.* metrics present in a parsed meminfo.
void add_meminfo_metrics(const std::map<std::string, std::uint64_t>& meminfo, Evidence& ev);

class MeminfoCollector : public Collector {
public:
    std::string name() const override { return "meminfo"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;

private:
    std::string path_;
};

}  // namespace iodiag
