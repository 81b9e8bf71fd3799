#include <gtest/gtest.h>

#include "engine/triage/derived_metrics.hpp"

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
