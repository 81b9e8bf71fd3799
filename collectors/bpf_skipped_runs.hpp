// Runs of a collector's BPF programs that the kernel skipped.
//
// The kernel does not enter a tracepoint program that is already running on
// the same CPU: when its tracepoint fires again there from an interrupt (a
// completion in softirq while the same program handles another device's
// completion in task context), that run is dropped and counted in
// bpf_prog_info.recursion_misses (reported since Linux 5.12; raw tracepoint
// programs are guarded this way on recent kernels). Each one is an event the
// collector never saw, of any device or process, so it belongs with the
// collector's own lost events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

struct bpf_object;

namespace iodiag {

struct SkippedRuns {
    uint64_t total = 0;
    std::string by_program;   // "on_rq_complete 1, ..." (programs with any), for logs and test failures
};

// Where a collector's lost event "program_runs_skipped" was read.
inline constexpr const char* kSkippedRunsSource =
    "bpf_prog_info.recursion_misses of the collector's programs (runs the kernel skipped because the program "
    "was already running on that CPU)";

// Summed over the object's loaded programs; nullopt when the kernel does not
// report the count (before 5.12: its bpf_prog_info ends before the field).
std::optional<SkippedRuns> skipped_runs(bpf_object* obj);

}  // namespace iodiag
