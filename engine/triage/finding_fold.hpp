#pragma once
// What every fold of one finding into another does alike: the generic rule
// fold (analysis.cpp, a rule's `supersedes`) and the Ceph view's folds
// (ceph_host_findings.cpp) each decide *which* findings fold; these pieces do
// the merging, so the two cannot drift apart.
#include <string>
#include <utility>
#include <vector>

#include "engine/triage/verdict.hpp"

namespace iodiag {

// Drops trailing whitespace (before a sentence is appended to a mechanism).
void trim_end(std::string& s);

// Adds `c` to the finding's evidence unless a value of the same name and
// labels is already cited.
void cite_once(Finding& into, const CitedValue& c);

// Keeps the entries whose `gone` flag is false, in order.
template <typename T>
void drop_gone(std::vector<T>& items, const std::vector<bool>& gone) {
    std::vector<T> kept;
    for (size_t i = 0; i < items.size(); ++i)
        if (!gone[i]) kept.push_back(std::move(items[i]));
    items = std::move(kept);
}

}  // namespace iodiag
