// Test hook for half-broken kernels: makes named BPF steps fail the way a
// broken kernel makes them fail, so tests can check that the collector concerned
// reports itself unavailable with the reason while the others go on.
//
//   IODIAG_TEST_BPF_FAULTS="load:syscall_bpf,attach:block_rq_issue,tracepoint:io_uring_submit_req"
//
//   load:NAME        loading the BPF object of skeleton NAME (block_bpf,
//                    syscall_bpf, iouring_bpf), or the object holding program
//                    NAME, fails with EACCES, as a verifier rejection does
//   attach:NAME      attaching program NAME, or a program on tracepoint NAME,
//                    fails with ENOENT; so does attaching skeleton NAME as a
//                    whole (block_bpf, iouring_bpf attach that way)
//   tracepoint:NAME  tracepoint NAME looks absent: tracefs has no such event,
//                    and the tp_btf / raw_tp probes on it fail
//
// Unset (always, outside tests), nothing changes. The load and attach faults
// act at the libbpf calls the collectors make (bpf_object__load_skeleton,
// bpf_object__attach_skeleton, bpf_program__attach), wrapped at link time
// (--wrap, see CMakeLists.txt), so no collector carries test code; the
// tracepoint fault acts in KernelFeatureProbe (bpf_features.cpp).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

namespace iodiag {

// The environment variable's name.
inline constexpr const char* kBpfFaultsEnv = "IODIAG_TEST_BPF_FAULTS";

// When IODIAG_TEST_BPF_FAULTS asks `step` ("load", "attach", "tracepoint") to
// fail for one of `names`, the text to put in the reason (says it was injected);
// nullopt otherwise. Logs a warning each time a fault is injected.
std::optional<std::string> injected_bpf_fault(const std::string& step, std::initializer_list<std::string> names);

}  // namespace iodiag
