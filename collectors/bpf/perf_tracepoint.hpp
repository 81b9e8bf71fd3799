// A TRACEPOINT-type BPF program on one tracefs event (e.g.
// syscalls:sys_enter_read), attached through a perf event opened here, so that
// both descriptors stay the caller's. The per-syscall events need this: their
// perf events cost two RCU grace periods each when the last one of an event
// is closed (the kernel unregisters the event's probe and waits, under its
// event mutex, so closes never overlap; ~20 ms each here, ~0.6 s for the
// syscall collector's 30 events), and the caller decides where that wait
// happens (collectors/bpf/deferred_release.hpp). libbpf's own attach keeps
// the perf event's descriptor to itself.
#pragma once

#include <string>
#include <vector>

namespace iodiag {

struct PerfTracepointLink {
    int perf_fd = -1;   // the perf event (PERF_TYPE_TRACEPOINT): every CPU's event runs the program
    int link_fd = -1;   // the BPF link, or -1 where the kernel only takes PERF_EVENT_IOC_SET_BPF
};

// Attaches prog_fd to tracefs event category/name (the event's id read under
// /sys/kernel/tracing, or the legacy debugfs mount). "" on success, else why
// not, with nothing left open. IODIAG_TEST_BPF_FAULTS' "attach:NAME" fails it
// for event NAME (collectors/bpf/bpf_fault_injection.hpp).
std::string attach_perf_tracepoint(int prog_fd, const std::string& category, const std::string& name,
                                   PerfTracepointLink& out);

// Both descriptors of each link, for release_off_exit_path().
std::vector<int> descriptors_of(const std::vector<PerfTracepointLink>& links);

}  // namespace iodiag
