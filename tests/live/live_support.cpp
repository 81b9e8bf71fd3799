#include "tests/live/live_support.hpp"

#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
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

namespace {

bool labels_include(const Labels& all, const Labels& some) {
    for (const auto& [k, v] : some)
        if (const auto it = all.find(k); it == all.end() || it->second != v) return false;
    return true;
}

}  // namespace

const Metric* find_metric_with(const Evidence& ev, const std::string& name, const Labels& some) {
    for (const auto& m : ev.metrics)
        if (m.name == name && labels_include(m.labels, some)) return &m;
    return nullptr;
}

const Fact* find_fact_with(const Evidence& ev, const std::string& name, const Labels& some) {
    for (const auto& f : ev.facts)
        if (f.name == name && labels_include(f.labels, some)) return &f;
    return nullptr;
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

namespace {

// Backing files of loop devices that a killed test run left in `dir`: the
// device itself went with the run (autoclear, below), the file did not.
// Removed while holding the machine lock, so no other live run is using them.
void remove_orphaned_backing_files(const std::string& dir) {
    std::string attached;
    run_capture("cat /sys/block/loop*/loop/backing_file 2>/dev/null", &attached);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string path = e.path().string();
        if (e.path().filename().string().rfind("iodiag-live-", 0) == 0 && attached.find(path) == std::string::npos)
            std::filesystem::remove(e.path(), ec);
    }
}

// The N of every loopN node that exists now.
std::set<int> loop_nodes() {
    std::set<int> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/sys/block", ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("loop", 0) == 0 && name.size() > 4 && name.find_first_not_of("0123456789", 4) == std::string::npos)
            out.insert(std::stoi(name.substr(4)));
    }
    return out;
}

// Removes loopN once nobody has it open or bound: the autoclear detach after
// the last close runs asynchronously, and udev may still be probing it, so an
// EBUSY is retried for up to a second before the node is left.
void remove_loop_node(int n) {
    const int control = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (control < 0) return;
    for (int attempt = 0; attempt < 100; ++attempt) {
        if (ioctl(control, LOOP_CTL_REMOVE, n) == 0 || errno != EBUSY) break;
        usleep(10 * 1000);
    }
    close(control);
}

// The queue settings a loop device keeps across detach, in the order they are
// written back: the rotational flag (the backing file's disk's, set at the
// attach), then the scheduler (choosing one resets nr_requests).
constexpr const char* kKeptQueueSettings[] = {"rotational", "scheduler", "nr_requests", "read_ahead_kb",
                                              "wbt_lat_usec", "max_sectors_kb"};

std::vector<std::pair<std::string, std::string>> read_queue_settings(const std::string& name) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const char* key : kKeptQueueSettings) {
        std::ifstream in("/sys/block/" + name + "/queue/" + key);
        std::string value;
        if (!std::getline(in, value)) continue;
        if (std::string(key) == "scheduler") {   // "[none] mq-deadline": the one in brackets
            const auto b = value.find('['), e = value.find(']');
            if (b == std::string::npos || e == std::string::npos || e < b) continue;
            value = value.substr(b + 1, e - b - 1);
        }
        out.emplace_back(key, value);
    }
    return out;
}

void write_queue_settings(const std::string& name, const std::vector<std::pair<std::string, std::string>>& settings) {
    for (const auto& [key, value] : settings) {
        std::ofstream out("/sys/block/" + name + "/queue/" + key);
        out << value << '\n';
    }
}

// Waits (up to a second) for the kernel's autoclear detach after the last
// close, which runs asynchronously: settings written before it could be
// changed again by the detach.
void wait_detached(const std::string& name) {
    for (int attempt = 0; attempt < 100; ++attempt) {
        if (!std::filesystem::exists("/sys/block/" + name + "/loop/backing_file")) return;
        usleep(10 * 1000);
    }
}

}  // namespace

