// One BPF program on a tracepoint that two collectors hook, when both run.
//
// Each program run costs ~60 ns here with BPF statistics on (a run's fixed
// cost), and a tracepoint that two collectors hook pays it twice. Instead, the
// owner's program tail-calls the other collector's through a one-slot program
// array, and the other attaches nothing of its own there:
//   - the exit of io_uring_enter: the syscall collector's exit program (on
//     syscalls:sys_exit_<name> of its syscalls, or on raw_syscalls:sys_exit)
//     calls the io_uring collector's at the exits of io_uring_enter (the end of
//     a CQ wait), which otherwise attaches its own (sys_exit_io_uring_enter,
//     or a filter on every syscall of every process where that is missing);
//   - block:block_bio_queue: the block collector's program calls the syscall
//     collector's (its thread's "bios reached Q inline" mark and blk-throttle
//     releases) for every bio.
// Order: the owner offers its array once its programs are attached (start());
// the other takes the offer in all_started(), after every start() returned,
// and attaches its own program when nothing was offered (the owner failed,
// fell back to raw_tp, or was not started).
#pragma once

#include <mutex>
#include <string>
#include <vector>

struct bpf_program;
struct bpf_link;

namespace iodiag {

// The programs an offered array takes: a tail call's callee must be of the
// caller's program type (the kernel refuses another in the array).
enum class ChainKind {
    None,             // nothing offered
    TpBtf,            // tp_btf (BPF_PROG_TYPE_TRACING) programs
    PerfTracepoint,   // tracepoint programs on perf events (BPF_PROG_TYPE_TRACEPOINT)
};

class TailCallChain {
public:
    // The owner: the program array its program tail-calls slot 0 of, and the
    // kind of program it takes. The fd stays the owner's; withdraw() before
    // closing it.
    void offer(int prog_array_fd, ChainKind kind = ChainKind::TpBtf);
    void withdraw();
    // The kind of program the offered array takes (None: nothing offered).
    ChainKind offered();
    // The other collector: puts prog_fd in slot 0 of the offered array.
    // false when nothing was offered or the update failed (errno kept): the
    // caller then attaches its program itself.
    bool take(int prog_fd);
    // The other collector, in finish() before it closes its program: empties
    // the slot, so that the owner's program (which may run on) no longer
    // calls it and its maps are not kept alive by the array.
    void release();
    // Whether a take() succeeded (the two programs are chained).
    bool taken();

private:
    std::mutex mu_;
    int array_fd_ = -1;
    ChainKind kind_ = ChainKind::None;
    bool taken_ = false;
};

// The other collector's side, in all_started(): `prog` goes into the slot the
// owner offered, else it is attached on its own (its link appended to
// `links`). `error` says why neither worked (the attach's errno).
struct ChainOutcome {
    bool chained = false;
    std::string error;
};
ChainOutcome chain_or_attach(TailCallChain& chain, bpf_program* prog, std::vector<bpf_link*>& links);

}  // namespace iodiag
