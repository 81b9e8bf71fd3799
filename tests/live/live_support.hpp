// Shared pieces of the live tests: what a test needs (root, a tool) and RAII
// for the real things it sets up (a loop device on a file, a background fio),
// so every test cleans up after itself even when an assertion fails.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "engine/evidence/evidence.hpp"

namespace iodiag::live {

// Empty when the test can run; otherwise the reason to GTEST_SKIP with.
std::string missing_root();
std::string missing_tool(const std::string& tool);   // looked up in PATH

// Skips the test with the reason when `reason_expr` (missing_root(), ...) is not empty.
#define IODIAG_LIVE_REQUIRE(reason_expr)               \
    do {                                               \
        const std::string reason_ = (reason_expr);     \
        if (!reason_.empty()) GTEST_SKIP() << reason_; \
    } while (0)

// The first metric (fact) `name` whose labels include `some`, whatever its
// other labels (a live run's application label names a command line the test
// does not spell out); nullptr when none.
const Metric* find_metric_with(const Evidence& ev, const std::string& name, const Labels& some);
const Fact* find_fact_with(const Evidence& ev, const std::string& name, const Labels& some);

// Runs a shell command, returns its exit status and captures stdout.
int run_capture(const std::string& command, std::string* out);

// Like run_capture, and the command's peak resident memory (KiB, the largest
// of it and its children that it waited for: getrusage's ru_maxrss).
int run_measured(const std::string& command, std::string* out, long* peak_rss_kib);

// A loop device over a sparse file of `size_mb` in `dir` ("/tmp" sits on the
// virtual disk, "/dev/shm" in RAM). Detached by the kernel when this process
// ends, however it ends (autoclear); a backing file a killed run left behind
// is removed by the next one.
class LoopDevice {
public:
    LoopDevice(const std::string& dir, int size_mb);
    // Over an existing file, which is left in place (a SlowFs image).
    explicit LoopDevice(const std::string& file);
    ~LoopDevice();
    LoopDevice(const LoopDevice&) = delete;
    LoopDevice& operator=(const LoopDevice&) = delete;
    bool ok() const { return !name_.empty(); }
    const std::string& error() const { return error_; }
    std::string path() const { return "/dev/" + name_; }   // /dev/loop3
    const std::string& name() const { return name_; }      // loop3

private:
    void attach(int backing);   // LOOP_CONFIGURE a free loopN over the open file

    std::string file_, name_, error_;
    bool owns_file_ = false;   // made by this object: removed with it
    int device_fd_ = -1;   // held open: the device lives as long as this object (autoclear)
    int number_ = -1;      // N of loopN
    // Whether the kernel made loopN for this object (no free one existed), so
    // it is removed again: a detached node stays in /sys/block otherwise, and
    // tests run back to back (whose detach completes asynchronously) left
    // dozens, each one more device in every later diagnosis on the machine.
    bool created_ = false;
    // A loop device keeps its queue settings after it is detached, and the
    // kernel changes some when it attaches one (over a file on a rotational
    // disk: wbt's rotational target, the backing file's readahead): they are
    // read before the attach and put back after the detach, so the next user
    // of that loopN (and every later diagnosis) finds them as they were.
    std::vector<std::pair<std::string, std::string>> queue_as_found_;   // (file under queue/, value)
};

// A command running in the background (its own process group), killed on
// destruction, and by the kernel when the test process dies (PR_SET_PDEATHSIG).
class Background {
public:
    explicit Background(const std::string& command);
    ~Background();
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;
    bool running() const;
    // The command's process (its shell, or what the shell exec'd).
    pid_t pid() const { return pid_; }

private:
    pid_t pid_ = -1;
};

// A file served by tests/lab/slowfs.py (a FUSE filesystem that delays every
// read and write by a device model, e.g. "fixed:4" for 4 ms each): a loop
// device over image() is a device whose service time is a sleep, not CPU work,
// so what a test measures does not depend on how busy the machine's CPUs are.
// Unmounted (lazily, so a loop device still closing does not keep it) and its
// daemon killed on destruction; a mount a killed run left is removed by the next.
class SlowFs {
public:
    SlowFs(const std::string& model, int size_mb);
    ~SlowFs();
    SlowFs(const SlowFs&) = delete;
    SlowFs& operator=(const SlowFs&) = delete;
    // Empty when mounted; otherwise why not (a reason to skip with).
    const std::string& error() const { return error_; }
    std::string image() const { return mountpoint_ + "/disk.img"; }

private:
    std::string dir_, mountpoint_, error_;
    std::unique_ptr<Background> daemon_;
};

}  // namespace iodiag::live
