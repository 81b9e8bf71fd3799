// The layer table's shares: the syscall collector's classes, except that a
// thread's wait for its own request while the request sat in the I/O
// scheduler counts under the block queue, not the device.
#include <gtest/gtest.h>

#include "engine/derive/derived_metrics.hpp"
#include "engine/triage/layer_table.hpp"

namespace iodiag {
namespace {

const Provenance kMeasured{"tracepoint", "x"};

// 80 % of the slow set asleep for its own I/O, 5 % waiting for a tag; the
// one device's requests spent 600 of their 1000 us of block time in the
// scheduler (no histograms: the totals decide).
Evidence bfq_like() {
    Evidence ev;
    const Labels l{{"device", "loop0"}};
    ev.add_metric("attr.slow.device_pct", {}, 80, "pct", kMeasured);
    ev.add_metric("attr.slow.block_queue_pct", {}, 5, "pct", kMeasured);
    ev.add_metric("attr.all.device_pct", {}, 40, "pct", kMeasured);
    ev.add_metric("attr.all.block_queue_pct", {}, 1, "pct", kMeasured);
    ev.add_metric("block.d2c_total_us", l, 300, "us", kMeasured);
    ev.add_metric("block.i2d_total_us", l, 600, "us", kMeasured);
    ev.add_metric("block.q2c_total_us", l, 1000, "us", kMeasured);
    ev.add_metric("block.requests", l, 10, "count", kMeasured);
    return ev;
}

TEST(LayerShare, TheSchedulersPartOfTheIoWaitCountsUnderTheBlockQueue) {
    Evidence ev = bfq_like();
    add_derived_metrics(ev);
    ASSERT_NE(ev.find_metric("attr.slow.io_scheduler_pct"), nullptr);
    EXPECT_DOUBLE_EQ(ev.find_metric("attr.slow.io_scheduler_pct")->value, 48);   // 80 x 600 / 1000
    EXPECT_DOUBLE_EQ(ev.find_metric("attr.all.io_scheduler_pct")->value, 24);    // 40 x 600 / 1000
    EXPECT_DOUBLE_EQ(*layer_share_pct(ev, "slow", "device"), 32);
    EXPECT_DOUBLE_EQ(*layer_share_pct(ev, "slow", "block_queue"), 53);
    EXPECT_DOUBLE_EQ(*layer_share_pct(ev, "all", "device"), 16);
    EXPECT_DOUBLE_EQ(*layer_share_pct(ev, "all", "block_queue"), 25);
    // The classes themselves are what the collector measured.
    EXPECT_DOUBLE_EQ(ev.find_metric("attr.slow.device_pct")->value, 80);
}

TEST(LayerShare, TheTableShowsTheSplitAndSaysWhatMoved) {
    Evidence ev = bfq_like();
    add_derived_metrics(ev);
    const auto rows = build_layer_table(ev, {{"device", LayerState::Abnormal}, {"block_queue", LayerState::Abnormal}});
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_DOUBLE_EQ(*rows[0].share_slow_pct, 32);
    EXPECT_DOUBLE_EQ(*rows[1].share_slow_pct, 53);
    EXPECT_NE(rows[0].figures.find("I/O scheduler part (48 %"), std::string::npos) << rows[0].figures;
    EXPECT_NE(rows[1].figures.find("I/O scheduler wait 48"), std::string::npos) << rows[1].figures;
    EXPECT_NE(rows[1].figures.find("tag/request wait 5"), std::string::npos) << rows[1].figures;
}

// Without the block collector's stages nothing can be split: the classes
// stand as measured.
TEST(LayerShare, WithoutBlockStagesTheClassesStand) {
    Evidence ev;
    ev.add_metric("attr.slow.device_pct", {}, 80, "pct", kMeasured);
    ev.add_metric("attr.slow.block_queue_pct", {}, 5, "pct", kMeasured);
    add_derived_metrics(ev);
    EXPECT_EQ(ev.find_metric("attr.slow.io_scheduler_pct"), nullptr);
    EXPECT_DOUBLE_EQ(*layer_share_pct(ev, "slow", "device"), 80);
    EXPECT_DOUBLE_EQ(*layer_share_pct(ev, "slow", "block_queue"), 5);
    EXPECT_FALSE(layer_share_pct(ev, "slow", "journal").has_value());
}

// A lower device of a stack (a loop device's backing disk) serves the loop
// worker: its scheduler holds none of the applications' own wait.
TEST(LayerShare, ALowerDevicesSchedulerIsNotTheApplicationsWait) {
    Evidence ev = bfq_like();
    const Labels vda{{"device", "vda"}};
    ev.add_fact("device.backing_device", {{"device", "loop0"}}, "vda", kMeasured);
    ev.add_metric("block.d2c_total_us", vda, 100, "us", kMeasured);
    ev.add_metric("block.i2d_total_us", vda, 900, "us", kMeasured);
    ev.add_metric("block.q2c_total_us", vda, 1000, "us", kMeasured);
    add_derived_metrics(ev);
    EXPECT_DOUBLE_EQ(ev.find_metric("attr.slow.io_scheduler_pct")->value, 48);
}

// A busy disk beside the slow one: many fast requests that waited in its
// scheduler, none as slow as the slow set. The slow set waited on the other
// device's slow requests, which never sat in a scheduler: nothing moves.
TEST(LayerShare, TheSlowSetsPartFollowsTheSlowRequestsNotTheBusiestDisk) {
    Evidence ev;
    ev.add_metric("attr.slow.device_pct", {}, 90, "pct", kMeasured);
    ev.add_metric("attr.slow.threshold_us", {}, 4096, "us", kMeasured);
    auto device = [&](const std::string& d, uint64_t us, uint64_t n, double i2d_us, double d2c_us) {
        const Labels l{{"device", d}};
        HistogramMetric q2c{"block.q2c_us", l, "us", {}, kMeasured}, d2c{"block.d2c_us", l, "us", {}, kMeasured};
        q2c.hist.add(us, n);
        d2c.hist.add(static_cast<uint64_t>(d2c_us), n);
        ev.histograms.push_back(q2c);
        ev.histograms.push_back(d2c);
        ev.add_metric("block.q2c_total_us", l, static_cast<double>(us * n), "us", kMeasured);
        ev.add_metric("block.d2c_total_us", l, d2c_us * static_cast<double>(n), "us", kMeasured);
        ev.add_metric("block.i2d_total_us", l, i2d_us * static_cast<double>(n), "us", kMeasured);
    };
    device("vda", 1000, 20000, 700, 300);      // 20 s of fast requests, 70 % in mq-deadline
    device("loop1", 10000, 800, 0, 10000);     // 8 s of slow ones, all in the device
    add_derived_metrics(ev);
    ASSERT_NE(ev.find_metric("attr.slow.io_scheduler_pct"), nullptr);
    EXPECT_DOUBLE_EQ(ev.find_metric("attr.slow.io_scheduler_pct")->value, 0);
    EXPECT_DOUBLE_EQ(*layer_share_pct(ev, "slow", "device"), 90);
}

}  // namespace
}  // namespace iodiag
