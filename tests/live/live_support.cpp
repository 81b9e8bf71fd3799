#include "tests/live/live_support.hpp"

#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

namespace iodiag::live {

namespace {

// Live tests change machine-wide state (vm.dirty_* sysctls, queue settings,
// cgroups) and measure latencies that another run's load would skew. Each
// test process holds this lock for its whole life, so two test runs on one
// machine (two developers, a benchmark, the lab) take turns instead of
// restoring each other's settings. The lab script and the benchmarks take the
// same lock; a parent that already holds it sets IODIAG_LIVE_LOCK_HELD=1.
// Taken when the tests start (a GoogleTest environment), not at program start:
// listing the tests (gtest_discover_tests at build time) must not wait for
// another run's lock.
struct MachineLock : ::testing::Environment {
    void SetUp() override {
        if (const char* held = std::getenv("IODIAG_LIVE_LOCK_HELD"); held && *held == '1') return;
        fd = ::open("/run/lock/iodiag-live.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) fd = ::open("/tmp/iodiag-live.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd >= 0) ::flock(fd, LOCK_EX);
    }
    void TearDown() override {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    int fd = -1;
};
[[maybe_unused]] ::testing::Environment* const g_machine_lock =
    ::testing::AddGlobalTestEnvironment(new MachineLock);

}  // namespace

std::string missing_root() {
    return geteuid() == 0 ? "" : "needs root (loop devices, BPF, cgroups)";
}

std::string missing_tool(const std::string& tool) {
    std::string out;
    return run_capture("command -v " + tool + " >/dev/null 2>&1", &out) == 0 ? "" : "needs " + tool + " in PATH";
}

int run_capture(const std::string& command, std::string* out) {
    FILE* p = popen(command.c_str(), "r");
    if (!p) return -1;
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
        if (out) out->append(buf.data(), n);
    const int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_measured(const std::string& command, std::string* out, long* peak_rss_kib) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    close(fds[1]);
    std::array<char, 4096> buf{};
    ssize_t n;
    while ((n = read(fds[0], buf.data(), buf.size())) > 0)
        if (out) out->append(buf.data(), static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    rusage ru{};
    if (wait4(pid, &status, 0, &ru) < 0) return -1;
    if (peak_rss_kib) *peak_rss_kib = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

LoopDevice::LoopDevice(const std::string& dir, int size_mb) {
    char tmpl[256];
    std::snprintf(tmpl, sizeof tmpl, "%s/iodiag-live-XXXXXX", dir.c_str());
    const int fd = mkstemp(tmpl);
    if (fd < 0) {
        error_ = "cannot create a backing file in " + dir;
        return;
    }
    file_ = tmpl;
    const bool sized = ftruncate(fd, static_cast<off_t>(size_mb) * 1024 * 1024) == 0;
    close(fd);
    if (!sized) {
        error_ = "cannot size " + file_;
        return;
    }
    std::string out;
    if (run_capture("losetup -f --show " + file_ + " 2>&1", &out) != 0) {
        error_ = "losetup failed: " + out;
        return;
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    name_ = out.substr(out.rfind('/') + 1);
    const std::string queue = "/sys/block/" + name_ + "/queue/";
    run_capture("cat " + queue + "nr_requests 2>/dev/null", &nr_requests_);
    std::string sched;
    run_capture("cat " + queue + "scheduler 2>/dev/null", &sched);
    if (auto b = sched.find('['), e = sched.find(']'); b != std::string::npos && e > b)
        scheduler_ = sched.substr(b + 1, e - b - 1);
}

LoopDevice::~LoopDevice() {
    if (!name_.empty()) {
        const std::string queue = "/sys/block/" + name_ + "/queue/";
        if (!scheduler_.empty()) run_capture("echo " + scheduler_ + " > " + queue + "scheduler 2>/dev/null", nullptr);
        while (!nr_requests_.empty() && (nr_requests_.back() == '\n' || nr_requests_.back() == ' ')) nr_requests_.pop_back();
        if (!nr_requests_.empty())
            run_capture("echo " + nr_requests_ + " > " + queue + "nr_requests 2>/dev/null", nullptr);
        run_capture("losetup -d /dev/" + name_ + " 2>/dev/null", nullptr);
    }
    if (!file_.empty()) unlink(file_.c_str());
}

Background::Background(const std::string& command) {
    pid_ = fork();
    if (pid_ == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    if (pid_ > 0) setpgid(pid_, pid_);   // also here: the child may not have run yet
}

bool Background::running() const {
    return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0;
}

Background::~Background() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGTERM);
    for (int i = 0; i < 50 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(100000);
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
}

}  // namespace iodiag::live
