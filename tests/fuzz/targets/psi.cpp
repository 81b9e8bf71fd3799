// /proc/pressure/* (and the cgroup v2 *.pressure files, same parser): two
// snapshots, then the stall shares of the window.
#include "collectors/procfs/psi.hpp"
#include "collectors/text_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(psi) {
    using namespace iodiag;
    const auto snapshots = fuzz::two_snapshots(fuzz::text(data, size));
    PsiTotals before, after;
    if (!fuzz::rejects_with<SourceError>("/proc/pressure/io", [&] {
            before = parse_psi(snapshots.first, "/proc/pressure/io");
            after = parse_psi(snapshots.second, "/proc/pressure/io");
        }))
        return;
    Evidence ev;
    add_psi_metrics("io", before, after, 1.0, "/proc/pressure/io", ev);
    fuzz::require_finite(ev);
}
