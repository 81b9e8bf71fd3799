// The contention steps in order (contention.hpp).
#include "engine/derive/contention.hpp"

namespace iodiag::derive {

void add_contention(Evidence& ev) {
    add_device_contention(ev);
    add_cpu_contention(ev);
    add_journal_contention(ev);
    add_neighbor_cgroup_names(ev);
}

std::vector<MetricSpec> contention_specs() {
    std::vector<MetricSpec> specs;
    for (auto part : {device_contention_specs, cpu_contention_specs, journal_contention_specs, neighbor_name_specs})
        for (auto& s : part()) specs.push_back(std::move(s));
    return specs;
}

}  // namespace iodiag::derive
