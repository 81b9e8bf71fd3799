// Floods and bounds, as root: iodiag observing the highest event rate this
// machine produces (fio on a loop device over RAM, many small syscalls, many
// threads) beside thousands of threads, cgroups and loop devices made by the
// test (removed after). Memory and the verdict stay bounded, the bundle stays
// loadable, and every BPF collector keeps running.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "collectors/bpf/bpf_features.hpp"
#include "collectors/cgroup/cgroup_hierarchy.hpp"
#include "tests/live/live_support.hpp"

using namespace iodiag;
using namespace iodiag::live;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kIodiag = IODIAG_BINARY;

// What the flood adds, and the bounds it must stay within.
constexpr int kCgroupsPerHierarchy = 1000;
constexpr int kLoopDevices = 64;
constexpr int kThreads = 2000;

// "iodiag-flood-<pid>" of a process that no longer exists: left by a killed run.
bool left_by_a_killed_run(const fs::path& p) {
    const std::string name = p.filename().string();
    if (name.rfind("iodiag-flood-", 0) != 0) return false;
    const long pid = std::atol(name.c_str() + 13);
    return pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Removes <dir>/g* and <dir>.
void remove_groups(const std::string& dir) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_directory(ec)) rmdir(e.path().c_str());
    rmdir(dir.c_str());
}

// `count` empty groups under <mount>/iodiag-flood-<pid>/, removed on
// destruction. A run killed before that (SIGKILL, a ctest timeout) leaves its
// groups: the next run removes those of processes that no longer exist.
class FloodCgroups {
public:
    FloodCgroups(const std::string& mount, int count) : parent_(mount + "/iodiag-flood-" + std::to_string(getpid())) {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(mount, ec))
            if (left_by_a_killed_run(e.path())) remove_groups(e.path().string());
        if (mkdir(parent_.c_str(), 0755) != 0) return;
        for (int i = 0; i < count; ++i)
            if (mkdir((parent_ + "/g" + std::to_string(i)).c_str(), 0755) == 0) ++made_;
    }
    ~FloodCgroups() { remove_groups(parent_); }
    int made() const { return made_; }

private:
    std::string parent_;
    int made_ = 0;
};

std::string missing_bpf() {
    if (auto why = missing_root(); !why.empty()) return why;
    if (auto why = missing_tool("fio"); !why.empty()) return why;
    if (auto why = missing_tool("python3"); !why.empty()) return why;
    return KernelFeatureProbe().btf_available();
}

struct Recording {
    int rc = -1;
    long peak_rss_kib = 0;
    json verdict;
    std::string text;   // the replayed verdict as text
    json bundle;
};

// record (JSON verdict, peak memory), then the text verdict from its bundle.
Recording record(const std::string& bundle) {
    Recording r;
    std::string out;
    r.rc = run_measured(kIodiag + " record --duration 3 --format json -o " + bundle + " 2>/dev/null", &out,
                        &r.peak_rss_kib);
    try {
        r.verdict = json::parse(out);
        std::ifstream in(bundle);
        r.bundle = json::parse(in);
    } catch (const json::exception&) {
    }
    run_capture(kIodiag + " replay " + bundle + " 2>/dev/null", &r.text);
    return r;
}

