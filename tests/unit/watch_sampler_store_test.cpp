// iodiag watch's cheap sampler (per-second deltas through the collectors'
// parsers, on a fixture tree whose counters the test advances) and its
// capture directory (stamps, pruning only its own files, newest kept).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/watch_sampler.hpp"
#include "app/watch_store.hpp"

using namespace iodiag::cli;
namespace fs = std::filesystem;

namespace {

const std::string kGuest = std::string(IODIAG_FIXTURES) + "/procsys/guest_6_18";

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// A private copy of the guest tree whose counters can be advanced.
struct Tree {
    Tree() {
        fs::remove_all(root);
        fs::copy(kGuest, root, fs::copy_options::recursive);
    }
    ~Tree() { fs::remove_all(root); }
    // One per test: ctest runs tests in parallel processes.
    const std::string root = testing::TempDir() + "iodiag-watch-tree-" +
                             testing::UnitTest::GetInstance()->current_test_info()->name();
};

}  // namespace

TEST(WatchSampler, FirstSnapshotIsTheBaselineThenDeltasPerSecond) {
    Tree t;
    WatchSampler s(t.root, {});
    EXPECT_FALSE(s.take(1000, 0));
    // vda: 100 more reads that took 500 ms in all; 300 ms of I/O pressure.
    write(t.root + "/proc/diskstats",
          [&] {
              std::string d = slurp(t.root + "/proc/diskstats");
              const std::string old_line = " 254       0 vda 33952 8039 3159554 9054 ";
              const auto at = d.find(old_line);
              EXPECT_NE(at, std::string::npos);
              d.replace(at, old_line.size(), " 254       0 vda 34052 8039 3160354 9554 ");
              return d;
          }());
    write(t.root + "/proc/pressure/io",
          "some avg10=0.19 avg60=0.06 avg300=0.05 total=2999831\n"
          "full avg10=0.00 avg60=0.00 avg300=0.02 total=2237727\n");
    const auto sample = s.take(1001, 1.0);
    ASSERT_TRUE(sample);
    EXPECT_EQ(sample->t_unix, 1001);
    ASSERT_TRUE(sample->io_some_pct);
    EXPECT_NEAR(*sample->io_some_pct, 30.0, 1e-9);
    EXPECT_NEAR(*sample->io_full_pct, 0.0, 1e-9);
    ASSERT_TRUE(sample->devices.count("vda"));
    const auto& vda = sample->devices.at("vda");
    EXPECT_NEAR(vda.read.iops, 100, 1e-9);
    ASSERT_TRUE(vda.read.await_ms);
    EXPECT_NEAR(*vda.read.await_ms, 5.0, 1e-9);
    EXPECT_FALSE(vda.write.await_ms);   // nothing written: no await, not 0
    // Idle devices are left out; partitions never appear.
    EXPECT_FALSE(sample->devices.count("zram0"));
    EXPECT_FALSE(sample->devices.count("sdb1"));
    EXPECT_TRUE(s.problems().empty());

    s.restart();
    EXPECT_FALSE(s.take(1002, 1.0)) << "after restart() the next snapshot is a new baseline";
}

TEST(WatchSampler, UnreadableSourcesAreNamedAndTheRestStillSampled) {
    Tree t;
    fs::remove(t.root + "/proc/pressure/io");
    WatchSampler s(t.root, {"vda"});
    s.take(1000, 0);
    const auto sample = s.take(1001, 1.0);
    ASSERT_TRUE(sample);
    EXPECT_FALSE(sample->io_some_pct);
    EXPECT_TRUE(sample->memory_some_pct);
    ASSERT_EQ(s.problems().size(), 1u);
    EXPECT_NE(s.problems()[0].find("/proc/pressure/io"), std::string::npos) << s.problems()[0];
}

TEST(CaptureStore, StampsRoundTripInUtc) {
    EXPECT_EQ(capture_stamp(0), "watch-19700101T000000Z");
    EXPECT_EQ(parse_capture_stamp("watch-20240229T235959Z"), 1709251199.0);
    EXPECT_EQ(parse_capture_stamp("watch-20240229T235959Z-2"), 1709251199.0);
    EXPECT_FALSE(parse_capture_stamp("check-20240229T235959Z"));
}

TEST(CaptureStore, PrunesOnlyItsOwnFilesOldestFirstAndKeepsTheNewest) {
    const std::string dir = testing::TempDir() + "iodiag-watch-store";
    fs::remove_all(dir);
    CaptureStore store(dir);
    store.prepare();
    for (int day = 1; day <= 4; ++day) {
        const std::string stamp = "watch-2024010" + std::to_string(day) + "T000000Z";
        write(store.bundle_path(stamp), std::string(1000, 'b'));
        write(store.record_path(stamp), std::string(100, 'r'));
    }
    write(dir + "/watch-20240101T000000Z.json.tmp.123", "left by a crash");
    write(dir + "/notes.txt", "an operator's file");
    write(dir + "/check-20240101T000000Z.json", "check's history");
    ASSERT_EQ(store.list().size(), 4u);
    EXPECT_EQ(store.last_capture_unix(), *parse_capture_stamp("watch-20240104T000000Z"));
    EXPECT_EQ(store.new_stamp(*parse_capture_stamp("watch-20240104T000000Z")), "watch-20240104T000000Z-2");

    // Count bound: 2 kept, the two oldest (and the leftover temporary) go.
    auto deleted = store.prune(2, 1u << 30);
    EXPECT_EQ(deleted.size(), 5u);
    ASSERT_EQ(store.list().size(), 2u);
    EXPECT_EQ(store.list().front().stamp, "watch-20240103T000000Z");
    // Byte bound below one capture: the newest stays anyway.
    store.prune(10, 10);
    ASSERT_EQ(store.list().size(), 1u);
    EXPECT_EQ(store.list().front().stamp, "watch-20240104T000000Z");
    // What is not ours is untouched.
    EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
    EXPECT_TRUE(fs::exists(dir + "/check-20240101T000000Z.json"));
    fs::remove_all(dir);
}

TEST(CaptureStore, AnUnwritableDirectoryIsAnError) {
    CaptureStore store("/proc/iodiag-cannot-exist");
    EXPECT_THROW(store.prepare(), std::runtime_error);
}
