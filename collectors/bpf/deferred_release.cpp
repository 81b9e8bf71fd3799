#include "collectors/bpf/deferred_release.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#if IODIAG_HAVE_BPF
#include <bpf/libbpf.h>
#endif

extern char** environ;

namespace iodiag {

namespace {

std::mutex spawned_lock;
std::vector<pid_t> spawned;   // children not reaped yet
std::vector<int> exit_gates;  // gates of children released AtExit (O_CLOEXEC: closed at exit)

// Reaps the children that have exited; remembers `child` for a later call.
void reap_and_remember(pid_t child) {
    std::lock_guard<std::mutex> g(spawned_lock);
    spawned.erase(std::remove_if(spawned.begin(), spawned.end(),
                                 [](pid_t p) { return waitpid(p, nullptr, WNOHANG) != 0; }),
                  spawned.end());
    if (child > 0) spawned.push_back(child);
}

// A child holding a copy of each of `fds` (above every one of them, so that
// no copy lands on a descriptor still to be copied), or why not. The child is
// cat with `gate` (a pipe's read end) as its standard input: it exits when
// the gate's write end is closed, which release() does only after closing
// this process's copies, so that the last reference to each descriptor, and
// the wait of its close, is the child's. (A child that exited at once, such
// as true, raced the caller's closes and left the last ones, and their whole
// wait, to the caller in 2 runs of 20.)
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

void DeferredRelease::hand_over(std::vector<int> fds) {
    release();   // one hand-over at a time
    fds_ = std::move(fds);
    if (fds_.empty()) return;
    spawner_ = std::thread([this] {
        int gate[2];
        if (pipe2(gate, O_CLOEXEC) != 0) {
            failed_ = std::string("pipe2: ") + std::strerror(errno);
            return;
        }
        failed_ = spawn_holder(fds_, gate[0], child_);
        close(gate[0]);
        if (failed_.empty()) gate_ = gate[1];
        else close(gate[1]);
    });
}

void let_deferred_children_go() {
    std::lock_guard<std::mutex> g(spawned_lock);
    for (int fd : exit_gates) close(fd);
    exit_gates.clear();
}

std::string DeferredRelease::release(When when) {
    if (spawner_.joinable()) spawner_.join();
    if (fds_.empty()) return "";
    // The child has its copies (posix_spawn returned after its exec): closing
    // ours only drops references; then the gate lets it exit.
    for (int fd : fds_) close(fd);
    fds_.clear();
    std::string how = failed_.empty() ? "handed to pid " + std::to_string(child_) : "closed in this process: " + failed_;
    if (gate_ >= 0) {
        if (when == When::AtExit) {
            std::lock_guard<std::mutex> g(spawned_lock);
            exit_gates.push_back(gate_);
        } else {
            close(gate_);
        }
    }
    gate_ = -1;
    reap_and_remember(failed_.empty() ? child_ : -1);
    child_ = -1;
    failed_.clear();
    return how;
}

std::string release_off_exit_path(const std::vector<int>& fds) {
    if (fds.empty()) return "nothing to release";
    DeferredRelease d;
    d.hand_over(fds);
    return d.release();
}

#if IODIAG_HAVE_BPF
std::vector<int> descriptors_of(const std::vector<bpf_link*>& links) {
    std::vector<int> fds;
    for (auto* l : links)
        if (l) fds.push_back(bpf_link__fd(l));
    return fds;
}

void free_handed_over(std::vector<bpf_link*>& links) {
    for (auto* l : links) {
        bpf_link__disconnect(l);   // destroy() then frees it without closing the descriptor
        bpf_link__destroy(l);
    }
    links.clear();
}

void hand_over_links(const std::vector<bpf_link*>& links, DeferredRelease& holder) {
    if (!links.empty() && !holder.holding()) holder.hand_over(descriptors_of(links));
}

std::string release_links(std::vector<bpf_link*>& links, DeferredRelease& holder, DeferredRelease::When when) {
    if (!holder.holding()) {
        for (auto* l : links) bpf_link__destroy(l);
        links.clear();
        return "";
    }
    free_handed_over(links);
    return holder.release(when);
}
#endif

}  // namespace iodiag
