// proc_io: who dirtied the data in the window, from /proc/[pid]/io.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "collectors/procfs/proc_io.hpp"

using namespace iodiag;

namespace {

void write_proc(const std::filesystem::path& root, int pid, const std::string& comm, uint64_t write_bytes) {
    const auto dir = root / "proc" / std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "comm") << comm << "\n";
    // flags (field 9): a kernel thread for "kworker", a user process otherwise
    std::ofstream(dir / "stat") << pid << " (" << comm << ") S 1 1 1 0 -1 "
                                << (comm == "kworker" ? 0x00208040 : 0x00400100) << " 0 0 0\n";
    std::ofstream(dir / "io") << "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: " << write_bytes
                              << "\ncancelled_write_bytes: 0\n";
}

}  // namespace

TEST(ProcIo, TopWriterIsWhoseDataGrewMostInTheWindow) {
    const auto root = std::filesystem::temp_directory_path() / ("iodiag-procio-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    write_proc(root, 10, "postgres", 1000);
    write_proc(root, 20, "fio", 5000);
    std::filesystem::create_directories(root / "proc" / "self");   // not a pid: skipped
    const auto before = read_proc_io(root.string());
    ASSERT_EQ(before.size(), 2u);
    write_proc(root, 10, "postgres", 1000 + 100);
    write_proc(root, 20, "fio", 5000 + 800);
    write_proc(root, 30, "dd", 100);   // new in the window: counts from 0
    write_proc(root, 40, "kworker", 1 << 20);   // writes on behalf of others: not counted
    const auto after = read_proc_io(root.string());
    Evidence ev;
    add_proc_io_metrics(before, after, 2.0, ev);
    const Fact* top = ev.find_fact("io.top_writer");
    ASSERT_NE(top, nullptr);
    EXPECT_EQ(top->value, "fio (pid 20)");
    EXPECT_NEAR(ev.find_metric("io.top_writer_pct")->value, 80.0, 1e-9);
    EXPECT_EQ(ev.find_metric("io.write_bytes_dirtied")->value, 1000);
    EXPECT_EQ(ev.find_metric("io.top_writer_bytes_per_s")->value, 400);
    // Labelled with its application: its comm where none was asked (a pure step's input).
    EXPECT_NE(ev.find_metric("io.proc_write_bytes", {{"pid", "30"}, {"comm", "dd"}, {"app", "dd"}}), nullptr);
    std::filesystem::remove_all(root);
}

namespace {

// /proc/PID/task/TID/io of one thread: what it dirtied itself.
void write_thread(const std::filesystem::path& root, int pid, int tid, uint64_t write_bytes) {
    const auto dir = root / "proc" / std::to_string(pid) / "task" / std::to_string(tid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "io") << "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: " << write_bytes
                              << "\ncancelled_write_bytes: 0\n";
}

// A writer's bytes; its application is its comm here (none was given).
const Metric* proc_bytes(const Evidence& ev, int pid, const std::string& comm) {
    return ev.find_metric("io.proc_write_bytes", {{"pid", std::to_string(pid)}, {"comm", comm}, {"app", comm}});
}

constexpr uint64_t kMiB = 1 << 20;

ProcIo proc_io_of(const std::string& comm, uint64_t write_bytes, std::optional<uint64_t> threads = std::nullopt) {
    ProcIo p;
    p.comm = comm;
    p.write_bytes = write_bytes;
    p.threads_write_bytes = threads;
    return p;
}

}  // namespace

// A shell loop starting writers one after the other (sh -c 'for ...; do dd
// ...; done'): each dd the shell reaps adds its count to the shell's
// /proc/PID/io. The shell dirtied nothing itself (its thread's own count):
// the data is the writers', named from the kernel's record of their exit.
TEST(ProcIo, AShellThatReapedItsWritersIsNotTheirWriter) {
    std::map<int, ProcIo> before{{10, proc_io_of("sh", 0)}, {31, proc_io_of("dd", 100 * kMiB)}};
    std::map<int, ProcIo> after{{10, proc_io_of("sh", 600 * kMiB, 0)},
                                {33, proc_io_of("dd", 273 * kMiB, 273 * kMiB)}};
    // dd 31 was there at the start (100 MiB dirtied by then) and exited; dd 32
    // started and exited inside the window; both reaped by the shell.
    const std::vector<ExitedWriter> exited{{31, 31, "dd", 300 * kMiB}, {32, 32, "dd", 300 * kMiB}};
    Evidence ev;
    add_proc_io_metrics(before, after, 5.0, ev, exited);
    ASSERT_NE(ev.find_fact("io.top_writer"), nullptr);
    EXPECT_EQ(ev.find_fact("io.top_writer")->value, "dd (pid 32)");
    EXPECT_EQ(proc_bytes(ev, 10, "sh"), nullptr);
    ASSERT_NE(proc_bytes(ev, 31, "dd"), nullptr);
    EXPECT_EQ(proc_bytes(ev, 31, "dd")->value, 200.0 * kMiB);   // its part inside the window
    EXPECT_EQ(proc_bytes(ev, 33, "dd")->value, 273.0 * kMiB);
    EXPECT_EQ(ev.find_metric("io.write_bytes_dirtied")->value, (200.0 + 300 + 273) * kMiB);
    EXPECT_EQ(ev.find_fact("io.top_writer")->provenance.kind, "tracepoint");
}

// Without the kernel's record (no BPF): the shell is still not named for its
// children's data, which stays in the total; the live writer is named.
TEST(ProcIo, WithoutExitRecordsTheReapedDataIsNobodys) {
    // The shell's own count (4 KiB, its history file) predates the window:
    // /proc cannot tell, so it is credited with at most that much.
    std::map<int, ProcIo> before{{10, proc_io_of("sh", 4096)}};
    std::map<int, ProcIo> after{{10, proc_io_of("sh", 4096 + 600 * kMiB, 4096)},
                                {33, proc_io_of("dd", 273 * kMiB, 273 * kMiB)}};
    Evidence ev;
    add_proc_io_metrics(before, after, 5.0, ev);
    EXPECT_EQ(ev.find_fact("io.top_writer")->value, "dd (pid 33)");
    ASSERT_NE(proc_bytes(ev, 10, "sh"), nullptr);
    EXPECT_EQ(proc_bytes(ev, 10, "sh")->value, 4096);
    EXPECT_EQ(ev.find_metric("io.write_bytes_dirtied")->value, 873.0 * kMiB);   // the shell's growth whole
    EXPECT_NEAR(ev.find_metric("io.top_writer_pct")->value, 100.0 * 273 / 873, 1e-9);
    EXPECT_EQ(ev.find_fact("io.top_writer")->provenance.kind, "file");
}

// A process whose writing threads exited inside the window: their data is the
// process's (from the record, at most what its count grew by beyond its live
// threads'), not lost with them.
TEST(ProcIo, ExitedThreadsCountForTheirProcess) {
    std::map<int, ProcIo> before{{20, proc_io_of("postgres", 1000)}};
    std::map<int, ProcIo> after{{20, proc_io_of("postgres", 1000 + 5000, 1000 + 1000)}};
    const std::vector<ExitedWriter> exited{{21, 20, "postgres", 4000}, {22, 20, "postgres", 9000}};
    Evidence ev;
    add_proc_io_metrics(before, after, 1.0, ev, exited);
    // own growth 1000 (its live threads' 2000 bound the 5000 grown) + the
    // rest, 4000, from its exited threads (whose 13000 include older data)
    EXPECT_EQ(proc_bytes(ev, 20, "postgres")->value, 5000);
    EXPECT_EQ(ev.find_metric("io.write_bytes_dirtied")->value, 5000);
}

TEST(ProcIo, ThreadCountsAreReadForProcessesThatGrew) {
    const auto root = std::filesystem::temp_directory_path() / ("iodiag-procio-t-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    write_proc(root, 10, "sh", 4096);
    write_proc(root, 20, "fio", 5000);
    const auto before = read_proc_io(root.string());
    write_proc(root, 10, "sh", 4096 + 600);
    write_thread(root, 10, 10, 4096);
    write_proc(root, 20, "fio", 5000);   // did not grow: its threads are not read
    write_thread(root, 20, 20, 5000);
    write_proc(root, 30, "dd", 700);
    write_thread(root, 30, 30, 300);
    write_thread(root, 30, 31, 400);
    auto after = read_proc_io(root.string());
    read_thread_write_bytes(root.string(), before, after);
    EXPECT_EQ(after.at(10).threads_write_bytes, std::optional<uint64_t>(4096));
    EXPECT_EQ(after.at(20).threads_write_bytes, std::nullopt);
    EXPECT_EQ(after.at(30).threads_write_bytes, std::optional<uint64_t>(700));
    Evidence ev;
    add_proc_io_metrics(before, after, 1.0, ev);
    EXPECT_EQ(ev.find_fact("io.top_writer")->value, "dd (pid 30)");
    std::filesystem::remove_all(root);
}
