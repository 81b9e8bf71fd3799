// /proc/kallsyms: kernel text ranges of the functions the syscall collector
// recognises in stacks.
#include "collectors/bpf/kallsyms.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(kallsyms) {
    using namespace iodiag;
    static const std::map<std::string, int> wanted = {
        {"blk_mq_get_tag", 1}, {"folio_wait_bit_common", 2}, {"jbd2_log_wait_commit", 3},
        {"xlog_wait_on_iclog", 4}, {"rwsem_down_write_slowpath", 5}, {"__mutex_lock", 6},
        {"io_schedule", 7}, {"balance_dirty_pages", 8}};
    const auto ranges = resolve_kernel_symbols(fuzz::text(data, size), wanted);
    for (size_t i = 0; i < ranges.size(); ++i) {
        if (ranges[i].end < ranges[i].start) fuzz::fail("range of " + ranges[i].name + " ends before it starts");
        if (i > 0 && ranges[i].start < ranges[i - 1].start) fuzz::fail("ranges not sorted by start");
        if (!wanted.count(ranges[i].name)) fuzz::fail("range of an unwanted name " + ranges[i].name);
    }
}
