// /proc/<pid>/stat: the command name and field 42 (delayacct_blkio_ticks).
#include "collectors/procfs/delayacct.hpp"
#include "collectors/text_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(delayacct_stat) {
    using namespace iodiag;
    const std::string line = fuzz::text(data, size);
    parse_stat_comm(line);
    fuzz::rejects_with<SourceError>("/proc/42/stat", [&] { parse_delayacct_blkio_ticks(line, "/proc/42/stat"); });
}
