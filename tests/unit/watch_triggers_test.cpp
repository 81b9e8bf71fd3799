// iodiag watch's triggers on fixture samples: sustained I/O pressure, a device
// slower than its nominal latency or than its own history, and what must not
// start a capture (a single slow second, an await over a handful of I/Os, a
// device with no reference yet).
#include <gtest/gtest.h>

#include "app/watch_triggers.hpp"

using namespace iodiag::cli;

namespace {

WatchSample quiet(double t) {
    WatchSample s;
    s.t_unix = t;
    s.io_some_pct = 0.5;
    s.devices["nvme0n1"].read = {200, 0.09};
    s.devices["nvme0n1"].write = {100, 0.02};
    s.devices["vda"].read = {50, 0.8};
    s.devices["vda"].write = {30, 1.2};
    return s;
}

std::deque<WatchSample> quiet_seconds(int n) {
    std::deque<WatchSample> d;
    for (int i = 0; i < n; ++i) d.push_back(quiet(1000 + i));
    return d;
}

const std::map<std::string, DeviceReference> kRefs{
    {"nvme0n1", {0.120, 0.030, "reference: seed 000 §3.1 NVMe"}}};

}  // namespace

TEST(WatchTriggers, QuietMachineDoesNotTrigger) {
    EXPECT_FALSE(evaluate_triggers(quiet_seconds(120), TriggerConfig{}, kRefs));
    EXPECT_FALSE(evaluate_triggers({}, TriggerConfig{}, kRefs));
}

TEST(WatchTriggers, SustainedIoPressureTriggersOnlyAfterItsDuration) {
    TriggerConfig cfg;
    cfg.psi_some_pct = 20;
    cfg.psi_for_s = 5;
    auto s = quiet_seconds(30);
    for (int i = 0; i < 4; ++i) {
        s.push_back(quiet(2000 + i));
        s.back().io_some_pct = 35 + i;
        EXPECT_FALSE(evaluate_triggers(s, cfg, kRefs)) << "after " << i + 1 << " s";
    }
    s.push_back(quiet(2004));
    s.back().io_some_pct = 22;
    const auto hit = evaluate_triggers(s, cfg, kRefs);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->kind, "psi_io");
    EXPECT_DOUBLE_EQ(hit->value, 22);   // the lowest of the stretch
    EXPECT_EQ(hit->samples, 5u);
    EXPECT_NE(hit->reason.find("/proc/pressure/io"), std::string::npos);
}

TEST(WatchTriggers, OneCalmSecondInsideTheStretchResetsIt) {
    auto s = quiet_seconds(10);
    for (int i = 0; i < 6; ++i) {
        s.push_back(quiet(2000 + i));
        s.back().io_some_pct = i == 3 ? 5.0 : 60.0;
    }
    EXPECT_FALSE(evaluate_triggers(s, TriggerConfig{}, kRefs));
}

TEST(WatchTriggers, MissingPsiNeverTriggers) {
    auto s = quiet_seconds(10);
    for (auto& x : s) x.io_some_pct.reset();
    EXPECT_FALSE(evaluate_triggers(s, TriggerConfig{}, kRefs));
}

TEST(WatchTriggers, DeviceAboveItsNominalLatencyByTheFactor) {
    TriggerConfig cfg;
    auto s = quiet_seconds(10);
    for (int i = 0; i < 5; ++i) {
        s.push_back(quiet(2000 + i));
        s.back().devices["nvme0n1"].read = {150, 2.5 + i};   // 10 x 0.12 ms = 1.2 ms
    }
    const auto hit = evaluate_triggers(s, cfg, kRefs);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->kind, "device_await");
    EXPECT_EQ(hit->device, "nvme0n1");
    EXPECT_EQ(hit->direction, "read");
    EXPECT_NEAR(hit->threshold, 1.2, 1e-9);
    EXPECT_DOUBLE_EQ(hit->value, 2.5);
    EXPECT_NE(hit->reference.find("seed 000"), std::string::npos) << hit->reference;
}

TEST(WatchTriggers, AFewSlowIosPerSecondAreNotJudged) {
    auto s = quiet_seconds(10);
    for (int i = 0; i < 6; ++i) {
        s.push_back(quiet(2000 + i));
        s.back().devices["nvme0n1"].write = {3, 40.0};   // 3 flushes at 40 ms: below min_iops
    }
    EXPECT_FALSE(evaluate_triggers(s, TriggerConfig{}, kRefs));
}

TEST(WatchTriggers, ADeviceWithoutNominalUsesItsOwnHistoryOnceItHasEnough) {
    TriggerConfig cfg;
    cfg.history_min_samples = 60;
    // vda has no nominal latency (virtio): 30 s of history are not enough...
    auto s = quiet_seconds(30);
    for (int i = 0; i < 5; ++i) {
        s.push_back(quiet(2000 + i));
        s.back().devices["vda"].write = {40, 25.0};   // 1.2 ms normally
    }
    EXPECT_FALSE(evaluate_triggers(s, cfg, kRefs));
    // ... 120 s are.
    s = quiet_seconds(120);
    for (int i = 0; i < 5; ++i) {
        s.push_back(quiet(2000 + i));
        s.back().devices["vda"].write = {40, 25.0};
    }
    const auto hit = evaluate_triggers(s, cfg, kRefs);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->device, "vda");
    EXPECT_EQ(hit->direction, "write");
    EXPECT_NEAR(hit->threshold, 12.0, 1e-9);
    EXPECT_NE(hit->reference.find("history"), std::string::npos) << hit->reference;
}

TEST(WatchTriggers, TheStretchBeingJudgedIsNotPartOfTheHistory) {
    TriggerConfig cfg;
    cfg.history_min_samples = 5;
    cfg.await_for_s = 5;
    // 6 s of history at 1 ms, then 5 s at 20 ms: the median must be 1 ms
    // (were the slow stretch included, it would be 20 ms and nothing would fire).
    std::deque<WatchSample> s;
    for (int i = 0; i < 6; ++i) {
        s.push_back(quiet(1000 + i));
        s.back().devices.erase("nvme0n1");
        s.back().devices["vda"].read = {50, 1.0};
    }
    for (int i = 0; i < 5; ++i) {
        s.push_back(quiet(2000 + i));
        s.back().devices.erase("nvme0n1");
        s.back().devices["vda"].read = {50, 20.0};
    }
    const auto hit = evaluate_triggers(s, cfg, {});
    ASSERT_TRUE(hit);
    EXPECT_NEAR(hit->threshold, 10.0, 1e-9);
}

TEST(WatchTriggers, LongerIntervalsCountByTime) {
    TriggerConfig cfg;
    cfg.psi_for_s = 6;
    std::deque<WatchSample> s = quiet_seconds(5);
    for (int i = 0; i < 3; ++i) {
        s.push_back(quiet(2000 + 2 * i));
        s.back().interval_s = 2;
        s.back().io_some_pct = 50;
    }
    const auto hit = evaluate_triggers(s, cfg, kRefs);
    ASSERT_TRUE(hit);
    EXPECT_NE(hit->reason.find("last 3 samples"), std::string::npos) << hit->reason;
    EXPECT_EQ(hit->samples, 3u);
}
