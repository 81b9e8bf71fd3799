// The verdict's "who suffered" line and the names of the cgroups it cites.
#pragma once

#include <map>
#include <vector>

#include "engine/triage/verdict.hpp"

namespace iodiag {

// app, pid, file, cgroup of the process that suffered most, from the derived
// attr.who.* facts (engine/derive/who.cpp): each field describes the same
// process and says where it was read from.
std::vector<WhoField> who_suffered(const Evidence& ev);

// The culprit: the other program the highest-ranked warning or critical
// finding that names one blames (its <layer>.neighbor_* evidence: the device's
// other submitter, whose dirtied data the flusher wrote back where recorded;
// the CPU's other process; the journal's other writer).
std::vector<WhoField> caused_by(const std::vector<Finding>& findings);

// The recorded names (cgroup.name, cgroup.kind) of every cgroup the verdict
// cites: findings' and notes' cgroup instances, their evidence's cgroup
// labels and cgroup-naming facts, who suffered, the slowest operations and
// the distributions shown.
std::map<std::string, CgroupName> cited_cgroup_names(const Verdict& v, const Evidence& ev);

}  // namespace iodiag
