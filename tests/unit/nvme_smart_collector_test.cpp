// The NVMe SMART collector on a fixture sysfs tree with a file admin source:
// nvme0 has a worn drive's page and Identify data; nvme1 returns garbage and
// must fall back to hwmon, never to a wrong number.
#include <gtest/gtest.h>

#include "collectors/nvme/nvme_smart_collector.hpp"
#include "collectors/nvme/nvme_smart_diff.hpp"

using namespace iodiag;

namespace {

const std::string kDir = std::string(IODIAG_FIXTURES) + "/nvme_smart";

NvmeSmartCollector fixture_collector() {
    return NvmeSmartCollector(
        [](const std::string&) { return nvme::make_file_admin_source(kDir + "/admin"); });
}

Evidence collect(NvmeSmartCollector& c, CollectorStatus* st = nullptr) {
    CollectOptions o;
    o.root = kDir + "/sysroot";
    CollectorStatus s = c.start(o);
    Evidence ev;
    ev.collectors.push_back(s);
    if (s.available) c.finish(ev);
    if (st) *st = s;
    return ev;
}

double metric(const Evidence& ev, const std::string& name, const std::string& dev) {
    const Metric* m = ev.find_metric(name, {{"device", dev}});
    EXPECT_TRUE(m) << name << " " << dev;
    return m ? m->value : -1;
}

}  // namespace

TEST(NvmeSmartCollector, DecodesWornControllerPerNamespace) {
    auto c = fixture_collector();
    CollectorStatus st;
    Evidence ev = collect(c, &st);
    ASSERT_TRUE(st.available) << st.reason;
    EXPECT_NE(st.reason.find("nvme1"), std::string::npos) << st.reason;   // garbage named
    EXPECT_EQ(metric(ev, "nvme.percent_used", "nvme0n1"), 95);
    EXPECT_EQ(metric(ev, "nvme.media_errors", "nvme0n1"), 2);
    EXPECT_EQ(metric(ev, "nvme.media_errors_delta", "nvme0n1"), 0);
    EXPECT_EQ(metric(ev, "nvme.warning_temp_threshold_c", "nvme0n1"), 70);
    EXPECT_EQ(metric(ev, "nvme.temperature_headroom_c", "nvme0n1"), 35);
    EXPECT_EQ(metric(ev, "nvme.spare_margin_pct", "nvme0n1"), 50);
    const Fact* exact = ev.find_fact("nvme.data_units_written.exact", {{"device", "nvme0n1"}});
    ASSERT_TRUE(exact);
    EXPECT_EQ(exact->value, "18446744073709563961");
    EXPECT_EQ(ev.find_fact("nvme.controller", {{"device", "nvme0n1"}})->value, "nvme0");
    EXPECT_EQ(ev.find_fact("nvme.model", {{"device", "nvme0n1"}})->value, "ACME NVMe 1TB");
    EXPECT_EQ(ev.find_fact("nvme.temperature_threshold_source", {{"device", "nvme0n1"}})->value,
              "Identify Controller WCTEMP");
}

TEST(NvmeSmartCollector, GarbageFallsBackToHwmonOnly) {
    auto c = fixture_collector();
    Evidence ev = collect(c);
    // nvme1c1n1 (multipath) is the block device nvme1n1.
    EXPECT_EQ(ev.find_fact("nvme.controller", {{"device", "nvme1n1"}})->value, "nvme1");
    EXPECT_EQ(ev.find_metric("nvme.percent_used", {{"device", "nvme1n1"}}), nullptr);
    EXPECT_EQ(ev.find_metric("nvme.temperature_c", {{"device", "nvme1n1"}}), nullptr);
    EXPECT_DOUBLE_EQ(metric(ev, "nvme.hwmon_temperature_c", "nvme1n1"), 71.85);
    EXPECT_DOUBLE_EQ(metric(ev, "nvme.temperature_headroom_c", "nvme1n1"), 3.0);
    const Fact* err = ev.find_fact("nvme.smart_error", {{"device", "nvme1n1"}});
    ASSERT_TRUE(err);
    EXPECT_NE(err->value.find("not a valid NVMe SMART"), std::string::npos);
}

TEST(NvmeSmartCollector, NoControllersIsUnavailableWithReason) {
    NvmeSmartCollector c;
    CollectOptions o;
    o.root = kDir + "/admin";   // no sys/class/nvme below
    const CollectorStatus st = c.start(o);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("/sys/class/nvme"), std::string::npos) << st.reason;
}

TEST(NvmeSmartCollector, EveryEmittedNameIsDeclared) {
    auto c = fixture_collector();
    Evidence ev = collect(c);
    MetricCatalog cat;
    cat.add_all(c.metric_specs());
    for (const auto& m : ev.metrics) EXPECT_TRUE(cat.find(m.name)) << m.name;
    for (const auto& f : ev.facts) EXPECT_TRUE(cat.find(f.name)) << f.name;
}

TEST(NvmeSmartDiff, ReportsGrowthExactly) {
    auto c = fixture_collector();
    Evidence before = collect(c);
    Evidence after = before;
    for (auto& f : after.facts)
        if (f.name == "nvme.media_errors.exact") f.value = "18446744073709551620";   // 2^64 + 4
        else if (f.name == "nvme.unsafe_shutdowns.exact") f.value = "32";
    for (auto& m : after.metrics)
        if (m.name == "nvme.critical_warning") m.value = 0x04;
    const auto changes = nvme::compare_smart(before, after);
    ASSERT_EQ(changes.size(), 3u);
    EXPECT_EQ(changes[0].field, "media_errors");
    EXPECT_EQ(changes[0].device, "nvme0n1");
    EXPECT_EQ(changes[0].delta, "18446744073709551618");
    EXPECT_EQ(changes[1].field, "unsafe_shutdowns");
    EXPECT_EQ(changes[1].delta, "1");
    EXPECT_EQ(changes[2].field, "critical_warning");
    EXPECT_NE(changes[2].meaning.find("reliability_degraded"), std::string::npos);
    EXPECT_TRUE(nvme::compare_smart(before, before).empty());
}
