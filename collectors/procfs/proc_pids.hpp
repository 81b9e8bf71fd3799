// The numeric entries of a /proc directory: the processes of /proc, the
// threads of /proc/PID/task. One walk for every collector that visits them.
#pragma once

#include <string>
#include <vector>

namespace iodiag {

// The entries of `dir` whose names are a positive int (pids or tids), in
// directory order; empty when it cannot be listed.
std::vector<int> numeric_entries(const std::string& dir);

}  // namespace iodiag
