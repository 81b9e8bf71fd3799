// Cgroups as every renderer shows them: the name people use first (a systemd
// unit, a container, a pod), the path as evidence (docs/cgroup-names.md).
#pragma once

#include <string>

#include "engine/triage/verdict.hpp"

namespace iodiag {

// "postgresql@15-main.service (/system.slice/postgresql@15-main.service)" for
// a cgroup label the verdict has a name for; any other text (a device, a
// label of a bundle recorded before names were kept) as it is.
std::string named(const Verdict& v, const std::string& maybe_cgroup);
// The labels with a `cgroup` label's value named.
Labels named_labels(const Verdict& v, const Labels& labels);
// The name alone (no path), for one-line outputs that have no room for the
// path; the text as it is when the verdict has no name for it.
std::string name_only(const Verdict& v, const std::string& maybe_cgroup);

}  // namespace iodiag
