#include "collectors/bpf/waits_before_window.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#endif

#include "collectors/bpf/inflight_syscalls.hpp"
#include "collectors/bpf/syscall_bpf_classes.hpp"
#include "collectors/procfs/proc_pids.hpp"
#include "collectors/text_file.hpp"

namespace iodiag::syscall_bpf {

StackClass class_of_kernel_stack(const std::string& text) {
    const auto& table = wait_classifier_functions();
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        // "[<0>] name+0xoff/0xsize", or "[<addr>] name+..." with kallsyms
        // addresses shown; a module's frame ends in " [module]".
        const auto start = line.find("] ");
        if (start == std::string::npos) continue;
        const std::string frame = line.substr(start + 2);
        const std::string name = frame.substr(0, frame.find_first_of("+ "));
        if (const auto it = table.find(name); it != table.end())
            return {static_cast<unsigned>(it->second), journal_kind_of_function(name)};
    }
    return {};
}

iod_inflight entry_of_wait_before_window(unsigned sys, uint64_t fd, const StackClass& wait, uint64_t now_ns) {
    iod_inflight st{};
    st.start_ns = st.mark_ns = now_ns;
    st.sys = sys + 1;
    st.file = fd;
    st.offset = -1;
    st.flags = IOD_F_BEFORE_WINDOW;
    st.state = static_cast<unsigned char>(wait.cls);
    st.journal_kind = static_cast<unsigned char>(wait.journal_kind);
    return st;
}

namespace {

// The filesystems that need no device ("nodev" in /proc/filesystems): their
// files are not storage.
const std::set<std::string>& nodev_filesystems() {
    static const std::set<std::string> s = [] {
        std::set<std::string> out;
        std::istringstream in(try_read_text_file("/proc/filesystems").value_or(""));
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream f(line);
            std::string first, second;
            if (f >> first >> second && first == "nodev") out.insert(second);
        }
        return out;
    }();
    return s;
}

// The filesystem type of the mount with device `dev` in the process's mount
// namespace (/proc/PID/mountinfo: field 3 is major:minor, the type follows
// " - "); "" when none is listed.
std::string filesystem_type_of(uint32_t tgid, dev_t dev) {
    std::istringstream in(try_read_text_file("/proc/" + std::to_string(tgid) + "/mountinfo").value_or(""));
    const std::string wanted = std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string id, parent, majmin;
        if (!(f >> id >> parent >> majmin) || majmin != wanted) continue;
        const auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        std::istringstream rest(line.substr(dash + 3));
        std::string type;
        rest >> type;
        return type;
    }
    return "";
}

bool store_state(int task_state_fd, int pidfd, const iod_inflight& st) {
#if IODIAG_HAVE_BPF
    // BPF_NOEXIST: a record the programs made meanwhile is theirs.
    return bpf_map_update_elem(task_state_fd, &pidfd, &st, BPF_NOEXIST) == 0;
#else
    (void)task_state_fd, (void)pidfd, (void)st;
    return false;
#endif
}

// Removes the record stamped at `start_ns` unless the programs have made it
// another syscall's meanwhile.
void forget_stamped_state(int task_state_fd, int pidfd, uint64_t start_ns) {
#if IODIAG_HAVE_BPF
    iod_inflight st{};
    if (bpf_map_lookup_elem(task_state_fd, &pidfd, &st) == 0 && st.start_ns == start_ns &&
        (st.flags & IOD_F_BEFORE_WINDOW))
        bpf_map_delete_elem(task_state_fd, &pidfd);
#else
    (void)task_state_fd, (void)pidfd, (void)start_ns;
#endif
}

}  // namespace

bool fd_is_storage(uint32_t tgid, uint64_t fd) {
    struct stat st {};
    if (::stat(("/proc/" + std::to_string(tgid) + "/fd/" + std::to_string(fd)).c_str(), &st) != 0) return false;
    if (S_ISBLK(st.st_mode)) return true;
    if (!S_ISREG(st.st_mode)) return false;
    const std::string type = filesystem_type_of(tgid, st.st_dev);
    return !type.empty() && nodev_filesystems().count(type) == 0;
}

WaitsBeforeWindow stamp_waits_before_window(int task_state_fd, uint32_t self_tgid,
                                            const std::vector<long>& nr_of_sys, uint64_t now_ns,
                                            uint32_t target_tgid) {
    WaitsBeforeWindow out;
    for (const int pid : numeric_entries("/proc")) {
        if (static_cast<uint32_t>(pid) == self_tgid) continue;
        if (target_tgid && static_cast<uint32_t>(pid) != target_tgid) continue;
        const std::string tasks = "/proc/" + std::to_string(pid) + "/task/";
        for (const int tid : numeric_entries(tasks)) {
            const std::string task = tasks + std::to_string(tid);
            const auto text = try_read_first_line(task + "/syscall");
            long nr = -1;
            if (!text || !(std::istringstream(*text) >> nr)) continue;   // "running" reads no number
            const auto it = std::find(nr_of_sys.begin(), nr_of_sys.end(), nr);
            if (it == nr_of_sys.end()) continue;
            const auto sys = static_cast<unsigned>(it - nr_of_sys.begin());
            if (sys == SYS_IO_URING_ENTER || sys == SYS_OPENAT) continue;
            const auto fd = blocked_syscall_arg0(*text, nr);
            if (!fd || !fd_is_storage(static_cast<uint32_t>(pid), *fd)) continue;
            const int pidfd = open_thread_pidfd(static_cast<uint32_t>(tid));
            if (pidfd < 0) continue;
            const StackClass wait = class_of_kernel_stack(try_read_text_file(task + "/stack").value_or(""));
            if (!store_state(task_state_fd, pidfd, entry_of_wait_before_window(sys, *fd, wait, now_ns))) {
                // EEXIST: it entered a traced syscall since the programs attached, timed by them.
                if (errno != EEXIST)
                    out.why_not.push_back(task + ": task storage not created (" + std::strerror(errno) + ")");
            } else if (const auto again = try_read_first_line(task + "/syscall");
                       !again || !blocked_syscall_arg0(*again, nr)) {
                // It returned meanwhile: its next exit must not be timed from here.
                forget_stamped_state(task_state_fd, pidfd, now_ns);
            } else {
                ++out.stamped;
            }
            close(pidfd);
        }
    }
    return out;
}

}  // namespace iodiag::syscall_bpf
