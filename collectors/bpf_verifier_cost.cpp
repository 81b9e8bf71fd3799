#include "collectors/bpf_verifier_cost.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace iodiag {

std::string verified_instructions(bpf_object* obj) {
    std::vector<std::pair<uint32_t, std::string>> counts;
    bpf_program* prog;
    bpf_object__for_each_program(prog, obj) {
        const int fd = bpf_program__fd(prog);
        if (fd < 0) continue;   // not loaded (autoload off)
        bpf_prog_info info{};
        uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0 || info.verified_insns == 0) continue;
        counts.emplace_back(info.verified_insns, bpf_program__name(prog));
    }
    std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string out;
    for (const auto& [n, name] : counts) out += (out.empty() ? "" : ", ") + name + " " + std::to_string(n);
    return out;
}

}  // namespace iodiag
