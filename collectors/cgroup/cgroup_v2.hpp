// cgroup v2 reader: io.stat, io.max, io.latency, io.weight, io.pressure,
// memory.max/high/current, memory.events, memory.stat and the group's
// pressure files. A file that is absent (controller not enabled for the group)
// is left empty; a malformed one throws SourceError naming file:line.
#pragma once

#include <string>

#include "collectors/cgroup/cgroup_model.hpp"

namespace iodiag::cgroup {

Snapshot read_v2(const std::string& group_dir);

}  // namespace iodiag::cgroup
