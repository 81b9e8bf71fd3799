#include "collectors/bpf/bpf_program_stats.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace iodiag {
namespace {

// Calls `fn` with each loaded program's name, its info and how many bytes of
// the info the kernel filled (older kernels know a shorter struct).
void for_each_loaded_program(bpf_object* obj,
                             const std::function<void(const char*, const bpf_prog_info&, uint32_t)>& fn) {
    bpf_program* prog;
    bpf_object__for_each_program(prog, obj) {
        const int fd = bpf_program__fd(prog);
        if (fd < 0) continue;   // not loaded (autoload off)
        bpf_prog_info info{};
        uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
        fn(bpf_program__name(prog), info, len);
    }
}

}  // namespace

std::string verified_instructions(bpf_object* obj) {
    std::vector<std::pair<uint32_t, std::string>> counts;
    for_each_loaded_program(obj, [&](const char* name, const bpf_prog_info& info, uint32_t) {
        if (info.verified_insns) counts.emplace_back(info.verified_insns, name);
    });
    std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string out;
    for (const auto& [n, name] : counts) out += (out.empty() ? "" : ", ") + name + " " + std::to_string(n);
    return out;
}

std::optional<SkippedRuns> skipped_runs(bpf_object* obj) {
    SkippedRuns out;
    bool reported = false;
    for_each_loaded_program(obj, [&](const char* name, const bpf_prog_info& info, uint32_t len) {
        if (len < offsetof(bpf_prog_info, recursion_misses) + sizeof info.recursion_misses) return;
        reported = true;
        if (!info.recursion_misses) return;
        out.total += info.recursion_misses;
        out.by_program += (out.by_program.empty() ? "" : ", ") + std::string(name) + " " +
                          std::to_string(info.recursion_misses);
    });
    if (!reported) return std::nullopt;
    return out;
}

}  // namespace iodiag
