// Cgroups in the evidence and the names people use for them (the contract
// between collection and the engine, docs/cgroup-names.md).
//
// A cgroup appears in the evidence as a label value `cgroup` (the cgroup
// collector's "/a/b", the syscall collector's "memory:/a,blkio:/a" for a v1
// task, "/a/b" on v2) or as the value of a fact that names one
// (attr.slow.top_cgroup). At the end of collection every such value gets
// fact cgroup.name {cgroup: value} (what runs in it: a systemd unit, a
// container, a pod) and cgroup.kind {cgroup: value}; a bundle recorded before
// has neither, and the path is shown alone.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

inline constexpr const char* kCgroupLabel = "cgroup";
inline constexpr const char* kCgroupNameFact = "cgroup.name";
inline constexpr const char* kCgroupKindFact = "cgroup.kind";

// Whether a fact's value is a cgroup label: by convention its name's last
// part is "cgroup" or ends in "_cgroup" (attr.slow.top_cgroup,
// device.lower_limit_cgroup, attr.who.cgroup). The cgroup collector's
// cgroup.* facts are about a cgroup (their label), they do not name one.
bool fact_names_a_cgroup(const std::string& fact_name);

// Every distinct cgroup label value in the evidence: the `cgroup` label of
// metrics, facts, histograms, exemplars and series, and the values of facts
// that name a cgroup.
std::set<std::string> cgroup_labels(const Evidence& ev);

struct CgroupName {
    std::string name;   // e.g. "postgresql@15-main.service"
    std::string kind;   // e.g. "systemd-unit"
    Provenance provenance;
};
// The recorded name of a cgroup label, nullopt when the evidence has none.
std::optional<CgroupName> find_cgroup_name(const Evidence& ev, const std::string& label);

// Name first, the path as evidence: "postgresql@15-main.service
// (/system.slice/postgresql@15-main.service)"; the label alone when there is
// no name or the name says nothing more.
std::string name_with_path(const std::string& name, const std::string& label);
// The same for a label of this evidence.
std::string cgroup_shown(const Evidence& ev, const std::string& label);

}  // namespace iodiag
