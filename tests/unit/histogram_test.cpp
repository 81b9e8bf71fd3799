#include <gtest/gtest.h>

#include "engine/evidence/histogram.hpp"

using iodiag::Log2Histogram;

TEST(Log2Histogram, BucketLayoutMatchesLibbpfTools) {
    EXPECT_EQ(Log2Histogram::bucket_of(0), 0);
    EXPECT_EQ(Log2Histogram::bucket_of(1), 0);
    EXPECT_EQ(Log2Histogram::bucket_of(2), 1);
    EXPECT_EQ(Log2Histogram::bucket_of(3), 1);
    EXPECT_EQ(Log2Histogram::bucket_of(4), 2);
    EXPECT_EQ(Log2Histogram::bucket_of(1023), 9);
    EXPECT_EQ(Log2Histogram::bucket_of(1024), 10);
    EXPECT_EQ(Log2Histogram::bucket_lo(10), 1024u);
    EXPECT_EQ(Log2Histogram::bucket_hi(10), 2047u);
}

TEST(Log2Histogram, PercentileLiesInsideTheRightBucket) {
    Log2Histogram h;
    h.add(100, 990);     // bucket [64,127]
    h.add(5000, 10);     // bucket [4096,8191]
    auto p50 = h.percentile(50);
    EXPECT_EQ(p50.lo, 64);
    EXPECT_EQ(p50.hi, 127);
    EXPECT_GE(p50.value, 64);
    EXPECT_LE(p50.value, 127);
    auto p99 = h.percentile(99);
    EXPECT_EQ(p99.hi, 127);   // rank 990 is the last of the 990
    auto p999 = h.percentile(99.9);
    EXPECT_EQ(p999.lo, 4096);
    EXPECT_EQ(p999.hi, 8191);
}

TEST(Log2Histogram, EmptyAndMerge) {
    Log2Histogram a, b;
    EXPECT_EQ(a.percentile(99).value, 0);
    a.add(10);
    b.add(10, 3);
    b.add(1u << 20);
    a.merge(b);
    EXPECT_EQ(a.total(), 5u);
    EXPECT_EQ(a.percentile(100).lo, double(1u << 20));
}

TEST(Log2Histogram, InterpolationIsMonotonic) {
    Log2Histogram h;
    for (uint64_t v = 1; v < 100000; v *= 3) h.add(v, 7);
    double prev = -1;
    for (double p = 1; p <= 100; p += 1) {
        double v = h.percentile(p).value;
        EXPECT_GE(v, prev) << "p" << p;
        prev = v;
    }
}
