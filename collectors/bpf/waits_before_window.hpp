// The traced syscalls already waiting when the window starts.
//
// The programs time a syscall from its entry. A thread that entered before
// they attached has no entry record, so its exit is never timed and its wait
// is in no figure: a writer held in balance_dirty_pages for the whole window
// (dirty limits far below the device's speed) makes no syscall, completes no
// I/O, and iodiag said STATUS OK (dirty_throttle, seed 181000). At the
// window's start user space finds every thread blocked in a traced syscall on
// a storage file (/proc/PID/task/TID/syscall and the fd it names), classifies
// its wait by its kernel stack (/proc/PID/task/TID/stack, against the same
// function table as the program's classify_stack), and gives it an entry
// record as if it had entered then, marked IOD_F_BEFORE_WINDOW. From there the
// programs time it as any other syscall: its time is counted from the
// window's start, a lower bound of its duration, and says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bpf/syscall_events.h"

namespace iodiag::syscall_bpf {

struct StackClass {
    unsigned cls = CLS_OTHER;      // enum iod_class
    unsigned journal_kind = 0;     // enum iod_journal_kind of a CLS_JOURNAL wait
};

// The class of a sleeping thread's wait from its kernel stack as
// /proc/PID/task/TID/stack prints it ("[<0>] balance_dirty_pages+0x2b4/0x6c0",
// innermost frame first): the class of the innermost frame whose function is
// in wait_classifier_functions(), CLS_OTHER when none is.
StackClass class_of_kernel_stack(const std::string& text);

// The entry record of a syscall `sys` (enum iod_sys) on descriptor `fd` found
// waiting at `now_ns`: started then, in the class of its wait, the fd kept in
// `file` (the program resolves it to the file at the exit, in the thread's
// own descriptor table).
iod_inflight entry_of_wait_before_window(unsigned sys, uint64_t fd, const StackClass& wait, uint64_t now_ns);

// Whether the file a process's descriptor names is storage as the programs
// judge it (is_storage_file): a block device, or a regular file on a
// filesystem that needs a device (not "nodev" in /proc/filesystems).
bool fd_is_storage(uint32_t tgid, uint64_t fd);

struct WaitsBeforeWindow {
    uint64_t stamped = 0;          // threads given an entry record
    std::vector<std::string> why_not;   // threads found waiting but not stamped, and why
};

// Every thread of the machine (but `self_tgid`'s) blocked in a traced syscall
// on a storage file gets its entry record in task_state (through a pidfd of
// the thread), unless it has one already. `nr_of_sys[sys]` is the
// architecture's number of enum iod_sys `sys`; io_uring_enter (its waits are
// the io_uring collector's) and openat (no file yet) are left out. With
// `target_tgid` (--pid), only that process's threads, as the programs trace.
WaitsBeforeWindow stamp_waits_before_window(int task_state_fd, uint32_t self_tgid,
                                            const std::vector<long>& nr_of_sys, uint64_t now_ns,
                                            uint32_t target_tgid = 0);

}  // namespace iodiag::syscall_bpf
