// The one text iodiag prints for "the cgroup of a process": the label
// CgroupIdNames::label builds from a task's cgroup ids (the syscall
// collector's), built here from paths, so that the block collector's
// submitters and the CPU collector's processes carry exactly the same label
// for the same process (the names other steps give a cgroup are keyed by it).
//
//   non-root v1 memory and/or blkio groups: "memory:/a" and/or "blkio:/b",
//   joined with ","; else the v2 path ("/system.slice/x.service"); else "/"
//   when a v1 path was known to be the root; "" when nothing is known.
#pragma once

#include <string>

namespace iodiag::cgroup {

// Paths relative to each hierarchy's root, "" where unknown.
struct ProcessCgroups {
    std::string memory_v1;   // "N:memory:/path"
    std::string blkio_v1;    // "N:blkio:/path"
    std::string v2;          // "0::/path"
};

// Parses /proc/PID/cgroup text (one "hierarchy-id:controllers:path" a line;
// a v1 line may name several controllers, "4:cpu,cpuacct:/x").
ProcessCgroups parse_proc_cgroup(const std::string& text);

std::string label_of(const std::string& memory_v1, const std::string& blkio_v1, const std::string& v2);
inline std::string label_of(const ProcessCgroups& c) { return label_of(c.memory_v1, c.blkio_v1, c.v2); }

// Reads ROOT/proc/PID/cgroup; all fields "" when it cannot be read (the
// process exited).
ProcessCgroups read_process_cgroups(const std::string& root, int pid);

}  // namespace iodiag::cgroup