std::set<std::string> available(const json& verdict) {
    std::set<std::string> out;
    for (const auto& c : verdict["collectors"])
        if (c["available"].get<bool>()) out.insert(c["name"].get<std::string>());
    return out;
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(Flood, ThousandsOfThreadsCgroupsAndDevicesKeepMemoryAndTheVerdictBounded) {
    IODIAG_LIVE_REQUIRE(missing_bpf());
    const std::string dir = "/dev/shm/iodiag-flood-" + std::to_string(getpid());
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev/shm", ec))
        if (left_by_a_killed_run(e.path())) fs::remove_all(e.path(), ec);
    fs::create_directories(dir);
    struct RemoveDir {
        std::string d;
        ~RemoveDir() { fs::remove_all(d); }
    } remove_dir{dir};

    const Recording quiet = record(dir + "/quiet.json");
    ASSERT_EQ(quiet.rc, 0);

    // Thousands of cgroups in every hierarchy that is mounted.
    const cgroup::Mounts m = cgroup::read_mounts("/");
    std::vector<std::unique_ptr<FloodCgroups>> groups;
    int total_groups = 0;
    if (!m.v2.empty()) groups.push_back(std::make_unique<FloodCgroups>(m.v2, kCgroupsPerHierarchy));
    for (const char* c : {"memory", "blkio"})
        if (m.has_v1(c)) groups.push_back(std::make_unique<FloodCgroups>(m.v1.at(c), kCgroupsPerHierarchy));
    for (const auto& g : groups) total_groups += g->made();
    ASSERT_GT(total_groups, kCgroupsPerHierarchy / 2) << "could not make the cgroups";

    // Loop devices over RAM; the first one carries the I/O flood.
    std::vector<std::unique_ptr<LoopDevice>> loops;
    for (int i = 0; i < kLoopDevices; ++i) {
        loops.push_back(std::make_unique<LoopDevice>("/dev/shm", i == 0 ? 256 : 1));
        ASSERT_TRUE(loops.back()->ok()) << loops.back()->error();
    }
    // The highest event rate: 4 KiB direct reads at queue depth 32 through
    // io_uring on RAM, 512-byte cached preads from 8 threads, and thousands of
    // threads each in a pread loop (each a task the syscall collector tracks).
    // --thread before the first job: every job a thread of one process (a job
    // process would be in a session of its own, out of reach of the group kill).
    Background fio("fio --output=/dev/null --thread --time_based --runtime=60 --name=direct --filename=" + loops[0]->path() +
                   " --rw=randread --bs=4k --ioengine=io_uring --direct=1 --iodepth=32"
                   " --name=small --filename=" + dir + "/cached --size=1M --rw=randread --bs=512"
                   " --ioengine=psync --numjobs=8");
    Background threads("python3 -c 'import os, threading, time\n"
                       "fd = os.open(\"" + dir + "/cached\", os.O_RDONLY | os.O_CREAT)\n"
                       "def spin():\n"
                       "    while True: os.pread(fd, 512, 0); time.sleep(0.001)\n"
                       "for _ in range(" + std::to_string(kThreads) + "): threading.Thread(target=spin, daemon=True).start()\n"
                       "time.sleep(60)'");
    std::this_thread::sleep_for(std::chrono::seconds(3));
    ASSERT_TRUE(fio.running()) << "fio did not start";
    ASSERT_TRUE(threads.running()) << "the thread flood did not start";

    const Recording flood = record(dir + "/flood.json");
    ASSERT_EQ(flood.rc, 0) << "no verdict under the flood";
    std::printf("flood: %d cgroups, %d loop devices, %d threads; iodiag peak RSS %.1f MiB (quiet %.1f MiB); "
                "verdict %zu bytes of JSON (quiet %zu), %zu lines of text (quiet %zu); bundle %zu metrics\n",
                total_groups, kLoopDevices, kThreads, flood.peak_rss_kib / 1024.0, quiet.peak_rss_kib / 1024.0,
                flood.verdict.dump().size(), quiet.verdict.dump().size(), lines(flood.text), lines(quiet.text),
                flood.bundle["metrics"].size());

    // Every collector that ran on the quiet machine still runs under the flood.
    EXPECT_EQ(available(flood.verdict), available(quiet.verdict));
    // Memory: bounded, not proportional to what the flood made.
    EXPECT_LT(flood.peak_rss_kib, 3 * quiet.peak_rss_kib + 256 * 1024);
    // The verdict: bounded lists, whatever the number of cgroups and devices.
    EXPECT_LT(flood.verdict.dump().size(), 4 * quiet.verdict.dump().size() + 256 * 1024);
    EXPECT_LT(lines(flood.text), 4 * lines(quiet.text) + 300);
    // The replay of the flood's bundle worked (its text verdict is there).
    EXPECT_NE(flood.text.find("iodiag verdict"), std::string::npos);
}
