// Per-interval series from cumulative readings: interval i is reading(i) -
// reading(i-1); a series that appears later is zero before; one missing from a
// reading keeps its value (nothing happened).
#include <gtest/gtest.h>

#include "collectors/interval_series.hpp"

namespace iodiag {
namespace {

Log2Histogram hist(std::vector<uint64_t> b) {
    Log2Histogram h;
    h.set_buckets(std::move(b));
    return h;
}

TEST(IntervalSeries, IntervalsAreDifferencesOfCumulativeReadings) {
    CumulativeSeries s;
    const Labels dev{{"device", "sda"}};
    s.describe("block.d2c_us", dev, {"us", {"tracepoint", "t"}});
    s.record({{{"block.d2c_us", dev}, hist({1, 2})}}, {{{"layer.time_us", {{"layer", "device"}}}, 10}});
    s.record({{{"block.d2c_us", dev}, hist({1, 5, 1})}}, {});   // values not read: unchanged
    s.record({{{"block.d2c_us", dev}, hist({4, 5, 1})}, {{"block.d2c_us", {{"device", "sdb"}}}, hist({0, 3})}},
             {{{"layer.time_us", {{"layer", "device"}}}, 25}});
    EXPECT_EQ(s.intervals(), 3u);
    Series out;
    s.emit(out);
    const HistogramSeries* a = out.find_histogram("block.d2c_us", dev);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->unit, "us");
    ASSERT_EQ(a->intervals.size(), 3u);
    EXPECT_EQ(a->intervals[0].buckets(), (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(a->intervals[1].buckets(), (std::vector<uint64_t>{0, 3, 1}));
    EXPECT_EQ(a->intervals[2].buckets(), (std::vector<uint64_t>{3}));
    const HistogramSeries* b = out.find_histogram("block.d2c_us", {{"device", "sdb"}});
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->intervals[0].total(), 0u);
    EXPECT_EQ(b->intervals[2].total(), 3u);
    const ValueSeries* v = out.find_values("layer.time_us", {{"layer", "device"}});
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->intervals, (std::vector<double>{10, 0, 15}));
}

TEST(IntervalSeries, HistogramDeltaNeverGoesNegative) {
    EXPECT_EQ(histogram_delta(hist({5, 1}), hist({2, 3, 4})).buckets(), (std::vector<uint64_t>{3}));
}

}  // namespace
}  // namespace iodiag
