// A process's command line as iodiag shows it: its argv joined by spaces,
// cut at kCmdlineMaxBytes. The bytes come from the kernel's record (the BPF
// collectors read mm->arg_start..arg_end as of the process's I/O or exec) or
// from /proc/PID/cmdline (same bytes, read later); both are NUL-separated.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace iodiag {

// The bound: what bpf/syscall_events.h IOD_CMDLINE_LEN keeps in the kernel,
// so a command line reads the same whichever source it came from.
constexpr size_t kCmdlineMaxBytes = 256;

// argv bytes (NUL-separated, as the kernel and /proc hold them) -> "a b c":
// the first `max_bytes` bytes, each NUL a space, trailing NULs and spaces
// dropped. "" for none (a kernel thread's /proc/PID/cmdline is empty).
std::string cmdline_of_argv(std::string_view raw, size_t max_bytes = kCmdlineMaxBytes);

// ROOT/proc/PID/cmdline through cmdline_of_argv; "" when the process is gone,
// unreadable or a kernel thread.
std::string read_proc_cmdline(const std::string& root, unsigned pid);

}  // namespace iodiag
