// Live: where the syscall collector attaches decides what every other syscall
// of the machine pays. On their own per-syscall tracepoints, its programs run
// for the syscalls it times only: a storm of getppid() runs none of them,
// while an O_DIRECT pread beside it is still timed exactly (the program's
// duration inside the caller's own clock readings around the call). The raw
// fallback (forced here the way a kernel without per-syscall events forces
// it) runs both programs for every syscall: the same check there shows that
// the count is able to see a storm.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collectors/bpf/bpf_fault_injection.hpp"
#include "collectors/bpf/syscall_bpf.hpp"
#include "tests/live/live_support.hpp"

using namespace iodiag;
using namespace iodiag::live;

namespace {

// Runs of this process's BPF programs whose name is one of `names` (the
// programs the collector holds open, found through /proc/self/fdinfo).
uint64_t run_count(const std::set<std::string>& names) {
    std::set<uint32_t> ids;
    if (DIR* d = opendir("/proc/self/fdinfo")) {
        while (const dirent* e = readdir(d)) {
            std::ifstream in(std::string("/proc/self/fdinfo/") + e->d_name);
            std::string key;
            uint32_t id;
            while (in >> key)
                if (key == "prog_id:" && in >> id) ids.insert(id);
        }
        closedir(d);
    }
    uint64_t runs = 0;
    for (uint32_t id : ids) {
        const int fd = bpf_prog_get_fd_by_id(id);
        if (fd < 0) continue;
        bpf_prog_info info{};
        uint32_t len = sizeof(info);
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && names.count(info.name)) runs += info.run_cnt;
        close(fd);
    }
    return runs;
}

uint64_t now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);   // the clock bpf_ktime_get_ns() reads
    return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

// One byte over a pipe, both ways: the child waits for the parent's word.
void say(int fd) { (void)!write(fd, "x", 1); }
void hear(int fd) {
    char c;
    (void)!read(fd, &c, 1);
}

constexpr int kReads = 48;
constexpr long kStorm = 400000;

struct Observed {
    uint64_t storm_runs = 0;                 // runs of the syscall programs during the storm
    std::map<long, uint64_t> user_ns;        // pread offset -> the child's own reading of its duration
    Evidence ev;
    CollectorStatus st;
};

// A child that does a getppid() storm, then kReads O_DIRECT preads of 4 KiB
// (each between two clock readings), observed by a syscall collector
// filtered to it.
Observed storm_then_reads(const std::string& device) {
    Observed o;
    int go[2], done[2], times[2];
    if (pipe(go) || pipe(done) || pipe(times)) return o;
    const pid_t child = fork();
    if (child == 0) {
        hear(go[0]);
        for (long i = 0; i < kStorm; ++i) syscall(SYS_getppid);
        say(done[1]);
        hear(go[0]);
        const int fd = open(device.c_str(), O_RDONLY | O_DIRECT);
        void* buf = nullptr;
        if (fd < 0 || posix_memalign(&buf, 4096, 4096)) _exit(1);
        for (long k = 0; k < kReads; ++k) {
            const long off = (k * 37 % 1024) * 4096;   // distinct offsets: each read is an exemplar of its own
            const uint64_t t0 = now_ns();
            const ssize_t got = pread(fd, buf, 4096, off);
            const uint64_t t1 = now_ns();
            const long rec[2] = {got == 4096 ? off : -1, long(t1 - t0)};
            (void)!write(times[1], rec, sizeof(rec));
        }
        _exit(0);
    }
    SyscallBpfOptions opts;
    opts.exemplar_min_us = 0;   // every timed syscall an exemplar...
    opts.max_exemplars = 1024;  // ...and every one kept
    SyscallBpfCollector c(opts);
    CollectOptions co;
    co.pid = child;
    co.duration_s = 5;
    o.st = c.start(co);
    if (o.st.available) {
        c.all_started();
        const std::set<std::string> progs = {"sys_enter_fd", "sys_enter_fd_arg1", "sys_enter_fd_arg3", "sys_exit_event", "sys_enter", "sys_exit"};
        const uint64_t before = run_count(progs);
        say(go[1]);
        hear(done[0]);
        o.storm_runs = run_count(progs) - before;
        say(go[1]);
        for (int k = 0; k < kReads; ++k) {
            long rec[2];
            if (read(times[0], rec, sizeof(rec)) != sizeof(rec)) break;
            if (rec[0] >= 0) o.user_ns[rec[0]] = uint64_t(rec[1]);
        }
        c.finish(o.ev);
    }
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    for (int fd : {go[0], go[1], done[0], done[1], times[0], times[1]}) close(fd);
    return o;
}

