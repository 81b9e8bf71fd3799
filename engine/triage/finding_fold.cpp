#include "engine/triage/finding_fold.hpp"

#include <cctype>

namespace iodiag {

void trim_end(std::string& s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
}

void cite_once(Finding& into, const CitedValue& c) {
    for (const auto& e : into.evidence)
        if (e.name == c.name && e.labels == c.labels) return;
    into.evidence.push_back(c);
}

}  // namespace iodiag
