// One BPF program on raw_syscalls:sys_exit for the syscall and io_uring
// collectors when both run.
//
// The io_uring collector ends a CQ wait at the exit of io_uring_enter; on its
// own it hooks sys_exit for that, and its filter then runs on every syscall of
// every process (one program run each, ~60 ns here with BPF statistics on).
// The syscall collector hooks sys_exit anyway: when both run, its program
// tail-calls the io_uring collector's at the exits of io_uring_enter only,
// through a one-slot program array (bpf/syscall.bpf.c io_uring_exit_chain),
// and the io_uring collector attaches no sys_exit program of its own.
//
// Order: the syscall collector offers its array once its programs are
// attached (start()); the io_uring collector takes the offer in
// all_started(), after every start() returned, and attaches its own program
// when nothing was offered (the syscall collector failed or was not started).
#pragma once

#include <mutex>

namespace iodiag {

class SysExitChain {
public:
    // The syscall collector: the program array its sys_exit tail-calls slot 0
    // of. The fd stays the syscall collector's; withdraw() before closing it.
    void offer(int prog_array_fd);
    void withdraw();
    // The io_uring collector: puts prog_fd in slot 0 of the offered array.
    // false when nothing was offered or the update failed (errno kept): the
    // caller then attaches its program itself.
    bool take(int prog_fd);

private:
    std::mutex mu_;
    int array_fd_ = -1;
};

}  // namespace iodiag
