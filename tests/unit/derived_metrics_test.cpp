#include <gtest/gtest.h>

#include "engine/derive/derived_metrics.hpp"

using namespace iodiag;

TEST(DerivedMetrics, NominalLatencyByClassIsLabelledAsReference) {
    Evidence ev;
    ev.add_fact("device.class", {{"device", "nvme0n1"}}, "nvme", {"file", "x"});
    add_derived_metrics(ev);
    const Metric* m = ev.find_metric("device.nominal_read_latency_ms", {{"device", "nvme0n1"}});
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->provenance.kind, "reference");
    EXPECT_NE(m->provenance.source.find("seed 000"), std::string::npos);
}

TEST(DerivedMetrics, LoopDeviceInheritsItsBackingClass) {
    Evidence ev;
    ev.add_fact("device.class", {{"device", "loop0"}}, "loop", {"file", "x"});
    ev.add_fact("device.backing_class", {{"device", "loop0"}}, "hdd", {"file", "x"});
    add_derived_metrics(ev);
    const Metric* m = ev.find_metric("device.nominal_read_latency_ms", {{"device", "loop0"}});
    ASSERT_NE(m, nullptr);
    const Metric* hdd_ref = nullptr;
    Evidence ref;
    ref.add_fact("device.class", {{"device", "sda"}}, "hdd", {"file", "x"});
    add_derived_metrics(ref);
    hdd_ref = ref.find_metric("device.nominal_read_latency_ms", {{"device", "sda"}});
    ASSERT_NE(hdd_ref, nullptr);
    EXPECT_EQ(m->value, hdd_ref->value);
    EXPECT_NE(m->provenance.source.find("loop"), std::string::npos);
}

TEST(DerivedMetrics, UncoveredClassGetsNoNominalRatherThanAGuess) {
    Evidence ev;
    ev.add_fact("device.class", {{"device", "vda"}}, "virtio", {"file", "x"});
    add_derived_metrics(ev);
    EXPECT_EQ(ev.find_metric("device.nominal_read_latency_ms", {{"device", "vda"}}), nullptr);
    EXPECT_NE(ev.find_metric("window.duration_s"), nullptr);
}

TEST(DerivedMetrics, LoopOverAnUncoveredClassUsesItsBackingDisksMeasuredTail) {
    Evidence ev;
    const Labels loop{{"device", "loop0"}};
    ev.add_fact("device.class", loop, "loop", {"file", "x"});
    ev.add_fact("device.backing_class", loop, "virtio", {"file", "x"});
    ev.add_fact("device.backing_device", loop, "vda", {"file", "x"});
    HistogramMetric h{"block.d2c_us", {{"device", "vda"}}, "us", {}, {"tracepoint", "x"}};
    h.hist.add(100, 10);   // too few requests to stand for the disk
    ev.histograms.push_back(h);
    Evidence few = ev;
    add_derived_metrics(few);
    EXPECT_EQ(few.find_metric("device.nominal_read_latency_ms", loop), nullptr);

    ev.histograms[0].hist.add(100, 140);   // 190 requests in [64, 127] us
    ev.histograms[0].hist.add(3000, 10);   // and a 5 % tail in [2048, 4095] us
    add_derived_metrics(ev);
    const Metric* m = ev.find_metric("device.nominal_read_latency_ms", loop);
    ASSERT_NE(m, nullptr);
    EXPECT_GE(m->value, 2.048);
    EXPECT_LE(m->value, 4.095);
    EXPECT_EQ(m->provenance.kind, "derived");
    EXPECT_NE(m->provenance.source.find("vda"), std::string::npos);
}

