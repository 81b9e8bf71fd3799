// The traced syscalls still waiting when the window ends.
//
// The syscall collector counts a syscall when it returns. A thread starved for
// the whole window (an idle-class reader behind another program's requests, a
// commit behind a long journal flush) returns nothing inside it, and without
// this its wait would be missing from every figure: the application that lost
// most would be the one iodiag never saw. The BPF program keeps each thread's
// syscall in flight in its task local storage (struct iod_inflight, map
// task_state), with the time charged so far per class and the class it is
// waiting in now; user space reads that storage through a pidfd of each
// thread once the programs have stopped, and counts what it finds as a slow
// syscall with the time it has waited so far (a lower bound of its duration),
// marked IOD_F_IN_FLIGHT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bpf/syscall_events.h"

namespace iodiag::syscall_bpf {

struct InFlightSyscall {
    uint32_t tgid = 0, tid = 0;
    iod_inflight state{};
    uint64_t arg0 = 0;   // the syscall's first argument, from /proc (the fd of every fd syscall)
};

// A thread's in-flight syscall as an exemplar at `stop_ns` (CLOCK_MONOTONIC,
// the clock of bpf_ktime_get_ns): the parts charged so far, plus the time
// since the last state change in the class the thread is in now, as the
// program would charge it at the wakeup: a wait for block I/O whose bios never
// reached the queue from the thread is blk-throttle's up to its cgroup's last
// release of held bios (`throttle_release_ns`, 0 = none: the program's
// throttle_release map). total = their sum; flags with IOD_F_IN_FLIGHT.
// nullopt when the thread has no traced syscall in flight, or one that stays
// out of the attribution (io_uring_enter waits for completions of work done
// elsewhere). Identity, file and cgroup fields are left for the caller.
std::optional<iod_exemplar> exemplar_of_in_flight(uint32_t tgid, uint32_t tid, const iod_inflight& st,
                                                  uint64_t stop_ns, uint64_t throttle_release_ns = 0);

// The first argument of the syscall that /proc/PID/task/TID/syscall text says
// the thread is blocked in, when that syscall is `nr`; nullopt otherwise. A
// thread on a CPU or runnable reads "running" and cannot be checked. This
// tells a syscall really in flight from the state of one whose exit the
// kernel skipped (the storage keeps `sys` set until the thread's next traced
// syscall).
std::optional<uint64_t> blocked_syscall_arg0(const std::string& text, long nr);

// Every thread of the machine whose task_state holds a traced syscall that
// /proc confirms it is still blocked in, except `self_tgid`'s. Reads the live
// /proc (pidfds name live threads); `nr_of_sys[sys]` is the architecture's
// number of enum iod_sys `sys`. Threads that exit meanwhile are skipped.
std::vector<InFlightSyscall> read_in_flight_syscalls(int task_state_fd, uint32_t self_tgid,
                                                     const std::vector<long>& nr_of_sys);

// A pidfd of thread `tid` (the key of task storage maps), -1 when it is gone.
// Before Linux 6.9 only a thread-group leader has one.
int open_thread_pidfd(uint32_t tid);

// The path a process's descriptor names (the /proc/PID/fd/FD link), "" when
// it cannot be read.
std::string path_of_fd(uint32_t tgid, uint64_t fd);

}  // namespace iodiag::syscall_bpf
