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
