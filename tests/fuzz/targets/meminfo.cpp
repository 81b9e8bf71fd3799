// /proc/meminfo.
#include "collectors/procfs/meminfo.hpp"
#include "collectors/text_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(meminfo) {
    using namespace iodiag;
    std::map<std::string, std::uint64_t> parsed;
    if (!fuzz::rejects_with<SourceError>("/proc/meminfo",
                                         [&] { parsed = parse_meminfo(fuzz::text(data, size), "/proc/meminfo"); }))
        return;
    Evidence ev;
    add_meminfo_metrics(parsed, ev);
    fuzz::require_finite(ev);
}
