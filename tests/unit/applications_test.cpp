// Applications as people know them (collectors/procfs/applications.hpp): two
// programs with one comm are two applications, a program's forked workers are
// one, a child running another program is its own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "collectors/procfs/applications.hpp"

using namespace iodiag;

namespace {

class ProcTree {
public:
    ProcTree() : root_(std::filesystem::temp_directory_path() / ("iodiag-apps-" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(root_);
    }
    ~ProcTree() { std::filesystem::remove_all(root_); }
    // argv as /proc/PID/cmdline holds it: each argument NUL-terminated.
    void add(int pid, int ppid, const std::string& comm, const std::vector<std::string>& argv) {
        const auto dir = root_ / "proc" / std::to_string(pid);
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "stat") << pid << " (" << comm << ") S " << ppid << " 1 1 0 -1 4194560 0 0 0\n";
        std::ofstream cmd(dir / "cmdline", std::ios::binary);
        for (const auto& a : argv) cmd << a << '\0';
    }
    std::string root() const { return root_.string(); }

private:
    std::filesystem::path root_;
};

}  // namespace

TEST(Applications, CommandLineShownIsTheProgramAndItsArguments) {
    std::string argv;
    for (const char* a : {"/usr/bin/python3", "ingest.py", "--batch", "7"}) argv += std::string(a) + '\0';
    EXPECT_EQ(command_line_shown(argv, "python3"), "python3 ingest.py --batch 7");
    EXPECT_EQ(command_line_shown("", "kworker/u4:2"), "kworker/u4:2");
    // A long command line keeps its head and its tail, where two runs of
    // one program differ.
    const std::string common = "/usr/bin/python3 /opt/company/services/ingestion/workers/run_worker.py --queue=";
    const std::string a = command_line_shown(common + "orders", "python3");
    const std::string b = command_line_shown(common + "invoices", "python3");
    EXPECT_LE(a.size(), kApplicationNameMax);
    EXPECT_EQ(a.rfind("python3 /opt/company/services/", 0), 0u) << a;
    EXPECT_NE(a.find("..."), std::string::npos) << a;
    EXPECT_EQ(a.substr(a.size() - 12), "queue=orders") << a;
    EXPECT_NE(a, b);
}

TEST(Applications, TwoProgramsWithOneCommAreTwoApplications) {
    ProcTree t;
    t.add(100, 1, "bash", {"bash"});
    t.add(200, 100, "python3", {"/usr/bin/python3", "ingest.py"});
    t.add(300, 100, "python3", {"/usr/bin/python3", "bulk_load.py", "--rows", "1000000"});
    ApplicationIndex index(t.root());
    EXPECT_EQ(index.application_of(200, "python3"), "python3 ingest.py");
    EXPECT_EQ(index.application_of(300, "python3"), "python3 bulk_load.py --rows 1000000");
}

TEST(Applications, ForkedWorkersOfOneProgramAreOneApplication) {
    ProcTree t;
    t.add(10, 1, "postgres", {"/usr/lib/postgresql/15/bin/postgres", "-D", "/var/lib/postgresql/15/main"});
    // A backend's title changes with what it does; it is the postmaster's.
    t.add(11, 10, "postgres", {"postgres: 15/main: bench bench [local] UPDATE"});
    t.add(12, 10, "postgres", {"postgres: 15/main: checkpointer"});
    ApplicationIndex index(t.root());
    const std::string db = "postgres -D /var/lib/postgresql/15/main";
    EXPECT_EQ(index.application_of(11, "postgres"), db);
    EXPECT_EQ(index.application_of(12, "postgres"), db);
    EXPECT_EQ(index.application_of(10, "postgres"), db);
}

TEST(Applications, AChildRunningAnotherProgramIsItsOwnApplication) {
    ProcTree t;
    t.add(50, 1, "sh", {"sh", "-c", "while true; do dd if=/dev/zero of=/data/f bs=1M count=512; done"});
    t.add(51, 50, "dd", {"dd", "if=/dev/zero", "of=/data/f", "bs=1M", "count=512"});
    ApplicationIndex index(t.root());
    EXPECT_EQ(index.application_of(51, "dd"), "dd if=/dev/zero of=/data/f bs=1M count=512");
}

TEST(Applications, AProcessGoneBeforeItWasReadKeepsWhatTheKernelRecorded) {
    ProcTree t;
    ApplicationIndex index(t.root());
    EXPECT_EQ(index.application_of(77, "dd"), "dd");   // nothing known but its comm
    ApplicationIndex told(t.root());
    told.remember(78, "dd", "dd if=/dev/zero of=/data/g bs=1M");
    EXPECT_EQ(told.application_of(78, "sh"), "dd if=/dev/zero of=/data/g bs=1M");
}

TEST(Applications, AProcessReadOnceKeepsItsApplicationAfterItExits) {
    ProcTree t;
    t.add(60, 1, "tar", {"tar", "cf", "/backup/db.tar", "/srv/db"});
    ApplicationIndex index(t.root());
    EXPECT_EQ(index.application_of(60, "tar"), "tar cf /backup/db.tar /srv/db");
    std::filesystem::remove_all(std::filesystem::path(t.root()) / "proc" / "60");
    EXPECT_EQ(index.application_of(60, "tar"), "tar cf /backup/db.tar /srv/db");
}

// A collector asking about a process that exited before its finish waits for
// the syscall collector's record of it (expect_kernel_names), so that every
// collector names a shell loop's short-lived dd by its command line; once the
// records are given, nobody waits.
TEST(Applications, AQuestionAboutAnExitedProcessWaitsForTheKernelsRecord) {
    ProcTree t;
    ApplicationIndex index(t.root());
    index.expect_kernel_names();
    index.window_over();
    std::thread syscall_collector([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        index.remember(91, "dd", "dd if=/dev/zero of=/data/f bs=1M oflag=direct");
        index.kernel_names_given();
    });
    EXPECT_EQ(index.application_of(91, "dd"), "dd if=/dev/zero of=/data/f bs=1M oflag=direct");
    syscall_collector.join();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(index.application_of(92, "cp"), "cp");   // never recorded: its comm, at once
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

// A syscall collector that never gives its records (it failed in its finish)
// holds the others up once, for kKernelNamesWait at most.
TEST(Applications, ARecordNeverGivenIsWaitedForOnceOnly) {
    ProcTree t;
    ApplicationIndex index(t.root());
    index.expect_kernel_names();
    index.window_over();
    EXPECT_EQ(index.application_of(93, "dd"), "dd");
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(index.application_of(94, "dd"), "dd");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

// While the window runs, a sample naming a process gone (or a zombie) at that
// moment is answered at once: the sampler is never held up.
TEST(Applications, AQuestionDuringTheWindowIsAnsweredAtOnce) {
    ProcTree t;
    ApplicationIndex index(t.root());
    index.expect_kernel_names();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(index.application_of(95, "dd"), "dd");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}
