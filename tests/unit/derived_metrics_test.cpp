#include <gtest/gtest.h>

#include "engine/derived_metrics.hpp"

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
