#include "collectors/procfs/applications.hpp"

#include <memory>

#include "collectors/procfs/proc_cmdline.hpp"
#include "collectors/procfs/proc_pid_stat.hpp"
#include "collectors/text_file.hpp"

namespace iodiag {

namespace {

// A chain of ancestors is never longer on a real host; the bound only stops
// a loop a pid reused inside the window could make.
constexpr int kMaxAncestors = 64;

// The comm inside a /proc/PID/stat line: between the first '(' and the last ')'.
std::string stat_comm(const std::string& line) {
    const size_t open = line.find('('), close = line.rfind(')');
    return open == std::string::npos || close == std::string::npos || close < open
               ? std::string()
               : line.substr(open + 1, close - open - 1);
}

}  // namespace

std::string command_line_shown(const std::string& cmdline, const std::string& comm) {
    const std::string line = cmdline_of_argv(cmdline);
    if (line.empty()) return comm;
    const size_t arg0_end = line.find(' ');
    const std::string arg0 = line.substr(0, arg0_end);
    const size_t slash = arg0.rfind('/');
    std::string shown = (slash == std::string::npos || slash + 1 == arg0.size()) ? arg0 : arg0.substr(slash + 1);
    if (arg0_end != std::string::npos) shown += line.substr(arg0_end);
    if (shown.size() <= kApplicationNameMax) return shown;
    // Its head (the program, its first arguments) and its tail (where two
    // runs of one program often differ: `--queue=a`, the file it works on):
    // the name is also the application's identity, so what tells two apart
    // is kept on both ends.
    const size_t room = kApplicationNameMax - 3, head = room * 2 / 3;
    return shown.substr(0, head) + "..." + shown.substr(shown.size() - (room - head));
}

ApplicationIndex& ApplicationIndex::of_root(const std::string& root) {
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<ApplicationIndex>> by_root;
    const std::string key = root == "/" ? "" : root;
    std::lock_guard<std::mutex> lock(mu);
    auto& index = by_root[key];
    if (!index) index = std::make_unique<ApplicationIndex>(key);
    return *index;
}

void ApplicationIndex::remember(uint32_t pid, const std::string& comm, const std::string& cmdline) {
    std::lock_guard<std::mutex> lock(mu_);
    ProcessIdentity& p = known_[pid];
    if (p.comm.empty()) p.comm = comm;
    if (p.cmdline.empty()) p.cmdline = cmdline;
}

void ApplicationIndex::expect_kernel_names() {
    std::lock_guard<std::mutex> lock(mu_);
    expecting_ = true;
    window_over_ = false;
}

void ApplicationIndex::window_over() {
    std::lock_guard<std::mutex> lock(mu_);
    window_over_ = true;
}

void ApplicationIndex::kernel_names_given() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        expecting_ = false;
    }
    given_.notify_all();
}

std::optional<ProcessIdentity> ApplicationIndex::identity_locked(uint32_t pid) {
    if (!read_[pid]) {
        read_[pid] = true;
        const std::string dir = under_root(root_, "/proc/" + std::to_string(pid));
        if (const auto stat = try_read_first_line(dir + "/stat")) {
            ProcessIdentity& p = known_[pid];
            try {
                p.ppid = static_cast<uint32_t>(parse_stat_field(*stat, 4, "ppid", dir + "/stat"));
            } catch (const std::exception&) {
                p.ppid = 0;   // a line we cannot parse: the process stands alone
            }
            // The kernel's record as of the I/O wins over a later look.
            if (p.comm.empty()) p.comm = stat_comm(*stat);
            if (p.cmdline.empty()) p.cmdline = read_proc_cmdline(root_, pid);
        }
    }
    const auto it = known_.find(pid);
    return it == known_.end() ? std::nullopt : std::optional<ProcessIdentity>(it->second);
}

std::string ApplicationIndex::application_of(uint32_t pid, const std::string& comm) {
    std::unique_lock<std::mutex> lock(mu_);
    auto self = identity_locked(pid);
    // Gone from /proc and not remembered yet: its record may be on the way.
    if ((!self || self->cmdline.empty()) && expecting_ && window_over_) {
        // Not given in time (the syscall collector failed in its finish):
        // nobody waits again in this run.
        if (!given_.wait_for(lock, kKernelNamesWait, [&] { return !expecting_; })) expecting_ = false;
        self = identity_locked(pid);
    }
    if (!self) return comm.empty() ? "?" : comm;
    const std::string program = self->comm.empty() ? comm : self->comm;
    ProcessIdentity lead = *self;
    uint32_t at = pid;
    for (int i = 0; i < kMaxAncestors && lead.ppid > 1 && lead.ppid != at; ++i) {
        const auto parent = identity_locked(lead.ppid);
        if (!parent || parent->comm != program) break;
        at = lead.ppid;
        lead = *parent;
    }
    return command_line_shown(lead.cmdline, program.empty() ? "?" : program);
}

}  // namespace iodiag
