// /proc/vmstat: two snapshots parsed, then the deltas and gauges.
#include "collectors/procfs/vmstat.hpp"
#include "collectors/text_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(vmstat) {
    using namespace iodiag;
    const auto snapshots = fuzz::two_snapshots(fuzz::text(data, size));
    VmstatCounters before, after;
    if (!fuzz::rejects_with<SourceError>("/proc/vmstat", [&] {
            before = parse_vmstat(snapshots.first, "/proc/vmstat");
            after = parse_vmstat(snapshots.second, "/proc/vmstat");
        }))
        return;
    Evidence ev;
    add_vmstat_metrics(before, after, ev);
    fuzz::require_finite(ev);
}
