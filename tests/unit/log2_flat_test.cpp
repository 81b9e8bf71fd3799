// bpf/log2_flat.h: the BPF programs' branch-free log2 bucket (block, io_uring
// and syscall collectors) is the bucket user space reads histograms with
// (Log2Histogram::bucket_of), capped at the map's last bucket.
#include <gtest/gtest.h>

#include <linux/types.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "bpf/log2_flat.h"
#include "engine/evidence/histogram.hpp"

namespace {

using iodiag::Log2Histogram;

TEST(Log2Flat, IsTheHistogramBucketCappedAtTheLast) {
    for (const __u32 buckets : {20u, 27u, 32u, 64u}) {
        auto check = [&](uint64_t v) {
            const auto want = std::min<uint64_t>(Log2Histogram::bucket_of(v), buckets - 1);
            ASSERT_EQ(iodiag_log2_flat(v, buckets), want) << v << " with " << buckets << " buckets";
        };
        for (uint64_t v = 0; v < 70'000; ++v) check(v);
        // Either side of every power of two, and the largest value.
        for (int k = 1; k < 64; ++k) {
            const uint64_t p = uint64_t{1} << k;
            check(p - 1);
            check(p);
            check(p + 1);
        }
        check(UINT64_MAX);
        std::mt19937_64 rng(42);
        for (int i = 0; i < 200'000; ++i) check(rng() >> (rng() % 64));
    }
}

}  // namespace