LoopDevice::LoopDevice(const std::string& dir, int size_mb) {
    remove_orphaned_backing_files(dir);
    char tmpl[256];
    std::snprintf(tmpl, sizeof tmpl, "%s/iodiag-live-XXXXXX", dir.c_str());
    const int backing = mkstemp(tmpl);
    if (backing < 0) {
        error_ = "cannot create a backing file in " + dir;
        return;
    }
    file_ = tmpl;
    owns_file_ = true;
    if (ftruncate(backing, static_cast<off_t>(size_mb) * 1024 * 1024) != 0) {
        error_ = "cannot size " + file_;
        close(backing);
        return;
    }
    attach(backing);
    close(backing);
}

LoopDevice::LoopDevice(const std::string& file) : file_(file) {
    const int backing = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    if (backing < 0) {
        error_ = "cannot open " + file + ": " + std::strerror(errno);
        return;
    }
    attach(backing);
    close(backing);
}

void LoopDevice::attach(int backing) {
    // Attached with LO_FLAGS_AUTOCLEAR while this object holds the device
    // open: the kernel detaches it when the last opener closes it, so a test
    // process killed with SIGKILL (a ctest timeout) leaves no loop device.
    const int control = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (control < 0) {
        error_ = std::string("cannot open /dev/loop-control: ") + std::strerror(errno);
        return;
    }
    for (int attempt = 0; attempt < 16 && name_.empty(); ++attempt) {
        const std::set<int> before = loop_nodes();
        const int n = ioctl(control, LOOP_CTL_GET_FREE);
        if (n < 0) {
            error_ = std::string("no free loop device: ") + std::strerror(errno);
            break;
        }
        const std::string name = "loop" + std::to_string(n);
        std::vector<std::pair<std::string, std::string>> as_found = read_queue_settings(name);
        const int dev = ::open(("/dev/" + name).c_str(), O_RDWR | O_CLOEXEC);
        if (dev < 0) {
            error_ = "cannot open /dev/" + name + ": " + std::strerror(errno);
            continue;
        }
        loop_config cfg{};
        cfg.fd = static_cast<__u32>(backing);
        cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        std::snprintf(reinterpret_cast<char*>(cfg.info.lo_file_name), sizeof cfg.info.lo_file_name, "%s",
                      file_.c_str());
        if (ioctl(dev, LOOP_CONFIGURE, &cfg) == 0) {
            name_ = name;
            number_ = n;
            created_ = before.count(n) == 0;
            queue_as_found_ = std::move(as_found);
            device_fd_ = dev;
            error_.clear();
        } else {
            error_ = "LOOP_CONFIGURE /dev/" + name + ": " + std::strerror(errno);   // EBUSY: taken meanwhile
            close(dev);
        }
    }
    close(control);
}

LoopDevice::~LoopDevice() {
    // The last close detaches the device (autoclear); one still open
    // elsewhere (a mount) goes when that closes, like `losetup -d` on a busy one.
    if (device_fd_ >= 0) close(device_fd_);
    if (owns_file_) unlink(file_.c_str());
    if (created_) {
        remove_loop_node(number_);
    } else if (!name_.empty()) {
        wait_detached(name_);
        write_queue_settings(name_, queue_as_found_);
    }
}

Background::Background(const std::string& command) {
    pid_ = fork();
    if (pid_ == 0) {
        setpgid(0, 0);
        // Dies with the test process, also when that is killed (SIGKILL
        // cannot run the destructor).
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    if (pid_ > 0) setpgid(pid_, pid_);   // also here: the child may not have run yet
}

bool Background::running() const {
    return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0;
}

namespace {

// Every process below `root` (by parent pid, from /proc/[pid]/stat). A process
// group is not enough: fio runs each job that is not a thread in a process of
// its own session (setsid), which outlived the group's kill and kept the test's
// loop device busy for the rest of its runtime.
std::vector<pid_t> descendants(pid_t root) {
    std::map<pid_t, std::vector<pid_t>> children;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "stat");
        std::string stat;
        std::getline(in, stat);
        const size_t close = stat.rfind(')');
        if (close == std::string::npos) continue;
        char state = 0;
        int ppid = 0;
        if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2)
            children[ppid].push_back(static_cast<pid_t>(std::stol(name)));
    }
    std::vector<pid_t> out, todo{root};
    while (!todo.empty()) {
        const pid_t parent = todo.back();
        todo.pop_back();
        for (pid_t c : children[parent]) {
            out.push_back(c);
            todo.push_back(c);
        }
    }
    return out;
}

}  // namespace