// A loop device is as fast as what backs it: its effective class is its
// backing class (memory for a file on tmpfs), any other device's its own.
TEST(DerivedMetrics, EffectiveClassIsWhatBacksALoopDevice) {
    Evidence ev;
    ev.add_fact("device.class", {{"device", "loop0"}}, "loop", {"file", "x"});
    ev.add_fact("device.backing_class", {{"device", "loop0"}}, "memory", {"derived", "statfs"});
    ev.add_fact("device.class", {{"device", "loop1"}}, "loop", {"file", "x"});
    ev.add_fact("device.class", {{"device", "nvme0n1"}}, "nvme", {"file", "x"});
    add_derived_metrics(ev);
    EXPECT_EQ(ev.find_fact("device.effective_class", {{"device", "loop0"}})->value, "memory");
    EXPECT_EQ(ev.find_fact("device.effective_class", {{"device", "loop1"}})->value, "loop");
    EXPECT_EQ(ev.find_fact("device.effective_class", {{"device", "nvme0n1"}})->value, "nvme");
}

// The slow syscalls' wait on a device splits into its requests' time in the
// I/O scheduler (I2D) and the rest, by the device's measured totals.
TEST(DerivedMetrics, SchedulerWaitShareIsTheI2DPartOfTheIoWait) {
    Evidence ev;
    const Labels l{{"device", "loop0"}};
    ev.add_metric("attr.slow.device_pct", {}, 80, "pct", {"tracepoint", "x"});
    ev.add_metric("block.d2c_total_us", l, 300, "us", {"tracepoint", "x"});
    ev.add_metric("block.i2d_total_us", l, 600, "us", {"tracepoint", "x"});
    ev.add_metric("block.q2c_total_us", l, 1000, "us", {"tracepoint", "x"});
    add_derived_metrics(ev);
    ASSERT_NE(ev.find_metric("device.io_wait_share_pct", l), nullptr);
    EXPECT_DOUBLE_EQ(ev.find_metric("device.io_wait_share_pct", l)->value, 80);
    ASSERT_NE(ev.find_metric("device.scheduler_wait_share_pct", l), nullptr);
    EXPECT_DOUBLE_EQ(ev.find_metric("device.scheduler_wait_share_pct", l)->value, 48);   // 80 x 600 / 1000
}

// A scheduler that holds a few requests long (bfq idling for another
// process) while most pass quickly: the slow syscalls waited on the slow
// requests, whose block time is nearly all scheduler wait, not on the
// average request. Their part comes from the Q2C and D2C histograms.
TEST(DerivedMetrics, SchedulerWaitShareFollowsTheSlowRequestsNotTheAverageOne) {
    Evidence ev;
    const Labels l{{"device", "loop0"}};
    ev.add_metric("attr.slow.device_pct", {}, 80, "pct", {"tracepoint", "x"});
    ev.add_metric("attr.slow.threshold_us", {}, 1024, "us", {"tracepoint", "x"});
    // 10000 requests of 25 us (20 in the device, 5 in the scheduler) and 100
    // that waited about 6 ms in the scheduler (20 us in the device).
    auto hist = [&](const char* name, std::vector<std::pair<uint64_t, uint64_t>> at_us) {
        HistogramMetric h{name, l, "us", {}, {"tracepoint", "x"}};
        for (const auto& [us, n] : at_us) h.hist.add(us, n);
        ev.histograms.push_back(h);
    };
    hist("block.q2c_us", {{25, 10000}, {6000, 100}});
    hist("block.d2c_us", {{20, 10100}});
    ev.add_metric("block.d2c_total_us", l, 10100 * 20, "us", {"tracepoint", "x"});
    ev.add_metric("block.i2d_total_us", l, 10000 * 5 + 100 * 6000, "us", {"tracepoint", "x"});
    ev.add_metric("block.q2c_total_us", l, 10100 * 20 + 10000 * 5 + 100 * 6000, "us", {"tracepoint", "x"});
    add_derived_metrics(ev);
    const Metric* m = ev.find_metric("device.scheduler_wait_share_pct", l);
    ASSERT_NE(m, nullptr);
    // The slow requests' Q2C (bucket midpoint 6143.5 us) less their 20 us in
    // the device; the queue is all I2D: 80 x (1 - 20 / 6143.5). The device's
    // average (I2D 650000 of 852000 us) would say 61 %.
    EXPECT_NEAR(m->value, 80 * (1 - 20 / 6143.5), 0.01);
}
