#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/evidence/bundle.hpp"

using namespace iodiag;

namespace {

Evidence sample() {
    Evidence ev;
    ev.host = "h";
    ev.kernel = "6.18";
    ev.window = {1764460000.123456, 5.000123};
    ev.collectors.push_back({"diskstats", true, "", {"device"}});
    ev.collectors.push_back({"block_bpf", false, "not root", {"device", "block_queue"}});
    ev.add_metric("disk.util_pct", {{"device", "loop0"}}, 97.123456789012345, "pct", {"file", "/proc/diskstats"});
    ev.add_fact("queue.scheduler", {{"device", "loop0"}}, "none", {"file", "/sys/block/loop0/queue/scheduler"});
    HistogramMetric h{"block.d2c_us", {{"device", "loop0"}}, "us", {}, {"tracepoint", "block:block_rq_issue"}};
    h.hist.add(100, 5);
    h.hist.add(5000, 1);
    ev.histograms.push_back(h);
    ev.exemplars.push_back({"block_io", {{"comm", "fio"}}, {{"d2c_us", 4000.5}}, "us", {"tracepoint", "x"}});
    ev.series.start_unix = 1764460000.123456;
    ev.series.interval_s = 1;
    ev.series.count = 2;
    HistogramSeries hs{"block.d2c_us", {{"device", "loop0"}}, "us", {{}, {}}, {"tracepoint", "block:block_rq_issue"}};
    hs.intervals[0].add(100, 5);
    hs.intervals[1].add(5000, 1);
    ev.series.histograms.push_back(hs);
    ev.series.values.push_back({"psi.io_some_pct", {}, "pct", {0.5, 42.25}, {"file", "/proc/pressure/io"}});
    return ev;
}

}  // namespace

TEST(Bundle, RoundTripIsExact) {
    const Evidence ev = sample();
    const auto j1 = evidence_to_json(ev);
    const Evidence back = evidence_from_json(j1);
    EXPECT_EQ(evidence_to_json(back).dump(), j1.dump());
    EXPECT_DOUBLE_EQ(back.metrics[0].value, 97.123456789012345);
    EXPECT_EQ(back.histograms[0].hist.total(), 6u);
    EXPECT_FALSE(back.collectors[1].available);
    ASSERT_EQ(back.series.count, 2u);
    EXPECT_EQ(back.series.find_histogram("block.d2c_us", {{"device", "loop0"}})->intervals[1].total(), 1u);
    EXPECT_DOUBLE_EQ(back.series.find_values("psi.io_some_pct")->intervals[1], 42.25);
}

TEST(Bundle, VersionOneLoadsWithoutSeriesAndIsWrittenAsTheCurrentVersion) {
    auto j = evidence_to_json(sample());
    j["schema_version"] = 1;
    j.erase("series");
    const Evidence back = evidence_from_json(j);
    EXPECT_EQ(back.schema_version, 1);
    EXPECT_TRUE(back.series.empty());
    EXPECT_EQ(evidence_to_json(back)["schema_version"], Evidence::kSchemaVersion);
}

TEST(Bundle, SeriesWhoseLengthDisagreesWithItsCountIsRejected) {
    auto j = evidence_to_json(sample());
    j["series"]["values"][0]["values"].push_back(1.0);
    EXPECT_THROW(evidence_from_json(j), std::runtime_error);
}

TEST(Bundle, SaveAndLoadThroughAFile) {
    const auto path = std::filesystem::temp_directory_path() / "iodiag_bundle_test.json";
    save_bundle(path.string(), sample());
    const Evidence back = load_bundle(path.string());
    EXPECT_EQ(back.host, "h");
    // No temporary file is left behind by the atomic write.
    for (const auto& e : std::filesystem::directory_iterator(path.parent_path()))
        EXPECT_EQ(e.path().filename().string().find("iodiag_bundle_test.json.tmp"), std::string::npos);
    std::filesystem::remove(path);
}

TEST(Bundle, ErrorsNameThePathAndTheProblem) {
    const auto path = std::filesystem::temp_directory_path() / "iodiag_bad_bundle.json";
    {
        std::ofstream(path) << "{\"schema\": \"iodiag-bundle\", \"schema_version\": 1, \"window\": ";
    }
    try {
        load_bundle(path.string());
        FAIL() << "truncated bundle accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
    {
        std::ofstream(path) << "{\"schema\": \"iodiag-bundle\", \"schema_version\": 99}";
    }
    EXPECT_THROW(load_bundle(path.string()), std::runtime_error);
    {
        std::ofstream(path) << "[1,2,3]";
    }
    EXPECT_THROW(load_bundle(path.string()), std::runtime_error);
    std::filesystem::remove(path);
    EXPECT_THROW(load_bundle("/nonexistent/b.json"), std::runtime_error);
}