Background::~Background() {
    if (pid_ <= 0) return;
    const std::vector<pid_t> below = descendants(pid_);
    kill(-pid_, SIGTERM);
    for (pid_t p : below) kill(p, SIGTERM);
    for (int i = 0; i < 50 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(100000);
    kill(-pid_, SIGKILL);
    for (pid_t p : below) kill(p, SIGKILL);
    waitpid(pid_, nullptr, 0);
}

}  // namespace iodiag::live

namespace iodiag::live {
namespace {

constexpr const char* kSlowFsPrefix = "/tmp/iodiag-live-slowfs-";

std::vector<std::string> mountpoints_under(const std::string& prefix) {
    std::vector<std::string> out;
    std::ifstream in("/proc/mounts");
    std::string device, mountpoint, rest;
    while (in >> device >> mountpoint && std::getline(in, rest))
        if (mountpoint.rfind(prefix, 0) == 0) out.push_back(mountpoint);
    return out;
}

// A killed run's FUSE daemon died with it (PR_SET_PDEATHSIG) and left its
// mount behind, answering ENOTCONN: unmounted, and its directory removed.
void remove_orphaned_slowfs() {
    for (const auto& m : mountpoints_under(kSlowFsPrefix)) umount2(m.c_str(), MNT_DETACH);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/tmp", ec))
        if (e.path().string().rfind(kSlowFsPrefix, 0) == 0) std::filesystem::remove_all(e.path(), ec);
}

}  // namespace

SlowFs::SlowFs(const std::string& model, int size_mb) {
    const std::string python = "/usr/bin/python3", script = std::string(IODIAG_LAB_DIR) + "/slowfs.py";
    if (access("/dev/fuse", R_OK | W_OK) != 0) {
        error_ = "no /dev/fuse";
        return;
    }
    if (run_capture(python + " -c 'import fusepy' 2>/dev/null", nullptr) != 0) {
        error_ = "needs " + python + " with fusepy (Debian package python3-fusepy)";
        return;
    }
    remove_orphaned_slowfs();
    std::string tmpl = std::string(kSlowFsPrefix) + "XXXXXX";
    if (!mkdtemp(tmpl.data())) {
        error_ = "cannot make a directory under /tmp: " + std::string(std::strerror(errno));
        return;
    }
    dir_ = tmpl;
    mountpoint_ = dir_ + "/mnt";
    std::error_code ec;
    std::filesystem::create_directory(dir_ + "/back", ec);
    std::filesystem::create_directory(mountpoint_, ec);
    std::ofstream(dir_ + "/back/disk.img").close();
    if (truncate((dir_ + "/back/disk.img").c_str(), static_cast<off_t>(size_mb) * 1024 * 1024) != 0) {
        error_ = "cannot size " + dir_ + "/back/disk.img";
        return;
    }
    daemon_ = std::make_unique<Background>("exec " + python + " " + script + " " + dir_ + "/back " + mountpoint_ +
                                           " " + model + " >/dev/null 2>&1");
    for (int i = 0; i < 100; ++i) {   // the daemon mounts within a second here
        if (!mountpoints_under(mountpoint_).empty()) return;
        if (!daemon_->running()) break;
        usleep(100 * 1000);
    }
    error_ = script + " did not mount " + mountpoint_;
}

SlowFs::~SlowFs() {
    const bool unmounted = mountpoint_.empty() || mountpoints_under(mountpoint_).empty() ||
                           umount2(mountpoint_.c_str(), MNT_DETACH) == 0;
    daemon_.reset();
    std::error_code ec;
    // Not while mounted: removing it would walk into the filesystem.
    if (!dir_.empty() && unmounted) std::filesystem::remove_all(dir_, ec);
}

}  // namespace iodiag::live
