// End to end, as root: iodiag observes real I/O on a loop device and names it;
// record + replay give the identical verdict.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/live/live_support.hpp"

using namespace iodiag::live;
using nlohmann::json;

namespace {

const std::string kIodiag = IODIAG_BINARY;

#define REQUIRE(reason_expr)                          \
    do {                                              \
        const std::string reason_ = (reason_expr);    \
        if (!reason_.empty()) GTEST_SKIP() << reason_; \
    } while (0)

}  // namespace

TEST(LiveDiagnose, NamesALoopDeviceUnderRandomWritesWithItsFigures) {
    REQUIRE(missing_root());
    REQUIRE(missing_tool("fio"));
    LoopDevice loop("/tmp", 512);
    ASSERT_TRUE(loop.ok()) << loop.error();
    Background fio("fio --name=rw --filename=" + loop.path() +
                   " --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=32"
                   " --time_based --runtime=30 --output=/dev/null");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ASSERT_TRUE(fio.running()) << "fio did not start";

    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(run_capture(kIodiag + " --duration 3 --format json 2>/dev/null", &out), 0) << out;
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("iodiag --duration 3 took %.2f s (window + startup + analysis)\n", took);

    const json v = json::parse(out);
    EXPECT_EQ(v["schema"], "iodiag-verdict");
    // The device row names the loop device with its measured write figures.
    // Whether it is also a finding depends on how the backing disk copes, so
    // that is not asserted: a healthy device must not be made into a cause.
    std::string figures;
    for (const auto& row : v["layers"])
        if (row["layer"] == "device") figures = row["figures"].get<std::string>();
    const auto at = figures.find(loop.name() + ":");
    ASSERT_NE(at, std::string::npos) << figures;
    const std::string mine = figures.substr(at, figures.find("; loop", at + 1) - at);
    EXPECT_NE(mine.find("w_await"), std::string::npos) << mine;
    EXPECT_NE(mine.find("util"), std::string::npos) << mine;
}

TEST(LiveDiagnose, RecordThenReplayGivesTheIdenticalVerdict) {
    REQUIRE(missing_root());
    const std::string bundle = "/tmp/iodiag-live-bundle.json";
    for (const std::string format : {"text", "json"}) {
        std::string recorded, replayed;
        ASSERT_EQ(run_capture(kIodiag + " record --duration 1 -o " + bundle + " --format " + format + " 2>/dev/null",
                              &recorded), 0);
        const auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(run_capture(kIodiag + " replay " + bundle + " --format " + format + " 2>/dev/null", &replayed), 0);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::printf("replay (%s, whole process) took %.1f ms\n", format.c_str(), ms);
        EXPECT_FALSE(recorded.empty());
        EXPECT_EQ(recorded, replayed) << "format " << format;
    }
    std::remove(bundle.c_str());
}
