#include "collectors/bpf/deferred_release.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

extern char** environ;

namespace iodiag {

namespace {

std::mutex spawned_lock;
std::vector<pid_t> spawned;   // children not reaped yet

void reap_finished() {
    spawned.erase(std::remove_if(spawned.begin(), spawned.end(),
                                 [](pid_t p) { return waitpid(p, nullptr, WNOHANG) != 0; }),
                  spawned.end());
}

// A child holding a copy of each of `fds` (above every one of them, so that
// no copy lands on a descriptor still to be copied), or why not. The child is
// cat with `gate` (a pipe's read end) as its standard input: it exits when
// the gate's write end is closed, which the caller does only after closing
// its own copies, so that the last reference to each descriptor, and the
// wait of its close, is the child's. (A child that exited at once, such as
// true, raced the caller's closes and often left the last ones, and their
// whole wait, to the caller.)
std::string spawn_holder(const std::vector<int>& fds, int gate, pid_t& pid) {
    posix_spawn_file_actions_t actions;
    if (posix_spawn_file_actions_init(&actions) != 0) return "posix_spawn_file_actions_init failed";
    int err = posix_spawn_file_actions_adddup2(&actions, gate, 0);
    for (int fd = 1; fd <= 2 && !err; ++fd) err = posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0);
    const int base = std::max({3, gate + 1, *std::max_element(fds.begin(), fds.end()) + 1});
    for (size_t i = 0; i < fds.size() && !err; ++i)
        err = posix_spawn_file_actions_adddup2(&actions, fds[i], base + static_cast<int>(i));
    std::string why;
    if (!err) {
        for (const char* cat : {"/usr/bin/cat", "/bin/cat"}) {
            char* argv[] = {const_cast<char*>("cat"), nullptr};
            err = posix_spawn(&pid, cat, &actions, nullptr, argv, environ);
            if (!err) break;
            why += std::string(why.empty() ? "" : "; ") + cat + ": " + std::strerror(err);
        }
    } else {
        why = std::string("file actions: ") + std::strerror(err);
    }
    posix_spawn_file_actions_destroy(&actions);
    return err ? why : "";
}

}  // namespace

std::string release_off_exit_path(const std::vector<int>& fds) {
    if (fds.empty()) return "nothing to release";
    std::lock_guard<std::mutex> g(spawned_lock);
    reap_finished();
    pid_t pid = -1;
    int gate[2];
    std::string why = pipe2(gate, O_CLOEXEC) == 0 ? spawn_holder(fds, gate[0], pid)
                                                  : std::string("pipe2: ") + std::strerror(errno);
    // posix_spawn returns once the child has its copies (it has exec'd):
    // closing ours now only drops references; then the gate lets it exit.
    for (int fd : fds) close(fd);
    if (why.rfind("pipe2", 0) != 0) {
        close(gate[0]);
        close(gate[1]);
    }
    if (!why.empty()) return "closed in this process: " + why;
    spawned.push_back(pid);
    return "handed to pid " + std::to_string(pid);
}

}  // namespace iodiag
