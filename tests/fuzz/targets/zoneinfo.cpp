// /proc/zoneinfo: the kernel's totalreserve_pages (dirty limit input).
#include "collectors/procfs/dirty_limits.hpp"
#include "collectors/text_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(zoneinfo) {
    using namespace iodiag;
    fuzz::rejects_with<SourceError>("/proc/zoneinfo",
                                    [&] { parse_totalreserve_pages(fuzz::text(data, size), "/proc/zoneinfo"); });
}
