// Attribution math of the syscall collector: slow-set choice (p99 bucket or
// user threshold) and per-layer shares that add to 100 with "other" explicit.
#include <gtest/gtest.h>

#include "bpf/syscall_events.h"
#include "collectors/bpf/syscall_bpf_attribution.hpp"
#include "collectors/bpf/syscall_bpf_classes.hpp"

using namespace iodiag;
using namespace iodiag::syscall_bpf;

namespace {

std::vector<BucketSums> empty_buckets() {
    std::vector<BucketSums> b(IOD_HIST_BUCKETS);
    for (auto& x : b) x.class_ns.assign(CLS_COUNT, 0);
    return b;
}

// Adds `n` syscalls of `us` each, split as given (class -> ns per syscall).
void add(std::vector<BucketSums>& b, uint64_t us, uint64_t n, std::map<int, uint64_t> split_ns) {
    auto& s = b[Log2Histogram::bucket_of(us)];
    s.count += n;
    s.total_ns += us * 1000 * n;
    for (auto [c, ns] : split_ns) s.class_ns[c] += ns * n;
}

double pct(const Attribution& a, const std::string& layer) {
    for (const auto& s : a.shares)
        if (s.layer == layer) return s.pct;
    return 0;
}

double sum_pct(const Attribution& a) {
    double s = 0;
    for (const auto& x : a.shares) s += x.pct;
    return s;
}

}  // namespace

TEST(AttributionMath, EmptyHasNoSlowSet) {
    EXPECT_FALSE(slow_first_bucket(empty_buckets(), 99, std::nullopt).has_value());
    const Attribution a = attribute(empty_buckets(), 0, class_layers());
    EXPECT_EQ(a.ops, 0u);
}

// Seed 000 §8: reads are 1-2 us cache hits, but 1 in 1000 takes 200 ms, of
// which 150 ms is direct reclaim, block I/O and the filesystem normal. The
// slow set must come out as "reclaim on the read path".
TEST(AttributionMath, Seed000ReclaimOnTheReadPath) {
    auto b = empty_buckets();
    add(b, 1, 99000, {{CLS_FILESYSTEM, 1000}});
    add(b, 150, 900, {{CLS_FILESYSTEM, 20000}, {CLS_PAGE_CACHE, 130000}});
    add(b, 200000, 100,
        {{CLS_RECLAIM, 150000000}, {CLS_PAGE_CACHE, 30000000}, {CLS_FILESYSTEM, 15000000}, {CLS_CPU, 5000000}});
    const auto first = slow_first_bucket(b, 99.9, std::nullopt);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(*first, Log2Histogram::bucket_of(200000));
    const Attribution slow = attribute(b, *first, class_layers());
    EXPECT_EQ(slow.ops, 100u);
    EXPECT_EQ(slow.shares.front().layer, "reclaim");
    EXPECT_NEAR(pct(slow, "reclaim"), 75.0, 1e-9);
    EXPECT_NEAR(sum_pct(slow), 100.0, 1e-9);
    EXPECT_DOUBLE_EQ(slow.threshold_us, 131072);   // lower bound of the 200 ms bucket
    // Over all operations reclaim still leads: 100 x 150 ms outweighs the hits.
    const Attribution all = attribute(b, 0, class_layers());
    EXPECT_EQ(all.ops, 100000u);
    EXPECT_NEAR(sum_pct(all), 100.0, 1e-9);
    EXPECT_EQ(all.shares.front().layer, "reclaim");
}

TEST(AttributionMath, P99PicksTheBucketHoldingTheRank) {
    auto b = empty_buckets();
    add(b, 3, 980, {{CLS_FILESYSTEM, 3000}});
    add(b, 40, 15, {{CLS_FILESYSTEM, 40000}});
    add(b, 5000, 5, {{CLS_DIRTY, 5000000}});
    // rank 990 of 1000 lies in the 32..63 us bucket
    EXPECT_EQ(slow_first_bucket(b, 99, std::nullopt), Log2Histogram::bucket_of(40));
    const Attribution slow = attribute(b, Log2Histogram::bucket_of(40), class_layers());
    EXPECT_EQ(slow.ops, 20u);
    EXPECT_NEAR(pct(slow, "dirty"), 100.0 * 25000000 / (25000000 + 600000), 1e-9);
}

TEST(AttributionMath, UserThresholdOverridesThePercentile) {
    auto b = empty_buckets();
    add(b, 3, 1000, {{CLS_FILESYSTEM, 3000}});
    add(b, 2000, 1, {{CLS_JOURNAL, 2000000}});
    EXPECT_EQ(slow_first_bucket(b, 99, 1500.0), Log2Histogram::bucket_of(1500));
    EXPECT_EQ(attribute(b, Log2Histogram::bucket_of(1500), class_layers()).ops, 1u);
}

// Time the kernel did not charge to any class is shown as other, never hidden.
TEST(AttributionMath, UnchargedTimeGoesToOther) {
    auto b = empty_buckets();
    add(b, 100, 10, {{CLS_FILESYSTEM, 60000}, {CLS_OTHER, 10000}});   // 30 us per op uncharged
    const Attribution a = attribute(b, 0, class_layers());
    EXPECT_NEAR(pct(a, "filesystem"), 60.0, 1e-9);
    EXPECT_NEAR(pct(a, "other"), 40.0, 1e-9);
    EXPECT_NEAR(sum_pct(a), 100.0, 1e-9);
}

TEST(AttributionMath, OverchargedTimeStillSumsTo100) {
    auto b = empty_buckets();
    add(b, 100, 1, {{CLS_FILESYSTEM, 80000}, {CLS_DEVICE, 40000}});   // clock skew: 120 us charged of 100
    const Attribution a = attribute(b, 0, class_layers());
    EXPECT_NEAR(sum_pct(a), 100.0, 1e-9);
    EXPECT_NEAR(pct(a, "filesystem"), 100.0 * 80 / 120, 1e-9);
}

TEST(AttributionMath, OtherIsAlwaysListed) {
    auto b = empty_buckets();
    add(b, 10, 1, {{CLS_FILESYSTEM, 10000}});
    const Attribution a = attribute(b, 0, class_layers());
    bool has_other = false;
    for (const auto& s : a.shares) has_other |= s.layer == "other";
    EXPECT_TRUE(has_other);
}