std::string missing_prereqs() {
    if (auto r = missing_root(); !r.empty()) return r;
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) return "no kernel BTF at /sys/kernel/btf/vmlinux";
    return "";
}

// BPF run-time statistics on while alive (run_cnt counts only then); the
// kernel turns them off again when the last such descriptor closes.
class BpfStats {
public:
    BpfStats() : fd_(bpf_enable_stats(BPF_STATS_RUN_TIME)) {}
    ~BpfStats() {
        if (fd_ >= 0) close(fd_);
    }
    bool ok() const { return fd_ >= 0; }

private:
    int fd_;
};

}  // namespace

TEST(LiveSyscallAttach, AGetppidStormRunsNoProgramWhileAPreadBesideItIsTimedExactly) {
    IODIAG_LIVE_REQUIRE(missing_prereqs());
    if (access("/sys/kernel/tracing/events/syscalls/sys_enter_pread64", F_OK) != 0)
        GTEST_SKIP() << "no per-syscall tracepoints here (syscalls:sys_enter_pread64): the raw fallback runs";
    LoopDevice dev("/dev/shm", 8);
    ASSERT_TRUE(dev.ok()) << dev.error();
    BpfStats stats;
    ASSERT_TRUE(stats.ok()) << "BPF_ENABLE_STATS: " << std::strerror(errno);
    const Observed o = storm_then_reads(dev.path());
    ASSERT_TRUE(o.st.available) << o.st.reason;
    const Fact* attach = o.ev.find_fact("syscall.attach");
    ASSERT_NE(attach, nullptr);
    EXPECT_EQ(attach->value.rfind("syscalls:sys_enter_<name>", 0), 0u) << attach->value;
    // The programs still run for other processes' timed syscalls (reads and
    // writes on this shared machine: ~40,000 during one storm here), never
    // for getppid: fewer runs than calls, where the raw attach adds two per
    // call (the next test).
    std::printf("storm of %ld getppid(): %lu runs of the syscall programs\n", kStorm, (unsigned long)o.storm_runs);
    EXPECT_LT(o.storm_runs, uint64_t(kStorm));

    ASSERT_EQ(o.user_ns.size(), size_t(kReads));
    size_t matched = 0;
    for (const auto& e : o.ev.exemplars) {
        if (e.labels.at("syscall") != "pread64") continue;
        const auto it = o.user_ns.find(long(e.values.at("offset")));
        ASSERT_NE(it, o.user_ns.end()) << "a pread at an offset the child did not read";
        ++matched;
        const double bpf_ns = e.values.at("total_us") * 1000;
        // Inside the caller's own readings (same clock), and most of them:
        // nothing was lost between entry and exit.
        EXPECT_LE(bpf_ns, double(it->second)) << "offset " << it->first;
        EXPECT_GT(bpf_ns, 0);
    }
    EXPECT_EQ(matched, size_t(kReads)) << "every pread timed once";
}

TEST(LiveSyscallAttach, TheRawFallbackRunsItsProgramsForEverySyscall) {
    IODIAG_LIVE_REQUIRE(missing_prereqs());
    LoopDevice dev("/dev/shm", 8);
    ASSERT_TRUE(dev.ok()) << dev.error();
    BpfStats stats;
    ASSERT_TRUE(stats.ok()) << "BPF_ENABLE_STATS: " << std::strerror(errno);
    // As on a kernel without the per-syscall event of fsync: the collector
    // falls back to the raw tracepoints and says so.
    setenv(kBpfFaultsEnv, "tracepoint:sys_enter_fsync", 1);
    const Observed o = storm_then_reads(dev.path());
    unsetenv(kBpfFaultsEnv);
    ASSERT_TRUE(o.st.available) << o.st.reason;
    EXPECT_NE(o.st.reason.find("every syscall of the machine runs that filter"), std::string::npos) << o.st.reason;
    const Fact* attach = o.ev.find_fact("syscall.attach");
    ASSERT_NE(attach, nullptr);
    EXPECT_EQ(attach->value.rfind("raw_syscalls:sys_enter/sys_exit", 0), 0u) << attach->value;
    std::printf("storm of %ld getppid(): %lu runs of the syscall programs\n", kStorm, (unsigned long)o.storm_runs);
    EXPECT_GE(o.storm_runs, uint64_t(2 * kStorm));
    size_t timed = 0;
    for (const auto& e : o.ev.exemplars)
        if (e.labels.at("syscall") == "pread64") ++timed;
    EXPECT_EQ(timed, size_t(kReads)) << "the fallback times the same syscalls";
}
