#include "collectors/bpf_skipped_runs.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstddef>

namespace iodiag {

std::optional<SkippedRuns> skipped_runs(bpf_object* obj) {
    SkippedRuns out;
    bool reported = false;
    bpf_program* prog;
    bpf_object__for_each_program(prog, obj) {
        const int fd = bpf_program__fd(prog);
        if (fd < 0) continue;   // not loaded (autoload off)
        bpf_prog_info info{};
        uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
        // The kernel writes back how much of the struct it knows.
        if (len < offsetof(bpf_prog_info, recursion_misses) + sizeof info.recursion_misses) continue;
        reported = true;
        if (!info.recursion_misses) continue;
        out.total += info.recursion_misses;
        out.by_program += (out.by_program.empty() ? "" : ", ") + std::string(bpf_program__name(prog)) + " " +
                          std::to_string(info.recursion_misses);
    }
    if (!reported) return std::nullopt;
    return out;
}

}  // namespace iodiag
