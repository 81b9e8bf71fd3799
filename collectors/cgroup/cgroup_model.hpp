// One snapshot of a cgroup's I/O and memory-control state, filled by the v1 or
// the v2 reader (cgroup_v1.hpp, cgroup_v2.hpp) so the collector compares two
// snapshots the same way whatever the hierarchy.
#pragma once

#include "collectors/procfs/psi.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace iodiag::cgroup {

// Cumulative I/O of the group on one device.
struct DeviceIo {
    uint64_t rbytes = 0, wbytes = 0, rios = 0, wios = 0;
};

// blk-throttle limits on one device; nullopt = no limit ("max" / absent).
struct IoLimit {
    std::optional<uint64_t> rbps, wbps, riops, wiops;
    bool any() const { return rbps || wbps || riops || wiops; }
};

// Cumulative stall time of a pressure file (microseconds).
using Pressure = PsiTotals;

struct Snapshot {
    std::string version;                            // "v1" or "v2"
    std::map<std::string, DeviceIo> io;             // by "MAJ:MIN"
    std::map<std::string, IoLimit> io_limits;       // by "MAJ:MIN"
    std::map<std::string, uint64_t> io_latency_target_us;   // v2 io.latency, by "MAJ:MIN"
    bool io_latency_file = false;                   // v2: io.latency exists (controller on)
    std::string io_weight;                          // v2 io.weight, raw text ("" if none)
    std::optional<Pressure> io_pressure, memory_pressure, cpu_pressure;   // v2 only

    std::optional<uint64_t> memory_limit;           // v1 limit_in_bytes / v2 memory.max
    std::optional<uint64_t> memory_high;            // v2 memory.high
    std::optional<uint64_t> memory_usage;           // v1 usage_in_bytes / v2 memory.current
    std::optional<uint64_t> memory_failcnt;         // v1 memory.failcnt
    std::map<std::string, uint64_t> memory_events;  // v2 memory.events (high, max, oom, oom_kill)
    std::map<std::string, uint64_t> memory_stat;    // memory.stat, keys normalised (see readers)
    bool has_memory = false;                        // memory controller files were read
};

// Parsers shared by both readers; each throws SourceError naming `path`.
// "some avg10=.. total=N\nfull ... total=N"
Pressure parse_pressure(const std::string& text, const std::string& path);
// "key value" lines.
std::map<std::string, uint64_t> parse_flat_keyed(const std::string& text, const std::string& path);
// "MAJ:MIN value" lines (v1 *_device files).
std::map<std::string, uint64_t> parse_device_values(const std::string& text, const std::string& path);
// "MAJ:MIN key=value key=value" lines; "max" values are left out.
std::map<std::string, std::map<std::string, uint64_t>> parse_nested_keyed(const std::string& text,
                                                                        const std::string& path);

// v1 reports "unlimited" as a huge page-aligned number (LONG_MAX rounded down
// to a page): treat anything at or above 2^62 as no limit.
inline bool is_unlimited(uint64_t bytes) { return bytes >= (1ULL << 62); }

}  // namespace iodiag::cgroup
