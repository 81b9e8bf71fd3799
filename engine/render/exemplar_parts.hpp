// How a slow operation's measured values read: the total, the parts it is made
// of (keys ending in _us), and the other figures. Shared by the text verdict
// and the HTML report, so both show an exemplar alike.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

struct ExemplarParts {
    double total = 0;                                    // total_us (syscall) or q2c_us (block I/O)
    std::vector<std::pair<double, std::string>> parts;   // (value, name without _us), largest first, > 0 only
    std::string other;                                   // "bytes 4096, offset 0": values that are not times
};

ExemplarParts split_exemplar(const Exemplar& e);

}  // namespace iodiag
