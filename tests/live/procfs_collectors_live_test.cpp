// Live checks of the procfs/sysfs collectors on a real loop device: the
// backing disk of a loop device is found, and diskstats counts exactly the
// I/O we issue.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "collectors/sysfs/block_queue_config.hpp"
#include "collectors/procfs/diskstats.hpp"
#include "live_support.hpp"

using namespace iodiag;

namespace {

const Fact* fact(const Evidence& ev, const std::string& name, const std::string& dev) {
    return ev.find_fact(name, {{"device", dev}});
}

// What block_queue_config reports for one device over a window.
Evidence queue_config_of(const std::string& device) {
    BlockQueueConfigCollector c;
    CollectOptions opts;
    opts.devices = {device};
    Evidence ev;
    const CollectorStatus st = c.start(opts);
    EXPECT_TRUE(st.available) << st.reason;
    if (st.available) c.finish(ev);
    return ev;
}

}  // namespace

TEST(ProcfsCollectorsLive, LoopBackingDiskIsTheDiskHoldingTheFile) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (auto why = live::missing_tool("losetup"); !why.empty()) GTEST_SKIP() << why;
    live::LoopDevice loop("/tmp", 16);
    if (!loop.ok()) GTEST_SKIP() << loop.error();

    const Evidence ev = queue_config_of(loop.name());

    const Fact* file = fact(ev, "device.backing_file", loop.name());
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->value.rfind("/tmp/iodiag-live-", 0), 0u) << file->value;
    EXPECT_EQ(fact(ev, "device.class", loop.name())->value, "loop");

    struct stat sb {};
    ASSERT_EQ(stat("/tmp", &sb), 0);
    const auto expected = whole_disk_of_devnum("/", major(sb.st_dev), minor(sb.st_dev));
    if (!expected) GTEST_SKIP() << "/tmp is not on a block device here (" << major(sb.st_dev) << ":"
                                << minor(sb.st_dev) << ")";
    const Fact* disk = fact(ev, "device.backing_device", loop.name());
    ASSERT_NE(disk, nullptr);
    EXPECT_EQ(disk->value, *expected);
    ASSERT_NE(fact(ev, "device.backing_class", loop.name()), nullptr);
}

TEST(ProcfsCollectorsLive, LoopOnTmpfsHasNoBackingDisk) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (auto why = live::missing_tool("losetup"); !why.empty()) GTEST_SKIP() << why;
    live::LoopDevice loop("/dev/shm", 16);
    if (!loop.ok()) GTEST_SKIP() << loop.error();
    const Evidence ev = queue_config_of(loop.name());
    ASSERT_NE(fact(ev, "device.backing_file", loop.name()), nullptr);
    EXPECT_EQ(fact(ev, "device.backing_device", loop.name()), nullptr);  // tmpfs: anonymous device number
}

TEST(ProcfsCollectorsLive, DiskstatsCountsOurDirectReads) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (auto why = live::missing_tool("losetup"); !why.empty()) GTEST_SKIP() << why;
    live::LoopDevice loop("/tmp", 16);
    if (!loop.ok()) GTEST_SKIP() << loop.error();
    const int fd = open(loop.path().c_str(), O_RDONLY | O_DIRECT);
    ASSERT_GE(fd, 0) << loop.path();
    void* buf = nullptr;
    ASSERT_EQ(posix_memalign(&buf, 4096, 4096), 0);
    usleep(300 * 1000);  // let udev/blkid finish probing the new device

    constexpr int kReads = 256;
    DiskstatsCollector c;
    CollectOptions opts;
    opts.devices = {loop.name()};
    // The collector's window lies between our two pairs of timestamps: it
    // opens during start() (after the /sys/block walk, which takes tens of
    // ms with many loop devices under a sanitizer) and closes during finish().
    const auto before_start = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.start(opts).available);
    const auto after_start = std::chrono::steady_clock::now();
    for (int i = 0; i < kReads; ++i)  // distinct, non-adjacent offsets: no merges
        ASSERT_EQ(pread(fd, buf, 4096, static_cast<off_t>(i) * 2 * 4096), 4096);
    usleep(1000 * 1000);  // a window much longer than the reads' own time
    Evidence ev;
    const auto before_finish = std::chrono::steady_clock::now();
    c.finish(ev);
    const auto after_finish = std::chrono::steady_clock::now();
    const double inner_s = std::chrono::duration<double>(before_finish - after_start).count();
    const double outer_s = std::chrono::duration<double>(after_finish - before_start).count();
    free(buf);
    close(fd);

    const Labels l{{"device", loop.name()}};
    const Metric* iops = ev.find_metric("disk.read_iops", l);
    ASSERT_NE(iops, nullptr);
    // reads = iops x its window, which lies between inner_s and outer_s.
    EXPECT_LE(iops->value * inner_s, kReads * 1.02);
    EXPECT_GE(iops->value * outer_s, kReads * 0.98);
    const Metric* size = ev.find_metric("disk.avg_read_kb", l);
    ASSERT_NE(size, nullptr);
    EXPECT_DOUBLE_EQ(size->value, 4.0);
    const Metric* await = ev.find_metric("disk.read_await_ms", l);
    ASSERT_NE(await, nullptr);
    EXPECT_GE(await->value, 0);
    const Metric* util = ev.find_metric("disk.util_pct", l);
    ASSERT_NE(util, nullptr);
    // Reads of a sparse file's holes take microseconds and io_ticks moves in
    // jiffies, so the utilisation may honestly be 0 here: only its range.
    EXPECT_GE(util->value, 0);
    EXPECT_LE(util->value, 100);
    EXPECT_EQ(ev.find_metric("disk.write_await_ms", l), nullptr);  // no writes: undefined, not 0
}
