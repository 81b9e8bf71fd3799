// What the kernel reports about the programs of a loaded BPF object
// (bpf_prog_info), for a collector's logs and lost events.
//
// Verifier cost: every `iodiag` run loads its collectors' programs again, and
// the verifier's work is most of that load's CPU time that iodiag's own code
// decides (a loop whose counter the verifier must follow value by value
// multiplied one program's work by four). `-v` prints it per collector, so
// that a change that makes the start slower shows which program it made
// harder to verify.
//
// Skipped runs: the kernel does not enter a tracepoint program that is
// already running on the same CPU. When its tracepoint fires again there from
// an interrupt, that run is dropped and counted in
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

// "on_switch 13699, sys_exit 10840, ..." (instructions the verifier
// processed, bpf_prog_info.verified_insns, most first), for the object's
// loaded programs; empty when the kernel does not report it (before 5.16).
std::string verified_instructions(bpf_object* obj);

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
