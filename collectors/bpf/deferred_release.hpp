// Descriptors whose close waits long, released off the caller's exit path.
//
// Closing a per-syscall tracepoint's perf event waits for two RCU grace
// periods under the kernel's event mutex (~20 ms each here, one event after
// the other: ~0.6-1.5 s for the syscall collector's 30), and detaching a BPF
// program from it for another. A process that merely exits still waits for
// them: the kernel closes its descriptors before the exit completes. So
// copies of the descriptors are handed to a child process (cat reading a
// pipe, its other streams on /dev/null) that exits once this process has
// closed its own copies and then the pipe: the last reference to each is the
// child's, and the kernel closes them while that child exits, after iodiag
// has printed its verdict and exited. Raw tracepoint links go the same way
// (their detach patches kernel text; see descriptors_of below).
//
// The caller first makes the programs on them do nothing more (their
// `stopped` flag): until the child is gone, syscalls still take the kernel's
// tracing slow path and those programs return at once.
//
// The child is not waited for: iodiag usually exits first (init reaps it);
// a process that lives on reaps it at its next hand-over. Where no child can
// be started, the descriptors are closed here (slow, never wrong).
#pragma once

#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

struct bpf_link;

namespace iodiag {

class DeferredRelease {
public:
    DeferredRelease() = default;
    DeferredRelease(const DeferredRelease&) = delete;
    DeferredRelease& operator=(const DeferredRelease&) = delete;
    ~DeferredRelease() { release(); }

    // Starts the child on a thread of its own (a spawn costs 2-12 ms here:
    // the syscall collector does it while its window runs, not in its
    // finish). `fds` stay open here and the caller's until release().
    void hand_over(std::vector<int> fds);
    // Waits for the hand-over, closes this process's copies, then lets the
    // child exit with the last ones: at once, or (AtExit) when this process
    // exits or calls let_deferred_children_go(), so that the child's closes
    // (RCU waits; kernel text patches, whose cross-CPU synchronisation
    // interrupts every CPU) do not compete with the rest of this process's
    // finish. Says how: "handed to pid N", or "closed in this process: why".
    // "" when nothing was handed over.
    enum class When { Now, AtExit };
    std::string release(When when = When::Now);
    // Descriptors handed over and not released yet.
    bool holding() const { return !fds_.empty(); }

private:
    std::vector<int> fds_;
    std::thread spawner_;
    pid_t child_ = -1;
    int gate_ = -1;        // the pipe's write end: closing it lets the child exit
    std::string failed_;   // why no child holds copies
};

// Lets the children released AtExit go now (a process that starts another
// window first lets the previous one's go).
void let_deferred_children_go();

// Hands `fds` over and releases them at once (each closed in this process on
// return), for descriptors that were not handed over ahead.
std::string release_off_exit_path(const std::vector<int>& fds);

// libbpf links go the same way: detaching a raw tracepoint's program patches
// kernel text (the tracepoint's static call and key, each patch a cross-CPU
// synchronisation: ~0.5-1 ms a link on a 2-CPU VM, 7-12 ms for the syscall
// collector's links at the end of a run). Their descriptors, for hand_over():
std::vector<int> descriptors_of(const std::vector<bpf_link*>& links);
// Frees handed-over links without closing their descriptors (release()
// closes this process's copies), and clears the vector.
void free_handed_over(std::vector<bpf_link*>& links);
// A collector's links all in one hand-over, and their release: `holder` then
// holds these links alone. hand_over_links() does nothing when there are none
// or they were handed over already; release_links() leaves handed-over links
// to the child (let go `when`), detaches them here otherwise, and clears
// `links`. Says how ("" when detached here).
void hand_over_links(const std::vector<bpf_link*>& links, DeferredRelease& holder);
std::string release_links(std::vector<bpf_link*>& links, DeferredRelease& holder, DeferredRelease::When when);

}  // namespace iodiag
