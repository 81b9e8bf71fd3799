// The dirty limit computed the kernel's way from a whole tree: vm.dirty_*
// sysctls, /proc/vmstat, /proc/meminfo, /proc/zoneinfo.
#include "collectors/procfs/dirty_limits.hpp"
#include "collectors/text_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/fuzz_tree.hpp"

IODIAG_FUZZ_TARGET(dirty_limits) {
    using namespace iodiag;
    static fuzz::ScratchTree tree;
    const std::string& root = tree.unpack(fuzz::text(data, size));
    Evidence ev;
    if (fuzz::rejects_with<SourceError>(root, [&] { DirtyLimitsCollector::collect(root, ev); }))
        fuzz::require_finite(ev);
}
