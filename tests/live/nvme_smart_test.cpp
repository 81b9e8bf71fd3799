// Live: on a machine with NVMe controllers, the SMART log read through
// NVME_IOCTL_ADMIN_CMD decodes (no decode error) and is labelled with each
// namespace block device. Skips where there is no NVMe device (as on the
// project's test VMs, whose disks are virtio).
#include <gtest/gtest.h>

#include <filesystem>

#include "collectors/nvme/nvme_smart_collector.hpp"
#include "live_support.hpp"

using namespace iodiag;

TEST(NvmeSmartLive, ControllersDecodeThroughTheIoctl) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    std::error_code ec;
    if (!std::filesystem::is_directory("/sys/class/nvme", ec) || std::filesystem::is_empty("/sys/class/nvme", ec))
        GTEST_SKIP() << "no NVMe controller under /sys/class/nvme on this machine";
    NvmeSmartCollector c;
    const CollectorStatus st = c.start(CollectOptions{});
    ASSERT_TRUE(st.available) << st.reason;
    Evidence ev;
    c.finish(ev);
    bool decoded = false;
    for (const auto& f : ev.facts) {
        if (f.name == "nvme.smart_error") ADD_FAILURE() << f.labels.at("device") << ": " << f.value;
        if (f.name == "nvme.critical_warning_names") decoded = true;
    }
    EXPECT_TRUE(decoded) << st.reason;
    for (const auto& m : ev.metrics)
        if (m.name == "nvme.temperature_c") {
            EXPECT_GT(m.value, -40);
            EXPECT_LT(m.value, 130);
        }
}
