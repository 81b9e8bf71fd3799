#include "collectors/bpf/inflight_syscalls.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <sstream>

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#endif

#include "collectors/procfs/proc_pids.hpp"
#include "collectors/text_file.hpp"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL   // include/uapi/linux/pidfd.h, Linux 6.9
#endif

namespace iodiag::syscall_bpf {

std::optional<iod_exemplar> exemplar_of_in_flight(uint32_t tgid, uint32_t tid, const iod_inflight& st,
                                                  uint64_t stop_ns, uint64_t throttle_release_ns) {
    if (st.sys == 0 || st.sys > SYS_COUNT || stop_ns <= st.start_ns) return std::nullopt;
    const unsigned sys = st.sys - 1;
    if (iod_group_of(sys) == GRP_IO_URING_ENTER) return std::nullopt;
    iod_exemplar e{};
    e.tgid = tgid;
    e.tid = tid;
    e.sys = sys;
    e.flags = st.flags | IOD_F_IN_FLIGHT;
    e.offset = st.offset;
    for (int c = 0; c < CLS_COUNT; ++c)
        if (st.charged & (1u << c)) e.ns[c] = st.ns[c];
    // The class it waits in now, chosen as the program's charge() chooses it.
    uint64_t mark = st.mark_ns;
    if (stop_ns > mark) {
        unsigned cls = st.state;
        if (st.reclaim_depth) cls = CLS_RECLAIM;
        else if (st.state == CLS_NONE) cls = (st.flags & IOD_F_MISS_FILL) ? CLS_PAGE_CACHE : CLS_FILESYSTEM;
        // As on_wakeup splits a block I/O wait whose bios blk-throttle held.
        if (cls == CLS_DEVICE && !(st.flags & IOD_F_Q_INLINE) && throttle_release_ns > mark &&
            throttle_release_ns <= stop_ns) {
            e.ns[CLS_CGROUP] += throttle_release_ns - mark;
            mark = throttle_release_ns;
        }
        if (cls < CLS_COUNT) e.ns[cls] += stop_ns - mark;
    }
    for (int c = 0; c < CLS_COUNT; ++c) e.total_ns += e.ns[c];
    return e;
}

std::optional<uint64_t> blocked_syscall_arg0(const std::string& text, long nr) {
    std::istringstream in(text);
    long got = -1;
    if (!(in >> got) || got != nr) return std::nullopt;
    std::string arg0;
    if (!(in >> arg0)) return 0;
    try {
        return std::stoull(arg0, nullptr, 16);
    } catch (const std::exception&) {
        return 0;
    }
}

std::string path_of_fd(uint32_t tgid, uint64_t fd) {
    std::error_code ec;
    const auto target =
        std::filesystem::read_symlink("/proc/" + std::to_string(tgid) + "/fd/" + std::to_string(fd), ec);
    return ec ? "" : target.string();
}

int open_thread_pidfd(uint32_t tid) {
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, tid, PIDFD_THREAD));
    // Before Linux 6.9 a pidfd names a thread-group leader only: the other
    // threads of a process are not reached there.
    if (pidfd < 0 && errno == EINVAL) pidfd = static_cast<int>(syscall(SYS_pidfd_open, tid, 0));
    return pidfd;
}

namespace {

// The thread's task storage, read through a pidfd of the thread; false when
// it has none (it never made a traced syscall) or is gone.
bool stored_state_of(int task_state_fd, uint32_t tid, iod_inflight& out) {
    const int pidfd = open_thread_pidfd(tid);
    if (pidfd < 0) return false;
#if IODIAG_HAVE_BPF
    const bool found = bpf_map_lookup_elem(task_state_fd, &pidfd, &out) == 0;
#else
    const bool found = false;
    (void)task_state_fd, (void)out;
#endif
    close(pidfd);
    return found;
}

}  // namespace

std::vector<InFlightSyscall> read_in_flight_syscalls(int task_state_fd, uint32_t self_tgid,
                                                     const std::vector<long>& nr_of_sys) {
    std::vector<InFlightSyscall> found;
    for (const int pid : numeric_entries("/proc")) {
        if (static_cast<uint32_t>(pid) == self_tgid) continue;
        const std::string tasks = "/proc/" + std::to_string(pid) + "/task/";
        for (const int tid : numeric_entries(tasks)) {
            InFlightSyscall s;
            s.tgid = static_cast<uint32_t>(pid);
            s.tid = static_cast<uint32_t>(tid);
            if (!stored_state_of(task_state_fd, s.tid, s.state) || s.state.sys == 0 ||
                s.state.sys > nr_of_sys.size())
                continue;
            const auto text = try_read_text_file(tasks + std::to_string(tid) + "/syscall");
            const auto arg0 = text ? blocked_syscall_arg0(*text, nr_of_sys[s.state.sys - 1]) : std::nullopt;
            if (!arg0) continue;   // running, or the state of a syscall whose exit was skipped
            s.arg0 = *arg0;
            found.push_back(s);
        }
    }
    return found;
}

}  // namespace iodiag::syscall_bpf
