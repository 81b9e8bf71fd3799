// Issue 34: the page-cache misses per device and application that tell
// whether the readahead setting explains a reader's wait
// (collectors/bpf/readahead_misses.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collectors/bpf/readahead_misses.hpp"

using namespace iodiag;
using namespace iodiag::syscall_bpf;

namespace {

double value(const Evidence& ev, const std::string& name, const std::string& device, const std::string& app) {
    const Metric* m = ev.find_metric(name, {{"device", device}, {"app", app}});
    return m ? m->value : -1;
}

}  // namespace

// Two processes of one application are one: their misses summed, the window
// their mean in KiB.
TEST(ReadaheadMisses, ProcessesOfOneApplicationAreSummed) {
    Evidence ev;
    emit_readahead({{"loop0", "python3 scan.py", 10, 100, 90, 80, 0, 100, 100 * 32},
                    {"loop0", "python3 scan.py", 11, 100, 10, 0, 100 * 32, 0, 0},
                    {"loop0", "", 12, 5, 0, 0, 5 * 32, 0, 0}},
                   4096, ev);
    EXPECT_EQ(value(ev, "fs.readahead_misses", "loop0", "python3 scan.py"), 200);
    EXPECT_EQ(value(ev, "fs.readahead_sequential_misses", "loop0", "python3 scan.py"), 100);
    EXPECT_EQ(value(ev, "fs.readahead_unwidened_misses", "loop0", "python3 scan.py"), 80);
    EXPECT_EQ(value(ev, "fs.readahead_async", "loop0", "python3 scan.py"), 100);
    // The mean window over its misses and asynchronous readaheads: 200 x 32
    // pages over 300 events.
    EXPECT_DOUBLE_EQ(value(ev, "fs.readahead_window_kb", "loop0", "python3 scan.py"), 200.0 * 32 * 4 / 300);
    // A process whose application is unknown is shown by its pid.
    EXPECT_EQ(value(ev, "fs.readahead_misses", "loop0", "pid 12"), 5);
}

// A busy machine's many processes: the ones with the most misses keep their
// own values, the rest are summed per device, nothing dropped.
TEST(ReadaheadMisses, BeyondTheKeptApplicationsTheRestIsSummed) {
    std::vector<ReadaheadMisses> v;
    for (uint32_t i = 0; i < kReadaheadApplicationsKept + 10; ++i)
        v.push_back({"vda", "app" + std::to_string(i), i + 1, 1000 - i, 0, 0, 0, 0, 0});
    Evidence ev;
    emit_readahead(v, 4096, ev);
    double total = 0;
    size_t series = 0;
    for (const auto& m : ev.metrics)
        if (m.name == "fs.readahead_misses") total += m.value, ++series;
    EXPECT_EQ(series, kReadaheadApplicationsKept + 1);
    double expected = 0;
    for (const auto& m : v) expected += static_cast<double>(m.misses);
    EXPECT_EQ(total, expected);
    EXPECT_EQ(value(ev, "fs.readahead_misses", "vda", "app0"), 1000);
    EXPECT_GT(value(ev, "fs.readahead_misses", "vda", kOtherApplications), 0);
}

// A filesystem on a partition reads ahead with its disk's setting: the
// partition is named by its disk; an anonymous device keeps MAJ:MIN.
TEST(ReadaheadMisses, APartitionIsNamedByItsDisk) {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("iodiag-ra-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "sys/devices/pci0/block/sda/sda1");
    fs::create_directories(root / "sys/devices/virtual/block/loop0");
    fs::create_directories(root / "sys/dev/block");
    std::ofstream(root / "sys/devices/pci0/block/sda/sda1/partition") << "1\n";
    fs::create_directory_symlink("../../devices/pci0/block/sda/sda1", root / "sys/dev/block/8:1");
    fs::create_directory_symlink("../../devices/virtual/block/loop0", root / "sys/dev/block/7:0");
    EXPECT_EQ(readahead_device_name(root.string(), (8u << 20) | 1), "sda");
    EXPECT_EQ(readahead_device_name(root.string(), (7u << 20) | 0), "loop0");
    EXPECT_EQ(readahead_device_name(root.string(), 45), "0:45");
    fs::remove_all(root);
}
