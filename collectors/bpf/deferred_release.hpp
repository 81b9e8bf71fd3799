// Descriptors whose close waits long, released off the caller's exit path.
//
// Closing a per-syscall tracepoint's perf event waits for two RCU grace
// periods under the kernel's event mutex (~20 ms each here, one event after
// the other: ~0.6-1 s for the syscall collector's 30), and detaching a BPF
// program from it for another. A process that merely exits still waits for
// them: the kernel closes its descriptors before the exit completes. So
// the descriptors are handed to a child process (cat reading a pipe, its
// other streams on /dev/null) that exits once this process has closed its
// own copies and then the pipe: the last reference to each is the child's,
// and the kernel closes them while that child exits, after iodiag has
// printed its verdict and exited.
// The caller first makes the programs on them do nothing more (their
// `stopped` flag): until the child is gone, syscalls still take the kernel's
// tracing slow path and those programs return at once.
//
// The child is not waited for: iodiag usually exits first (init reaps it);
// a process that lives on reaps it at its next call. Where no child can be
// started, the descriptors are closed here, as before (slow, never wrong).
#pragma once

#include <string>
#include <vector>

namespace iodiag {

// Releases `fds` (each closed in this process on return) and says how:
// "handed to pid N" or "closed in this process: why".
std::string release_off_exit_path(const std::vector<int>& fds);

}  // namespace iodiag
