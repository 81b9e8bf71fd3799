// /proc/diskstats: two snapshots parsed, then the per-disk deltas.
#include "collectors/procfs/diskstats.hpp"
#include "collectors/text_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(diskstats) {
    using namespace iodiag;
    const auto snapshots = fuzz::two_snapshots(fuzz::text(data, size));
    std::map<std::string, DiskStatsRecord> before, after;
    if (!fuzz::rejects_with<SourceError>("/proc/diskstats", [&] {
            before = parse_diskstats(snapshots.first, "/proc/diskstats");
            after = parse_diskstats(snapshots.second, "/proc/diskstats");
        }))
        return;
    Evidence ev;
    for (const auto& [name, rec] : after)
        if (auto it = before.find(name); it != before.end()) add_disk_metrics(it->second, rec, 1.0, ev);
    fuzz::require_finite(ev);
}
