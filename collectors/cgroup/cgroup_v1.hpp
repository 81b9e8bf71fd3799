// cgroup v1 reader: blkio (blk-throttle statistics and limits) and memory
// controller files of one group. v1 has no per-group pressure (PSI) and no
// throttled-time statistic: only how much was served and what the limits are.
#pragma once

#include <string>

#include "collectors/cgroup/cgroup_model.hpp"

namespace iodiag::cgroup {

// blkio_dir / memory_dir: the group's directory in each hierarchy, "" when the
// controller is not mounted or the group does not exist there. Missing files
// are left empty; malformed files throw SourceError naming file:line.
Snapshot read_v1(const std::string& blkio_dir, const std::string& memory_dir);

// "MAJ:MIN Read N\nMAJ:MIN Write N\n...\nTotal N" (io_service_bytes / io_serviced).
// Returns per device {read, write}.
std::map<std::string, std::pair<uint64_t, uint64_t>> parse_v1_rw_stat(const std::string& text,
                                                                      const std::string& path);

}  // namespace iodiag::cgroup
