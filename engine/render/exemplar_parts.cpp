#include "engine/render/exemplar_parts.hpp"

#include <algorithm>

#include "engine/evidence/format.hpp"

namespace iodiag {

ExemplarParts split_exemplar(const Exemplar& e) {
    ExemplarParts out;
    for (const auto& [k, val] : e.values) {
        const bool is_total = k == "total_us" || k == "q2c_us";
        const bool is_part = k.size() > 3 && k.compare(k.size() - 3, 3, "_us") == 0;
        if (is_total)
            out.total = val;
        else if (is_part && val > 0)
            out.parts.push_back({val, k.substr(0, k.size() - 3)});
        else if (k == "in_flight" && val > 0)   // collectors/bpf/inflight_syscalls.hpp
            out.other += (out.other.empty() ? "" : ", ") + std::string("still waiting when the window ended (its time so far)");
        else if (k == "before_window" && val > 0)   // collectors/bpf/waits_before_window.hpp
            out.other += (out.other.empty() ? "" : ", ") +
                         std::string("already waiting when the window started (timed from its start)");
        else if (!is_part)
            out.other += (out.other.empty() ? "" : ", ") + k + " " + format_number(val);
    }
    std::sort(out.parts.rbegin(), out.parts.rend());
    return out;
}

}  // namespace iodiag
