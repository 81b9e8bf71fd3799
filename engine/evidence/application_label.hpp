// The application a labelled value belongs to (issue 33): its `app` label,
// which the collectors give every value about a process (a program and the
// processes it forked running the same program, named by its command line:
// collectors/procfs/applications.hpp), or its `comm` in a bundle recorded
// before applications were named, where the command name stood for one.
#pragma once

#include <string>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

inline std::string application_label(const Labels& l) {
    if (const auto a = l.find("app"); a != l.end()) return a->second;
    if (const auto c = l.find("comm"); c != l.end()) return c->second;
    return "";
}

}  // namespace iodiag
